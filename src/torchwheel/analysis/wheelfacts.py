"""Per-wheel facts: the metadata, RECORD status, and every compiled member analysed, and
what they add up to (the torch ABI the wheel can honestly declare).

Frozen data that the rules, the reports and ``tag``'s plan judge without touching a file;
``collect`` is the one place that builds it from a source. What the facts add up to (the
build units, the torch builds and accelerators, the torch need) is derived once per facts
object, on first use (``cached_property``: a frozen dataclass keeps its ``__dict__``), so
the rules and reports that read it share one computation; ``dataclasses.replace`` builds a
new object whose derived facts are computed afresh from its own fields.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import field
from functools import cached_property
from typing import Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.analysis import buildunits
from torchwheel.analysis.alternatives import Alternatives, find_alternatives
from torchwheel.analysis.buildunits import Brought, BuildUnit
from torchwheel.analysis.member import MemberBinary, SliceAnalysis, UnreadableBinary
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.analysis.reach import Reaching
from torchwheel.frozen import frozen
from torchwheel.tables.symtable import BASELINE
from torchwheel.torchabi import accelerators, cuda_archs
from torchwheel.torchabi.accelerators import AcceleratorNeeds
from torchwheel.torchabi.backend import BuildSet
from torchwheel.torchabi.cxxnames import is_unstable
from torchwheel.torchabi.need import (
    Kind,
    OptionalPart,
    OptionalWhen,
    Release,
    ReleasesFrom,
    TorchNeed,
    claimed_releases,
    narrowed_builds,
    pinned_builds,
)
from torchwheel.torchabi.torch_releases import Minor
from torchwheel.version import FeatureVersion
from torchwheel.wheel.contents import WheelContents
from torchwheel.wheel.metadata import MetadataFacts
from torchwheel.wheel.record import RecordProblem

# The core libraries only the torch distribution itself ships, by platform.
_LIBTORCH_CORE = re.compile(r"torch/lib/(lib)?(torch_cpu|c10)\.(so(\.[0-9.]+)?|dylib|dll)")

_UNTAGGED = "binaries (untagged wheel)"  # who read a need that no WHEEL field stated


@frozen
class WheelFacts:
    contents: WheelContents
    metadata: MetadataFacts
    binaries: tuple[MemberBinary, ...] = ()
    unreadable: tuple[UnreadableBinary, ...] = ()
    record_problems: tuple[RecordProblem, ...] = ()  # up to max-listed per kind
    record_problems_omitted: Mapping[str, int] = field(default_factory=dict)  # kind -> problems not kept
    hashes: Mapping[str, tuple[str, int]] = field(default_factory=dict)  # member -> (RECORD hash, size)
    hashes_verified: bool = True
    kind: Literal["wheel", "directory", "binary"] = "wheel"
    # module names the wheel's .py files import (ast, never run; only files mentioning a
    # hook-less module-named library are parsed: see pyimports and collect's hookless_modules)
    py_imports: frozenset[str] = frozenset()
    # package directory -> the flavour its loader takes whenever that file exists (``cuda``):
    # ``analysis.loaders``, read only where a CPU and an accelerated flavour sit side by side
    loader_prefers: Mapping[str, str] = field(default_factory=dict)
    # the flavour sets (``unit_key``) whose loader goes on without them where none loads:
    # ``analysis.loaders.fallback_units``; such a set loads where any member does
    loader_fallbacks: frozenset[str] = frozenset()
    # member -> the kernel manifest that names it: code for an accelerator's own cores, which
    # no host loader of the package reads (``analysis.device_code``); TW405 leaves it alone
    device_code: Mapping[str, str] = field(default_factory=dict)
    # how the package's own Python reaches each compiled file (``analysis.reach``): imported
    # as a module or loaded by path, at import, optionally or on use
    reach: Reaching = field(default_factory=Reaching)

    @property
    def is_wheel_file(self) -> bool:
        return self.kind == "wheel"

    @cached_property
    def brought_runtimes(self) -> Brought:
        """The toolkit runtimes the wheel brings itself (its requirements, bundled copies)."""
        c = self.contents
        return buildunits.brought_runtimes(self.metadata.requirements, c.wheel_tags, c.members)

    @cached_property
    def build_units(self) -> tuple[BuildUnit, ...]:
        """The compiled members grouped into libraries, with the torch builds each loads on."""
        return buildunits.build_units(
            self.binaries, self.brought_runtimes, self.loader_prefers, self.loader_fallbacks
        )

    @cached_property
    def torch_builds(self) -> BuildSet | None:
        """The torch builds the wheel loads on (``ANY_BUILD``; ``{cpu, cuda-13}``); None when a
        compiled member could not be read (its needs are unknown, so the wheel's are)."""
        return None if self.unreadable else buildunits.loads_on(self.build_units)

    @cached_property
    def accelerator_needs(self) -> AcceleratorNeeds:
        """Every library's torch build, accelerator runtimes and GPU code, joined."""
        return accelerators.combine(s.accelerators for _, _, s in iter_slices(self))

    @cached_property
    def declared_targets(self) -> Mapping[str, FeatureVersion]:
        """The known declared target of each marked slice, keyed ``member`` or ``member[arch]``."""
        out: dict[str, FeatureVersion] = {}
        for b in self.binaries:
            multi = len(b.analysis.slices) > 1
            for s in b.analysis.slices:
                if s.declared is not None and s.declared.record.version is not None:
                    out[f"{b.member}[{s.facts.arch}]" if multi else b.member] = s.declared.record.version
        return out

    @cached_property
    def alternatives(self) -> tuple[Alternatives, ...]:
        """The per-release sets among the unstable libraries (``analysis.alternatives``)."""
        unstable = self._unstable_members
        return tuple(find_alternatives(sorted(unstable))) if unstable else ()

    @cached_property
    def torch_need(self) -> TorchNeed:
        """The one reading of the wheel's need from its binaries, every axis (``torchabi.need``):
        what ``tag`` writes into WHEEL, and what ``select`` reads of an untagged wheel."""
        return _torch_need(self)

    @cached_property
    def every_file_need(self) -> TorchNeed:
        """The need of every compiled file as if the import needed each (its optional parts
        too): what rules about the files themselves judge (a per-release build named for a
        torch that lacks its imports is wrong wherever the package picks it)."""
        return _files_need(self)

    @cached_property
    def provides_libtorch(self) -> bool:
        """Is this torch itself (any build: ``+cpu``, ``+cu128``, a fork under another name)?

        By name (``torch``) or by the facts: ``torch/lib/`` holds libtorch's core libraries.
        A distribution cannot require itself, so the Requires-Dist rules and ``tag``'s
        requirement rewrite leave it alone. An extension that vendors libtorch in a directory
        of its own is not torch and keeps them.
        """
        return is_torch_itself(self.contents)

    @cached_property
    def _unstable_members(self) -> frozenset[str]:
        return frozenset(member for member, _, s in iter_slices(self) if s.torch.usage == "unstable")


def is_torch_itself(c: WheelContents) -> bool:
    """``WheelFacts.provides_libtorch``, from the contents alone: named torch, or holding
    libtorch's core libraries in ``torch/lib/``."""
    if canonicalize_name(c.filename_name) == "torch":
        return True
    return any(_LIBTORCH_CORE.fullmatch(m) for m in c.members)


def iter_slices(w: WheelFacts) -> Iterator[tuple[str, str, SliceAnalysis]]:
    """(member, arch, slice) for every slice of every readable compiled member."""
    for b in w.binaries:
        for s in b.analysis.slices:
            yield b.member, s.facts.arch, s


def torch_need_of(w: WheelFacts, source: str = _UNTAGGED) -> TorchNeed:
    """The wheel's need (``WheelFacts.torch_need``) as read by ``source`` (``tag``), which
    the need names when it explains itself."""
    need = w.torch_need
    return need if need.source == source else dataclasses.replace(need, source=source)


def _per_release(w: WheelFacts) -> frozenset[Release]:
    """The releases an unstable wheel has builds for, when every unstable library belongs
    to a per-release set; empty otherwise (then something else must date it)."""
    per_release = {member for a in w.alternatives for _, member in a.members}
    if w.alternatives and w._unstable_members <= per_release:
        return frozenset(b for a in w.alternatives for b in a.builds)
    return frozenset()


def _torch_need(w: WheelFacts) -> TorchNeed:
    """``WheelFacts.torch_need``: the need of the files the package's import cannot do
    without (``analysis.reach``), with each optional part's own need beside it."""
    parts = _optional_groups(w)
    if not parts:
        return _files_need(w)
    optional = {m for _, _, members in parts for m in members}
    need = _files_need(_only(w, [b for b in w.binaries if b.member not in optional], keep_unreadable=True))
    found = tuple(
        OptionalPart(
            tuple(members),
            when,
            dataclasses.replace(
                _files_need(_only(w, [b for b in w.binaries if b.member in members])), requirements=()
            ),
            why,
        )
        for when, why, members in parts
    )
    return dataclasses.replace(need, optional=found)


def files_need(w: WheelFacts, members: Iterable[str]) -> TorchNeed:
    """The need of some of the wheel's files alone, as if the import needed each of them
    (``doctor --explain`` on one file): no optional parts, no requirement."""
    wanted = set(members)
    need = _files_need(_only(w, [b for b in w.binaries if b.member in wanted]))
    return dataclasses.replace(need, requirements=())


def _only(w: WheelFacts, binaries: Sequence[MemberBinary], keep_unreadable: bool = False) -> WheelFacts:
    """The facts of some of the wheel's files (``_files_need`` reads them as required)."""
    return dataclasses.replace(
        w, binaries=tuple(binaries), unreadable=w.unreadable if keep_unreadable else ()
    )


def _optional_groups(w: WheelFacts) -> list[tuple[OptionalWhen, str, list[str]]]:
    """The files the import goes on without, grouped by when and why (``analysis.reach``)."""
    groups: dict[tuple[OptionalWhen, str], list[str]] = {}
    for b in w.binaries:
        r = w.reach.of(b.member)
        if r.when != "import":
            groups.setdefault((r.when, r.why), []).append(b.member)
    return [(when, why, members) for (when, why), members in groups.items()]


def _files_need(w: WheelFacts) -> TorchNeed:
    """The need of every file of ``w``, and those its code imports as modules that export
    no hook for their name (``TorchNeed.unimportable``)."""
    need = _torch_axes(w)
    hookless = tuple(
        b.member
        for b in w.binaries
        if w.reach.of(b.member).how == "module"
        and (module := parse_suffix(b.member).module) is not None
        and not any(
            {f"PyInit_{module}", f"PyModExport_{module}"} & set(s.python.hooks) for s in b.analysis.slices
        )
    )
    return dataclasses.replace(need, unimportable=hookless) if hookless else need


def _torch_axes(w: WheelFacts) -> TorchNeed:
    """The torch axes of the need of every file of ``w``. An unstable build's releases come from its per-release file
    names, else from the torch releases that export its imports (``torchabi.exports``: the
    binary dates itself), else from its own words (a ``+torchX.Y`` label, a one-minor pin),
    which the need then names. The build axis is the binaries', narrowed to the build an
    exact pin's local label names (``torch==2.8.0+cpu``): installers put it nowhere else.
    Imports no torch of the tables exports make it "newer than the tables" (``TorchNeed.newer``)."""
    declared = max(w.declared_targets.values(), default=None)
    reqs, source = w.metadata.torch_requirements, _UNTAGGED
    builds, why = (
        narrowed_builds(w.torch_builds, pinned_builds(reqs)),
        buildunits.build_evidence(w.build_units),
    )
    gpu = None if w.unreadable else frozenset(cuda_archs.code_names(w.accelerator_needs.gpu))
    if w._unstable_members:
        found, how, newer, tables = _unstable_releases(w)
        return TorchNeed(
            "unstable", None, found, how, builds, gpu, reqs, source, declared, why, newer, tables
        )
    floors = [s.torch.min_version for _, _, s in iter_slices(w) if s.torch.min_version is not None]
    if declared is not None or floors:
        floor = max([*floors, *([declared] if declared else [])])
        newer, tables = _newer_shims(w)
        return TorchNeed(
            "stable", floor, frozenset(), "", builds, gpu, reqs, source, declared, why, newer, tables
        )
    kind: Kind = "any" if any(s.accelerators.links_torch for _, _, s in iter_slices(w)) else "none"
    return TorchNeed(kind, None, frozenset(), "", builds, gpu, reqs, source, declared, why)


_NEWER_KEPT = 10


def _unstable_releases(
    w: WheelFacts,
) -> tuple[frozenset[Release], ReleasesFrom, tuple[str, ...], Minor | None]:
    """An unstable build's releases, where they were read, its imports newer than the tables
    and the newest minor those tables speak for (``_torch_need``'s order)."""
    found = _per_release(w)
    if found:
        return _above_shim_floors(w, found), "names", (), None
    dated = dated_by_exports(w.binaries)
    if dated.releases or dated.newer:
        return _above_shim_floors(w, dated.releases), "exports", dated.newer, dated.tables
    try:
        version = Version(w.contents.filename_version)
    except InvalidVersion:
        version = Version("0")
    claimed, how = claimed_releases(w.metadata.torch_requirements, version)
    return _above_shim_floors(w, claimed), how, (), None


def _at_least(release: Release, floor: FeatureVersion) -> bool:
    """Does a build for ``release`` (a minor, or one patch release) have the shims of ``floor``?"""
    if len(release) == 2:
        return release >= (floor.major, floor.minor)
    return release >= (floor.major, floor.minor, floor.patch)


def _above_shim_floors(w: WheelFacts, found: frozenset[Release]) -> frozenset[Release]:
    """The releases of an unstable build that every library's stable shims allow: one floor
    for every import (issue 46). A library's range starts no earlier than the newest shim it
    imports, whatever else dates it (its unstable imports are exported by older torches
    too); a per-release build is held to its own shims, every other library to all of its.
    Shims of the table's baseline date nothing (the table says only "in every release it
    covers"), so they set no floor here."""
    per_member = {member for a in w.alternatives for _, member in a.members}
    build_of = {member: build for a in w.alternatives for build, member in a.members}
    floors: dict[str, FeatureVersion] = {}
    for member, _, s in iter_slices(w):
        floor = s.torch.min_version
        if floor is not None and floor > BASELINE and (member not in floors or floor > floors[member]):
            floors[member] = floor
    if not floors:
        return found
    common = [f for m, f in floors.items() if m not in per_member]
    kept = frozenset(r for r in found if all(_at_least(r, f) for f in common))
    for member, floor in floors.items():
        build = build_of.get(member)
        if build is not None and not _at_least(build, floor):
            kept -= {build}
    return kept


def _newer_shims(w: WheelFacts) -> tuple[tuple[str, ...], Minor | None]:
    """The imported shims the table does not know, less those a library of the wheel itself
    exports (a ``torch_*`` helper of its own resolves inside the wheel), and the table's
    newest minor: no torch up to it exports them."""
    unknown = [(s.torch, n) for _, _, s in iter_slices(w) for n in s.torch.unknown_symbols]
    omitted = any(s.torch.unknown_omitted for _, _, s in iter_slices(w))
    if not unknown and not omitted:
        return (), None
    own = {e for _, _, s in iter_slices(w) for e in s.facts.exports}
    names = sorted({n for _, n in unknown if n not in own})
    newest = [t.table_newest for _, _, s in iter_slices(w) if (t := s.torch).table_newest is not None]
    if not (names or omitted) or not newest:
        return (), None
    last = min(newest)
    return tuple(names[:_NEWER_KEPT]) or ("(names past the listing bound)",), (last.major, last.minor)


@frozen
class Dated:
    """What the exports index says of a wheel's unstable imports (``dated_by_exports``)."""

    releases: frozenset[Release] = frozenset()  # the minors where its (known) imports meet
    newer: tuple[str, ...] = ()  # imports no indexed release exports (the first ten)
    tables: Minor | None = None  # the newest minor every index read speaks for


def dated_by_exports(binaries: Sequence[MemberBinary]) -> Dated:
    """The torch minors whose exports hold every strong unstable torch import of the wheel
    (``torchabi.exports``: the loader's sense of "loads"), per platform, with the newest minor
    the indexes speak for. Imports no indexed release exports are ``newer`` when the known ones
    meet in the newest indexed minor (a build for a torch after it: the minors are then only
    where the known ones meet, and the others may also come from another library). Empty when
    no index can say (none for a platform, or it knows none of the names), when no indexed
    torch exports the names together, or when the known ones do not reach the newest minor (a
    build for a torch older than the index, or not torch's names): then the version is unknown."""
    # deferred: exports (lzma, the index format) costs 3 ms at start-up; only an unstable
    # wheel is dated by it
    from torchwheel.tables.exports import exports_index, platform_of

    wanted: dict[str, set[str]] = {}
    for b in binaries:
        for s in b.analysis.slices:
            if s.torch.usage == "unstable":
                names = wanted.setdefault(platform_of(b.analysis.facts.format, s.facts.arch), set())
                names.update(imp.name for imp in s.facts.imports if not imp.weak and is_unstable(imp.name))
    found: frozenset[Release] | None = None
    newer: list[str] = []
    newest: list[Minor] = []
    for platform, names in sorted(wanted.items()):
        index = exports_index(platform)
        dating = index.dating(names) if index is not None else None
        if index is None or dating is None or not dating.known:
            return Dated()
        found = dating.minors if found is None else found & dating.minors
        if not dating.decides:  # some names no indexed release exports: newer than the index
            newer += dating.unknown
        newest.append(index.newest)
    if not found or (newer and min(newest) not in found):
        return Dated()  # its known imports are not the newest torch's: an older build, or not torch's
    return Dated(found, tuple(sorted(set(newer))[:_NEWER_KEPT]), min(newest))


def indexed_minors(binary: MemberBinary) -> frozenset[tuple[int, int]]:
    """The torch minors the shipped exports index has read for every platform of this
    binary's unstable slices: where ``dated_by_exports`` can tell a release apart."""
    from torchwheel.tables.exports import exports_index, platform_of  # deferred: as above

    found: frozenset[tuple[int, int]] | None = None
    for s in binary.analysis.slices:
        if s.torch.usage == "unstable":
            index = exports_index(platform_of(binary.analysis.facts.format, s.facts.arch))
            minors = (
                frozenset((r.major, r.minor) for r in index.releases) if index is not None else frozenset()
            )
            found = minors if found is None else found & minors
    return found or frozenset()
