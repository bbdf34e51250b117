"""``doctor --explain``: an import that failed, read back to the file, the distribution that
owns it, the symbol or library it lacks, the torch releases that have it, and the fix.

The question is a module name (``xformers._C``) or the text of the error Python printed
(``ImportError: /…/_C.so: undefined symbol: _ZN3c10…``, ``libc10_cuda.so: cannot open
shared object file``). A symbol is demangled (``cxxnames``) and dated: a shim name by the
shim table (the release that added it), an unstable C++ name by the shipped exports index
(the minors that export it); whether the installed torch exports it is read from its own
libraries. A missing library is classified (``torchabi.accelerators``): ``libc10_cuda.so``
ships only with torch's CUDA builds, ``libcudart.so.12`` with a CUDA 12 torch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from torchwheel.analysis.usage import is_shim_name
from torchwheel.doctor.diagnosis import DiagnosisRow
from torchwheel.doctor.machine_explain import MachineAnswer
from torchwheel.errors import InputError, clipped
from torchwheel.frozen import frozen
from torchwheel.tables.tableset import Tables
from torchwheel.torchabi.accelerators import classify_library
from torchwheel.torchabi.cxxnames import demangle, is_unstable
from torchwheel.torchabi.torch_releases import show_minor
from torchwheel.torchabi.verdicts import Verdict
from torchwheel.wheel.contents import is_compiled_name

_MODULE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_UNDEFINED = re.compile(r"(?P<path>[^\s:'\"]+):\s*undefined symbol:\s*(?P<symbol>[^\s,;:'\"()]+)")
# the loading file (when the loader names it) and the library it did not find
_MISSING_LIB = re.compile(
    r"(?:(?P<path>/[^\s:'\"]+):\s*)?(?P<lib>[^\s:'\"/]+):\s*cannot open shared object file"
)
# torch.ops.load_library's words for a library ctypes could not open
_COULD_NOT_LOAD = re.compile(r"Could not load this library:\s*(?P<path>[^\s'\"]+)")
# an op its library never registered (the library did not load, or is not there)
_NO_OPERATOR = re.compile(r"operator\s+(?P<op>[A-Za-z_]\w*::[A-Za-z_][\w.]*)\s+does not exist")
# a file imported as a module that exports no module hook
_NO_HOOK = re.compile(
    r"dynamic module does not define module export function \((?P<hook>(?:PyInit|PyModExport)_\w+)\)"
)
# ld.so: "/lib/.../libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by /x/_C.so)"
_VERSION = re.compile(
    r"(?:(?P<lib>[^\s:'\"`]+):\s*)?version\s+[`'\u2018\"](?P<version>[^'`\u2019\"\s]+)['`\u2019\"]\s+not\s+found"
    r"(?:\s*\(required\s+by\s+(?P<by>[^)\s]+)\))?"
)
# the CUDA runtime's words, torch's, and the error names
_DRIVER = re.compile(
    r"CUDA driver version is insufficient for CUDA runtime version|NVIDIA driver on your system is too old"
    r"|cudaErrorInsufficientDriver",
    re.IGNORECASE,
)
_KERNEL = re.compile(
    r"no kernel image is available for execution on the device|cudaErrorNoKernelImageForDevice", re.I
)
_ASKED = 4096  # the most of a pasted error text read


@frozen
class Question:
    """What ``--explain`` was given, taken apart: a module, a file (a bare path, the file
    ``torch.ops.load_library`` could not load, or one with the symbol it lacks), a library
    the loader did not find (and the file that needs it, when the error names it), an op
    no library registered (``op``: ``torchvision::nms``), or the module hook a module
    lacks (``hook``: ``PyInit__C``)."""

    asked: str
    module: str | None = None
    path: str | None = None
    symbol: str | None = None
    library: str | None = None
    op: str | None = None
    hook: str | None = None
    version: str | None = None  # a symbol version the library found lacks (GLIBCXX_3.4.32)
    version_library: str | None = None  # the library the loader found, as the error names it
    machine: str | None = None  # "driver" or "kernel": the driver or the GPU, no file


def parse_import_error(text: str) -> Question:
    """A module name, a compiled file's path or the text of the error Python or torch
    printed; ``InputError`` for anything else."""
    asked = text.strip()[:_ASKED]
    if _MODULE.fullmatch(asked):
        return Question(asked, module=asked)
    if "/" in asked and not any(c.isspace() for c in asked) and is_compiled_name(asked.rsplit("/", 1)[-1]):
        return Question(asked, path=asked)  # a bare library path
    undefined = list(_UNDEFINED.finditer(asked))
    if undefined:
        last = undefined[-1]
        return Question(asked, path=last.group("path"), symbol=last.group("symbol"))
    missing = _MISSING_LIB.search(asked)
    if missing:
        return Question(asked, path=missing.group("path"), library=missing.group("lib"))
    versioned = _VERSION.search(asked)
    if versioned:
        by, lib = versioned.group("by"), versioned.group("lib")
        return Question(asked, path=by, version=versioned.group("version"), version_library=lib)
    could_not = _COULD_NOT_LOAD.search(asked)
    if could_not:
        return Question(asked, path=could_not.group("path"))
    no_op = _NO_OPERATOR.search(asked)
    if no_op:
        return Question(asked, op=no_op.group("op"))
    no_hook = _NO_HOOK.search(asked)
    if no_hook:
        return Question(asked, hook=no_hook.group("hook"))
    if _DRIVER.search(asked):
        return Question(asked, machine="driver")
    if _KERNEL.search(asked):
        return Question(asked, machine="kernel")
    raise InputError(
        f"--explain {clipped(asked, 80)!r}: neither a module name, a library's path nor an error "
        "this torchwheel reads ('undefined symbol', 'cannot open shared object file', "
        "\"version `X' not found\", 'Could not load this library', 'operator NS::OP does not "
        "exist', 'dynamic module does not define module export function', an insufficient CUDA "
        "driver, 'no kernel image is available')",
        reference="bad-option-value",
    )


def hook_stem(hook: str) -> str:
    """The module a hook is for: ``PyInit__C`` -> ``_C``."""
    return hook.split("_", 1)[1]


def module_file(module: str, search_path: Iterable[str]) -> Path | None:
    """The compiled file the module name is, in the first directory of the search path that
    holds it (``a.b.c``: ``a/b/c.*.so``, ``c.pyd``...), or its package directory; None
    when the search path holds neither."""
    *packages, last = module.split(".")
    for site in search_path:
        folder = Path(site, *packages)
        try:
            names = sorted(e.name for e in os.scandir(folder))
        except OSError:
            continue
        for name in names:
            if name.startswith(last + ".") and is_compiled_name(name):
                return folder / name
        if last in names and (folder / last).is_dir():
            return folder / last
    return None


@frozen
class SymbolDating:
    """Which torch releases have a symbol, in words, and how that was read."""

    words: str
    shim_since: str | None = None  # a shim: the release that added it
    minors: tuple[str, ...] = ()  # an unstable name: the indexed minors that export it


def date_symbol(symbol: str, tables: Tables, platform: str) -> SymbolDating:
    """Which torch releases export ``symbol``: the shim table for a shim, the exports index
    of ``platform`` (``linux-x86_64``) for unstable C++; "not known" otherwise."""
    table = tables.shims
    if is_shim_name(symbol) or symbol in table.symbols:
        try:
            since = table.introduced(symbol)
        except KeyError:
            return SymbolDating(
                f"a shim this torchwheel's table does not know (newer than {table.newest.minor_release}?)"
            )
        first = since.minor_release if since is not None else "every release the table covers"
        return SymbolDating(f"the stable C shim, in torch {first} and newer (the shim table)", first)
    if not is_unstable(symbol):
        return SymbolDating("not a torch symbol (neither the C shim nor libtorch's C++)")
    index = tables.exports_index(platform)
    if index is None:
        return SymbolDating(f"unstable C++; no exports index ships for {platform}")
    dating = index.dating([symbol])
    covered = f"{index.releases[0].major}.{index.releases[0].minor}-{index.releases[-1].major}.{index.releases[-1].minor}"
    if not dating.known:
        return SymbolDating(f"unstable C++ that no indexed torch ({covered}, {platform}) exports")
    minors = tuple(show_minor(m) for m in sorted(dating.minors))
    return SymbolDating(
        f"unstable C++, exported by torch {', '.join(minors)} of those indexed ({covered})", minors=minors
    )


_ACCELERATOR = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}


def library_words(library: str) -> str:
    """What a library the loader did not find says about the torch it needs."""
    lib = classify_library(library)
    if lib is None:
        return "not a torch or toolkit library: another project's, or the system's"
    if lib.role in ("torch", "torch-python"):
        if lib.accelerator is None:
            return "one of torch's own libraries, in every build: torch is not where the extension looks"
        return f"one of torch's own libraries, shipped only by its {_ACCELERATOR[lib.accelerator]} builds"
    kind = _ACCELERATOR.get(lib.accelerator or "", "a toolkit")
    major = f" {lib.toolkit_major}" if lib.toolkit_major is not None else ""
    if lib.role == "driver":
        return f"the {kind} driver's library: the machine's driver, not torch, provides it"
    return f"the {kind}{major} {lib.component} library, which a {kind}{major} build of torch brings"


@frozen
class Explanation:
    """The answer to ``--explain``: the file, its distribution (``row``: the doctor's row of
    it, None when no distribution's RECORD lists the file), and what it lacks: a symbol,
    dated (``dated``) and looked up in the installed torch (``installed_exports``: None
    when its exports were not read), or a library (``library``, with the distributions
    whose libraries need it)."""

    question: Question
    file: str | None
    row: DiagnosisRow | None
    dated: SymbolDating | None = None
    installed_exports: bool | None = None
    library: str | None = None
    needing: tuple[str, ...] = ()
    # the file itself (``member``, as its distribution lists it): how the package reaches it
    # (``reach``, in words) and whether it loads on the judged torch (``verdict``: its own
    # need's verdict, every axis)
    member: str | None = None
    reach: str | None = None
    verdict: Verdict | None = None
    # an op no library registered, or a module without its hook: the files that may be it
    candidates: tuple[str, ...] = ()
    machine: MachineAnswer | None = None  # a version, the driver or the GPU (``machine_explain``)


def shown_symbol(symbol: str) -> str:
    text = demangle(symbol)
    return f"{clipped(text, 200)} ({clipped(symbol, 120)})" if text else clipped(symbol, 200)
