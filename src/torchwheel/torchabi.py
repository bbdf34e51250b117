"""What a binary's imports say about its torch contract.

Two kinds of torch symbols matter. The stable C shim (``aoti_torch_*``, ``torch_*``, C
linkage, so never mangled) is what the LibTorch stable ABI promises to keep; each
function has a release that introduced it, so the newest one imported is the oldest
torch the binary can load on. Everything else from libtorch's C++ namespaces
(``at::``, ``c10::``, ``torch::`` outside the header-only ``torch::stable`` and
``torch::headeronly``) breaks with every release. Mangled names are demangled with
pydemumble, which reads both Itanium (ELF, Mach-O, MinGW) and MSVC spellings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import pydemumble

from torchwheel.binary.facts import SliceFacts
from torchwheel.symtable import BASELINE, SymbolTable
from torchwheel.version import FeatureVersion

Usage = Literal["none", "stable", "unstable"]

_SHIM_PREFIXES = ("aoti_torch_", "torch_")
_UNSTABLE_NAMESPACES = ("at::", "c10::", "torch::", "caffe2::")
_STABLE_NAMESPACES = ("torch::stable::", "torch::headeronly::")
# Prefixes of demangled names that are not part of the entity's qualified name.
_DEMANGLED_NOISE = (
    "vtable for ",
    "VTT for ",
    "construction vtable for ",
    "typeinfo for ",
    "typeinfo name for ",
    "guard variable for ",
    "non-virtual thunk to ",
    "virtual thunk to ",
    "covariant return thunk to ",
    "reference temporary for ",
)


@dataclass(frozen=True)
class TorchUsage:
    """The torch facts of one slice, ready for the rules and for JSON."""

    usage: Usage
    stable_symbols: tuple[str, ...]
    min_version: FeatureVersion | None
    min_is_lower_bound: bool  # unknown shim symbols may need a newer torch still
    pinning_symbols: tuple[str, ...]
    unknown_symbols: tuple[str, ...]
    unstable_symbols: tuple[str, ...]  # demangled
    introduced: tuple[tuple[str, FeatureVersion], ...] = ()  # known stable symbol -> release

    def newer_than(self, version: FeatureVersion) -> list[tuple[str, FeatureVersion]]:
        """The imported shims a torch of ``version`` does not have yet."""
        return [(n, v) for n, v in self.introduced if v > version]


def is_shim_name(name: str) -> bool:
    return name.startswith(_SHIM_PREFIXES)


@lru_cache(maxsize=65536)
def demangle(name: str) -> str | None:
    """The demangled spelling, or None for a name that is not C++-mangled."""
    if not name.startswith(("_Z", "?", "__Z")):
        return None
    text = pydemumble.demangle(name)
    return text if text and text != name else None


def qualified_name(demangled: str) -> str:
    """The entity a demangled symbol names, without return type, parameters or noise.

    ``void __cdecl c10::detail::f(char const *)`` and ``vtable for c10::Error`` must both
    reduce to a name whose namespace we can test; parameter types must not count, or a
    function of another library that merely takes an ``at::Tensor`` would look like torch.
    """
    text = demangled
    for noise in _DEMANGLED_NOISE:
        if text.startswith(noise):
            text = text[len(noise) :]
            break
    depth = 0
    cut = len(text)
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0 and not text[:i].endswith("operator"):
            cut = i
            break
    head = text[:cut].rstrip()
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        ch = head[i]
        if ch == ">":
            depth += 1
        elif ch == "<":
            depth -= 1
        elif ch == " " and depth == 0 and not head[:i].endswith(("operator", ",")):
            return head[i + 1 :]
    return head


def unstable_name(symbol: str) -> str | None:
    """The demangled name when ``symbol`` is unstable libtorch C++, else None."""
    text = demangle(symbol)
    if text is None:
        return None
    entity = qualified_name(text)
    if entity.startswith(_UNSTABLE_NAMESPACES) and not entity.startswith(_STABLE_NAMESPACES):
        return text
    return None


def analyze(slice_: SliceFacts, table: SymbolTable) -> TorchUsage:
    return analyze_imports((imp.name for imp in slice_.imports), table)


def analyze_imports(names: Iterable[str], table: SymbolTable) -> TorchUsage:
    stable: list[str] = []
    unknown: list[str] = []
    unstable: list[str] = []
    introduced: dict[str, FeatureVersion] = {}
    for name in sorted(set(names)):
        if is_shim_name(name) or name in table.symbols:
            stable.append(name)
            try:
                version = table.introduced(name)
            except KeyError:
                unknown.append(name)
                continue
            introduced[name] = version if version is not None else BASELINE
        else:
            text = unstable_name(name)
            if text is not None:
                unstable.append(text)
    min_version = max(introduced.values(), default=None)
    if min_version is None and unknown:
        min_version = BASELINE
    pinning = tuple(n for n, v in introduced.items() if v == min_version and min_version != BASELINE)
    usage: Usage = "unstable" if unstable else "stable" if stable else "none"
    return TorchUsage(
        usage=usage,
        stable_symbols=tuple(stable),
        min_version=min_version,
        min_is_lower_bound=bool(unknown),
        pinning_symbols=pinning,
        unknown_symbols=tuple(unknown),
        unstable_symbols=tuple(sorted(set(unstable))),
        introduced=tuple(sorted(introduced.items())),
    )
