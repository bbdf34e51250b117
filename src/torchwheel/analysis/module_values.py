"""The values ``module_eval`` holds while it reads a package's top-level code, and Python's
operations on them as Python does them (never more: what is not modelled is ``UNKNOWN``).

Plain ``str``/``int``/``bool``/``None``, tuples (a list is held as a tuple: a call that is
not followed and is given one makes it unknown), ``packaging`` versions, torch's version
(``TorchVersionText``: it compares as torch's ``TorchVersion`` does), paths inside the
installed wheel (``WheelPath``), and references to a module or to one of the package's
functions.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Mapping
from typing import Any

from packaging.version import InvalidVersion, Version

from torchwheel.frozen import frozen

MAX_TEXT = 4096  # a longer string is not a version or a file name: unknown
_MAX_ITEMS = 256  # a longer tuple is not a version's parts or a list of files: unknown
_STR_METHODS = frozenset(
    {"split", "rsplit", "partition", "rpartition", "startswith", "endswith", "strip", "lstrip", "rstrip", "lower"}
)  # fmt: skip
_PATH_CALLS = frozenset(
    {"join", "dirname", "basename", "abspath", "realpath", "normpath", "exists", "isfile", "isdir"}
)


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()


class TorchVersionText(str):
    """``torch.__version__``: a ``str`` that orders (and ``==``) as a version, as torch's
    ``TorchVersion`` does (its ``!=`` stays the ``str`` one); falls back to text where the
    other side is no version."""

    __slots__ = ()


class WheelPath(str):
    """A path inside the installed wheel (``zentorch/libzentorch.so``), from ``__file__``."""

    __slots__ = ()


@frozen
class ModuleRef:
    name: str


@frozen
class FunctionRef:
    node: ast.FunctionDef


def as_version(x: Any) -> Version | None:
    try:
        if isinstance(x, Version):
            return x
        if isinstance(x, str):
            return Version(x)
        if isinstance(x, tuple) and all(type(i) is int for i in x):
            return Version(".".join(map(str, x)))
    except InvalidVersion:
        return None
    return None


def is_known(x: Any) -> bool:
    """A value this reading holds all of (a tuple of known values, no module or function)."""
    if isinstance(x, tuple):
        return all(is_known(i) for i in x)
    return x is not UNKNOWN and not isinstance(x, ModuleRef | FunctionRef)


def compared(op: ast.cmpop, a: Any, b: Any) -> Any:
    if not is_known(a) or not is_known(b):
        return UNKNOWN
    if isinstance(op, ast.Is | ast.IsNot):
        if a is None or b is None:
            return (a is b) == isinstance(op, ast.Is)
        return UNKNOWN
    versioned = isinstance(a, TorchVersionText) or isinstance(b, TorchVersionText)
    if versioned and not isinstance(op, ast.NotEq | ast.In | ast.NotIn):
        va, vb = as_version(a), as_version(b)
        if va is not None and vb is not None:
            a, b = va, vb
    try:
        if isinstance(op, ast.Eq):
            return a == b
        if isinstance(op, ast.NotEq):
            return a != b
        if isinstance(op, ast.In):
            return a in b
        if isinstance(op, ast.NotIn):
            return a not in b
        if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
            return UNKNOWN
        return {ast.Lt: a.__lt__, ast.LtE: a.__le__, ast.Gt: a.__gt__, ast.GtE: a.__ge__}[type(op)](b)
    except (TypeError, KeyError):
        return UNKNOWN


def added(op: ast.operator, a: Any, b: Any) -> Any:
    if not is_known(a) or not is_known(b) or not isinstance(op, ast.Add):
        return UNKNOWN
    if type(a) is int and type(b) is int:
        return a + b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a + b if len(a) + len(b) <= _MAX_ITEMS else UNKNOWN
    if isinstance(a, str) and isinstance(b, str) and not isinstance(a, WheelPath):
        joined = str(a) + str(b)
        return joined if len(joined) <= MAX_TEXT else UNKNOWN
    return UNKNOWN


def subscripted(value: Any, index: ast.expr, evaluate: Callable[[ast.expr], Any]) -> Any:
    if not isinstance(value, str | tuple) or isinstance(value, WheelPath):
        return UNKNOWN
    if isinstance(index, ast.Slice):
        bounds = [evaluate(b) if b is not None else None for b in (index.lower, index.upper, index.step)]
        if any(b is not None and type(b) is not int for b in bounds) or bounds[2] == 0:
            return UNKNOWN
        found = value[slice(*bounds)]
    else:
        i = evaluate(index)
        if type(i) is not int:
            return UNKNOWN
        try:
            found = value[i]
        except IndexError:
            return UNKNOWN  # the IndexError it raises is not read as the import's
    return str(found) if isinstance(found, str) else found


def _map_int(fn: Any, values: Any) -> Any:
    if fn is not int or not isinstance(values, tuple):
        return UNKNOWN
    return tuple(int(v) for v in values)


SAFE_BUILTINS: Mapping[str, Any] = {
    "len": len,
    "int": int,
    "str": lambda x: str(x) if isinstance(x, str | int) else UNKNOWN,
    "tuple": lambda x: x if isinstance(x, tuple) else UNKNOWN,
    "list": lambda x: x if isinstance(x, tuple) else UNKNOWN,
    "map": _map_int,
    "True": True,
    "False": False,
    "None": None,
}


def wheel_path_call(name: str, args: list[Any], members: frozenset[str], dirs: frozenset[str]) -> Any:
    """``os.path`` on paths inside the wheel (``WheelPath``); any other path is unknown."""
    if not args or not isinstance(args[0], WheelPath):
        return UNKNOWN
    path = str(args[0])
    if name == "join":
        rest = args[1:]
        if not all(isinstance(a, str) and not a.startswith("/") and ".." not in a.split("/") for a in rest):
            return UNKNOWN
        return WheelPath(posixpath.join(path, *map(str, rest)))
    if len(args) != 1:
        return UNKNOWN
    if name in ("abspath", "realpath", "normpath"):
        return WheelPath(posixpath.normpath(path))
    if name == "dirname":
        return WheelPath(posixpath.dirname(path))
    if name == "basename":
        return posixpath.basename(path)
    path = posixpath.normpath(path)
    is_file, is_dir = path in members, path in dirs
    return {"exists": is_file or is_dir, "isfile": is_file, "isdir": is_dir}[name]


def str_method(receiver: str, name: str, args: list[Any]) -> Any:
    """``version.split(".")``, ``label.startswith("cu")``: a list comes back as a tuple."""
    if name not in _STR_METHODS or not all(isinstance(a, str | int) and a is not UNKNOWN for a in args):
        return UNKNOWN
    try:
        found = getattr(str(receiver), name)(*args)
    except (TypeError, ValueError):
        return UNKNOWN
    return tuple(found) if isinstance(found, list | tuple) else found


def library_call(name: str, args: list[Any], members: frozenset[str], dirs: frozenset[str]) -> Any:
    """A call of a library function this reading models: ``os.path`` on the wheel's paths,
    ``packaging.version.Version``/``parse``; any other is unknown."""
    *owner, last = name.split(".")
    if ".".join(owner) in ("os.path", "posixpath") and last in _PATH_CALLS:
        return wheel_path_call(last, args, members, dirs)
    if name in ("packaging.version.Version", "packaging.version.parse") and len(args) == 1:
        return as_version(args[0]) if isinstance(args[0], str) else UNKNOWN
    return UNKNOWN


def formatted(node: ast.JoinedStr, evaluate: Callable[[ast.expr], Any]) -> Any:
    """An f-string of known ``str``/``int`` fields (``!r`` too; a format spec is unknown)."""
    parts: list[str] = []
    for v in node.values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            parts.append(v.value)
            continue
        if not isinstance(v, ast.FormattedValue) or v.format_spec is not None:
            return UNKNOWN
        value = evaluate(v.value)
        if value is UNKNOWN or not isinstance(value, str | int) or isinstance(value, bool):
            return UNKNOWN
        text = str.__str__(value) if isinstance(value, str) else str(value)
        parts.append(repr(text) if v.conversion == ord("r") else text)
    joined = "".join(parts)
    return joined if len(joined) <= MAX_TEXT else UNKNOWN
