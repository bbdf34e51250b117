"""Project policy from ``[tool.torchwheel]`` in the nearest ``pyproject.toml``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from torchwheel.errors import InputError
from torchwheel.findings import Policy

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

_KEYS = {"select", "ignore", "unstable-allowlist", "require-torch"}


def find_pyproject(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _strings(table: dict[str, Any], key: str, where: Path) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: [tool.torchwheel] {key} must be a list of strings")
    return tuple(value)


def load_policy(
    start: Path, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (), use_config: bool = True
) -> Policy:
    """Command-line codes extend the file's; the file is found upward from ``start``."""
    table: dict[str, Any] = {}
    where = find_pyproject(start) if use_config else None
    if where is not None:
        try:
            data = tomllib.loads(where.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InputError(f"{where}: cannot be read ({exc})") from exc
        table = data.get("tool", {}).get("torchwheel", {})
        unknown = set(table) - _KEYS
        if unknown:
            raise InputError(f"{where}: unknown [tool.torchwheel] keys: {', '.join(sorted(unknown))}")
    require = table.get("require-torch", True)
    if not isinstance(require, bool):
        raise InputError(f"{where}: [tool.torchwheel] require-torch must be true or false")
    return Policy(
        select=frozenset(_strings(table, "select", where or start) + select),
        ignore=frozenset(_strings(table, "ignore", where or start) + ignore),
        unstable_allowlist=_strings(table, "unstable-allowlist", where or start),
        require_torch=require,
    )
