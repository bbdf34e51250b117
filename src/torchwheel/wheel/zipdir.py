"""The zip central directory, read so that no claim in it can stretch memory or time.

Why our own reader instead of ``zipfile`` (APPNOTE 4.3, only the parts wheels use): zipfile
builds a ~500-byte ``ZipInfo`` plus decoded names for every central entry before a caller
can count them (1M entries: 1.3 GB); before 3.12 it neither compares a local header with
its central entry nor checks that member data do not overlap (the overlapping-entry zip
bomb, a ``../`` local name behind an innocent central one); and it inflates bzip2/lzma
without an output bound. pip and installer refuse such archives through 3.12's zipfile; we
refuse them here on every Python, before any member is read:

- the entry count comes from the end-of-central-directory record and is checked against
  ``limits.max_members`` before anything per member is built; the directory must hold
  exactly that many entries (no hidden extra entries another reader would see);
- every local header must agree with its central entry (name, method, and CRC and sizes
  unless a data descriptor follows), and each member's [local header, data end) must end
  before the next member's header starts (CPython 3.12's ``_end_offset`` rule);
- names: no NUL, not empty, at most ``limits.max_name_length`` bytes; version needed at
  most 6.3 (what zipfile reads); no encryption; one disk.

Per member only a slotted ``Member`` is kept (about 200 bytes with its name). Inflating a
member's bytes is ``inflate``'s.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Protocol

from torchwheel import limits
from torchwheel.errors import InputError

_EOCD = struct.Struct("<4sHHHHIIH")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")
_CENTRAL = struct.Struct("<4sBBHHHHHIIIHHHHHII")
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_NEWEST_EXTRACT_VERSION = 63  # zipfile.MAX_EXTRACT_VERSION: zip64 and bzip2/lzma, nothing newer
_MAX32 = 0xFFFFFFFF
_WINDOW = 1 << 22  # central directory read 4 MiB at a time
_UTF8 = 0x800
_DESCRIPTOR = 0x8
_ENCRYPTED = 0x1 | 0x40  # traditional or strong encryption

ReadAt = Callable[[int, int], bytes]


@dataclass(slots=True)
class Member:
    """One central entry, field names as in ``zipfile.ZipInfo`` (which callers also pass)."""

    filename: str
    header_offset: int
    compress_size: int
    file_size: int
    CRC: int
    compress_type: int
    flag_bits: int
    external_attr: int
    dos_stamp: int  # DOS date << 16 | DOS time, as stored
    # local header size with name and extra (filled by the overlap check): kept instead of
    # the data offset because it is nearly always a cached small int (no 32 bytes per member)
    local_size: int = 0

    @property
    def data_offset(self) -> int:
        """Where the compressed bytes start: after the *local* header."""
        return self.header_offset + self.local_size

    def is_dir(self) -> bool:
        return self.filename.endswith("/")

    @property
    def date_time(self) -> tuple[int, int, int, int, int, int]:
        d, t = self.dos_stamp >> 16, self.dos_stamp & 0xFFFF
        return ((d >> 9) + 1980, (d >> 5) & 0xF, d & 0x1F, t >> 11, (t >> 5) & 0x3F, (t & 0x1F) * 2)


class _Window:
    """Sequential reads over the central directory without holding all of it."""

    def __init__(self, read_at: ReadAt, start: int, size: int) -> None:
        self._read_at, self._pos, self._end = read_at, start, start + size
        self._buf = b""
        self._off = 0

    @property
    def left(self) -> int:
        return self._end - self._pos + len(self._buf) - self._off

    def need(self, n: int) -> tuple[bytes, int]:
        """A buffer holding the next ``n`` bytes, and where they start in it."""
        if len(self._buf) - self._off < n:
            want = min(max(n, _WINDOW), self._end - self._pos)
            more = self._read_at(self._pos, want) if want > 0 else b""
            self._pos += len(more)
            self._buf = self._buf[self._off :] + more
            self._off = 0
            if len(self._buf) < n:
                raise InputError("the central directory is truncated", reference="archive-damaged")
        return self._buf, self._off

    def skip(self, n: int) -> None:
        self._off += n


def _end_record(read_at: ReadAt, file_size: int) -> tuple[int, int, int, int]:
    """(entry count, directory size, directory start, bytes prepended), zip64 when present."""
    tail_size = min(file_size, _EOCD.size + 0xFFFF)
    tail = read_at(file_size - tail_size, tail_size)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        raise InputError(
            "not a zip archive (no end-of-central-directory record)", reference="archive-damaged"
        )
    _, disk, cd_disk, on_disk, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, at)
    eocd_at = file_size - tail_size + at
    zip64 = _zip64_end(read_at, eocd_at)
    if zip64 is not None:
        eocd_at, (disk, cd_disk, on_disk, count, cd_size, cd_offset) = zip64
    elif _MAX32 in (cd_size, cd_offset) or 0xFFFF in (count, on_disk):
        raise InputError(
            "the zip64 end-of-central-directory record is missing or corrupt", reference="archive-damaged"
        )
    if disk or cd_disk or on_disk != count:
        raise InputError("multi-disk zip archives are not supported", reference="archive-damaged")
    if cd_size > eocd_at:
        raise InputError(
            f"the central directory claims {cd_size:,} bytes; only {eocd_at:,} precede its end",
            reference="archive-damaged",
        )
    # bytes prepended to the archive shift every offset (zipfile's "concat"): where it ends
    # minus where it claims to start
    concat = eocd_at - cd_size - cd_offset
    if concat < 0:
        raise InputError(
            "the central directory offset points past its own start", reference="archive-damaged"
        )
    return count, cd_size, cd_offset + concat, concat


def _zip64_end(read_at: ReadAt, eocd_at: int) -> tuple[int, tuple[int, ...]] | None:
    """The zip64 end record a locator right before the end record points at, judged as
    CPython's ``zipfile`` judges it (3.13): another disk, a locator pointing past itself, a
    record that is not there or disagrees with its locator are refused; the record is looked
    for where the locator says, then (bytes prepended) right before the locator. Returns
    (where the record starts, its disk numbers, counts, directory size and offset)."""
    locator_at = eocd_at - _ZIP64_LOCATOR.size
    loc = read_at(locator_at, _ZIP64_LOCATOR.size) if locator_at >= 0 else b""
    if len(loc) != _ZIP64_LOCATOR.size or loc[:4] != b"PK\x06\x07":
        return None
    _, disk_of_record, record_offset, disks = _ZIP64_LOCATOR.unpack(loc)
    if disk_of_record != 0 or disks > 1:
        raise InputError(
            "multi-disk zip archives are not supported (zip64 locator)", reference="archive-damaged"
        )
    right_before = locator_at - _ZIP64_EOCD.size
    if record_offset > right_before:
        raise InputError(
            "the zip64 end-of-central-directory locator points past itself", reference="archive-damaged"
        )
    at, extra = record_offset, right_before - record_offset
    rec = read_at(at, _ZIP64_EOCD.size)
    if rec[:4] != b"PK\x06\x06" and record_offset != right_before:
        at, extra = right_before, 0
        rec = read_at(at, _ZIP64_EOCD.size)
    if len(rec) != _ZIP64_EOCD.size or rec[:4] != b"PK\x06\x06":
        raise InputError(
            "the zip64 end-of-central-directory record is missing or corrupt", reference="archive-damaged"
        )
    _, size, _, _, disk, cd_disk, on_disk, count, cd_size, cd_offset = _ZIP64_EOCD.unpack(rec)
    if cd_offset + cd_size != record_offset or size + 12 != _ZIP64_EOCD.size + extra:
        raise InputError(
            "the zip64 end-of-central-directory record disagrees with its locator",
            reference="archive-damaged",
        )
    return at, (disk, cd_disk, on_disk, count, cd_size, cd_offset)


def _zip64(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    """Replace the 0xFFFFFFFF fields from the zip64 extra field, in APPNOTE order."""
    i = 0
    while i + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, i)
        body = extra[i + 4 : i + 4 + length]
        i += 4 + length
        if kind != 1:
            continue
        values = [v for (v,) in struct.iter_unpack("<Q", body[: len(body) // 8 * 8])]
        try:
            if usize == _MAX32:
                usize = values.pop(0)
            if csize == _MAX32:
                csize = values.pop(0)
            if offset == _MAX32:
                offset = values.pop(0)
        except IndexError:
            raise InputError("a zip64 extra field is too short", reference="archive-damaged") from None
        return usize, csize, offset
    if _MAX32 in (usize, csize, offset):
        raise InputError("an entry needs a zip64 extra field it does not carry", reference="archive-damaged")
    return usize, csize, offset


def _name(raw: bytes, flags: int, where: str) -> str:
    if not raw:
        raise InputError(f"{where} has an empty member name", reference="archive-damaged")
    if b"\0" in raw:
        raise InputError(f"{where}: member name {raw!r} contains a NUL byte", reference="archive-damaged")
    try:
        return raw.decode("utf-8") if flags & _UTF8 else raw.decode("cp437")
    except UnicodeDecodeError:
        raise InputError(
            f"{where}: member name {raw!r} is flagged UTF-8 but is not", reference="archive-damaged"
        ) from None


def read_index(read_at: ReadAt, file_size: int, local_headers: bool = True) -> tuple[list[Member], int]:
    """The members in central-directory order, and where the directory starts; with
    ``local_headers`` False, no local header is read (``check_local_headers`` then checks
    those of the members read, as they are read)."""
    lim = limits.current()
    count, cd_size, cd_start, concat = _end_record(read_at, file_size)
    lim.max_members.check("the archive's member count", count)
    if count * _CENTRAL.size > cd_size:
        raise InputError(
            f"the central directory claims {count:,} entries in {cd_size:,} bytes",
            reference="archive-damaged",
        )
    max_name = lim.max_name_length.value
    window = _Window(read_at, cd_start, cd_size)
    members: list[Member] = []
    append = members.append
    shared: dict[int, int] = {}  # attributes and timestamps repeat: one int object for each value
    while window.left > 0:
        if len(members) >= count:
            raise InputError(
                f"the central directory holds more entries than the {count:,} it declares",
                reference="archive-damaged",
            )
        buf, at = window.need(_CENTRAL.size)
        sig, _, _, need, flags, method, time, date, crc, csize, usize, nlen, elen, clen, _, _, external, offset = _CENTRAL.unpack_from(buf, at)  # fmt: skip
        if sig != b"PK\x01\x02":
            raise InputError(
                f"central entry {len(members) + 1} is corrupt (bad signature)", reference="archive-damaged"
            )
        if nlen > max_name:
            lim.max_name_length.check(f"central entry {len(members) + 1}: member name length", nlen)
        buf, at = window.need(_CENTRAL.size + nlen + elen + clen)
        at += _CENTRAL.size
        raw = buf[at : at + nlen]
        if raw.isascii() and raw and b"\0" not in raw:  # the fast path: nearly every name
            name = raw.decode("ascii")
        else:
            name = _name(raw, flags, f"central entry {len(members) + 1}")
        window.skip(_CENTRAL.size + nlen + elen + clen)
        if need & 0xFF > _NEWEST_EXTRACT_VERSION:
            version = need & 0xFF
            raise InputError(
                f"member {name!r} needs zip version {version // 10}.{version % 10}; 6.3 is the newest read",
                reference="archive-damaged",
            )
        if flags & _ENCRYPTED:
            raise InputError(
                f"member {name!r} is encrypted, which wheels cannot be", reference="archive-damaged"
            )
        if _MAX32 in (usize, csize, offset):
            usize, csize, offset = _zip64(buf[at + nlen : at + nlen + elen], usize, csize, offset)
        stamp = date << 16 | time
        if len(shared) < 256:  # bounded: a crafted archive with all-different values gains nothing
            shared.setdefault(external, external)
            shared.setdefault(stamp, stamp)
        external, stamp = shared.get(external, external), shared.get(stamp, stamp)
        append(Member(name, offset + concat, csize, usize, crc, method, flags, external, stamp))
    if len(members) != count:
        raise InputError(
            f"the central directory declares {count:,} entries but holds {len(members):,}",
            reference="archive-damaged",
        )
    if local_headers:
        check_local_headers(read_at, members, cd_start)
    else:
        check_layout(members, cd_start)
    return members, cd_start


def check_layout(members: list[Member], cd_start: int) -> None:
    """What the central directory alone shows of where the members lie, for a reader that
    checks each local header only when it reads that member (a partial read): no local header
    at or past the central directory (an entry beyond the file), and no member whose bytes,
    its local header at least as long as its name and then its compressed data, reach the
    next member's header or the central directory (overlapping entries, two entries over one
    header). The whole read refuses each of them from the local headers, with these words;
    refused here before any member is read, they are refused whatever members are read."""
    ordered = sorted(members, key=lambda m: m.header_offset)
    for i, m in enumerate(ordered):
        if m.header_offset + _LOCAL.size > cd_start:
            raise InputError(
                f"member {m.filename!r}: local header is missing or corrupt", reference="archive-damaged"
            )
        end = ordered[i + 1].header_offset if i + 1 < len(ordered) else cd_start
        name = (
            len(m.filename.encode()) if m.flag_bits & _UTF8 else len(m.filename)
        )  # cp437: a byte a character
        if m.header_offset + _LOCAL.size + name + m.compress_size > end:
            what = "the central directory" if i + 1 == len(ordered) else repr(ordered[i + 1].filename)
            raise InputError(
                f"member {m.filename!r}: its data overlap {what} (overlapping entries: a zip bomb)",
                reference="archive-damaged",
            )


_NEAR = 1 << 14  # the next local header this close: read a 64 KiB window, not one header
_HEADER_GUESS = 512  # bytes read for one local header with its name and extra field


def check_local_headers(
    read_at: ReadAt, members: list[Member], cd_start: int, only: Container[str] | None = None
) -> None:
    """Local header == central entry, and no member's bytes reach into the next one's; of
    every member, or of those named ``only``."""
    ordered = sorted(members, key=lambda m: m.header_offset)
    buf, buf_at = b"", 0
    for i, m in enumerate(ordered):
        if only is not None and m.filename not in only:
            continue
        end = ordered[i + 1].header_offset if i + 1 < len(ordered) else cd_start
        at = m.header_offset - buf_at
        if at < 0 or at + _LOCAL.size > len(buf):
            buf_at = m.header_offset
            buf = read_at(buf_at, 1 << 16 if only is None and end - buf_at < _NEAR else _HEADER_GUESS)
            at = 0
        head = buf[at : at + _LOCAL.size]
        if len(head) != _LOCAL.size or head[:4] != b"PK\x03\x04":
            raise InputError(
                f"member {m.filename!r}: local header is missing or corrupt", reference="archive-damaged"
            )
        _, _, flags, method, _, _, crc, csize, usize, nlen, elen = _LOCAL.unpack(head)
        tail = buf[at + _LOCAL.size : at + _LOCAL.size + nlen + elen]
        if len(tail) != nlen + elen:
            tail = read_at(m.header_offset + _LOCAL.size, nlen + elen)
            if len(tail) != nlen + elen:
                raise InputError(
                    f"member {m.filename!r}: local header is truncated", reference="archive-damaged"
                )
        raw = tail[:nlen]
        local_name = raw.decode("ascii") if raw.isascii() and raw and b"\0" not in raw else None
        if local_name is None:
            local_name = _name(raw, flags, f"member {m.filename!r}: local header")
        if local_name != m.filename:
            raise InputError(
                f"member {m.filename!r}: local header names it {local_name!r}; refusing (pip and installer do)",
                reference="archive-damaged",
            )
        if method != m.compress_type:
            raise InputError(
                f"member {m.filename!r}: local and central headers disagree on compression",
                reference="archive-damaged",
            )
        if not flags & _DESCRIPTOR:
            if _MAX32 in (usize, csize):
                usize, csize, _ = _zip64(tail[nlen:], usize, csize, 0)
            if (crc, csize, usize) != (m.CRC, m.compress_size, m.file_size):
                raise InputError(
                    f"member {m.filename!r}: local and central headers disagree on CRC or sizes",
                    reference="archive-damaged",
                )
        m.local_size = _LOCAL.size + nlen + elen
        data_end = m.header_offset + m.local_size + m.compress_size
        if data_end > end:
            what = "the central directory" if i + 1 == len(ordered) else repr(ordered[i + 1].filename)
            raise InputError(
                f"member {m.filename!r}: its data overlap {what} (overlapping entries: a zip bomb)",
                reference="archive-damaged",
            )
        if flags & _DESCRIPTOR:  # in the window already, or one small read
            room, rel = min(_DESCRIPTOR_MAX, end - data_end), data_end - buf_at
            raw = buf[rel : rel + room] if rel >= 0 and rel + room <= len(buf) else read_at(data_end, room)
            _check_descriptor(m, raw)


_DESCRIPTOR_MAX = 24  # signature, CRC-32, two 8-byte (zip64) sizes


def _check_descriptor(m: Member, raw: bytes) -> None:
    """The data descriptor after a member must repeat the central entry's CRC and sizes.

    zipfile never reads it, so a descriptor that disagrees installs silently; but other readers
    (streaming unzippers, ``unzip`` itself) trust it, and one archive must not be two wheels.
    APPNOTE 4.3.9: the signature is optional, sizes are 8 bytes each under zip64; any reading
    that agrees is accepted."""
    want = (m.CRC, m.compress_size, m.file_size)
    for start in (4, 0) if raw[:4] == b"PK\x07\x08" else (0,):
        for fmt in ("<III", "<IQQ"):
            size = struct.calcsize(fmt)
            if len(raw) >= start + size and struct.unpack_from(fmt, raw, start) == want:
                return
    raise InputError(
        f"member {m.filename!r}: its data descriptor disagrees with the central directory on CRC or sizes"
        + (" (or is missing)" if len(raw) < 12 else ""),
        reference="archive-damaged",
    )


class LocalEntry(Protocol):
    """What locating a member's data needs (``Member`` or ``zipfile.ZipInfo``)."""

    filename: str
    header_offset: int


def local_data_offset(read_at: ReadAt, entry: LocalEntry) -> int:
    """Where a member's compressed bytes start: after its *local* header, whose extra field
    may differ in length from the central directory's copy."""
    head = read_at(entry.header_offset, _LOCAL.size)
    if len(head) != _LOCAL.size or head[:4] != b"PK\x03\x04":
        raise InputError(
            f"member {entry.filename!r}: local header is missing or corrupt", reference="archive-damaged"
        )
    fields = _LOCAL.unpack(head)
    return int(entry.header_offset + _LOCAL.size + fields[9] + fields[10])
