"""Which modules a wheel's own Python files import: parsed with ``ast``, never executed.

One question needs it: a library with a module-like name but no module hook
(``pkg/_C_ops.abi3.so``) is fine when ``torch.ops.load_library`` loads it by path, and
broken when ``from . import _C_ops`` imports it by name. The import statements of the
wheel's ``.py`` files tell the two apart. Bounded on purpose: only files that mention
one of the names asked about are parsed, a file over ``MAX_FILE_BYTES`` or beyond
``MAX_TOTAL_BYTES`` is skipped, and a file that does not parse (syntax error, null
bytes, nesting too deep) contributes nothing. Dynamic imports count only when spelled
with literal strings: ``importlib.import_module("pkg._C_ops")``, ``__import__(...)``.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import re
import warnings
from collections.abc import Callable, Iterable, Iterator

MAX_FILE_BYTES = 1 << 20  # a bigger .py is a generated table, not where imports live
MAX_TOTAL_BYTES = 32 << 20

# a member installed from <name>.data/purelib or platlib lands at the import root too
_DATA_ROOT = re.compile(r"^[^/]+\.data/(?:purelib|platlib)/")


def installed_path(member: str) -> str:
    """Where a member lands under the import root (``x.data/purelib/pkg/a.py`` -> ``pkg/a.py``)."""
    return _DATA_ROOT.sub("", member)


def _parts(member: str) -> list[str]:
    return installed_path(member).split("/")


def module_name(member: str, stem: str) -> str:
    """The import name of a compiled member whose suffix names the module ``stem``:
    ``pkg/sub/_C.abi3.so`` -> ``pkg.sub._C``."""
    return ".".join([*_parts(member)[:-1], stem])


def names_of(member: str) -> tuple[str, str]:
    """(this file's module name, its package) for a ``.py`` member."""
    parts = _parts(member)
    package = ".".join(parts[:-1])
    stem = parts[-1].removesuffix(".py")
    return (package if stem == "__init__" else ".".join([*parts[:-1], stem])), package


def resolve(name: str | None, level: int, package: str) -> str | None:
    """An absolute module name for ``from <level dots><name> import``, as importlib resolves it."""
    if level == 0:
        return name
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None  # beyond the top-level package: an ImportError at run time
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, *([name] if name else [])]) or None


def dynamic_import(call: ast.Call, module: str, package: str) -> str | None:
    """``import_module("x")`` / ``importlib.import_module(".x", __package__)`` / ``__import__``."""
    func = call.func
    fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if fname not in ("import_module", "__import__") or not call.args:
        return None
    first = call.args[0]
    if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
        return None
    target: str = first.value
    if not target.startswith("."):
        return target
    anchor: str | None = None
    if len(call.args) > 1:
        second = call.args[1]
        if isinstance(second, ast.Constant) and isinstance(second.value, str):
            anchor = second.value
        elif isinstance(second, ast.Name):
            anchor = {"__package__": package, "__name__": module}.get(second.id)
    if anchor is None:
        return None
    level = len(target) - len(target.lstrip("."))
    return resolve(target[level:] or None, level, anchor)


def parsed(source: bytes, member: str) -> ast.Module | None:
    """The file's syntax tree, or None for what does not parse (a syntax error, null bytes,
    nesting too deep): the one parser of a wheel's Python, never executed."""
    try:
        with uncollected(), warnings.catch_warnings():  # a wheel's invalid escapes are its own
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            return ast.parse(source, filename=member)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@contextlib.contextmanager
def uncollected() -> Iterator[None]:
    """No collection of cyclic garbage while syntax trees are built and read. A tree holds
    no reference cycle, so a collection frees none of it, yet each walks every node alive:
    on vLLM's Python the collections that building and reading its trees set off (with
    the trees ``reach`` then kept for its next level) cost as much CPU as parsing them. Whatever
    cycles the reading leaves are collected once it is over; collection stays off if it
    was off."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def imports_of(source: bytes, member: str) -> frozenset[str]:
    """Every module name the file ``member`` imports, absolute. ``from a import b`` yields
    ``a`` and ``a.b``: whether ``b`` is a submodule is not knowable from the text."""
    tree = parsed(source, member)
    if tree is None:
        return frozenset()
    module, package = names_of(member)
    found: set[str] = set()
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node.module, node.level, package)
            if base is not None:
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    if _may_call_an_importer(source):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = dynamic_import(node, module, package)
                if name:
                    found.add(name)
    return frozenset(found)


# the fields of a statement that hold statements (or handlers and cases, which hold them)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of the module, nested ones included, and no expression: ``import``
    is a statement, and a file's expressions are most of its nodes (``ast.walk`` over all
    of them was nine tenths of ``check`` on torchao's wheels). Handlers and match cases
    are passed through for the statements they hold."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        for field in _BODIES:
            held = getattr(node, field, None)
            if held:
                stack.extend(reversed(held))


def _may_call_an_importer(source: bytes) -> bool:
    """Whether the text can hold a call of ``import_module`` or ``__import__``: it names one
    of them, or has a non-ASCII byte (an identifier that NFKC-normalizes to one)."""
    return b"import_module" in source or b"__import__" in source or not source.isascii()


def wheel_imports(
    members: Iterable[str],
    size: Callable[[str], int],
    read: Callable[[str], bytes],
    mentioning: Iterable[str],
) -> frozenset[str]:
    """The names imported by the ``.py`` members that mention any of ``mentioning`` (plain
    byte search first: a wheel like torch's has thousands of .py files and no reason to
    parse them)."""
    needles = [n.encode() for n in set(mentioning)]
    if not needles:
        return frozenset()
    found: set[str] = set()
    for member, data in python_sources(members, size, read):
        if any(needle in data for needle in needles):
            found |= imports_of(data, member)
    return frozenset(found)


def python_sources(
    members: Iterable[str],
    size: Callable[[str], int],
    read: Callable[[str], bytes],
    wanted: Callable[[str], bool] = lambda member: ".dist-info/" not in member,
) -> Iterator[tuple[str, bytes]]:
    """(member, bytes) of the wheel's ``.py`` files that ``wanted`` keeps, within the bounds
    above: a file over ``MAX_FILE_BYTES``, or beyond ``MAX_TOTAL_BYTES`` in all, is not read.
    The one reader of a wheel's Python for ``pyimports`` and ``loaders``."""
    budget = MAX_TOTAL_BYTES
    for member in members:
        if not member.endswith(".py") or not wanted(member):
            continue
        n = size(member)
        if n > MAX_FILE_BYTES or n > budget:
            continue
        budget -= n
        yield member, read(member)
