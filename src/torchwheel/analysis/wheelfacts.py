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

from torchwheel.analysis.member import BinaryAnalysis, SliceAnalysis
from torchwheel.analysis.pythonabi import parse_suffix
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
    """What the wheel can honestly declare: ``unstable``, a stable floor, or no torch at all."""

    kind: Literal["none", "stable", "unstable"]
    target: FeatureVersion | None  # stable: max of declared targets and symbol minimums
    declared: FeatureVersion | None  # the newest declared target, if any library declares one

    def __str__(self) -> str:
        if self.kind == "stable" and self.target is not None:
            return self.target.minor_release if self.target.patch == 0 else self.target.release
        return self.kind


def wheel_torch_abi(w: WheelFacts) -> TorchABI:
    slices = [s for _, _, s in iter_slices(w)]
    if any(s.torch.usage == "unstable" for s in slices):
        return TorchABI("unstable", None, max(declared_targets(w).values(), default=None))
    declared = max(declared_targets(w).values(), default=None)
    floors = [s.torch.min_version for s in slices if s.torch.min_version is not None]
    if declared is None and not floors:
        return TorchABI("none", None, None)
    return TorchABI("stable", max([*floors, *([declared] if declared else [])]), declared)


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
