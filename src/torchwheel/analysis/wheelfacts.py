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
from typing import TYPE_CHECKING, Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.analysis import buildunits
from torchwheel.analysis.alternatives import Alternatives, find_alternatives
from torchwheel.analysis.buildunits import Brought, BuildUnit
from torchwheel.analysis.member import MemberBinary, SliceAnalysis, UnreadableBinary
from torchwheel.analysis.pyimports import installed_path
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.analysis.reach import Reaching
from torchwheel.analysis.version_lock import VersionLock
from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.tables.symtable import BASELINE
from torchwheel.torchabi import accelerators, cuda_archs
from torchwheel.torchabi.accelerators import AcceleratorNeeds
from torchwheel.torchabi.backend import BuildSet
from torchwheel.torchabi.cxxnames import is_unstable, names_text
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
    show_release,
    show_releases,
)
from torchwheel.torchabi.torch_releases import Minor
from torchwheel.version import FeatureVersion

if TYPE_CHECKING:
    from torchwheel.tables.exports import ExportIndex
    from torchwheel.tables.tableset import Tables
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
    # hook-less module-named library are parsed: see pyimports and collect's hookless_modules),
    # read only when some file's loading is left to them (``member.loaded_by_import``)
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
    # top-level package -> the torch minors on which its own ``import`` provably raises
    # (``analysis.version_lock``: zentorch's build-minor check), where it has such a lock
    version_locks: Mapping[str, VersionLock] = field(default_factory=dict)
    # the tables the members were read with (``tables.tableset``): what dates the unstable
    # imports and reads a pin; the same wheel read with other tables is other facts
    tables: Tables = field(kw_only=True, repr=False, compare=False)

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
        return None if self.unreadable else buildunits.builds_loaded_on(self.build_units)

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
    def library_datings(self) -> Mapping[str, Dated]:
        """Each unstable library dated alone by every import it has (``date_each_library``)."""
        return date_each_library(self.binaries, self.tables)

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
    optional = {m for *_, members in parts for m in members}
    need = _files_need(_only(w, [b for b in w.binaries if b.member not in optional], keep_unreadable=True))
    found = tuple(
        OptionalPart(
            tuple(members),
            when,
            dataclasses.replace(
                _files_need(_only(w, [b for b in w.binaries if b.member in members])), requirements=()
            ),
            why,
            loaded_from,
        )
        for when, why, loaded_from, members in parts
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


def _optional_groups(w: WheelFacts) -> list[tuple[OptionalWhen, str, str, list[str]]]:
    """The files the import goes on without, grouped by when, why and the torch their
    loader's version check lets them through from (``analysis.reach``)."""
    groups: dict[tuple[OptionalWhen, str, str], list[str]] = {}
    for b in w.binaries:
        r = w.reach.of(b.member)
        if r.when != "import":
            groups.setdefault((r.when, r.why, r.torch_from), []).append(b.member)
    return [(when, why, since, members) for (when, why, since), members in groups.items()]


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
    needs = tuple(sorted({n for _, _, s in iter_slices(w) for n in s.torch.build_needs}))
    if w._unstable_members:
        found, how, dated = _unstable_releases(w)
        lock, refused = "", frozenset[Minor]()
        if how == "exports" and not (dated.unresolved or dated.uncovered):
            found, lock, refused = _import_lock(w, found)
        return TorchNeed(
            "unstable", None, found, how, builds, gpu, reqs, source, declared, why, dated.newer,
            dated.tables, unresolved=dated.unresolved, uncovered=dated.uncovered, build_needs=needs,
            indexed_from=dated.oldest, lock=lock, lock_refused=refused,
        )  # fmt: skip
    floors = [s.torch.min_version for _, _, s in iter_slices(w) if s.torch.min_version is not None]
    if declared is not None or floors:
        floor = max([*floors, *([declared] if declared else [])])
        newer, tables = _newer_shims(w)
        return TorchNeed(
            "stable", floor, frozenset(), "", builds, gpu, reqs, source, declared, why, newer, tables,
            build_needs=needs,
        )  # fmt: skip
    kind: Kind = "any" if any(s.accelerators.links_torch for _, _, s in iter_slices(w)) else "none"
    return TorchNeed(kind, None, frozenset(), "", builds, gpu, reqs, source, declared, why)


def _import_lock(
    w: WheelFacts, found: frozenset[Release]
) -> tuple[frozenset[Release], str, frozenset[Minor]]:
    """The releases an unstable build's imports date it to, less the minors on which the
    package's own import raises (``analysis.version_lock``), with the raise in words and the
    minors refused; unchanged where a package holding an unstable file has no lock, or where
    the lock would leave nothing (the two readings disagree: neither is taken over the other)."""
    tops = {parts[0] if len(parts := installed_path(m).split("/")) > 1 else "" for m in w._unstable_members}
    locks = [w.version_locks.get(t) for t in sorted(tops)]
    if not locks or any(lock is None for lock in locks):
        return found, "", frozenset()
    refused = frozenset.intersection(*(lock.refused for lock in locks if lock is not None))
    kept = frozenset(r for r in found if (r[0], r[1]) not in refused)
    if not kept or kept == found:
        return found, "", frozenset()
    where = ", ".join(sorted({lock.where for lock in locks if lock is not None}))
    return kept, f"its import raises on torch {show_releases(found - kept)}: {where}", refused


_NEWER_KEPT = 10


def _unstable_releases(w: WheelFacts) -> tuple[frozenset[Release], ReleasesFrom, Dated]:
    """An unstable build's releases, where they were read, and what the exports index could
    not settle (``Dated``: imports newer than the tables, others it has in no release, builds
    it does not cover), in ``_torch_need``'s order. A label or a pin the author wrote dates a
    build the index could not."""
    found = _per_release(w)
    if found:
        return _above_shim_floors(w, found), "names", Dated()
    dated = dated_by_exports(w.binaries, w.tables)
    if dated.releases:
        return _above_shim_floors(w, dated.releases), "exports", dated
    try:
        version = Version(w.contents.filename_version)
    except InvalidVersion:
        version = Version("0")
    claimed, how = claimed_releases(w.metadata.torch_requirements, version, w.tables.releases)
    if claimed:
        return _above_shim_floors(w, claimed), how, Dated()
    return frozenset(), "", dated


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
    """What the exports index says of a wheel's unstable imports (``dated_by_exports``).

    ``releases``: the minors where the imports it knows meet (every library's, and never
    below a shim a library imports: ``_shim_floor``); the answer when nothing else is set.
    ``newer``: imports no indexed release exports while the known ones reach the newest minor
    the indexes speak for (``tables``): a build for a torch after them. ``unresolved``: imports
    no indexed release exports while the known ones end before it (another library's names, or
    an older torch's): unknown where the known ones meet, and no elsewhere. ``uncovered``: the
    builds or platforms whose exports the tables never read, for the libraries that need them
    (an XPU build, Windows CUDA, linux-aarch64): "not covered for this build", an honest unknown
    where the known imports meet, never "exported by no torch"."""

    releases: frozenset[Release] = frozenset()
    newer: tuple[str, ...] = ()
    tables: Minor | None = None
    unresolved: tuple[str, ...] = ()
    uncovered: str = ""
    oldest: Minor | None = None  # the oldest minor every index read speaks for

    def __str__(self) -> str:
        """``torch 2.10 (by its imports)``, with what the tables could not settle."""
        if not self.releases:
            said = "no torch of the export tables exports its imports together"
        elif self.unresolved or self.uncovered:
            since = f" (from {show_release(self.oldest)})" if self.oldest is not None else ""
            said = f"by its known imports, torch {show_releases(self.releases)} of the releases the tables read{since}"
        else:
            said = f"torch {show_releases(self.releases)} (by its imports)"
        if self.uncovered:
            said += f"; not covered for this build: {self.uncovered}"
        if self.unresolved:
            said += f"; exported by none of them: {names_text(self.unresolved)}"
        if self.newer and self.tables is not None:
            said += f"; newer than the tables (up to {show_release(self.tables)}): {names_text(self.newer)}"
        return said

    def to_json(self) -> dict[str, object]:
        return {
            "releases": [show_release(r) for r in sorted(self.releases)],
            "newer_than_tables": list(self.newer),
            "unresolved": list(self.unresolved),
            "not_covered": self.uncovered or None,
        }


@frozen
class _LibraryDating:
    minors: frozenset[Release] | None  # None: no known import restricts it
    newer: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    uncovered: str = ""
    newest: Minor | None = None
    oldest: Minor | None = None


def _index_kinds(index: ExportIndex) -> frozenset[str]:
    """The kinds of torch build (``cpu``, ``cuda``, ``rocm``, ``xpu``) an index has read."""
    from torchwheel.torchabi.backend import parse_backend  # deferred with the index itself

    kinds = set()
    for builds in index.builds:
        for name in builds:
            try:
                kinds.add(parse_backend(name).kind)
            except InputError:
                continue  # "unknown": a build nothing named
    return frozenset(kinds)


def _shim_floor(s: SliceAnalysis) -> Minor | None:
    """The minor the library's stable shims need, where it is past the shim table's baseline
    (an unstable library that calls a 2.10 shim loads on no torch before 2.10, whatever its
    C++ imports say); None when they need no more than the baseline."""
    from torchwheel.tables.symtable import BASELINE

    floor = s.torch.min_version
    return (floor.major, floor.minor) if floor is not None and floor > BASELINE else None


def _own_exports(binaries: Sequence[MemberBinary]) -> frozenset[str]:
    """What the wheel's own libraries export: an import of one of those names resolves
    inside the wheel (a sibling library's ``at::`` op, a ``torch_*`` helper), never in torch.
    torch's own libraries (the torch wheel itself, or a bundled copy: TW703) are torch's,
    whose names date the build as any torch's do."""
    return frozenset(
        e
        for b in binaries
        if not _is_torch_library(b.member)
        for s in b.analysis.slices
        for e in s.facts.exports
    )


def _is_torch_library(member: str) -> bool:
    lib = accelerators.classify_library(member)
    return lib is not None and lib.role in ("torch", "torch-python")


def _date_library(binary: MemberBinary, own: frozenset[str], tables: Tables) -> _LibraryDating | None:
    """One library dated by every import it has (None: it has no unstable slice): its C++
    names by the export index of each platform (``tables``'), never below the stable shims it
    also calls, less the names the wheel's own libraries export."""
    from torchwheel.tables.exports import platform_of  # deferred: see below

    found: frozenset[Release] | None = None
    newer: list[str] = []
    unresolved: list[str] = []
    uncovered: list[str] = []
    newest: list[Minor] = []
    oldest: list[Minor] = []
    dated = False
    for s in binary.analysis.slices:
        if s.torch.usage != "unstable":
            continue
        dated = True
        platform = platform_of(binary.analysis.facts.format, s.facts.arch)
        newer += [n for n in s.torch.unknown_symbols if n not in own]  # shims no torch of the table exports
        index = tables.exports_index(platform)
        if index is None:
            uncovered.append(f"the export tables have no {platform} index")
            continue
        newest.append(index.newest)
        oldest.append((index.releases[0].major, index.releases[0].minor))
        names = {i.name for i in s.facts.imports if not i.weak and is_unstable(i.name) and i.name not in own}
        dating = index.dating(names)
        minors: frozenset[Release] | None = frozenset(dating.minors) if dating.known else None
        if minors is not None and (floor := _shim_floor(s)) is not None:
            minors = frozenset(r for r in minors if r >= floor)
        if minors is not None:
            found = minors if found is None else found & minors
        if dating.decides:
            continue
        accelerator = s.accelerators.torch_accelerator
        if accelerator is not None and accelerator not in _index_kinds(index):
            build = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}[accelerator]
            uncovered.append(f"the {platform} export tables read no {build} build of torch")
        elif dating.known and index.newest in dating.minors:
            newer += dating.unknown
        else:
            unresolved += dating.unknown
    if not dated:
        return None
    return _LibraryDating(
        found,
        tuple(sorted(set(newer))),
        tuple(sorted(set(unresolved))),
        "; ".join(dict.fromkeys(uncovered)),
        min(newest) if newest else None,
        max(oldest) if oldest else None,
    )


