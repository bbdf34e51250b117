"""Per-wheel facts: the metadata, RECORD status, and every compiled member analysed, and
what they add up to (the torch ABI the wheel can honestly declare).

Plain data that the rules, the reports and ``tag``'s plan judge without touching a file;
``collect`` is the one place that fills it from a source.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.analysis.alternatives import Alternatives, find_alternatives, flavoured, unit_key
from torchwheel.analysis.member import BinaryAnalysis, SliceAnalysis
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.errors import clipped
from torchwheel.torchabi import accelerators
from torchwheel.torchabi.accelerators import AcceleratorNeeds
from torchwheel.torchabi.backend import ANY_BUILD, NO_BUILD, BuildSet, TorchBuild, normalized
from torchwheel.torchabi.cxxnames import is_unstable
from torchwheel.torchabi.exports import exports_index, platform_of
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


def _library_builds(needs: AcceleratorNeeds, flavour: bool) -> BuildSet:
    """The torch builds one library loads on: every build when it needs no accelerator (the
    CPU build alone for the CPU flavour of a set the package picks from); none when it needs
    two accelerators or two CUDA majors at once."""
    if not needs.accelerators:
        return frozenset({TorchBuild("cpu")}) if flavour else ANY_BUILD
    if len(needs.accelerators) > 1:
        return NO_BUILD
    acc = needs.accelerators[0]
    majors = needs.cuda_majors if acc == "cuda" else needs.rocm_majors if acc == "rocm" else ()
    if len(majors) > 1:
        return NO_BUILD
    return frozenset({TorchBuild(acc, majors[0] if majors else None)})


_PROBE_BUILDS = (
    TorchBuild("cpu"),
    *(TorchBuild("cuda", m, 0) for m in (11, 12, 13)),
    *(TorchBuild("rocm", m, 0) for m in (6, 7)),
    TorchBuild("xpu"),
)


@dataclass(frozen=True)
class BuildUnit:
    """One library of the wheel and its builds (per torch release, per flavour: the
    package loads one of them), with what each build needs and the torch builds at least
    one of them loads on (``builds``; empty: no build of torch loads any of them)."""

    key: str  # ``analysis.alternatives.unit_key``
    members: tuple[tuple[str, AcceleratorNeeds], ...]  # (member, needs)
    builds: BuildSet


def build_units(w: WheelFacts) -> list[BuildUnit]:
    """The wheel's compiled members grouped into libraries, as ``wheel_builds`` and the
    accelerator rules (TW701) judge them."""
    units: dict[str, list[tuple[str, AcceleratorNeeds]]] = {}
    for b in w.binaries:
        needs = accelerators.combine(s.accelerators for s in b.analysis.slices)
        units.setdefault(unit_key(b.member), []).append((b.member, needs))
    out = []
    for key, members in units.items():
        flavour = flavoured(m for m, _ in members)
        found = normalized(x for _, n in members for x in _library_builds(n, flavour))
        out.append(BuildUnit(key, tuple(members), found))
    return out


def wheel_builds(w: WheelFacts) -> BuildSet | None:
    """The torch builds the wheel loads on (``ANY_BUILD``; ``{cpu, cuda-13}``); None when a
    compiled member could not be read (its needs are unknown, so the wheel's are).

    Every library must load, but of the builds of one library (per torch release, per
    flavour: ``_torch24-cpu.so``, ``_torch24-cuda.so``) one will do: the package picks it.
    Judged by trying each kind of build rather than by algebra on the sets."""
    if w.unreadable:
        return None
    options = [u.builds for u in build_units(w)]
    fits = [t for t in _PROBE_BUILDS if all(any(b.admits(t) for b in o) for o in options)]
    if len(fits) == len(_PROBE_BUILDS):
        return ANY_BUILD
    out = set()
    for t in fits:
        every_major = all(p in fits for p in _PROBE_BUILDS if p.kind == t.kind)
        pinned = not every_major and any(TorchBuild(t.kind, t.major) in o for o in options)
        out.add(TorchBuild(t.kind, t.major if pinned else None))
    return normalized(out)


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
