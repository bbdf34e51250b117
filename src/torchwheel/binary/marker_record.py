"""The stable-ABI marker record: ``TORCHABI`` | schema | 8-byte big-endian feature version.

Two readers share this module: the exported-symbol route hands us the bytes at the
symbol's address, the raw scan hands us a whole buffer. Both must agree on what a valid
record is, and both must refuse to guess a schema they do not know (a future schema may
be longer and mean something else).
"""

from __future__ import annotations

import bisect
import sys

from torchwheel import limits
from torchwheel.binary import bytesearch
from torchwheel.binary.bytesearch import Buffer as Buffer
from torchwheel.frozen import frozen
from torchwheel.version import FeatureVersion

MAGIC = b"TORCHABI"
SYMBOL = "__torch_stable_abi_marker_v1"
SCHEMA_V1 = 1
#: bytes each known schema needs; a longer record for a known schema is accepted.
KNOWN_SCHEMAS = {SCHEMA_V1: len(MAGIC) + 1 + 8}
#: the longest record we ever need to read at a marker address.
MAX_RECORD = max(KNOWN_SCHEMAS.values())
# A raw hit whose schema byte is printable ASCII is text ("TORCHABI" in a message or a
# doc string), not a record; a control byte (but NUL) is a record of a schema we do not know.
_UNKNOWN_SCHEMA_BYTES = range(0x01, 0x20)


class MarkerError(ValueError):
    """The bytes at the marker symbol are not a marker record at all."""


@frozen
class MarkerRecord:
    """A decoded record; ``version`` is None when the schema is unknown to this reader."""

    schema: int
    version: FeatureVersion | None

    @property
    def known(self) -> bool:
        return self.version is not None


def encode(version: FeatureVersion, schema: int = SCHEMA_V1) -> bytes:
    if schema != SCHEMA_V1:
        raise ValueError(f"cannot encode marker schema {schema}")
    return MAGIC + bytes([schema]) + version.to_bytes()


def decode(raw: bytes) -> MarkerRecord:
    """Decode the bytes found at the exported marker symbol."""
    if len(raw) < len(MAGIC) + 1 or raw[: len(MAGIC)] != MAGIC:
        raise MarkerError(f"marker bytes do not start with {MAGIC.decode()}: {raw[:17].hex()}")
    schema = raw[len(MAGIC)]
    need = KNOWN_SCHEMAS.get(schema)
    if need is None:
        return MarkerRecord(schema=schema, version=None)
    if len(raw) < need:
        raise MarkerError(f"marker record of schema {schema} is truncated ({len(raw)} of {need} bytes)")
    start = len(MAGIC) + 1
    return MarkerRecord(schema, FeatureVersion.from_int(int.from_bytes(raw[start : start + 8], "big")))


@frozen
class RawHit:
    """A record found by scanning bytes: ``offset`` is where ``TORCHABI`` starts in the file."""

    offset: int
    record: MarkerRecord