def dated_by_exports(binaries: Sequence[MemberBinary], tables: Tables) -> Dated:
    """The torch minors whose exports hold every strong unstable torch import of the wheel
    (``torchabi.exports``: the loader's sense of "loads"), each library dated by every import
    it has (``_date_library``), with what the tables could not settle (``Dated``). Empty when
    no index knows any of the names, or when the libraries' minors do not meet (names of two
    releases mixed, or builds the package picks from at run time that nothing recognised):
    then the version is unknown, and each library's own dating says why (``date_each_library``)."""
    # deferred: exports (lzma, the index format) costs 3 ms at start-up; only an unstable
    # wheel is dated by it
    own = _own_exports(binaries)
    return _combined([d for b in binaries if (d := _date_library(b, own, tables)) is not None])


def date_each_library(binaries: Sequence[MemberBinary], tables: Tables) -> dict[str, Dated]:
    """Each unstable library dated alone by every import it has (the wheel's own exports
    still resolve its sibling names): what ``show`` prints per library."""
    own = _own_exports(binaries)
    return {b.member: _combined([d]) for b in binaries if (d := _date_library(b, own, tables)) is not None}


def _combined(libraries: list[_LibraryDating]) -> Dated:
    if not libraries:
        return Dated()
    restricting = [d.minors for d in libraries if d.minors is not None]
    found = frozenset.intersection(*restricting) if restricting else frozenset()
    uncovered = "; ".join(dict.fromkeys(d.uncovered for d in libraries if d.uncovered))
    unresolved = tuple(sorted({n for d in libraries for n in d.unresolved}))
    newer = tuple(sorted({n for d in libraries for n in d.newer}))
    newest = [d.newest for d in libraries if d.newest is not None]
    tables = min(newest) if newest else None
    oldests = [d.oldest for d in libraries if d.oldest is not None]
    oldest = max(oldests) if oldests else None
    if restricting and not found:
        return Dated()  # the libraries meet in no torch: nothing here can say which
    if not found and not uncovered:
        return Dated()  # no index knows any of the names
    if newer and (tables is None or tables not in found):
        newer, unresolved = (), tuple(sorted({*unresolved, *newer}))  # not the newest torch's build
    return Dated(found, newer[:_NEWER_KEPT], tables, unresolved[:_NEWER_KEPT], uncovered, oldest)


def indexed_minors(binary: MemberBinary, tables: Tables) -> frozenset[tuple[int, int]]:
    """The torch minors ``tables``' exports index has read for every platform of this
    binary's unstable slices: where ``dated_by_exports`` can tell a release apart."""
    from torchwheel.tables.exports import platform_of  # deferred: as above

    found: frozenset[tuple[int, int]] | None = None
    for s in binary.analysis.slices:
        if s.torch.usage == "unstable":
            index = tables.exports_index(platform_of(binary.analysis.facts.format, s.facts.arch))
            minors = (
                frozenset((r.major, r.minor) for r in index.releases) if index is not None else frozenset()
            )
            found = minors if found is None else found & minors
    return found or frozenset()
