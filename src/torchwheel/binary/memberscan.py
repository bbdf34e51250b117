"""Read one compiled member of a wheel while it inflates: hash it, scan it, keep little.

A CUDA extension can be 500 MB inflated. Holding it in memory to parse it would break the
300 MB budget and a second inflate to hash it would double the time, so one pass does
everything: every byte is hashed (RECORD) and scanned for marker records, and only the byte
ranges the reader needs are kept: the head (headers, and in linker output .dynsym and
.dynstr), the tail, and whatever the format's ``needed_ranges`` names as the stream learns the
layout (ELF: the section table, PT_DYNAMIC, .dynsym/.dynstr/.dynamic where patchelf moved
them; Mach-O: each slice's load commands, export trie, external symbols and their names;
PE: section table, export directory, import descriptors, thunks and names). If the reader
asks for bytes outside them (``MissingRange``), the member is inflated again up to that
point and the range captured, with everything else the reader can name by then: a fast
path with a checked fallback. Small members are read whole; big non-binaries are only hashed.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import mmap
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from torchwheel.binary import BinaryError, BinaryFacts, marker_record, not_a_binary, read_binary, sniff
from torchwheel.binary.capture import Capture, covered, merge
from torchwheel.binary.format import FormatReader
from torchwheel.binary.gpucode import GpuScan, GpuScanner, unscanned
from torchwheel.binary.marker_record import Buffer
from torchwheel.binary.sparse import MissingRange, SparseBuffer
from torchwheel.safeopen import open_regular, read_chunks
from torchwheel.wheel.record import digest_text, record_hash

BIG = 8 << 20  # members larger than this are scanned as a stream (two whole 40 MB libraries
# in flight at once were most of the peak memory on torch's wheel)
_HEAD = 8 << 20
_TAIL = 4 << 20
# the head grows with the member (1/32 of it: a 1 GB CUDA library keeps 32 MB) up to this:
# a 12 GiB member kept 384 MB; past it the fallback passes fetch what the tables still need
_HEAD_MAX = 32 << 20
_SLACK = 4 << 20  # a fallback pass captures at least this much around what was missing
_PASSES = 6
_QUESTIONS = 64  # needed_ranges calls per member while it streams (torch_cpu.dll: 28)
_OVERLAP = len(marker_record.MAGIC) + marker_record.MAX_RECORD  # a record may straddle two chunks

Stream = Callable[[int | None], Iterator[bytes]]  # stop offset -> inflated chunks
Result = tuple[tuple[str | None, int], BinaryFacts | BinaryError]


class Members(Protocol):
    """What a scan needs of a wheel-shaped source (``wheel.sources.Source``)."""

    def member_size(self, name: str) -> int: ...

    def stream(self, name: str, stop: int | None = None) -> Iterator[bytes]: ...


def scan_member(source: Members, name: str, hashing: bool = True) -> Result:
    """Hash and read one compiled member of a wheel, a folder or an installed distribution
    in a single streaming pass."""
    return scan(name, source.member_size(name), lambda stop: source.stream(name, stop), hashing=hashing)


def scan(
    name: str,
    size: int,
    stream: Stream,
    *,
    hashing: bool = True,
    big: int = BIG,
    head: int = _HEAD,
    tail: int = _TAIL,
) -> Result:
    """(RECORD hash, or None without ``hashing``, and size; facts or the reason the member
    is not a readable binary).

    ``big``, ``head`` and ``tail`` exist for the differential tests, which force the
    streaming path and its fallbacks onto small fixtures."""
    if size <= big:
        return _scan_whole(name, size, stream, hashing)
    return _scan_stream(name, size, stream, head, tail, hashing)


def _scan_whole(name: str, size: int, stream: Stream, hashing: bool) -> Result:
    """A small member read whole, hashed as the chunks arrive, while the bytes of whole
    members in flight stay within ``_WHOLE_IN_FLIGHT`` (``_InFlight``).

    Joining the chunks held the member twice in the heap (the chunks and the join), and
    glibc keeps a freed multi-MB block in the arena of the thread that freed it, one arena
    per worker: the many-members case grew with the cores. From ``_MAPPED`` up, the member
    goes into an anonymous map of exactly its size, outside the heap, given back to the
    kernel when closed (populated at once: faulting its pages in one by one cost 8 ms per
    8 MB on this VM, populating 3.5 ms). Below, blocks are small enough for the heap to
    reuse. A source that yields more than it declared (a file that grew while it was read)
    is hashed to its end but not kept."""
    with _IN_FLIGHT.held(size):
        if size < _MAPPED:
            data = b"".join(stream(None))
            read = _read_whole(data, name) if data else BinaryError("empty file")
            return (record_hash(data) if hashing else None, len(data)), read
        digest = hashlib.sha256() if hashing else None
        buf = mmap.mmap(-1, size, flags=_MAP_FLAGS)
        try:
            pos = 0
            for chunk in stream(None):
                if digest is not None:
                    digest.update(chunk)
                if pos + len(chunk) <= size:
                    buf[pos : pos + len(chunk)] = chunk
                pos += len(chunk)
            hashed = (digest_text(digest.digest()) if digest is not None else None, pos)
            if pos > size:
                return hashed, BinaryError(f"grew while it was read (to {pos:,} bytes from {size:,})")
            if pos == 0:
                return hashed, BinaryError("empty file")
            return hashed, _read_whole(buf if pos == size else buf[:pos], name)
        finally:
            buf.close()


def _read_whole(data: Buffer, name: str) -> BinaryFacts | BinaryError:
    try:
        return read_binary(data, name)
    except BinaryError as exc:
        return exc


_MAPPED = 1 << 20  # whole members from 1 MiB go into a map of their own
_MAP_FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0)  # Linux only


class _InFlight:
    """A byte budget the scanning threads share: a whole read waits until the members
    already being read whole leave room for it.

    How many workers read at once is the machine's core count (up to eight), so without it
    the many-members case grows with the cores: each worker's member, chunks and arena.
    300 members of 8 MB with eight workers (``check``, peak RSS): 102-167 MB before, 72-88 MB
    with four members in flight, 58-72 MB with two, the same as two cores take. One member always proceeds, whatever its size (none is larger than ``BIG`` here), so
    this cannot deadlock; members larger than ``BIG`` are streamed and keep little."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._used = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def held(self, size: int) -> Iterator[None]:
        with self._cond:
            while self._used and self._used + size > self.cap:
                self._cond.wait()
            self._used += size
        try:
            yield
        finally:
            with self._cond:
                self._used -= size
                self._cond.notify_all()


