"""Filling ``WheelFacts`` from a source: the read edge of the analysis.

Every member is read once, in parallel (inflate and sha256 release the GIL): compiled
members through the streaming scan (``binary.memberscan``: hash and facts in one pass),
the rest hashed in batches. Everything after this is pure.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from torchwheel.analysis import device_code, loaders, pyimports, reach
from torchwheel.analysis.buildunits import flavour_pair_dirs, flavour_sets
from torchwheel.analysis.member import BinaryAnalysis, MemberBinary, UnreadableBinary, analyze_binary
from torchwheel.analysis.platforms import expected
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.analysis.wheelfacts import WheelFacts, is_torch_itself
from torchwheel.binary import BinaryError
from torchwheel.binary.memberscan import scan_member
from torchwheel.tables.symtable import SymbolTable
from torchwheel.wheel.contents import is_compiled_name
from torchwheel.wheel.metadata import parse_metadata
from torchwheel.wheel.record import verify_record
from torchwheel.wheel.sources import DirectorySource, Source

_BATCH_BYTES = 32 << 20  # small members are hashed in batches: one future per file costs more
_BATCH_COUNT = 512  # than hashing it (torch's wheel has 12,000 members)
_INLINE_BYTES = 4 << 20  # below this in all, threads (started and imported) cost more than they save


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


def hookless_modules(binaries: Iterable[MemberBinary]) -> Iterator[str]:
    """The module stems of the compiled members named like modules (``.cpython-3XY``,
    ``.abi3``, ``.abi3t``) that export no module hook: torch op libraries, mostly."""
    for b in binaries:
        suffix = parse_suffix(b.member)
        if suffix.module and suffix.kind != "bare" and b.analysis.kind != "extension-module":
            yield suffix.module


_Hashes = dict[str, tuple[str | None, int]]


def _read_members(
    source: Source, table: SymbolTable, verify_hashes: bool
) -> tuple[_Hashes, dict[str, BinaryAnalysis | UnreadableBinary]]:
    """(member -> (hash, size), compiled member -> its analysis): every member read once."""
    contents = source.contents
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

    hashes: _Hashes = {}
    results: dict[str, BinaryAnalysis | UnreadableBinary] = {}
    compiled, same = _one_name_per_file(source, compiled)
    batched = list(_batches(others, source.member_size))
    if sum(map(source.member_size, contents.members)) < _INLINE_BYTES:
        for m in compiled:
            hashes[m], results[m] = read_compiled(m)
        for names in batched:
            hashes.update(hash_batch(names))
        _copy_to_links(same, hashes, results)
        return hashes, results
    from concurrent.futures import ThreadPoolExecutor  # only a wheel worth threads pays for them

    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        # the biggest binaries first: the longest task must not start last
        binaries = [(m, pool.submit(read_compiled, m)) for m in compiled]
        batches = [pool.submit(hash_batch, b) for b in batched]
        for m, scanned in binaries:
            hashes[m], results[m] = scanned.result()
        for batch in batches:
            hashes.update(batch.result())
    _copy_to_links(same, hashes, results)
    return hashes, results


def _one_name_per_file(source: Source, compiled: list[str]) -> tuple[list[str], dict[str, str]]:
    """The compiled members to read, one per file, and each other name -> the one read: in
    an installed distribution or a folder, hard links (and symlinks) give one file many
    names (5,000 names of one 64 MB library were 5,000 reads, 20 minutes). A wheel's
    members are distinct by construction."""
    if not isinstance(source, DirectorySource):
        return compiled, {}
    first: dict[tuple[int, int], str] = {}
    keep: list[str] = []
    same: dict[str, str] = {}
    for m in compiled:
        key = source.identity(m)
        if key is None:
            keep.append(m)
        elif key in first:
            same[m] = first[key]
        else:
            first[key] = m
            keep.append(m)
    return keep, same


def _copy_to_links(
    same: dict[str, str], hashes: _Hashes, results: dict[str, BinaryAnalysis | UnreadableBinary]
) -> None:
    for name, read in same.items():
        hashes[name] = hashes[read]
        result = results[read]
        results[name] = (
            UnreadableBinary(name, result.error) if isinstance(result, UnreadableBinary) else result
        )


def collect(source: Source, table: SymbolTable, verify_hashes: bool = True) -> WheelFacts:
    """Read every member once, in parallel: inflate (ISA-L) and sha256 release the GIL.

    Without ``verify_hashes`` nothing but the compiled members is inflated: RECORD is
    checked for presence and sizes only, and zip CRCs still guard the bytes we read.
    """
    contents = source.contents
    metadata = parse_metadata(contents.metadata_text)
    hashes, results = _read_members(source, table, verify_hashes)
    readable: list[MemberBinary] = []
    unreadable: list[UnreadableBinary] = []
    for member in contents.members:
        result = results.get(member)
        if isinstance(result, UnreadableBinary):
            unreadable.append(result)
        elif result is not None:
            readable.append(MemberBinary(member, result))
    stems = list(hookless_modules(readable))
    py_imports = pyimports.wheel_imports(contents.members, source.member_size, source.read, stems)
    loader_prefers = loaders.preferred_flavours(
        contents.members, source.member_size, source.read, flavour_pair_dirs(readable)
    )
    fallbacks = loaders.fallback_units(
        contents.members, source.member_size, source.read, flavour_sets(readable)
    )
    platforms = {t.platform for t in (contents.filename_tags or contents.wheel_tags)}
    promises = (
        [e for e in map(expected, sorted(platforms)) if e is not None] if "any" not in platforms else []
    )
    device = device_code.device_side(readable, promises, contents.members, source.member_size, source.read)
    reaching = (
        reach.Reaching()
        if is_torch_itself(contents)
        else reach.read_reach(contents.members, source.member_size, source.read, reach_inputs(readable))
    )
    record = verify_record(
        contents.record,
        contents.dist_info,
        contents.members,
        contents.record_problems,
        hashes,
        contents.installed,
    )
    return WheelFacts(
        contents,
        metadata,
        binaries=tuple(readable),
        unreadable=tuple(unreadable),
        record_problems=tuple(record.kept),
        record_problems_omitted=dict(record.omitted),
        hashes={m: (h, n) for m, (h, n) in hashes.items() if h is not None},
        hashes_verified=verify_hashes,
        kind="wheel" if source.is_wheel_file else "directory",
        py_imports=py_imports,
        loader_prefers=loader_prefers,
        loader_fallbacks=fallbacks,
        device_code=device,
        reach=reaching,
    )


def reach_inputs(binaries: Iterable[MemberBinary]) -> list[reach.Compiled]:
    """What ``reach`` needs of each compiled member: the module its name makes, the
    libraries it links."""
    out = []
    for b in binaries:
        suffix = parse_suffix(b.member)
        module = pyimports.module_name(b.member, suffix.module) if suffix.module else None
        needed = tuple(dict.fromkeys(n for s in b.analysis.facts.slices for n in s.needed))
        hooked = any(s.python.hooks for s in b.analysis.slices)
        out.append(reach.Compiled(b.member, module, needed, hooked))
    return out
