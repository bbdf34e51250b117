"""Per-wheel facts: the metadata, RECORD status, and every compiled member analysed, and
what they add up to (the torch ABI the wheel can honestly declare).

Plain data that the rules, the reports and ``tag``'s plan judge without touching a file;
``collect`` is the one place that fills it from a source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.analysis.alternatives import (
    Alternatives,
    find_alternatives,
    flavour_words,
    flavoured,
    unflavoured_key,
    unit_key,
)
from torchwheel.analysis.member import BinaryAnalysis, SliceAnalysis
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.errors import clipped
from torchwheel.torchabi import accelerators
from torchwheel.torchabi.accelerators import AcceleratorNeeds, LinkedLibrary
from torchwheel.torchabi.backend import ANY_BUILD, NO_BUILD, BuildSet, TorchBuild, describe_builds, normalized
from torchwheel.torchabi.cxxnames import is_unstable
from torchwheel.torchabi.grafting import bundled
from torchwheel.torchabi.need import Kind, Release, TorchNeed, claimed_releases
from torchwheel.version import FeatureVersion
from torchwheel.wheel.contents import WheelContents
from torchwheel.wheel.metadata import MetadataFacts
from torchwheel.wheel.record import RecordProblem


@dataclass(frozen=True)
class MemberBinary:
    member: str  # path inside the wheel
    analysis: BinaryAnalysis


@dataclass(frozen=True)
class UnreadableBinary:
    member: str
    error: str


@dataclass
class WheelFacts:
    contents: WheelContents
    metadata: MetadataFacts
    binaries: list[MemberBinary] = field(default_factory=list)
    unreadable: list[UnreadableBinary] = field(default_factory=list)
    record_problems: list[RecordProblem] = field(default_factory=list)  # up to max-listed per kind
    record_problems_omitted: dict[str, int] = field(default_factory=dict)  # kind -> problems not kept
    hashes: dict[str, tuple[str, int]] = field(default_factory=dict)  # member -> (RECORD hash, size)
    hashes_verified: bool = True
    kind: Literal["wheel", "directory", "binary"] = "wheel"
    # module names the wheel's .py files import (ast, never run; only files mentioning a
    # hook-less module-named library are parsed: see pyimports and hookless_modules)
    py_imports: frozenset[str] = frozenset()
    # package directory -> the flavour its loader takes whenever that file exists (``cuda``):
    # ``analysis.loaders``, read only where a CPU and an accelerated flavour sit side by side
    loader_prefers: dict[str, str] = field(default_factory=dict)

    @property
    def is_wheel_file(self) -> bool:
        return self.kind == "wheel"


def hookless_modules(w: WheelFacts) -> Iterator[tuple[MemberBinary, str]]:
    """(member, module stem) of the compiled members named like modules (``.cpython-3XY``,
    ``.abi3``, ``.abi3t``) that export no module hook: torch op libraries, mostly."""
    for b in w.binaries:
        suffix = parse_suffix(b.member)
        if suffix.module and suffix.kind != "bare" and b.analysis.kind != "extension-module":
            yield b, suffix.module


def iter_slices(w: WheelFacts) -> Iterator[tuple[str, str, SliceAnalysis]]:
    """(member, arch, slice) for every slice of every readable compiled member."""
    for b in w.binaries:
        for s in b.analysis.slices:
            yield b.member, s.facts.arch, s


def declared_targets(w: WheelFacts) -> dict[str, FeatureVersion]:
    """The known declared target of each marked slice, keyed ``member`` or ``member[arch]``."""
    out: dict[str, FeatureVersion] = {}
    for b in w.binaries:
        multi = len(b.analysis.slices) > 1
        for s in b.analysis.slices:
            if s.declared is not None and s.declared.record.version is not None:
                out[f"{b.member}[{s.facts.arch}]" if multi else b.member] = s.declared.record.version
    return out


def declared_target(w: WheelFacts) -> FeatureVersion | None:
    """The newest target a library declares with the marker, if any does."""
    return max(declared_targets(w).values(), default=None)


def _unstable_members(w: WheelFacts) -> set[str]:
    return {member for member, _, s in iter_slices(w) if s.torch.usage == "unstable"}


def wheel_alternatives(w: WheelFacts) -> tuple[Alternatives, ...]:
    """The per-release sets among the unstable libraries (``analysis.alternatives``)."""
    unstable = _unstable_members(w)
    return tuple(find_alternatives(sorted(unstable))) if unstable else ()


def _per_release(w: WheelFacts, unstable: set[str]) -> frozenset[Release]:
    """The releases an unstable wheel has builds for, when every unstable library belongs
    to a per-release set; empty otherwise (then something else must date it)."""
    alternatives = wheel_alternatives(w)
    per_release = {member for a in alternatives for _, member in a.members}
    if alternatives and unstable <= per_release:
        return frozenset(b for a in alternatives for b in a.builds)
    return frozenset()


def torch_need_of(w: WheelFacts, source: str = "binaries (untagged wheel)") -> TorchNeed:
    """The one reading of a wheel's need from its binaries, every axis (``torchabi.need``):
    what ``tag`` writes into WHEEL, and what ``select`` reads of an untagged wheel.

    An unstable build's releases come from its per-release file names, else from the torch
    releases that export its imports (``torchabi.exports``: the binary dates itself), else
    from its own words (a ``+torchX.Y`` label, a one-minor pin), which the need then names."""
    declared = declared_target(w)
    builds, gpu, why = wheel_builds(w), wheel_gpu_code(w), build_evidence(w)
    reqs = w.metadata.torch_requirements
    unstable = _unstable_members(w)
    if unstable:
        found, how = _per_release(w, unstable), "names"
        if not found:
            found, how = dated_by_exports(w), "exports"
        if not found:
            try:
                version = Version(w.contents.filename_version)
            except InvalidVersion:
                version = Version("0")
            found, how = claimed_releases(reqs, version)
        return TorchNeed("unstable", None, found, how, builds, gpu, reqs, source, declared, why)  # type: ignore[arg-type]
    floors = [s.torch.min_version for _, _, s in iter_slices(w) if s.torch.min_version is not None]
    if declared is not None or floors:
        floor = max([*floors, *([declared] if declared else [])])
        return TorchNeed("stable", floor, frozenset(), "", builds, gpu, reqs, source, declared, why)
    kind: Kind = "any" if any(s.accelerators.links_torch for _, _, s in iter_slices(w)) else "none"
    return TorchNeed(kind, None, frozenset(), "", builds, gpu, reqs, source, declared, why)


def dated_by_exports(w: WheelFacts) -> frozenset[Release]:
    """The torch minors whose shipped exports hold every strong unstable torch import of
    the wheel (``torchabi.exports``: the loader's sense of "loads"), per platform; empty
    when the index cannot decide (no index for a platform, an import no indexed torch
    exports) or no indexed torch exports them all: then the version is unknown."""
    # deferred: exports (lzma, the index format) costs 3 ms at start-up; only an unstable
    # wheel is dated by it
    from torchwheel.torchabi.exports import exports_index, platform_of

    wanted: dict[str, set[str]] = {}
    for b in w.binaries:
        for s in b.analysis.slices:
            if s.torch.usage == "unstable":
                names = wanted.setdefault(platform_of(b.analysis.facts.format, s.facts.arch), set())
                names.update(imp.name for imp in s.facts.imports if not imp.weak and is_unstable(imp.name))
    found: frozenset[Release] | None = None
    for platform, names in sorted(wanted.items()):
        index = exports_index(platform)
        dating = index.dating(names) if index is not None else None
        if dating is None or not dating.decides:
            return frozenset()
        minors = frozenset(dating.minors)
        found = minors if found is None else found & minors
    return found or frozenset()


def _library_builds(needs: AcceleratorNeeds, brought: Brought) -> BuildSet:
    """The torch builds one library loads on: every build when it needs no accelerator, or
    when it links no torch and the wheel brings every toolkit runtime it needs (its own
    requirements or bundled copies: ``brings_own_runtime``); none when it needs two
    accelerators or two CUDA majors at once."""
    if not needs.accelerators or brings_own_runtime(needs, brought):
        return ANY_BUILD
    if len(needs.accelerators) > 1:
        return NO_BUILD
    acc = needs.accelerators[0]
    majors = needs.cuda_majors if acc == "cuda" else needs.rocm_majors if acc == "rocm" else ()
    if len(majors) > 1:
        return NO_BUILD
    return frozenset({TorchBuild(acc, majors[0] if majors else None)})


# component -> toolkit major (None: a major it does not name) -> what brings it
Brought = dict[str, dict[int | None, str]]


def brought_runtimes(w: WheelFacts) -> Brought:
    """The accelerator runtimes the wheel brings itself: the ``nvidia-*`` distributions its
    requirements install (``accelerators.required_runtimes``) and the copies it bundles."""
    found: Brought = {}
    for component, major, req in accelerators.required_runtimes(w.metadata.requirements, _platform(w)):
        found.setdefault(component, {}).setdefault(major, f"the requirement {req}")
    for member in w.contents.members:
        lib = bundled(member)
        if lib is not None and lib.role == "runtime":
            found.setdefault(lib.component, {}).setdefault(lib.toolkit_major, f"the bundled {member}")
    return found


def _platform(w: WheelFacts) -> str | None:
    """``linux``, ``win32`` or ``darwin`` from the wheel's platform tags, for requirement markers."""
    platforms = {t.platform for t in w.contents.wheel_tags}
    for word, value in (("win", "win32"), ("macosx", "darwin"), ("linux", "linux")):
        if platforms and all(word in p for p in platforms):
            return value
    return None


def own_runtimes(needs: AcceleratorNeeds, brought: Brought) -> tuple[tuple[LinkedLibrary, str], ...]:
    """(runtime, what brings it) for the toolkit runtimes (``libcudart.so.12``,
    ``cublas64_12.dll``) a library needs that the wheel brings itself."""
    out = []
    for lib in needs.libraries:
        by = brought.get(lib.component, {}) if lib.role == "runtime" else {}
        source = by.get(lib.toolkit_major) or by.get(None)
        if source:
            out.append((lib, source))
    return tuple(out)


def brings_own_runtime(needs: AcceleratorNeeds, brought: Brought) -> bool:
    """Does this library load whatever build torch is, because it links no torch and the
    wheel brings every toolkit runtime it needs? A library that links torch, or needs a
    runtime the wheel does not bring, relies on the one torch's build loads: that ties it
    to the build (docs/accelerators.md, "Who brings the runtime")."""
    if needs.links_torch:
        return False
    runtimes = [
        lib for lib in needs.libraries if lib.role == "runtime" and lib.accelerator in ("cuda", "rocm")
    ]
    return bool(runtimes) and len(own_runtimes(needs, brought)) == len(runtimes)


_PROBE_BUILDS = (
    TorchBuild("cpu"),
    *(TorchBuild("cuda", m, 0) for m in (11, 12, 13)),
    *(TorchBuild("rocm", m, 0) for m in (6, 7)),
    TorchBuild("xpu"),
)


@dataclass(frozen=True)
class BuildUnit:
    """One library of the wheel and its builds (per torch release, per flavour: the
    package loads one of them), with what each build needs and the torch builds the
    package then loads on (``builds``; empty: no build of torch loads it).

    ``preferred``: the flavour the package's loader takes whenever its file exists (the PyG
    pattern, ``analysis.loaders``), which then alone decides; "" when the package picks by
    the torch it finds (``_fits``), or there is one build."""

    key: str  # ``analysis.alternatives.unit_key``
    members: tuple[tuple[str, AcceleratorNeeds], ...]  # (member, needs)
    builds: BuildSet
    preferred: str = ""

    @property
    def flavours(self) -> tuple[str, ...]:
        """The flavour words of the builds, as the names spell them (``cpu``, ``cuda``)."""
        return tuple(dict.fromkeys(f for m, _ in self.members for f in flavour_words(m.rpartition("/")[2])))


def _fits(options: list[BuildSet], target: TorchBuild) -> bool:
    """Does a package that picks among these builds of one library by the torch it finds
    load one on ``target``? It takes a build for the target's accelerator where it has one
    (on a CUDA 12 torch, its CUDA flavour, whichever major that is built for), and falls back
    to a build that needs no accelerator only where it has none for that accelerator."""
    own = [o for o in options if o != ANY_BUILD and any(b.kind == target.kind for b in o)]
    if own:
        return any(b.admits(target) for o in own for b in o)
    return any(b.admits(target) for o in options for b in o)


def _summary(fits: Iterable[TorchBuild]) -> BuildSet:
    """The probe builds that fit, as a build set: a kind whose every probed major fits is the
    kind (``cuda``), else its majors (``cuda-12``, ``cuda-13``); every probe: ``ANY_BUILD``."""
    found = set(fits)
    if found == set(_PROBE_BUILDS):
        return ANY_BUILD
    out = set()
    for t in found:
        every_major = all(p in found for p in _PROBE_BUILDS if p.kind == t.kind)
        out.add(TorchBuild(t.kind, None if every_major else t.major))
    return normalized(out)


def _grouped(w: WheelFacts) -> dict[str, list[tuple[str, AcceleratorNeeds]]]:
    """Members by library (``unit_key``). A member without a flavour word whose name is a
    flavoured set's name with the flavour dropped (``hook.abi3.so`` beside ``hook_cu12.abi3.so``
    and ``hook_cu13.abi3.so``) is that set's default build and joins it."""
    units: dict[str, list[tuple[str, AcceleratorNeeds]]] = {}
    for b in w.binaries:
        needs = accelerators.combine(s.accelerators for s in b.analysis.slices)
        units.setdefault(unit_key(b.member), []).append((b.member, needs))
    defaults = {unflavoured_key(k): k for k, ms in units.items() if flavoured(m for m, _ in ms)}
    for key in list(units):
        target = defaults.get(key)
        if target is not None and target != key:
            units[target].extend(units.pop(key))
    return units


def build_units(w: WheelFacts) -> list[BuildUnit]:
    """The wheel's compiled members grouped into libraries, as ``wheel_builds`` and the
    accelerator rules (TW701) judge them."""
    brought = brought_runtimes(w)
    out = []
    for key, members in _grouped(w).items():
        preferred = ""
        chosen = members
        if flavoured(m for m, _ in members):
            wanted = w.loader_prefers.get(members[0][0].rpartition("/")[0], "")
            picked = [(m, n) for m, n in members if wanted and wanted in flavour_words(m)]
            if picked:
                preferred, chosen = wanted, picked
        options = [_library_builds(n, brought) for _, n in chosen]
        if flavoured(m for m, _ in chosen):
            builds = _summary(t for t in _PROBE_BUILDS if _fits(options, t))
        else:  # one build, per-release builds of one flavour, or the flavour the loader prefers
            builds = normalized(b for o in options for b in o)
        out.append(BuildUnit(key, tuple(members), builds, preferred))
    return out


def flavour_pair_dirs(w: WheelFacts) -> set[str]:
    """The directories where a CPU and an accelerated flavour of one library sit side by
    side: where a package's loader decides which one loads (``analysis.loaders``)."""
    out = set()
    for members in _grouped(w).values():
        words = {f.lower() for m, _ in members for f in flavour_words(m)}
        if "cpu" in words and len(words) > 1:
            out.add(members[0][0].rpartition("/")[0])
    return out


def build_choices(w: WheelFacts) -> list[str]:
    """One sentence per way the package picks among flavours of its libraries, for ``show``:
    which build each flavour is for, and who decides (its loader, read by
    ``analysis.loaders``, or the torch it finds)."""
    out: dict[str, list[str]] = {}
    for unit in build_units(w):
        if len(unit.flavours) < 2 or all(not n.accelerators for _, n in unit.members):
            continue  # one build, or flavours that need no accelerator either way
        if unit.preferred:
            where = unit.members[0][0].rpartition("/")[0] or "the top level"
            how = (
                f"its loader ({where}/*.py) takes `_{unit.preferred}` whenever the file exists, so these "
                f"load on {describe_builds(unit.builds)} only"
            )
        else:
            how = "the package picks one by the torch it finds; which build loads depends on its loader"
        out.setdefault(how, []).append(
            unit.key.rsplit("/", 1)[-1].replace("~", "{" + ",".join(unit.flavours) + "}")
        )
    return [
        f"{', '.join(keys[:2])}{f' and {len(keys) - 2} more' if len(keys) > 2 else ''}: {how}"
        for how, keys in out.items()
    ]


def own_runtime_notes(w: WheelFacts) -> list[str]:
    """For each library that links no torch and brings its own toolkit runtime: what it
    brings, for ``show`` and TW708."""
    brought = brought_runtimes(w)
    notes = []
    for b in w.binaries:
        needs = accelerators.combine(s.accelerators for s in b.analysis.slices)
        if brings_own_runtime(needs, brought):
            libs = own_runtimes(needs, brought)
            sources = ", ".join(dict.fromkeys(source for _, source in libs))
            notes.append(
                f"{b.member} links no torch and brings its own {needs.label} runtime "
                f"({', '.join(lib.name for lib, _ in libs)}: {sources})"
            )
    return notes


def wheel_builds(w: WheelFacts) -> BuildSet | None:
    """The torch builds the wheel loads on (``ANY_BUILD``; ``{cpu, cuda-13}``); None when a
    compiled member could not be read (its needs are unknown, so the wheel's are).

    Every library must load, and of the builds of one library (per torch release, per
    flavour: ``_torch24-cpu.so``, ``_torch24-cuda.so``) the one the package picks must
    (``BuildUnit``). Judged by trying each kind of build rather than by algebra on the sets."""
    if w.unreadable:
        return None
    units = build_units(w)
    return _summary(t for t in _PROBE_BUILDS if all(any(b.admits(t) for b in u.builds) for u in units))


def build_evidence(w: WheelFacts) -> str:
    """The libraries that tie the wheel to a build, with the names that say so, for the
    reason a verdict gives (``xformers/_C.so: libc10_cuda.so, libcudart.so.12``)."""
    shown = []
    for unit in build_units(w):
        if unit.builds == ANY_BUILD:
            continue
        member, needs = next(((m, n) for m, n in unit.members if n.accelerators), unit.members[0])
        names = [lib.name for lib in needs.libraries if lib.accelerator is not None and lib.role != "driver"]
        more = f" (one of {len(unit.members)} builds)" if len(unit.members) > 1 else ""
        shown.append(f"{member}{more}: {', '.join(names[:4]) or needs.label}")
    text = "; ".join(shown[:2]) + (f"; and {len(shown) - 2} more" if len(shown) > 2 else "")
    return clipped(text, 300)


def wheel_gpu_code(w: WheelFacts) -> frozenset[str] | None:
    """The CUDA images of every library (``Torch-GPU``); None when a member could not be read."""
    return None if w.unreadable else frozenset(accelerators.code_names(wheel_accelerators(w).gpu))


def wheel_accelerators(w: WheelFacts) -> AcceleratorNeeds:
    """Every library's torch build, accelerator runtimes and GPU code, joined."""
    return accelerators.combine(s.accelerators for _, _, s in iter_slices(w))


# The core libraries only the torch distribution itself ships, by platform.
_LIBTORCH_CORE = re.compile(r"torch/lib/(lib)?(torch_cpu|c10)\.(so(\.[0-9.]+)?|dylib|dll)")


def provides_libtorch(w: WheelFacts) -> bool:
    """Is this torch itself (any build: ``+cpu``, ``+cu128``, a fork under another name)?

    By name (``torch``) or by the facts: ``torch/lib/`` holds libtorch's core libraries.
    A distribution cannot require itself, so the Requires-Dist rules and ``tag``'s
    requirement rewrite leave it alone. An extension that vendors libtorch in a directory
    of its own is not torch and keeps them.
    """
    if canonicalize_name(w.contents.filename_name) == "torch":
        return True
    return any(_LIBTORCH_CORE.fullmatch(m) for m in w.contents.members)
