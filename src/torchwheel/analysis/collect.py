"""Filling ``WheelFacts`` from a source: the read edge of the analysis.

Every member is read once, in parallel (inflate and sha256 release the GIL): compiled
members through the streaming scan (``binary.memberscan``: hash and facts in one pass),
the rest hashed in batches. Everything after this is pure.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from torchwheel.analysis import loaders, pyimports
from torchwheel.analysis.member import BinaryAnalysis, analyze_binary
from torchwheel.analysis.wheelfacts import (
    MemberBinary,
    UnreadableBinary,
    WheelFacts,
    flavour_pair_dirs,
    hookless_modules,
)
from torchwheel.binary import BinaryError
from torchwheel.binary.memberscan import scan_member
from torchwheel.torchabi.symtable import SymbolTable
from torchwheel.wheel.contents import is_compiled_name
from torchwheel.wheel.metadata import parse_metadata
from torchwheel.wheel.record import verify_record
from torchwheel.wheel.sources import Source

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
        hashed, read = scan_member(source, member, verify_hashes)
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
    facts.loader_prefers = loaders.preferred_flavours(
        contents.members, source.member_size, source.read, flavour_pair_dirs(facts)
    )
    record = verify_record(
        contents.record,
        contents.dist_info,
        contents.members,
        contents.record_problems,
        hashes,
        contents.installed,
    )
    facts.record_problems, facts.record_problems_omitted = record.kept, dict(record.omitted)
    facts.hashes = {m: (h, n) for m, (h, n) in hashes.items() if h is not None}
    facts.hashes_verified = verify_hashes
    return facts
