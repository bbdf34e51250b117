"""Filling ``WheelFacts`` from a source: the read edge of the analysis.

Every member is read once, in parallel (inflate and sha256 release the GIL): compiled
members through the streaming scan (``binary.memberscan``: hash and facts in one pass),
the rest hashed in batches. Everything after this is pure.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from torchwheel.analysis import loaders, pyimports
from torchwheel.analysis.buildunits import flavour_pair_dirs, flavour_sets
from torchwheel.analysis.member import BinaryAnalysis, MemberBinary, UnreadableBinary, analyze_binary
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.binary import BinaryError, BinaryFacts
from torchwheel.binary.memberscan import Result, scan_member
from torchwheel.tables.symtable import SymbolTable
from torchwheel.wheel.contents import is_compiled_name
from torchwheel.wheel.metadata import parse_metadata
from torchwheel.wheel.record import verify_record
from torchwheel.wheel.sources import Source

_BATCH_BYTES = 32 << 20  # small members are hashed in batches: one future per file costs more
_BATCH_COUNT = 512  # than hashing it (torch's wheel has 12,000 members)
_INLINE_BYTES = 4 << 20  # below this in all, threads (started and imported) cost more than they save
_ALONE = 8 << 20  # a non-compiled member this big is hashed as a task of its own


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
_Hashed = tuple[str | None, int]


def _read_members(
    source: Source, table: SymbolTable, verify_hashes: bool
) -> tuple[_Hashes, dict[str, BinaryAnalysis | UnreadableBinary]]:
    """(member -> (hash, size), compiled member -> its analysis): every member read once."""
    contents = source.contents
    size = source.member_size
    compiled = sorted((m for m in contents.members if is_compiled_name(m)), key=size, reverse=True)
    others = [m for m in contents.members if not is_compiled_name(m)]

    def analyzed(member: str, read: BinaryFacts | BinaryError) -> BinaryAnalysis | UnreadableBinary:
        if isinstance(read, BinaryError):
            return UnreadableBinary(member, str(read))
        return analyze_binary(read, table)

    def hash_batch(batch: list[str]) -> list[tuple[str, _Hashed]]:
        if not verify_hashes:
            return [(m, (None, size(m))) for m in batch]
        return [(m, source.hash_member(m)) for m in batch]

    hashes: _Hashes = {}
    results: dict[str, BinaryAnalysis | UnreadableBinary] = {}
    if sum(map(size, contents.members)) < _INLINE_BYTES:
        for m in compiled:
            hashes[m], read = scan_member(source, m, verify_hashes)
            results[m] = analyzed(m, read)
        for names in _batches(others, size):
            hashes.update(hash_batch(names))
        return hashes, results
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    # Every task biggest first, compiled or not (longest processing time first): the
    # last to start is a small one, so the workers end together. A non-compiled member
    # worth a task of its own is one (vLLM's 60 MB ``vllm-rs`` once ended a batch that
    # started last, and the run with it).
    alone = [[m] for m in others if verify_hashes and size(m) >= _ALONE]
    rest = [m for m in others if not (verify_hashes and size(m) >= _ALONE)]
    batches = alone + list(_batches(rest, size))
    weights = {id(b): sum(map(size, b)) for b in batches}
    order = sorted(
        [(size(m), 0, i) for i, m in enumerate(compiled)]
        + [(weights[id(b)], 1, i) for i, b in enumerate(batches)],
        reverse=True,
    )
    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        scans: dict[int, Future[Result]] = {}
        hashed: dict[int, Future[list[tuple[str, _Hashed]]]] = {}
        for _, kind, i in order:
            if kind == 0:
                scans[i] = pool.submit(scan_member, source, compiled[i], verify_hashes)
            else:
                hashed[i] = pool.submit(hash_batch, batches[i])
        # The compiled members are analyzed here, as their scans finish, while the workers
        # go on inflating: the analysis (Python, GIL held) no longer stalls a worker's next
        # member. A failure is raised as before: the first in the members' order.
        pending = {f: i for i, f in scans.items()}
        failed: dict[int, BaseException] = {}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                i = pending.pop(future)
                try:
                    hashes[compiled[i]], read = future.result()
                    results[compiled[i]] = analyzed(compiled[i], read)
                except Exception as exc:
                    failed[i] = exc
        if failed:
            raise failed[min(failed)]
        for i in range(len(batches)):
            hashes.update(hashed[i].result())
    return hashes, {m: results[m] for m in compiled}


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
    )
