"""Project policy from ``[tool.torchwheel]`` in the nearest ``pyproject.toml``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from torchwheel import limits
from torchwheel.errors import InputError, clipped, quoted
from torchwheel.rules.codes import is_selector, unknown_code
from torchwheel.rules.registry import Policy
from torchwheel.safeopen import read_regular

_KEYS = {"select", "ignore", "unstable-allowlist", "require-torch", "symbols", "relax-pin", "gpu-archs"}


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` upward from ``start``: the first name that exists, of
    whatever kind (a FIFO or a link to a device there is refused when read, not passed over
    for one further up)."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if os.path.lexists(candidate):
            return candidate
    return None


def _strings(table: dict[str, Any], key: str, where: Path) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: [tool.torchwheel] {key} must be a list of strings")
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
        raise InputError(f"{where}: cannot be read ({why})") from exc


def _tool_table(start: Path) -> tuple[dict[str, Any], Path | None]:
    """``[tool.torchwheel]`` of the nearest pyproject.toml, checked for unknown keys."""
    where = find_pyproject(start)
    if where is None:
        return {}, None
    text = _read(where)
    if "torchwheel" not in text:  # no such table, so no need to parse (tomllib: 5% of a small check)
        return {}, where
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: cannot be read ({exc})") from exc
    except RecursionError as exc:  # tomllib recurses once per nested array or inline table
        raise InputError(f"{where}: cannot be read (nested deeper than a TOML reader goes)") from exc
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise InputError(f"{where}: [tool] must be a table")
    table = tool.get("torchwheel", {})
    if not isinstance(table, dict):
        raise InputError(f"{where}: [tool.torchwheel] must be a table")
    unknown = set(table) - _KEYS
    if unknown:
        shown = ", ".join(clipped(k, 40) for k in sorted(unknown)[:5])
        raise InputError(f"{where}: unknown [tool.torchwheel] keys: {shown}")
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
        raise InputError(f"{where}: [tool.torchwheel] symbols must be a file path (a string without NUL)")
    return where.parent / value


def configured_relax_pin(start: Path, use_config: bool = True) -> bool:
    """``relax-pin = true``: `tag`/`repair` may widen the project's torch pin (TW502)."""
    table, where = _tool_table(start) if use_config else ({}, None)
    value = table.get("relax-pin", False)
    if not isinstance(value, bool):
        raise InputError(f"{where}: [tool.torchwheel] relax-pin must be true or false")
    return value


# nvcc's -gencode code= names: a cubin sm_90 (sm_90a, sm_100f) or PTX compute_90
_GPU_ARCH = re.compile(r"(sm|compute)_\d{2,3}[af]?")


def _gpu_archs(table: dict[str, Any], where: Path) -> tuple[str, ...]:
    archs = _strings(table, "gpu-archs", where)
    bad = [a for a in archs if not _GPU_ARCH.fullmatch(a)]
    if bad:
        raise InputError(
            f"{where}: [tool.torchwheel] gpu-archs: {quoted(bad[0], 40)} is not an nvcc code name like "
            "'sm_90', 'sm_90a' or 'compute_90'"
        )
    return archs


def _selectors(values: tuple[str, ...], where: str, file: Path | None = None) -> tuple[str, ...]:
    """Codes and prefixes of codes only: an unknown one (a typo, a retired code) would
    select or ignore nothing, silently."""
    for value in values:
        if not is_selector(value):
            raise InputError((f"{file}: " if file else "") + unknown_code(value, where))
    return values


def load_policy(
    start: Path, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (), use_config: bool = True
) -> Policy:
    """Command-line codes extend the file's; the file is found upward from ``start``. An
    unknown code, on the command line or in the file, is refused (exit 2, with a guess)."""
    select, ignore = _selectors(select, "--select"), _selectors(ignore, "--ignore")
    table, where = _tool_table(start) if use_config else ({}, None)
    require = table.get("require-torch", True)
    if not isinstance(require, bool):
        raise InputError(f"{where}: [tool.torchwheel] require-torch must be true or false")
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
