"""Filling ``WheelFacts`` from a source: the read edge of the analysis.

Every member is read once, in parallel (inflate and sha256 release the GIL): compiled
members through the streaming scan (``binary.memberscan``: hash and facts in one pass),
the rest hashed in batches. Everything after this is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from torchwheel.analysis import device_code, loaders, pyimports, reach, version_lock
from torchwheel.analysis.buildunits import flavour_pair_dirs, flavour_sets
from torchwheel.analysis.member import (
    BinaryAnalysis,
    MemberBinary,
    UnreadableBinary,
    analyze_binary,
    loaded_by_import,
)
from torchwheel.analysis.memberpool import INLINE_BYTES, Hashed, MemberPool, batches, one_name_per_file
from torchwheel.analysis.platforms import expected
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.analysis.wheelfacts import WheelFacts, is_torch_itself
from torchwheel.binary import BinaryError, BinaryFacts
from torchwheel.binary.memberscan import scan_member
from torchwheel.frozen import frozen
from torchwheel.tables.tableset import Tables
from torchwheel.torchabi.torch_releases import Releases
from torchwheel.wheel.contents import WheelContents, is_compiled_name
from torchwheel.wheel.metadata import parse_metadata
from torchwheel.wheel.record import verify_record
from torchwheel.wheel.sources import Source


def hookless_modules(binaries: Iterable[MemberBinary]) -> Iterator[str]:
    """The module stems of the compiled members named like modules (``.cpython-3XY``,
    ``.abi3``, ``.abi3t``) that export no module hook: torch op libraries, mostly."""
    for b in binaries:
        suffix = parse_suffix(b.member)
        if suffix.module and suffix.kind != "bare" and b.analysis.kind != "extension-module":
            yield suffix.module


_Hashes = dict[str, Hashed]


def _read_members(
    source: Source,
    tables: Tables,
    verify_hashes: bool,
    pool: MemberPool | None,
    meanwhile: Callable[[], None] = lambda: None,
) -> tuple[_Hashes, dict[str, BinaryAnalysis | UnreadableBinary]]:
    """(member -> (hash, size), compiled member -> its analysis): every member read once,
    on ``pool`` (started already, or here), or on this thread for a small wheel.
    ``meanwhile`` runs on this thread while the pool reads, before it waits for the pool."""
    contents = source.contents

    def analyzed(member: str, read: BinaryFacts | BinaryError) -> BinaryAnalysis | UnreadableBinary:
        if isinstance(read, BinaryError):
            return UnreadableBinary(member, str(read))
        return analyze_binary(read, tables.shims)

    hashes: _Hashes = {}
    results: dict[str, BinaryAnalysis | UnreadableBinary] = {}
    if pool is None and sum(map(source.member_size, contents.members)) < INLINE_BYTES:
        compiled, same = one_name_per_file(
            source,
            sorted(
                (m for m in contents.members if is_compiled_name(m)), key=source.member_size, reverse=True
            ),
        )
        for m in compiled:
            hashes[m], read = scan_member(source, m, verify_hashes)
            results[m] = analyzed(m, read)
        others = [m for m in contents.members if not is_compiled_name(m)]
        for names in batches(others, source.member_size):
            for m in names:
                hashes[m] = source.hash_member(m) if verify_hashes else (None, source.member_size(m))
        _copy_to_links(same, hashes, results)
        return hashes, results
    from concurrent.futures import FIRST_COMPLETED, wait

    pool = pool or MemberPool(source, verify_hashes)
    try:
        meanwhile()
        # The compiled members are analyzed here, as their scans finish, while the threads
        # go on inflating: the analysis (Python, GIL held) no longer stalls a thread's next
        # member. A failure is raised as before: the first in the members' order.
        order = {m: i for i, m in enumerate(pool.compiled)}
        pending = {f: m for m, f in pool.scans.items()}
        failed: dict[int, BaseException] = {}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                m = pending.pop(future)
                try:
                    hashes[m], read = future.result()
                    results[m] = analyzed(m, read)
                except Exception as exc:
                    failed[order[m]] = exc
        if failed:
            raise failed[min(failed)]
        for batch in pool.hashed:
            hashes.update(batch.result())
    finally:
        pool.close()
    # in the order of the inline read: compiled members biggest first, then the others, then
    # the further names of a file read once
    hashes = {m: hashes[m] for m in pool.compiled} | hashes
    results = {m: results[m] for m in pool.compiled}
    _copy_to_links(pool.same, hashes, results)
    return hashes, results


def _copy_to_links(
    same: dict[str, str], hashes: _Hashes, results: dict[str, BinaryAnalysis | UnreadableBinary]
) -> None:
    for name, read in same.items():
        hashes[name] = hashes[read]
        result = results[read]
        results[name] = (
            UnreadableBinary(name, result.error) if isinstance(result, UnreadableBinary) else result
        )


def collect(
    source: Source, tables: Tables, verify_hashes: bool = True, pool: MemberPool | None = None
) -> WheelFacts:
    """Read every member once, in parallel: inflate (ISA-L) and sha256 release the GIL.

    Without ``verify_hashes`` nothing but the compiled members is inflated: RECORD is
    checked for presence and sizes only, and zip CRCs still guard the bytes we read.
    """
    contents = source.contents
    metadata = parse_metadata(contents.metadata_text)
    ahead: list[reach.PythonReading] = []

    def read_python() -> None:
        """The package's Python read for ``reach`` while the threads inflate the members (on
        vLLM, 1.3 s of the main thread's that it spent waiting), assuming every compiled
        member reads: ``read_reach`` reads it again in its turn if one does not, or if this
        failed (a member that does not inflate: the error is raised there, in its order)."""
        if is_torch_itself(contents):
            return
        assumed = [_compiled(m) for m in contents.members if is_compiled_name(m)]
        try:
            ahead.append(reach.read_python(contents.members, source.member_size, source.read, assumed))
        except Exception:  # raised again in its turn, not here
            return

    hashes, results = _read_members(source, tables, verify_hashes, pool, read_python)
    readable: list[MemberBinary] = []
    unreadable: list[UnreadableBinary] = []
    for member in contents.members:
        result = results.get(member)
        if isinstance(result, UnreadableBinary):
            unreadable.append(result)
        elif result is not None:
            readable.append(MemberBinary(member, result))
    code = package_code(contents, readable, source.member_size, source.read, tables.releases, *ahead)
    # the import statements are parsed only where a file's loading is left to them (on
    # torchao's 71 wheels, 797 parses and 3.2 s of a scan's 11 s of CPU, none of them asked)
    asked = any(loaded_by_import(code.reach.of(b.member).how, b) is None for b in readable)
    stems = list(hookless_modules(readable)) if asked else []
    py_imports = pyimports.wheel_imports(contents.members, source.member_size, source.read, stems)
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
        loader_prefers=code.loader_prefers,
        loader_fallbacks=code.loader_fallbacks,
        device_code=code.device_code,
        reach=code.reach,
        version_locks=code.version_locks,
        tables=tables,
    )


@frozen
class PackageCode:
    """What the package's own code and files say of its compiled members, read without
    running anything: which build its loader prefers, which sets it goes on without, which
    files are code for an accelerator's own cores, how its Python reaches each file, which
    torch minors its own import refuses. One reading for ``collect`` and for a partial read
    (``scan --partial``), so both judge alike."""

    loader_prefers: Mapping[str, str]
    loader_fallbacks: frozenset[str]
    device_code: Mapping[str, str]
    reach: reach.Reaching
    version_locks: Mapping[str, version_lock.VersionLock]


def package_code(
    contents: WheelContents,
    binaries: Sequence[MemberBinary],
    size: Callable[[str], int],
    read: Callable[[str], bytes],
    releases: Releases,
    python: reach.PythonReading | None = None,
) -> PackageCode:
    torch_itself = is_torch_itself(contents)
    platforms = {t.platform for t in (contents.filename_tags or contents.wheel_tags)}
    promises = (
        [e for e in map(expected, sorted(platforms)) if e is not None] if "any" not in platforms else []
    )
    return PackageCode(
        loaders.preferred_flavours(contents.members, size, read, flavour_pair_dirs(binaries)),
        loaders.fallback_units(contents.members, size, read, flavour_sets(binaries)),
        device_code.device_side(binaries, promises, contents.members, size, read),
        reach.Reaching()
        if torch_itself
        else reach.read_reach(contents.members, size, read, reach_inputs(binaries), python),
        {}
        if torch_itself
        else version_lock.read_locks(contents.members, size, read, [b.member for b in binaries], releases),
    )


def reach_inputs(binaries: Iterable[MemberBinary]) -> list[reach.Compiled]:
    """What ``reach`` needs of each compiled member: the module its name makes, the
    libraries it links."""
    out = []
    for b in binaries:
        module = _compiled(b.member).module
        needed = tuple(dict.fromkeys(n for s in b.analysis.facts.slices for n in s.needed))
        hooked = any(s.python.hooks for s in b.analysis.slices)
        out.append(reach.Compiled(b.member, module, needed, hooked))
    return out


def _compiled(member: str) -> reach.Compiled:
    """A compiled member as ``reach`` knows it by its name alone: the module it makes."""
    suffix = parse_suffix(member)
    return reach.Compiled(member, pyimports.module_name(member, suffix.module) if suffix.module else None)
