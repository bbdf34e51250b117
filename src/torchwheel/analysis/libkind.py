"""What a compiled member is for: a Python extension module, a torch op library, or neither.

Many stable-ABI projects ship their kernels as libraries that ``torch.ops.load_library(path)``
loads (found by a glob in ``__init__.py``), never ``import``: such a file has no module hook
and no CPython symbol, yet its name often looks like a module (``_C_ops.abi3.so``,
``_C.cpython-310-x86_64-linux-gnu.so``). Judging it by Python's import rules gives false
errors, so the rules first ask what the bytes say it is:

* ``extension-module``: exports a module hook (``PyInit_``/``PyModExport_``);
* ``torch-op-library``: no hook, no CPython symbol, and linked to torch: it imports torch
  symbols (the stable shim or libtorch C++) or names a torch library in DT_NEEDED / its
  dylibs / its DLL imports (``libtorch*``, ``libc10*``, ``torch_cpu.dll``, ``c10.dll``...);
* ``managed-assembly``: a .NET IL-only PE (CLR header with ILONLY): no native code, loaded
  by a CLR (pythonnet and the like), never by Python's import system or ``torch.ops``;
* ``shared-library``: anything else (a helper library, a vendored dependency).

A pure function over the facts: the file name plays no part, so ``inspect`` of a lone binary
and ``show`` of a wheel agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from torchwheel.analysis.pythonabi import PythonFacts
from torchwheel.analysis.usage import TorchUsage
from torchwheel.binary.facts import SliceFacts

LibraryKind = Literal["extension-module", "torch-op-library", "managed-assembly", "shared-library"]

# libtorch.so, libtorch_cpu.so, libc10.so, @rpath/libtorch_cuda.dylib, torch_cpu.dll, c10.dll
_TORCH_LIBRARY = re.compile(r"^(?:lib)?(?:torch|c10)(?:[_.-]|$)", re.IGNORECASE)


def links_torch(needed: Iterable[str]) -> bool:
    """Whether a needed-library list names one of torch's own libraries."""
    return any(_TORCH_LIBRARY.match(re.split(r"[/\\]", lib)[-1]) for lib in needed)


def classify(slices: Iterable[tuple[SliceFacts, PythonFacts, TorchUsage]]) -> LibraryKind:
    """The kind of one binary from its slices (a universal Mach-O is one kind as a whole:
    one file is either imported or loaded by torch, never per architecture)."""
    parts = list(slices)
    if parts and all(f.managed for f, _, _ in parts):
        return "managed-assembly"
    if any(p.hooks for _, p, _ in parts):
        return "extension-module"
    python = any(p.verdict != "not-python" for _, p, _ in parts)
    torch = any(t.usage != "none" or links_torch(f.needed) for f, _, t in parts)
    return "torch-op-library" if torch and not python else "shared-library"
