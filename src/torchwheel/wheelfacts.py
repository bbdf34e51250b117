"""Per-wheel facts: the metadata, RECORD status, and every compiled member analysed.

This is the boundary between I/O and decisions: ``collect`` reads (through a source),
everything it returns is plain data that the rules judge without touching a file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.parser import HeaderParser
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from torchwheel import pyimports
from torchwheel.analysis import BinaryAnalysis, SliceAnalysis, analyze_binary
from torchwheel.binary import BinaryError
from torchwheel.cpython import parse_suffix
from torchwheel.sources import Source
from torchwheel.symtable import SymbolTable
from torchwheel.version import FeatureVersion
from torchwheel.wheelfile import RecordProblem, WheelContents, is_compiled_name, verify_record


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
    hashes_verified: bool = True
    kind: Literal["wheel", "directory", "binary"] = "wheel"
    # module names the wheel's .py files import (ast, never run; only files mentioning a
    # hook-less module-named library are parsed: see pyimports and hookless_modules)
    py_imports: frozenset[str] = frozenset()

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


_BATCH_BYTES = 32 << 20  # small members are hashed in batches: one future per file costs more
_BATCH_COUNT = 512  # than hashing it (torch's wheel has 12,000 members)


def _workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _batches(members: list[str], size: Callable[[str], int]) -> Iterator[list[str]]:
    batch: list[str] = []
    total = 0
    for m in members:
        batch.append(m)
        total += size(m)
        if total >= _BATCH_BYTES or len(batch) >= _BATCH_COUNT:
            yield batch
            batch, total = [], 0
    if batch:
        yield batch


def collect(source: Source, table: SymbolTable, verify_hashes: bool = True) -> WheelFacts:
    """Read every member once, in parallel: inflate (ISA-L) and sha256 release the GIL.

    Without ``verify_hashes`` nothing but the compiled members is inflated: RECORD is
    checked for presence and sizes only, and zip CRCs still guard the bytes we read.
    """
    contents = source.contents
    facts = WheelFacts(
        contents,
        parse_metadata(contents.metadata_text),
        kind="wheel" if source.is_wheel_file else "directory",
    )
    compiled = sorted(
        (m for m in contents.members if is_compiled_name(m)), key=source.member_size, reverse=True
    )
    others = [m for m in contents.members if not is_compiled_name(m)]

    def read_compiled(member: str) -> tuple[tuple[str | None, int], BinaryAnalysis | UnreadableBinary]:
        hashed, read = source.scan_binary(member, verify_hashes)
        if isinstance(read, BinaryError):
            return hashed, UnreadableBinary(member, str(read))
        return hashed, analyze_binary(read, table)

    def hash_batch(batch: list[str]) -> list[tuple[str, tuple[str | None, int]]]:
        if not verify_hashes:
            return [(m, (None, source.member_size(m))) for m in batch]
        hashed: list[tuple[str, tuple[str | None, int]]] = []
        for m in batch:
            digest, size = source.hash_member(m)
            hashed.append((m, (digest, size)))
        return hashed

    hashes: dict[str, tuple[str | None, int]] = {}
    results: dict[str, BinaryAnalysis | UnreadableBinary] = {}
    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        # the biggest binaries first: the longest task must not start last
        binaries = [(m, pool.submit(read_compiled, m)) for m in compiled]
        batches = [pool.submit(hash_batch, b) for b in _batches(others, source.member_size)]
        for m, scanned in binaries:
            hashes[m], results[m] = scanned.result()
        for batch in batches:
            hashes.update(batch.result())
    for member in contents.members:
        result = results.get(member)
        if isinstance(result, UnreadableBinary):
            facts.unreadable.append(result)
        elif result is not None:
            facts.binaries.append(MemberBinary(member, result))
    stems = [stem for _, stem in hookless_modules(facts)]
    facts.py_imports = pyimports.wheel_imports(contents.members, source.member_size, source.read, stems)
    facts.record_problems = verify_record(contents, hashes)
    facts.hashes = {m: (h, n) for m, (h, n) in hashes.items() if h is not None}
    facts.hashes_verified = verify_hashes
    return facts


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
