"""The stable-ABI marker record: ``TORCHABI`` | schema | 8-byte big-endian feature version.

Two readers share this module: the exported-symbol route hands us the bytes at the
symbol's address, the raw scan hands us a whole buffer. Both must agree on what a valid
record is, and both must refuse to guess a schema they do not know (a future schema may
be longer and mean something else).
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass

from torchwheel.version import FeatureVersion

MAGIC = b"TORCHABI"
SYMBOL = "__torch_stable_abi_marker_v1"
SCHEMA_V1 = 1
#: bytes each known schema needs; a longer record for a known schema is accepted.
KNOWN_SCHEMAS = {SCHEMA_V1: len(MAGIC) + 1 + 8}
#: the longest record we ever need to read at a marker address.
MAX_RECORD = max(KNOWN_SCHEMAS.values())
# A raw hit whose schema byte is printable ASCII is text ("TORCHABI" in a message or a
# doc string), not a record; a small control byte is a record of a schema we do not know.
_MAX_PLAUSIBLE_SCHEMA = 0x1F

Buffer = bytes | bytearray | mmap.mmap


class MarkerError(ValueError):
    """The bytes at the marker symbol are not a marker record at all."""


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class RawHit:
    """A record found by scanning bytes: ``offset`` is where ``TORCHABI`` starts in the file."""

    offset: int
    record: MarkerRecord


def scan(buf: Buffer, start: int = 0, end: int | None = None) -> list[RawHit]:
    """Every plausible record in ``buf[start:end]``.

    ``bytes.find`` / ``mmap.find`` run in C and do not copy, which keeps a scan of a
    500 MB library at memory speed; a regex over an mmap would be no faster.
    """
    stop = len(buf) if end is None else min(end, len(buf))
    hits: list[RawHit] = []
    pos = buf.find(MAGIC, start, stop)
    while pos != -1:
        schema_at = pos + len(MAGIC)
        if schema_at < stop:
            schema = buf[schema_at]
            need = KNOWN_SCHEMAS.get(schema)
            if need is not None and pos + need <= stop:
                hits.append(RawHit(pos, decode(bytes(buf[pos : pos + need]))))
            elif need is None and 0 < schema <= _MAX_PLAUSIBLE_SCHEMA:
                hits.append(RawHit(pos, MarkerRecord(schema=schema, version=None)))
        pos = buf.find(MAGIC, pos + 1, stop)
    return hits
