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

from collections.abc import Iterable, Iterator
from typing import Literal

from torchwheel import limits
from torchwheel.binary.facts import SliceFacts
from torchwheel.frozen import frozen
from torchwheel.limits import Listing, listed
from torchwheel.tables.symtable import BASELINE, SymbolTable
from torchwheel.torchabi.cxxnames import demangle, is_unstable
from torchwheel.version import FeatureVersion

Usage = Literal["none", "stable", "unstable"]

_SHIM_PREFIXES = ("aoti_torch_", "torch_")


@frozen
class TorchUsage:
    """The torch facts of one slice, ready for the rules and for JSON.

    The verdict (``usage``, ``min_version``, ``min_is_lower_bound``) is decided over every
    import; the name lists are only shown, so each keeps what ``limits.Listing`` allows and
    counts the rest (``*_omitted``): an ELF can import a million distinct shim names.
    """

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
    # with unknown shims: the newest torch the judging table speaks for (its ``newest``). No
    # torch up to it exports them (the table dates every shim those releases export or
    # declare), so they need a torch newer than the tables: on one up to it the import fails
    table_newest: FeatureVersion | None = None
    # what of a torch build the strong shim imports need beyond its release (the table's
    # ``needs``: ``python``, ``distributed``), sorted
    build_needs: tuple[str, ...] = ()
    # names past max-listed / max-listed-bytes, counted and not listed above
    stable_omitted: int = 0
    unknown_omitted: int = 0
    unstable_omitted: int = 0
    weak_omitted: int = 0

    @property
    def stable_count(self) -> int:
        return len(self.stable_symbols) + self.stable_omitted

    @property
    def unknown_count(self) -> int:
        return len(self.unknown_symbols) + self.unknown_omitted

    @property
    def unstable_count(self) -> int:
        return len(self.unstable_symbols) + self.unstable_omitted

    def newer_than(self, version: FeatureVersion) -> list[tuple[str, FeatureVersion]]:
        """The imported shims a torch of ``version`` does not have yet."""
        return [(n, v) for n, v in self.introduced if v > version]


def is_shim_name(name: str) -> bool:
    return name.startswith(_SHIM_PREFIXES)


def analyze(slice_: SliceFacts, table: SymbolTable) -> TorchUsage:
    weak = (imp.name for imp in slice_.imports if imp.weak)
    return analyze_imports((imp.name for imp in slice_.imports), table, weak)


def _distinct(names: Iterable[str]) -> Iterator[str]:
    """Sorted, each once: a sorted list of references costs 8 bytes a name, a set about 40."""
    previous = None
    for name in sorted(names):
        if name != previous:
            yield name
        previous = name


def _unstable_listing(mangled: list[str]) -> tuple[list[str], int]:
    """The unstable names shown: each demangled once, sorted by that text, within
    ``limits.Listing``; and how many more there were.

    Only the first ``max-listed`` names (in mangled order) are demangled: the text costs memory
    that is never given back (``cxxnames.demangle``). Up to that many, which is every library
    published (torch_python.dll has 6,047), the list and its count are those of every import.
    """
    keep = limits.current().max_listed.value
    texts = _distinct(demangle(name) or name for name in mangled[:keep])
    kept, more = listed(texts)
    return kept, more + max(0, len(mangled) - keep)


def analyze_imports(names: Iterable[str], table: SymbolTable, weak: Iterable[str] = ()) -> TorchUsage:
    """``weak``: the names of ``names`` imported weakly only (a strong import of the same name wins).

    A weak unstable C++ import still counts as unstable: weakness only lets the library load
    without it; where torch has it, the library calls it with the layouts of its build torch.
    """
    weak_names = set(weak)
    stable: Listing[str] = Listing()
    unknown: Listing[str] = Listing()
    weak_shims: Listing[tuple[str, FeatureVersion | None]] = Listing(lambda item: item[0])
    introduced: dict[str, FeatureVersion] = {}  # names of the table: bounded by it
    unstable: list[str] = []  # mangled, in name order: references, demangled only when listed
    any_unknown = False
    needs: set[str] = set()
    for name in _distinct(names):
        if is_shim_name(name) or name in table.symbols:
            try:
                gated = table.introduced(name)
                version: FeatureVersion | None = gated if gated is not None else BASELINE
            except KeyError:
                version = None  # unknown to the table
            if name in weak_names:
                weak_shims.add((name, version))
                continue
            stable.add(name)
            if version is None:
                unknown.add(name)
                any_unknown = True
            else:
                introduced[name] = version
                needs.update(table.origin(name).needs)
        elif is_unstable(name):
            unstable.append(name)
    min_version = max(introduced.values(), default=None)
    if min_version is None and any_unknown:
        min_version = BASELINE
    pinning = tuple(n for n, v in introduced.items() if v == min_version and min_version != BASELINE)
    has_stable = bool(stable.kept or stable.more or weak_shims.kept or weak_shims.more)
    usage: Usage = "unstable" if unstable else "stable" if has_stable else "none"
    unstable_kept, unstable_more = _unstable_listing(unstable)
    return TorchUsage(
        usage=usage,
        stable_symbols=tuple(stable.kept),
        min_version=min_version,
        min_is_lower_bound=any_unknown,
        pinning_symbols=pinning,
        unknown_symbols=tuple(unknown.kept),
        unstable_symbols=tuple(unstable_kept),
        introduced=tuple(sorted(introduced.items())),
        weak_symbols=tuple(weak_shims.kept),
        table_newest=table.newest if any_unknown else None,
        build_needs=tuple(sorted(needs)),
        stable_omitted=stable.more,
        unknown_omitted=unknown.more,
        unstable_omitted=unstable_more,
        weak_omitted=weak_shims.more,
    )
