"""How a package's own Python picks among the flavours of a library it ships: read with
``ast``, never executed.

A wheel that ships ``_fps_cpu.so`` and ``_fps_cuda.so`` loads on the builds of torch where
the flavour its loader picks loads, and the file names alone do not say which it picks.
PyTorch Geometric's packages (torch-scatter, torch-cluster, torch-sparse, and their
``-rocm`` rebuilds) try the accelerated one first, whenever its file exists::

    cuda_spec = importlib.machinery.PathFinder().find_spec(f'{library}_cuda', [...])
    cpu_spec = importlib.machinery.PathFinder().find_spec(f'{library}_cpu', [...])
    spec = cuda_spec or cpu_spec

so such a wheel loads only where its ``_cuda`` file loads, and a ``_cpu`` file beside it is
never reached. Other packages pick by the torch they find (``torch.version.cuda``,
``torch.cuda.is_available()``); then every flavour is reachable. This module recognises the
first pattern (an ``or`` whose first operand names the accelerated flavour and a later one
the CPU flavour, through a literal or f-string) and nothing cleverer: any other loader
counts as picking by the torch it finds, and ``show`` says that the build depends on it.
Read through ``pyimports.python_sources`` (its bounds); only files that mention ``_cpu`` are parsed.

A second pattern (``fallback_units``): the builds are tried inside a ``try`` whose handler
catches what a failed load raises and goes on (a stand-in, ``None``): then the package
imports wherever one build loads, or none, and the set loads where any member does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping

from torchwheel.analysis.pyimports import parsed, python_sources

# the flavour a string names by its last word: f'{library}_cuda', "_C_hip", '_cpu'
_ENDS = re.compile(r"[_.-](cpu|cuda|hip|gpu|rocm)$", re.IGNORECASE)
_ACCELERATED = frozenset({"cuda", "hip", "gpu", "rocm"})


def _flavour_of(node: ast.AST) -> str | None:
    """The flavour the last string inside an expression ends with (a ``find_spec`` call's
    argument, an f-string's tail), or None."""
    found = None
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            m = _ENDS.search(sub.value)
            if m is not None:
                found = m.group(1).lower()
    return found


def preferred_flavour(source: bytes, member: str) -> str | None:
    """The accelerated flavour this file's loader takes whenever its file exists, before the
    CPU one (``cuda_spec or cpu_spec``); None when it does not read so."""
    tree = parsed(source, member)
    if tree is None:
        return None
    named: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            flavour = _flavour_of(node.value)
            if flavour is not None:
                named[node.targets[0].id] = flavour
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or)):
            continue
        flavours = [named.get(v.id) if isinstance(v, ast.Name) else _flavour_of(v) for v in node.values]
        first = flavours[0]
        if first in _ACCELERATED and "cpu" in flavours[1:]:
            return first
    return None


def preferred_flavours(
    members: Iterable[str], size: Callable[[str], int], read: Callable[[str], bytes], where: Iterable[str]
) -> dict[str, str]:
    """Package directory (``torch_cluster``) -> the flavour its loader prefers whenever the
    file exists (``cuda``), for the ``.py`` files in the directories ``where`` (those that
    hold a CPU and an accelerated flavour of one library: torch's thousands of ``.py``
    files are never read)."""
    dirs = set(where)
    out: dict[str, str] = {}
    for member, data in python_sources(members, size, read, lambda m: m.rpartition("/")[0] in dirs):
        if b"_cpu" not in data:
            continue
        flavour = preferred_flavour(data, member)
        if flavour is not None:
            out[member.rpartition("/")[0]] = flavour
    return out


# -- a loader with a fallback: the builds of a library are tried, and the package goes on
# without them where none loads (bitsandbytes' ``get_native_library()`` in a ``try`` whose
# ``except Exception`` installs a stand-in; a ``try: from . import _C_cuda`` / ``except
# ImportError: _C_cuda = None``). Then the set loads where any member does.

# calls that open a library or import a module: ctypes, torch.ops, importlib, dlopen
_LOADING_CALLS = frozenset(
    {"CDLL", "PyDLL", "WinDLL", "LoadLibrary", "load_library", "import_module", "dlopen", "load_dynamic",
     "exec_module", "__import__"}
)  # fmt: skip
# what a load failure raises: an import that fails, a library the loader cannot open
_LOAD_FAILURES = frozenset(
    {"ImportError", "ModuleNotFoundError", "OSError", "RuntimeError", "Exception", "BaseException"}
)


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _loading_functions(tree: ast.Module) -> set[str]:
    """The module's functions that load a library, directly or through another of them."""
    bodies = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    found: set[str] = set()
    for _ in range(8):  # a few levels of helpers, never a runaway
        calls = _LOADING_CALLS | found
        more = {
            name
            for name, fn in bodies.items()
            if name not in found
            and any(isinstance(c, ast.Call) and _called(c) in calls for c in ast.walk(fn))
        }
        if not more:
            break
        found |= more
    return found


def _loaded(body: list[ast.stmt], calls: frozenset[str], stems: Iterable[str]) -> set[str]:
    """The stems whose library this block loads: every one where it makes a loading call (or
    calls a helper that does), else those an import names (``from . import _C_cuda``)."""
    stems = set(stems)
    named: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _called(node) in calls:
                return stems
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names]
                names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
                named |= {stem for stem in stems if any(stem in n for n in names)}
    return named


def _catches_load_failure(handler: ast.ExceptHandler) -> bool:
    """A handler that catches what a failed load raises and does not raise again."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    caught = handler.type is None or any(
        (k.id if isinstance(k, ast.Name) else k.attr if isinstance(k, ast.Attribute) else "")
        in _LOAD_FAILURES
        for k in kinds
        if k is not None
    )
    return caught and not any(isinstance(n, ast.Raise) for s in handler.body for n in ast.walk(s))


def fallback_stems(source: bytes, member: str, stems: Iterable[str]) -> set[str]:
    """The stems (``libbitsandbytes``, ``_C``) whose library this file loads inside a ``try``
    whose handler goes on without it."""
    tree = parsed(source, member)
    if tree is None:
        return set()
    calls = frozenset(_LOADING_CALLS | _loading_functions(tree))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(map(_catches_load_failure, node.handlers)):
            out |= _loaded(node.body, calls, stems)
    return out


# a real package has a few flavour sets per directory: reading more would cost every
# ``.py`` file's bytes once per set, with nothing to learn
_MAX_SETS_PER_DIR = 64


def fallback_units(
    members: Iterable[str], size: Callable[[str], int], read: Callable[[str], bytes], units: Mapping[str, str]
) -> frozenset[str]:
    """The flavour sets (``unit_key`` -> the library's name stem, ``libbitsandbytes``) whose
    package loader falls back where no build loads: read in the ``.py`` files of the set's
    directory and its parent that name the stem."""
    where: dict[str, list[tuple[str, str]]] = {}
    for key, stem in units.items():
        folder = key.rpartition("/")[0]
        for d in dict.fromkeys((folder, folder.rpartition("/")[0])):
            if len(where.setdefault(d, [])) < _MAX_SETS_PER_DIR:
                where[d].append((key, stem))
    found: set[str] = set()
    for member, data in python_sources(members, size, read, lambda m: m.rpartition("/")[0] in where):
        named = [
            (k, stem)
            for k, stem in where[member.rpartition("/")[0]]
            if k not in found and stem.encode() in data
        ]
        if named:
            stems = fallback_stems(data, member, {stem for _, stem in named})
            found |= {k for k, stem in named if stem in stems}
    return frozenset(found)
