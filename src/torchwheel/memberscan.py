"""Read one compiled member of a wheel while it inflates: hash it, scan it, keep little.

A CUDA extension can be 500 MB inflated. Holding it in memory to parse it would break the
300 MB budget and a second inflate to hash it would double the time, so one pass does
everything: every byte is hashed (RECORD) and scanned for marker records, and only the byte
ranges the ELF reader needs are kept: the head (headers, and in linker output .dynsym and
.dynstr), the tail, and whatever ``elf.needed_ranges`` names as the stream learns the layout
(the section table, PT_DYNAMIC, and .dynsym/.dynstr/.dynamic where patchelf moved them).
If the reader asks for bytes outside them (``MissingRange``), the member is inflated again
up to that point and the range captured: a fast path with a checked fallback. Other
formats (LIEF reads whole files anyway) and small members are read whole.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator

from torchwheel import marker
from torchwheel.binary import BinaryError, BinaryFacts, read_binary, read_sparse_elf, sniff
from torchwheel.binary.elf import needed_ranges
from torchwheel.binary.sparse import MissingRange, SparseBuffer
from torchwheel.wheelfile import record_hash

BIG = 8 << 20  # members larger than this are scanned as a stream (two whole 40 MB libraries
# in flight at once were most of the peak memory on torch's wheel)
_HEAD = 8 << 20
_TAIL = 4 << 20
_SLACK = 4 << 20  # a fallback pass captures at least this much around what was missing
_PASSES = 6
_OVERLAP = len(marker.MAGIC) + marker.MAX_RECORD  # a record may straddle two chunks

Stream = Callable[[int | None], Iterator[bytes]]  # stop offset -> inflated chunks
Result = tuple[tuple[str | None, int], BinaryFacts | BinaryError]


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
        data = b"".join(stream(None))
        return (record_hash(data) if hashing else None, len(data)), _read_whole(data, name)
    return _scan_stream(name, size, stream, head, tail, hashing)


def _read_whole(data: bytes, name: str) -> BinaryFacts | BinaryError:
    try:
        return read_binary(data, name)
    except BinaryError as exc:
        return exc


class _Capture:
    def __init__(self, wanted: list[tuple[int, int]]) -> None:
        self.wanted = wanted
        self.pieces: dict[int, bytes] = {}

    def feed(self, pos: int, chunk: bytes) -> None:
        end = pos + len(chunk)
        for lo, hi in self.wanted:
            a, b = max(lo, pos), min(hi, end)
            if a < b:
                self.pieces[a] = chunk[a - pos : b - pos]


def _scan_stream(name: str, size: int, stream: Stream, head: int, tail: int, hashing: bool) -> Result:
    digest = hashlib.sha256() if hashing else None
    capture = _Capture([(0, min(size, max(head, size // 32))), (max(0, size - tail), size)])
    hits: dict[int, marker.RawHit] = {}
    record_bytes: dict[int, bytes] = {}
    whole: bytearray | None = None
    carry = b""
    pos = 0
    checkpoints = [min(4096, size)]  # offsets after which to ask the reader what it needs
    for chunk in stream(None):
        if digest is not None:
            digest.update(chunk)
        if pos == 0 and sniff(chunk[:4]) != "elf":
            whole = bytearray()
        if whole is not None:
            whole += chunk
            pos += len(chunk)
            continue
        capture.feed(pos, chunk)
        while checkpoints and pos + len(chunk) >= checkpoints[0]:
            # Ask the reader which ranges it will need, given what is captured so far: after
            # the head (the section table, PT_DYNAMIC), then again once each new range went
            # by (the section table names .dynsym, .dynstr, .dynamic, wherever patchelf put
            # them). Each question only adds ranges, and an ELF has few: this ends.
            checkpoints.pop(0)
            for lo, hi in needed_ranges(SparseBuffer.from_ranges(size, capture.pieces)):
                if (lo, hi) not in capture.wanted:
                    capture.wanted.append((lo, hi))
                    if hi > pos + len(chunk):
                        checkpoints.append(hi)
            checkpoints.sort()
            capture.feed(pos, chunk)
        # The chunk itself, then the seam with the previous one: no multi-MB concatenation.
        seam = carry + chunk[:_OVERLAP]
        for window, base in ((chunk, pos), (seam, pos - len(carry))):
            for hit in marker.scan(window):
                at = base + hit.offset
                if at not in hits:
                    hits[at] = marker.RawHit(at, hit.record)
                    record_bytes[at] = window[hit.offset : hit.offset + marker.MAX_RECORD]
        carry = (carry + chunk)[-_OVERLAP:] if len(chunk) < _OVERLAP else chunk[-_OVERLAP:]
        pos += len(chunk)
    hashed = ("sha256=" + _b64(digest.digest()) if digest is not None else None, pos)
    if whole is not None:
        return hashed, _read_whole(bytes(whole), name)
    ordered = [hits[k] for k in sorted(hits)]
    pieces = dict(capture.pieces)
    _merge(pieces, record_bytes)
    for _ in range(_PASSES):
        try:
            return hashed, read_sparse_elf(SparseBuffer.from_ranges(size, pieces), name, ordered)
        except MissingRange as missing:
            lo, hi = missing.start, min(size, max(missing.stop, missing.start + _SLACK))
            extra = _Capture([(lo, hi)])
            at = 0
            for chunk in stream(hi):
                extra.feed(at, chunk)
                at += len(chunk)
            _merge(pieces, extra.pieces)
        except BinaryError as exc:
            return hashed, exc
    return hashed, BinaryError(f"{name}: the ELF reader kept asking for more bytes; giving up")


def _merge(pieces: dict[int, bytes], more: dict[int, bytes]) -> None:
    """Add pieces; where two start at one offset, keep the longer (a 25-byte marker record
    must not replace a captured chunk that starts at the same byte)."""
    for start, data in more.items():
        if len(data) > len(pieces.get(start, b"")):
            pieces[start] = data


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