class Hits:
    """The raw records of one byte range, kept within ``limits.max_marker_hits``.

    A member that is nothing but records (32 MB of them: two million) must cost neither two
    million objects nor a pass per record. The first ``keep`` are kept; after that only a
    record unlike every one kept so far (so TW103/TW104 still see a schema or a target that
    differs), up to twice ``keep`` (by then two targets differ and TW104 fires anyway); every
    other one is counted in ``omitted``, which the report prints as "N more records".

    A streaming scan looks at the seam between two chunks again; ``horizon`` says from which
    offset on a hit may be seen twice, and only those offsets are remembered. ``cuts`` (slice
    starts of a universal Mach-O, when the stream knows them) keep the omitted counts apart
    per slice, as a whole-buffer scan of each slice would count them."""

    def __init__(self, keep: int | None = None, cuts: tuple[int, ...] = ()) -> None:
        self.keep = limits.current().max_marker_hits.value if keep is None else keep
        self.found: list[RawHit] = []
        self.raw: dict[int, bytes] = {}  # offset -> the record's bytes, for a sparse buffer
        self.cuts = sorted({0, *cuts})
        self._omitted = [0] * len(self.cuts)
        self.horizon = sys.maxsize
        self._seen: set[bytes] = set()
        self._recent: set[int] = set()

    def forget_before(self, offset: int) -> None:
        self._recent = {at for at in self._recent if at >= offset}

    @property
    def omitted(self) -> int:
        return sum(self._omitted)

    def omitted_in(self, lo: int, hi: int) -> int:
        """Records left out between two cuts (a universal slice; the whole file without cuts)."""
        if len(self.cuts) == 1:
            return self._omitted[0]
        return sum(n for at, n in zip(self.cuts, self._omitted, strict=True) if lo <= at < hi)

    def ordered(self) -> list[RawHit]:
        return sorted(self.found, key=lambda hit: hit.offset)

    def _count_seen(self, buf: Buffer, lo: int, hi: int, stop: int, base: int) -> bool:
        """Count the records starting in ``[lo, hi)`` as omitted if every ``TORCHABI`` there
        starts one already seen (two C-speed counts per key); False: visit them one by one."""
        if (
            len(self.cuts) > 1
            or base + hi + MAX_RECORD > self.horizon
            or any(at >= base + lo for at in self._recent)
        ):
            return False  # a seam, a universal file's slices: the exact path
        data = bytes(buf[lo : min(stop, hi + MAX_RECORD)])
        total = data.count(MAGIC, 0, hi - lo + len(MAGIC) - 1)
        counted = 0
        for key in self._seen:
            if counted >= total:
                break
            counted += data.count(key, 0, hi - lo + len(key) - 1)
        if counted != total:
            return False
        self._omitted[0] += total
        return True

    def _add(self, offset: int, key: bytes, raw: bytes) -> None:
        if self._recent and offset in self._recent:
            return
        if offset >= self.horizon:
            self._recent.add(offset)
        found = self.found
        if len(found) < self.keep or (key not in self._seen and len(found) < 2 * self.keep):
            found.append(RawHit(offset, decode(key)))
            self.raw[offset] = raw
            self._seen.add(key)
        elif len(self.cuts) == 1:
            self._omitted[0] += 1
        else:
            self._omitted[bisect.bisect_right(self.cuts, offset) - 1] += 1


def collect_hits(buf: Buffer, hits: Hits, start: int = 0, end: int | None = None, base: int = 0) -> None:
    """Add every plausible record in ``buf[start:end]`` to ``hits`` (offsets plus ``base``).

    The search runs in C and copies nothing (``bytesearch.find``: glibc's ``memmem`` with
    the GIL released on long spans), which keeps a scan of a 500 MB library at memory speed
    while other threads inflate. Most spans hold no record at all: one search over the whole
    span says so. Once ``hits`` keeps all it will keep of the common records, a block in
    which every ``TORCHABI`` starts a record already seen is counted with ``bytes.count``
    instead of visited hit by hit: 32 MB of records once took 16-25 s.
    """
    stop = len(buf) if end is None else min(end, len(buf))
    at = start
    while at < stop:
        first = bytesearch.find(buf, MAGIC, at, stop)
        if first < 0:
            return  # no record starts in the rest of the span
        at = max(at, first - (first - at) % _BLOCK)  # the blocks before it hold none
        block = min(stop, at + _BLOCK)
        if not (len(hits.found) >= hits.keep and hits._count_seen(buf, at, block, stop, base)):
            _each(buf, hits, at, block, stop, base)
        at = block


_BLOCK = 1 << 16


def _each(buf: Buffer, hits: Hits, lo: int, hi: int, stop: int, base: int) -> None:
    """Hit by hit: records starting in ``[lo, hi)``, their bytes read up to ``stop``."""
    find = buf.find  # within one 64 KiB block: below what a GIL-free search pays for
    magic_len = len(MAGIC)
    limit = min(stop, hi + magic_len - 1)
    pos = find(MAGIC, lo, limit)
    while pos != -1:
        schema_at = pos + magic_len
        if schema_at < stop:
            schema = buf[schema_at]
            need = KNOWN_SCHEMAS.get(schema)
            raw = bytes(buf[pos : min(stop, pos + MAX_RECORD)])
            if need is not None and pos + need <= stop:
                hits._add(base + pos, raw[:need], raw)
            elif need is None and schema in _UNKNOWN_SCHEMA_BYTES:
                hits._add(base + pos, raw[: magic_len + 1], raw)
        pos = find(MAGIC, pos + magic_len, limit)
