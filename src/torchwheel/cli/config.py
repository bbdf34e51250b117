"""Project policy from ``[tool.torchwheel]`` in the nearest ``pyproject.toml``.

Found as ruff finds ``[tool.ruff]``: from each input's folder upwards, the nearest
``pyproject.toml`` that has the table (one without it is passed over); an input with none
above it (a wheel in a temporary folder: cibuildwheel's repair) takes the one found from the
current folder. The command line's ``--select``/``--ignore`` extend the file's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchwheel import limits
from torchwheel.errors import InputError, clipped, quoted
from torchwheel.safeopen import read_regular

if TYPE_CHECKING:  # the rules package registers every rule: `doctor` reads its config without them
    from torchwheel.rules.registry import Policy

_KEYS = {"select", "ignore", "unstable-allowlist", "require-torch", "symbols", "relax-pin", "gpu-archs"}


def _read_table(candidate: Path) -> dict[str, Any] | None:
    """``[tool.torchwheel]`` of one pyproject.toml, or None when it has no such table. Read as
    a regular file within ``max-config-bytes`` (``_read``): a FIFO or a device named
    pyproject.toml is refused, never waited on."""
    text = _read(candidate)
    if "torchwheel" not in text:  # no such table, so no need to parse (tomllib: 5% of a small check)
        return None
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{candidate}: cannot be read ({exc})", reference="config-invalid") from exc
    except RecursionError as exc:  # tomllib recurses once per nested array or inline table
        raise InputError(
            f"{candidate}: cannot be read (nested deeper than a TOML reader goes)", reference="config-invalid"
        ) from exc
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise InputError(f"{candidate}: [tool] must be a table", reference="config-invalid")
    if "torchwheel" not in tool:
        return None
    table = tool["torchwheel"]
    if not isinstance(table, dict):
        raise InputError(f"{candidate}: [tool.torchwheel] must be a table", reference="config-invalid")
    return table


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml from ``start`` upwards that has a ``[tool.torchwheel]``
    (one without the table is passed over, as ruff does; one that cannot be read, a FIFO or a
    link to a device, is refused, not passed over)."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if os.path.lexists(candidate) and _read_table(candidate) is not None:
            return candidate
    return None


def config_start(inputs: Iterable[Path | str]) -> Path:
    """Where the configuration of a run over ``inputs`` is looked for: the folder of the one
    pyproject.toml found above them (each from its own folder), else the current folder.
    Inputs under different configurations are refused: a run has one policy (a run per
    project, or ``--no-config``)."""
    found: dict[Path, str] = {}
    for given in inputs:
        path = Path(given).absolute()
        where = find_pyproject(path if path.is_dir() else path.parent)
        if where is not None:
            found.setdefault(where, str(given))
    if len(found) > 1:
        (a, first), (b, second) = list(found.items())[:2]
        raise InputError(
            f"{first} and {second} are configured by different [tool.torchwheel] tables ({a}, {b}): "
            "check each project in a run of its own, or pass --no-config",
            reference="config-invalid",
        )
    return next(iter(found)).parent if found else Path.cwd()


def _strings(table: dict[str, Any], key: str, where: Path) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(
            f"{where}: [tool.torchwheel] {key} must be a list of strings", reference="config-invalid"
        )
    return tuple(value)


def _read(where: Path) -> str:
    """The file's text: a regular file (``safeopen``) within ``max-config-bytes``."""
    limit = limits.current().max_config_bytes
    try:
        size = os.stat(where).st_size
        limit.check(f"{where}'s size", size)
        return read_regular(where, limit.value).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"{where}: cannot be read ({why})", reference="config-invalid") from exc


def _tool_table(start: Path) -> tuple[dict[str, Any], Path | None]:
    """``[tool.torchwheel]`` of the nearest pyproject.toml that has one, checked for unknown keys."""
    where = find_pyproject(start)
    if where is None:
        return {}, None
    table = _read_table(where) or {}
    unknown = set(table) - _KEYS
    if unknown:
        shown = ", ".join(clipped(k, 40) for k in sorted(unknown)[:5])
        raise InputError(f"{where}: unknown [tool.torchwheel] keys: {shown}", reference="config-invalid")
    return table, where