_WHOLE_IN_FLIGHT = 4 * BIG  # four whole 8 MB members at once: more cores add no memory
_IN_FLIGHT = _InFlight(_WHOLE_IN_FLIGHT)


def _scan_stream(name: str, size: int, stream: Stream, head: int, tail: int, hashing: bool) -> Result:
    """A big member: the one pass (``_FirstPass``), the GPU code it found, then the read with
    its fallback passes (``_read_with_fallbacks``)."""
    first = _FirstPass(name, size, head, tail, hashing)
    for chunk in stream(None):
        first.feed(chunk)
    hashed = (digest_text(first.digest.digest()) if first.digest is not None else None, first.pos)
    if first.fmt is None:
        return hashed, not_a_binary()
    pieces = dict(first.capture.pieces)
    merge(pieces, first.hits.raw)
    gpu = first.gpu
    gpu_scan = (
        None if gpu is None else _gpu_result(first.fmt, gpu, SparseBuffer.from_ranges(size, pieces), stream)
    )
    return hashed, _read_with_fallbacks(first.fmt, name, size, stream, pieces, first.hits, gpu_scan)


class _FirstPass:
    """The pass every streamed member gets: every byte hashed and scanned for marker records
    and GPU code, and the ranges the reader names kept as they go by.

    The member is sniffed once, on its first chunk; ``fmt`` is None for anything no format
    claims (then it is only hashed). The capture starts as the head (at least 1/32 of the
    member, at most ``_HEAD_MAX``) and the tail, and grows by what the format's ``needed_ranges`` names."""

    def __init__(self, name: str, size: int, head: int, tail: int, hashing: bool) -> None:
        self.size = size
        self.digest = hashlib.sha256() if hashing else None
        self.capture = Capture(
            [(0, min(size, max(head, min(size // 32, _HEAD_MAX)))), (max(0, size - tail), size)], name
        )
        self.hits = marker_record.Hits()  # bounded: see marker_record.Hits
        self.gpu: GpuScanner | None = None  # fed every chunk once the head tells where GPU code may lie
        self.fmt: FormatReader | None = None
        self.sniffed = False
        self.carry = b""
        self.pos = 0
        self.checkpoints = [min(4096, head, size)]  # offsets after which to ask the reader what it needs
        self.questions = 0  # each re-reads the tables found so far: real layouts need about six
        self.asked: set[int] = set()  # checkpoints already set

    def feed(self, chunk: bytes) -> None:
        if self.digest is not None:
            self.digest.update(chunk)
        if not self.sniffed:
            self.sniffed = True
            self.fmt = sniff(chunk[:4])
        fmt, pos = self.fmt, self.pos
        if fmt is None:  # not a binary at all: hash it, keep nothing
            self.pos += len(chunk)
            return
        self.capture.feed(pos, chunk)
        if self.gpu is None:
            zones = (
                fmt.gpu_zones(SparseBuffer.from_ranges(self.size, {0: chunk}))
                if pos == 0
                else [(0, self.size)]
            )
            self.gpu = GpuScanner(self.size, zones)
        self.gpu.feed(pos, chunk)
        self._ask(fmt, pos, chunk)
        self.carry = collect_markers(self.hits, self.carry, pos, chunk)
        self.pos += len(chunk)

    def _ask(self, fmt: FormatReader, pos: int, chunk: bytes) -> None:
        """Ask the reader which ranges it will need, given what is captured so far: after the
        head (the section table, PT_DYNAMIC), then again once each new range went by (the
        section table names .dynsym, .dynstr, .dynamic, wherever patchelf put them). Each
        question only adds ranges, and an ELF has few: this ends."""
        checkpoints = self.checkpoints
        while checkpoints and pos + len(chunk) >= checkpoints[0]:
            if self.questions >= _QUESTIONS:
                checkpoints.clear()  # the fallback passes fetch what is still missing
                break
            self.questions += 1
            heapq.heappop(checkpoints)
            for lo, hi in fmt.needed_ranges(SparseBuffer.from_ranges(self.size, self.capture.pieces)):
                # Ask again once each range went by (also one the head already holds: what
                # it points at is only known then); a range ending inside this chunk is
                # asked about at once, after the chunk is fed anew: PE thunks and the names
                # they point at are often within one chunk of their descriptors.
                new = self.capture.want(lo, hi)
                if (new or hi > pos + len(chunk)) and hi not in self.asked:
                    self.asked.add(hi)
                    heapq.heappush(checkpoints, max(hi, pos + 1))
            self.capture.feed(pos, chunk)


def collect_markers(hits: marker_record.Hits, carry: bytes, pos: int, chunk: bytes) -> bytes:
    """The marker records of one chunk at ``pos`` into ``hits``, given the ``carry`` the
    previous chunk left; returns the next chunk's carry. One routine for every streamed read
    (this pass, and ``scan.partial_member``'s ranged one), so that both find the same records.

    The seam with the previous chunk, then the chunk itself: no multi-MB concatenation.
    A record in the seam may be seen again by the chunk (or, after chunks shorter than
    the seam, by the next seam): ``horizon`` makes Hits remember exactly those offsets."""
    seam = carry + chunk[:_OVERLAP]
    hits.forget_before(pos - len(carry))
    hits.horizon = pos - len(carry)
    marker_record.collect_hits(seam, hits, base=pos - len(carry))
    hits.horizon = pos + len(chunk) - _OVERLAP
    marker_record.collect_hits(chunk, hits, base=pos)
    return (carry + chunk)[-_OVERLAP:] if len(chunk) < _OVERLAP else chunk[-_OVERLAP:]


def _read_with_fallbacks(
    fmt: FormatReader,
    name: str,
    size: int,
    stream: Stream,
    pieces: dict[int, bytes],
    hits: marker_record.Hits,
    gpu_scan: GpuScan | None,
) -> BinaryFacts | BinaryError:
    """The read of what the first pass kept; when the reader asks for bytes outside it
    (``MissingRange``), one more pass up to them (``_fallback_plan``), at most ``_PASSES``.

    Fallback passes re-inflate at most as many bytes as the member has, in all: the total
    work stays near two passes whatever order a hostile layout puts its tables in (each
    pass used to be allowed the whole member, six times over). Short passes near the head
    (a few MB each) are what real layouts need and stay cheap on a small member."""
    ordered = hits.ordered()
    budget = size + _PASSES * _SLACK
    for _ in range(_PASSES):
        try:
            facts = fmt.read(SparseBuffer.from_ranges(size, pieces), name, ordered, gpu_scan)
            return _with_omitted(facts, hits)
        except MissingRange as missing:
            extra, lo, hi = _fallback_plan(fmt, name, size, pieces, missing)
            if hi > budget:
                return BinaryError(
                    f"malformed binary: its tables lie in an order that needs more than two passes "
                    f"over the member (bytes {lo:#x}..{hi:#x} are needed after the first pass)"
                )
            budget -= hi
            at = 0
            for chunk in stream(hi):
                extra.feed(at, chunk)
                at += len(chunk)
            merge(pieces, extra.pieces)
        except BinaryError as exc:
            return exc
    return BinaryError(f"{name}: the reader kept asking for more bytes; giving up")


def _fallback_plan(
    fmt: FormatReader, name: str, size: int, pieces: dict[int, bytes], missing: MissingRange
) -> tuple[Capture, int, int]:
    """What one fallback pass captures, and the missing range's start and the pass's end:
    the range missing (at least ``_SLACK``), and everything else the reader can name now,
    so one pass answers many questions."""
    lo, hi = missing.start, min(size, max(missing.stop, missing.start + _SLACK))
    extra = Capture([(lo, hi)], name)
    view = SparseBuffer.from_ranges(size, pieces)
    first = lo
    for more in fmt.needed_ranges(view):
        if not covered(view, *more):
            extra.want(*more)
            hi = max(hi, more[1])
            first = min(first, more[0])
    if hi - first <= 4 * _SLACK:
        # one region (a PE's import data: descriptors, thunks, names): take it whole,
        # so names that thunks read in this pass point at are there too
        extra.want(first, hi)
    return extra, lo, hi


def _gpu_result(fmt: FormatReader, gpu: GpuScanner, view: SparseBuffer, stream: Stream) -> GpuScan:
    """What the stream found, or, when the section table names a GPU section the stream did
    not look through (a file whose read-only data shares the R+X segment with its code),
    that section read by a second pass up to its end: exact, and paid only by such files."""
    sections = fmt.gpu_sections(view)
    missed = unscanned(sections, gpu.zones) if sections else []
    if not missed:
        return gpu.result()
    exact = GpuScanner(len(view), missed)
    at = 0
    for chunk in stream(max(hi for _, hi in missed)):
        exact.feed(at, chunk)
        at += len(chunk)
    return exact.result()


def _with_omitted(facts: BinaryFacts, hits: marker_record.Hits) -> BinaryFacts:
    """The count of records the stream saw but did not keep, on the slices they lie in."""
    if not hits.omitted:
        return facts
    slices = tuple(replace(s, raw_markers_omitted=hits.omitted_in(*s.file_range)) for s in facts.slices)
    return replace(facts, slices=slices)


def scan_file(path: Path, label: str, *, hashing: bool = False, follow_symlinks: bool = True) -> Result:
    """A compiled file on disk, read exactly as a wheel member is: one streaming pass.

    Mapping the file instead looked cheaper, but the marker scan must see every byte, and
    every page it touches of a map stays resident: a 1 GB library (or 1 GB of zeros behind a
    Mach-O magic) would count 1 GB against the budget. Streamed, only the ranges the reader
    names are kept. ``OSError`` (a FIFO, a device, an unreadable file) passes to the caller.
    """
    fd = open_regular(path, follow_symlinks)
    try:
        size = os.fstat(fd).st_size

        def stream(stop: int | None) -> Iterator[bytes]:
            return read_chunks(fd, size if stop is None else min(stop, size))

        return scan(label, size, stream, hashing=hashing)
    finally:
        os.close(fd)
