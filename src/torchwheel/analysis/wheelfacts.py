"""Per-wheel facts: the metadata, RECORD status, and every compiled member analysed, and
what they add up to (the torch ABI the wheel can honestly declare).

Plain data that the rules, the reports and ``tag``'s plan judge without touching a file;
``collect`` is the one place that fills it from a source.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.analysis.alternatives import Alternatives, find_alternatives, flavoured, unit_key
from torchwheel.analysis.member import BinaryAnalysis, SliceAnalysis
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.torchabi import accelerators
from torchwheel.torchabi.accelerators import AcceleratorNeeds
from torchwheel.torchabi.backend import TorchBuild, build_fits
from torchwheel.torchabi.need import Build, TorchNeed, show_build, torch_need
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


@dataclass(frozen=True)
class TorchABI:
    """What the wheel can honestly declare: ``unstable``, a stable floor, or no torch at all.

    ``builds``: for an unstable wheel whose every unstable library belongs to a set of
    per-minor builds (``alternatives``), the torch releases it has builds for; empty otherwise
    (then the build torch must come from a pin)."""

    kind: Literal["none", "stable", "unstable"]
    target: FeatureVersion | None  # stable: max of declared targets and symbol minimums
    declared: FeatureVersion | None  # the newest declared target, if any library declares one
    builds: frozenset[Build] = frozenset()
    alternatives: tuple[Alternatives, ...] = ()

    def __str__(self) -> str:
        if self.kind == "stable" and self.target is not None:
            return self.target.minor_release if self.target.patch == 0 else self.target.release
        return self.kind


def wheel_torch_abi(w: WheelFacts) -> TorchABI:
    slices = [(member, s) for member, _, s in iter_slices(w)]
    declared = max(declared_targets(w).values(), default=None)
    unstable = {member for member, s in slices if s.torch.usage == "unstable"}
    if unstable:
        alternatives = tuple(find_alternatives(sorted(unstable)))
        per_minor = {member for a in alternatives for _, member in a.members}
        if alternatives and unstable <= per_minor:
            builds = frozenset(b for a in alternatives for b in a.builds)
            return TorchABI("unstable", None, declared, builds, alternatives)
        return TorchABI("unstable", None, declared)
    floors = [s.torch.min_version for _, s in slices if s.torch.min_version is not None]
    if declared is None and not floors:
        return TorchABI("none", None, None)
    return TorchABI("stable", max([*floors, *([declared] if declared else [])]), declared)


def torch_need_of(w: WheelFacts, source: str = "binaries (untagged wheel)") -> TorchNeed:
    """The wheel's need as selection reads it, from its binaries (and, for an unstable
    build, its own pin or local label): what a ``tag``-ged wheel's WHEEL would say."""
    abi = wheel_torch_abi(w)
    if abi.kind == "stable" and abi.target is not None:
        return TorchNeed("stable", abi.target, frozenset(), source)
    try:
        version = Version(w.contents.filename_version)
    except InvalidVersion:
        version = Version("0")
    builds = ", ".join(show_build(b) for b in sorted(abi.builds)) or None
    need = torch_need(abi.kind, w.metadata.torch_requirements, version, source, builds)
    gpu = frozenset(accelerators.code_names(wheel_accelerators(w).gpu))
    return replace(need, build_classes=wheel_build_classes(w), gpu_code=gpu)


def _library_classes(needs: AcceleratorNeeds, flavour: bool) -> frozenset[str]:
    """The torch build classes one library loads on (``torchabi.backend``): none needed is
    ``any``, or ``cpu`` for the CPU flavour of a set the package picks from; two accelerators
    or two CUDA majors at once load nowhere (an empty set)."""
    if not needs.accelerators:
        return frozenset({"cpu"} if flavour else {"any"})
    if len(needs.accelerators) > 1:
        return frozenset()
    acc = needs.accelerators[0]
    majors = needs.cuda_majors if acc == "cuda" else needs.rocm_majors if acc == "rocm" else ()
    if len(majors) > 1:
        return frozenset()
    return frozenset({f"{acc}-{majors[0]}" if majors else acc})


_PROBE_BUILDS = (
    TorchBuild("cpu"),
    *(TorchBuild("cuda", (m, 0)) for m in (11, 12, 13)),
    *(TorchBuild("rocm", (m, 0)) for m in (6, 7)),
    TorchBuild("xpu"),
)


@dataclass(frozen=True)
class BuildUnit:
    """One library of the wheel and its builds (per torch release, per flavour: the
    package loads one of them), with what each build needs and the torch builds at least
    one of them loads on (``classes``; empty: no build of torch loads any of them)."""

    key: str  # ``analysis.alternatives.unit_key``
    builds: tuple[tuple[str, AcceleratorNeeds], ...]  # (member, needs)
    classes: frozenset[str]


def build_units(w: WheelFacts) -> list[BuildUnit]:
    """The wheel's compiled members grouped into libraries, as ``wheel_build_classes``
    and the accelerator rules (TW701) judge them."""
    units: dict[str, list[tuple[str, AcceleratorNeeds]]] = {}
    for b in w.binaries:
        needs = accelerators.combine(s.accelerators for s in b.analysis.slices)
        units.setdefault(unit_key(b.member), []).append((b.member, needs))
    out = []
    for key, members in units.items():
        flavour = flavoured(m for m, _ in members)
        classes = frozenset().union(*(_library_classes(n, flavour) for _, n in members))
        out.append(BuildUnit(key, tuple(members), classes))
    return out


def wheel_build_classes(w: WheelFacts) -> frozenset[str]:
    """The torch builds the wheel loads on, as build classes (``any``; ``cpu, cuda-13``).

    Every library must load, but of the builds of one library (per torch release, per
    flavour: ``_torch24-cpu.so``, ``_torch24-cuda.so``) one will do: the package picks it.
    Judged by trying each kind of build rather than by algebra on the classes."""
    options = [u.classes for u in build_units(w)]
    fits = [t for t in _PROBE_BUILDS if all(build_fits(o, t)[0] and o for o in options)]
    if len(fits) == len(_PROBE_BUILDS):
        return frozenset({"any"})
    out = set()
    for t in fits:
        major = t.major if any(f"{t.kind}-{t.major}" in o for o in options) else None
        out.add(t.kind if t.kind in ("cpu", "xpu") or major is None else f"{t.kind}-{major}")
    cuda = {c for c in out if c.startswith("cuda")}
    if len([t for t in fits if t.kind == "cuda"]) == 3 and len(cuda) > 1:
        out = (out - cuda) | {"cuda"}
    return frozenset(out)


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
