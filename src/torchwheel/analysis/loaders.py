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
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterable

from torchwheel.analysis.pyimports import python_sources

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
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            tree = ast.parse(source, filename=member)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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
