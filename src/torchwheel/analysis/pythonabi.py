"""CPython ABI signals of one compiled file: suffix, hook, symbols, Python DLL.

The signals are the public ones: the module file name suffix (PEP 3149,
``importlib.machinery.EXTENSION_SUFFIXES``), the init hook (``PyInit_*``, PEP 489, and
``PyModExport_*``), the imported ``Py*`` symbols against the limited API's (PEP 384, PEP 803,
abi3info's ``added`` versions) and on Windows the Python DLL imported. Only
what a binary proves is claimed: a non-limited ``Py*`` import proves version-specific;
the newest limited-API symbol is a *lower bound* of the limited-API version (macros and
inlined field accesses leave no symbol), never the exact ``Py_LIMITED_API`` value.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

from torchwheel.binary.facts import SliceFacts
from torchwheel.frozen import frozen
from torchwheel.limits import listed

PythonABI = Literal["not-python", "abi3", "abi3t", "version-specific", "version-specific-ft"]
SuffixKind = Literal["cpython", "abi3", "abi3t", "bare", "library"]

# Inline Py_DECREF of a free-threaded, version-specific build calls these (refcount.h).
_FT_ONLY = frozenset({"_Py_MergeZeroLocalRefcount", "_Py_DecRefShared", "_Py_DecRefSharedDebug"})
_HOOK_PREFIXES = ("PyInit_", "PyInitU_", "PyModExport_", "PyModExportU_")
_PY_DLL = re.compile(r"^python3(\d+)?(t)?(_d)?\.dll$", re.IGNORECASE)
_CPYTHON_SO = re.compile(r"\.cpython-3(\d+)(t)?(d)?(-[^.]+)?\.so$")
_CP_PYD = re.compile(r"\.cp3(\d+)(t)?-[^.]+\.pyd$")
_ABI_SO = re.compile(r"\.(abi3t?)(-[^.]+)?\.so$")


@frozen
class Suffix:
    """What the file name asks the import system for (signal S1)."""

    kind: SuffixKind
    module: str | None  # the import name the suffix implies; None for libraries
    python: str | None = None  # "3.12" for version-specific suffixes
    free_threaded: bool = False


def parse_suffix(filename: str) -> Suffix:
    name = filename.rsplit("/", 1)[-1]
    for pattern, kind in ((_CPYTHON_SO, "cpython"), (_CP_PYD, "cpython")):
        m = pattern.search(name)
        if m:
            return Suffix(kind, name[: m.start()], f"3.{m.group(1)}", m.group(2) == "t")  # type: ignore[arg-type]
    m = _ABI_SO.search(name)
    if m:
        return Suffix(m.group(1), name[: m.start()], None, m.group(1) == "abi3t")  # type: ignore[arg-type]
    if name.endswith(".pyd"):
        return Suffix("bare", name[: -len(".pyd")].removesuffix("_d"))
    if name.endswith(".so") and not name.startswith("lib"):
        return Suffix("bare", name[: -len(".so")])
    return Suffix("library", None)


@cache
def _limited_api() -> dict[str, tuple[int, int]]:
    """Limited-API symbol -> the CPython version that added it (from abi3info)."""
    import abi3info

    table: dict[str, tuple[int, int]] = {}
    for entries in (abi3info.FUNCTIONS, abi3info.DATAS):
        for sym, item in entries.items():
            table[sym.name] = (item.added.major, item.added.minor)
    return table


@frozen
class PythonFacts:
    hooks: tuple[str, ...]
    limited_symbols: int
    limited_floor: str | None  # newest limited-API symbol's version: a lower bound
    floor_symbols: tuple[str, ...]
    non_limited_symbols: tuple[str, ...]  # the first max-listed; the verdict counts them all
    python_dll: str | None
    verdict: PythonABI
    non_limited_omitted: int = 0


def analyze_python_abi(facts: SliceFacts) -> PythonFacts:
    hooks = facts.hooks
    py_imports = sorted(
        {
            imp.name
            for imp in facts.imports
            if imp.name.startswith(("Py", "_Py")) and not imp.name.startswith(_HOOK_PREFIXES)
        }
    )
    limited = _limited_api() if py_imports else {}  # abi3info: 8 ms to import, asked only when needed
    found = {name: limited[name] for name in py_imports if name in limited}
    non_limited, non_limited_omitted = listed(name for name in py_imports if name not in limited)
    floor = max(found.values(), default=None)
    floor_symbols = tuple(n for n, v in found.items() if v == floor)
    dll = next((lib for lib in facts.needed if _PY_DLL.match(lib.rsplit("\\", 1)[-1])), None)
    dll_match = _PY_DLL.match(dll) if dll else None

    verdict: PythonABI
    if not hooks and not py_imports:
        verdict = "not-python"
    elif _FT_ONLY & set(py_imports) or (dll_match and dll_match.group(1) and dll_match.group(2)):
        verdict = "version-specific-ft"
    elif non_limited or non_limited_omitted or (dll_match and dll_match.group(1)):
        verdict = "version-specific"
    elif (dll_match and dll_match.group(2)) or (hooks and all(h.startswith("PyModExport") for h in hooks)):
        verdict = "abi3t"
    else:
        verdict = "abi3"
    return PythonFacts(
        hooks=hooks,
        limited_symbols=len(found),
        limited_floor=f"{floor[0]}.{floor[1]}" if floor else None,
        floor_symbols=floor_symbols,
        non_limited_symbols=tuple(non_limited),
        python_dll=dll,
        verdict=verdict,
        non_limited_omitted=non_limited_omitted,
    )