def configured_symbols(start: Path, use_config: bool = True) -> Path | None:
    """``symbols = "FILE"``: a project that checks against a newer torch than torchwheel
    knows keeps its updated table beside pyproject.toml; the path is relative to it."""
    if not use_config:
        return None
    table, where = _tool_table(start)
    value = table.get("symbols")
    if value is None or where is None:
        return None
    if not isinstance(value, str) or not value or "\x00" in value:
        raise InputError(
            f"{where}: [tool.torchwheel] symbols must be a file path (a string without NUL)",
            reference="config-invalid",
        )
    return where.parent / value


def configured_relax_pin(start: Path, use_config: bool = True) -> bool:
    """``relax-pin = true``: `tag`/`repair` may widen the project's torch pin (TW502)."""
    table, where = _tool_table(start) if use_config else ({}, None)
    value = table.get("relax-pin", False)
    if not isinstance(value, bool):
        raise InputError(
            f"{where}: [tool.torchwheel] relax-pin must be true or false", reference="config-invalid"
        )
    return value


# nvcc's -gencode code= names: a cubin sm_90 (sm_90a, sm_100f) or PTX compute_90
_GPU_ARCH = re.compile(r"(sm|compute)_\d{2,3}[af]?")


def _gpu_archs(table: dict[str, Any], where: Path) -> tuple[str, ...]:
    archs = _strings(table, "gpu-archs", where)
    bad = [a for a in archs if not _GPU_ARCH.fullmatch(a)]
    if bad:
        raise InputError(
            f"{where}: [tool.torchwheel] gpu-archs: {quoted(bad[0], 40)} is not an nvcc code name like "
            "'sm_90', 'sm_90a' or 'compute_90'",
            reference="config-invalid",
        )
    return archs


def _selectors(values: tuple[str, ...], where: str, file: Path | None = None) -> tuple[str, ...]:
    """Codes and prefixes of codes only: an unknown one (a typo, a retired code) would
    select or ignore nothing, silently."""
    from torchwheel.rules.codes import is_selector, unknown_code

    for value in values:
        if not is_selector(value):
            raise InputError(
                (f"{file}: " if file else "") + unknown_code(value, where), reference="config-invalid"
            )
    return values


def _listed(values: tuple[str, ...]) -> tuple[str, ...]:
    """``("TW201,TW503", "TW7")`` -> ``("TW201", "TW503", "TW7")``: each part stripped; an
    empty part is kept, to be refused as no code."""
    return tuple(part.strip() for value in values for part in value.split(","))


def load_policy(
    start: Path, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (), use_config: bool = True
) -> Policy:
    """Command-line codes extend the file's; the file is found upward from ``start``
    (``config_start``). On the command line a value may list codes with commas, as ruff's
    does (``--ignore TW201,TW503``). An unknown code, on the command line or in the file, is
    refused (exit 2, with a guess)."""
    from torchwheel.rules.registry import Policy

    select, ignore = _selectors(_listed(select), "--select"), _selectors(_listed(ignore), "--ignore")
    table, where = _tool_table(start) if use_config else ({}, None)
    require = table.get("require-torch", True)
    if not isinstance(require, bool):
        raise InputError(
            f"{where}: [tool.torchwheel] require-torch must be true or false", reference="config-invalid"
        )
    return Policy(
        select=frozenset(
            _selectors(_strings(table, "select", where or start), "[tool.torchwheel] select", where) + select
        ),
        ignore=frozenset(
            _selectors(_strings(table, "ignore", where or start), "[tool.torchwheel] ignore", where) + ignore
        ),
        unstable_allowlist=_strings(table, "unstable-allowlist", where or start),
        require_torch=require,
        gpu_archs=_gpu_archs(table, where or start),
    )
