"""Per-wheel facts: the metadata, RECORD status, and every compiled member analysed.

This is the boundary between I/O and decisions: ``collect`` reads (through a source),
everything it returns is plain data that the rules judge without touching a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import HeaderParser
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from torchwheel.analysis import BinaryAnalysis, SliceAnalysis, analyze_binary
from torchwheel.binary import BinaryError, read_binary
from torchwheel.sources import Source
from torchwheel.symtable import SymbolTable
from torchwheel.version import FeatureVersion
from torchwheel.wheelfile import RecordProblem, WheelContents, is_compiled_name, record_hash, verify_record


@dataclass(frozen=True)
class MemberBinary:
    member: str  # path inside the wheel
    analysis: BinaryAnalysis


@dataclass(frozen=True)
class UnreadableBinary:
    member: str
    error: str


@dataclass(frozen=True)
class MetadataFacts:
    requires_python: SpecifierSet | None
    torch_requirements: tuple[Requirement, ...]
    problems: tuple[str, ...]


@dataclass
class WheelFacts:
    contents: WheelContents
    metadata: MetadataFacts
    binaries: list[MemberBinary] = field(default_factory=list)
    unreadable: list[UnreadableBinary] = field(default_factory=list)
    record_problems: list[RecordProblem] = field(default_factory=list)
    hashes: dict[str, tuple[str, int]] = field(default_factory=dict)  # member -> (RECORD hash, size)
    kind: Literal["wheel", "directory", "binary"] = "wheel"

    @property
    def is_wheel_file(self) -> bool:
        return self.kind == "wheel"


def parse_metadata(text: str) -> MetadataFacts:
    """Only the fields torchwheel judges; full validation belongs to ``packaging.metadata``.

    We read with the plain header parser instead of ``Metadata.from_email(validate=True)``
    because one malformed unrelated field must not hide the torch facts: problems are
    collected and reported as findings.
    """
    msg = HeaderParser().parsestr(text)
    problems: list[str] = []
    requires_python: SpecifierSet | None = None
    if msg.get("Requires-Python"):
        try:
            requires_python = SpecifierSet(str(msg["Requires-Python"]))
        except InvalidSpecifier:
            problems.append(f"Requires-Python {msg['Requires-Python']!r} is not a valid specifier")
    torch: list[Requirement] = []
    for raw in msg.get_all("Requires-Dist") or []:
        try:
            req = Requirement(str(raw))
        except InvalidRequirement:
            problems.append(f"Requires-Dist {raw!r} is not a valid requirement")
            continue
        if req.name.lower() == "torch":
            torch.append(req)
    for key in ("Metadata-Version", "Name", "Version"):
        if not msg.get(key):
            problems.append(f"METADATA has no {key}")
    return MetadataFacts(requires_python, tuple(torch), tuple(problems))


def collect(source: Source, table: SymbolTable, verify_hashes: bool = True) -> WheelFacts:
    contents = source.contents
    facts = WheelFacts(
        contents,
        parse_metadata(contents.metadata_text),
        kind="wheel" if source.is_wheel_file else "directory",
    )
    hashes: dict[str, tuple[str, int]] = {}
    for member in contents.members:
        if is_compiled_name(member):
            data = source.read(member)
            hashes[member] = (record_hash(data), len(data))
            try:
                analysis = analyze_binary(read_binary(data, member), table)
            except BinaryError as exc:
                facts.unreadable.append(UnreadableBinary(member, str(exc)))
                continue
            facts.binaries.append(MemberBinary(member, analysis))
        elif verify_hashes:
            hashes[member] = source.hash_member(member)
    if verify_hashes:
        facts.record_problems = verify_record(contents, hashes)
    facts.hashes = hashes
    return facts


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
