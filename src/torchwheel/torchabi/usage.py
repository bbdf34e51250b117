"""What a binary's imports say about its torch contract.

Two kinds of torch symbols matter. The stable C shim (``aoti_torch_*``, ``torch_*``, C
linkage, so never mangled) is what the LibTorch stable ABI promises to keep; each
function has a release that introduced it, so the newest one imported is the oldest
torch the binary can load on. Everything else from libtorch's C++ namespaces
(``at::``, ``c10::``, ``torch::`` outside the header-only ``torch::stable`` and
``torch::headeronly``) breaks with every release. Which C++ names are libtorch's is
``cxxnames``'s question (Itanium for ELF, Mach-O and MinGW; MSVC).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from torchwheel.binary.facts import SliceFacts
from torchwheel.torchabi.cxxnames import unstable_name
from torchwheel.torchabi.symtable import BASELINE, SymbolTable
from torchwheel.version import FeatureVersion

Usage = Literal["none", "stable", "unstable"]

_SHIM_PREFIXES = ("aoti_torch_", "torch_")


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
    # Weak shim imports -> release (None: unknown to the table). The library calls them only
    # when present, so they are in none of the fields above and set no floor.
    weak_symbols: tuple[tuple[str, FeatureVersion | None], ...] = ()

    def newer_than(self, version: FeatureVersion) -> list[tuple[str, FeatureVersion]]:
        """The imported shims a torch of ``version`` does not have yet."""
        return [(n, v) for n, v in self.introduced if v > version]


def is_shim_name(name: str) -> bool:
    return name.startswith(_SHIM_PREFIXES)


def analyze(slice_: SliceFacts, table: SymbolTable) -> TorchUsage:
    weak = (imp.name for imp in slice_.imports if imp.weak)
    return analyze_imports((imp.name for imp in slice_.imports), table, weak)


def analyze_imports(names: Iterable[str], table: SymbolTable, weak: Iterable[str] = ()) -> TorchUsage:
    """``weak``: the names of ``names`` imported weakly only (a strong import of the same name wins).

    A weak unstable C++ import still counts as unstable: weakness only lets the library load
    without it; where torch has it, the library calls it with the layouts of its build torch.
    """
    names = set(names)
    strong = names - set(weak)
    stable: list[str] = []
    unknown: list[str] = []
    unstable: list[str] = []
    introduced: dict[str, FeatureVersion] = {}
    weak_shims: dict[str, FeatureVersion | None] = {}
    for name in sorted(names):
        if is_shim_name(name) or name in table.symbols:
            try:
                gated = table.introduced(name)
                version: FeatureVersion | None = gated if gated is not None else BASELINE
            except KeyError:
                version = None  # unknown to the table
            if name not in strong:
                weak_shims[name] = version
                continue
            stable.append(name)
            if version is None:
                unknown.append(name)
            else:
                introduced[name] = version
        else:
            text = unstable_name(name)
            if text is not None:
                unstable.append(text)
    min_version = max(introduced.values(), default=None)
    if min_version is None and unknown:
        min_version = BASELINE
    pinning = tuple(n for n, v in introduced.items() if v == min_version and min_version != BASELINE)
    usage: Usage = "unstable" if unstable else "stable" if stable or weak_shims else "none"
    return TorchUsage(
        usage=usage,
        stable_symbols=tuple(stable),
        min_version=min_version,
        min_is_lower_bound=bool(unknown),
        pinning_symbols=pinning,
        unknown_symbols=tuple(unknown),
        unstable_symbols=tuple(sorted(set(unstable))),
        introduced=tuple(sorted(introduced.items())),
        weak_symbols=tuple(sorted(weak_shims.items())),
    )
