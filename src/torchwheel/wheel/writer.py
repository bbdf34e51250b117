"""Write a wheel that copies unchanged members as their compressed bytes.

Why our own writer: ``zipfile`` can only write what it compresses itself, so re-tagging a
500 MB wheel with it means inflating and deflating every byte (what ``wheel tags`` does).
Here an unchanged member's local header is rebuilt and its deflate stream is copied as is;
only the few metadata files we change are compressed. The output follows what PyPI's
upload check accepts (no data descriptors, no comments, ``.dist-info`` last, RECORD last)
and is deterministic: same input, same options, same bytes.
"""

from __future__ import annotations

import csv
import io
import os
import struct
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from torchwheel.errors import InputError
from torchwheel.wheel.record import record_hash
from torchwheel.wheel.temps import OutputKind, replace_atomically
from torchwheel.wheel.zipdir import Member, local_data_offset

_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_EOCD = struct.Struct("<4sHHHHIIH")
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_MAX32 = 0xFFFFFFFF
_UTF8_FLAG = 0x800
_COPY_CHUNK = 1 << 22


def _is_zip(fd: int) -> bool:
    """A zip archive begins with a local header, or (an empty one) with its end record."""
    return os.pread(fd, 4, 0) in (b"PK\x03\x04", b"PK\x05\x06")


WHEEL_FILE = OutputKind("wheel", _is_zip)  # what tag, repair and unlabel replace in their output folder

SourceEntry = Member | zipfile.ZipInfo  # the input's central-directory entry (tests pass ZipInfo)


def dos_time(epoch: int) -> tuple[int, int, int, int, int, int]:
    """SOURCE_DATE_EPOCH as a zip timestamp, clipped to the range zip can store."""
    t = time.gmtime(max(epoch, 315532800))  # 1980-01-01, the zip epoch
    return (min(t.tm_year, 2107), t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec - t.tm_sec % 2)


def source_date_epoch() -> tuple[int, int, int, int, int, int] | None:
    raw = os.environ.get("SOURCE_DATE_EPOCH")
    if raw is None:
        return None
    try:
        return dos_time(int(raw))
    except ValueError as exc:
        raise InputError(
            f"SOURCE_DATE_EPOCH={raw!r} is not an integer", reference="bad-option-value"
        ) from exc


def _dos(dt: tuple[int, int, int, int, int, int]) -> tuple[int, int]:
    year, month, day, hour, minute, second = dt
    return (hour << 11) | (minute << 5) | (second // 2), ((year - 1980) << 9) | (month << 5) | day


@dataclass
class _Entry:
    name: bytes
    method: int
    crc: int
    csize: int
    usize: int
    dt: tuple[int, int, int, int, int, int]
    external_attr: int
    offset: int = 0


def _zip64_extra(entry: _Entry, central: bool) -> bytes:
    values: list[int] = []
    if entry.usize >= _MAX32 or (not central and entry.csize >= _MAX32):
        values += [entry.usize, entry.csize]
    elif entry.csize >= _MAX32:
        values += [entry.csize]
    if central and entry.offset >= _MAX32:
        values.append(entry.offset)
    if not values:
        return b""
    return struct.pack(f"<HH{len(values)}Q", 1, 8 * len(values), *values)


def _local_header(e: _Entry) -> bytes:
    extra = _zip64_extra(e, central=False)
    mtime, mdate = _dos(e.dt)
    big = bool(extra)
    return (
        _LOCAL.pack(
            b"PK\x03\x04",
            45 if big else 20,
            _UTF8_FLAG,
            e.method,
            mtime,
            mdate,
            e.crc,
            _MAX32 if big else e.csize,
            _MAX32 if big else e.usize,
            len(e.name),
            len(extra),
        )
        + e.name
        + extra
    )


def _central_header(e: _Entry) -> bytes:
    extra = _zip64_extra(e, central=True)
    mtime, mdate = _dos(e.dt)
    return (
        _CENTRAL.pack(
            b"PK\x01\x02",
            (3 << 8) | 45,  # made by Unix, spec 4.5
            45 if extra else 20,
            _UTF8_FLAG,
            e.method,
            mtime,
            mdate,
            e.crc,
            _MAX32 if e.csize >= _MAX32 else e.csize,
            _MAX32 if e.usize >= _MAX32 else e.usize,
            len(e.name),
            len(extra),
            0,
            0,
            0,
            e.external_attr,
            _MAX32 if e.offset >= _MAX32 else e.offset,
        )
        + e.name
        + extra
    )


def order(names: Iterable[str], dist_info: str) -> list[str]:
    """Payload sorted, then ``.dist-info`` sorted, RECORD last: what installers and PyPI like."""
    record = f"{dist_info}/RECORD"
    names = [n for n in names if n != record]
    payload = sorted(n for n in names if not n.startswith(dist_info + "/"))
    meta = sorted(n for n in names if n.startswith(dist_info + "/"))
    return [*payload, *meta, record]


def write_wheel(
    source_fd: int,
    infos: Mapping[str, SourceEntry],
    target: Path,
    dist_info: str,
    new_members: dict[str, bytes],
    drop: set[str],
    hashes: dict[str, tuple[str, int]],
    fixed_time: tuple[int, int, int, int, int, int] | None,
    verify: Callable[[Path], None],
    before_replace: Callable[[], None] = lambda: None,
) -> None:
    """Write ``target`` atomically from the open input with ``new_members`` replacing or adding.

    ``source_fd`` and ``infos`` are the descriptor and central directory the facts were
    read from: members are copied from the very bytes that were analysed, never from a
    file reopened by name. ``hashes`` are the verified RECORD hashes of the copied members;
    RECORD is written from them and from the new members' bytes, so it describes exactly
    the archive that lands. The temp file lives in the target directory (same filesystem,
    so the final rename is atomic), is named ``TEMP_PREFIX`` + pid, and is removed on any
    failure, including KeyboardInterrupt (and SIGTERM/SIGHUP, which the CLI turns into an
    exception); after a SIGKILL the next writer in that directory removes it. ``verify``
    sees the finished temp file before the rename: a wheel that does not verify never
    replaces anything; ``before_replace`` may still refuse (the input was replaced).
    """
    infos = {n: i for n, i in infos.items() if not i.is_dir() and n not in drop}

    def write(out: BinaryIO) -> None:
        record = f"{dist_info}/RECORD"
        names = order(set(infos) | set(new_members), dist_info)
        fallback = (
            infos[f"{dist_info}/WHEEL"].date_time if f"{dist_info}/WHEEL" in infos else (1980, 1, 1, 0, 0, 0)
        )
        entries: list[_Entry] = []
        rows: list[tuple[str, str, str]] = []
        for name in names:
            if name == record:
                rows.append((record, "", ""))
                entries.append(_write_new(out, name, _record_bytes(rows), fixed_time or fallback))
            elif name in new_members:
                data = new_members[name]
                entries.append(_write_new(out, name, data, fixed_time or fallback))
                rows.append((name, record_hash(data), str(len(data))))
            else:
                entries.append(_copy_raw(out, source_fd, infos[name], fixed_time, name))
                digest, size = hashes[name]
                rows.append((name, digest, str(size)))
        _finish(out, entries)

    def check(written: Path) -> None:
        verify(written)
        before_replace()

    # mkstemp made the temp file private; the output keeps the input's mode
    replace_atomically(target, write, os.fstat(source_fd).st_mode & 0o777, check, WHEEL_FILE)


def _record_bytes(rows: list[tuple[str, str, str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode()


def _write_new(out: BinaryIO, name: str, data: bytes, dt: tuple[int, int, int, int, int, int]) -> _Entry:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    payload = compressor.compress(data) + compressor.flush()
    e = _Entry(
        name.encode(), zipfile.ZIP_DEFLATED, zlib.crc32(data), len(payload), len(data), dt, (0o100644) << 16
    )
    e.offset = out.tell()
    out.write(_local_header(e))
    out.write(payload)
    return e


def _copy_raw(
    out: BinaryIO,
    raw: int,
    info: SourceEntry,
    fixed_time: tuple[int, int, int, int, int, int] | None,
    name: str | None = None,  # the name to write it under (a renamed .dist-info), else its own
) -> _Entry:
    if info.flag_bits & 0x1:
        raise InputError(f"member {info.filename} is encrypted", reference="archive-damaged")
    start = local_data_offset(lambda offset, size: os.pread(raw, size, offset), info)
    mode = info.external_attr if info.external_attr >> 16 else (0o100644 << 16)
    e = _Entry(
        (name or info.filename).encode(),
        info.compress_type,
        info.CRC,
        info.compress_size,
        info.file_size,
        fixed_time or info.date_time,
        mode,
    )
    e.offset = out.tell()
    out.write(_local_header(e))
    out.flush()  # the kernel copies the rest: no round trip through Python's buffers
    remaining = info.compress_size
    src_at, dst_at = start, out.tell()
    while remaining:
        try:
            done = os.copy_file_range(raw, out.fileno(), remaining, src_at, dst_at)
        except (AttributeError, OSError):  # not Linux, or a filesystem that refuses it
            done = _copy_slow(raw, out, src_at, dst_at, remaining)
        if done <= 0:
            raise InputError(
                f"member {info.filename}: archive ends inside its data", reference="archive-damaged"
            )
        src_at, dst_at, remaining = src_at + done, dst_at + done, remaining - done
    out.seek(dst_at)
    return e


def _copy_slow(raw: int, out: BinaryIO, src_at: int, dst_at: int, count: int) -> int:
    chunk = os.pread(raw, min(_COPY_CHUNK, count), src_at)
    out.seek(dst_at)
    out.write(chunk)
    out.flush()
    return len(chunk)


def _finish(out: BinaryIO, entries: list[_Entry]) -> None:
    write = out.write
    cd_start = out.tell()
    for e in entries:
        write(_central_header(e))
    cd_size = out.tell() - cd_start
    count = len(entries)
    if count >= 0xFFFF or cd_start >= _MAX32 or cd_size >= _MAX32:
        z64 = out.tell()
        write(_ZIP64_EOCD.pack(b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, cd_size, cd_start))
        write(_ZIP64_LOCATOR.pack(b"PK\x06\x07", 0, z64, 1))
    write(
        _EOCD.pack(
            b"PK\x05\x06",
            0,
            0,
            min(count, 0xFFFF),
            min(count, 0xFFFF),
            min(cd_size, _MAX32),
            min(cd_start, _MAX32),
            0,
        )
    )


def copy_file_atomically(source_fd: int, target: Path) -> None:
    """An unchanged wheel still has to land in the destination (cibuildwheel wants one):
    copied from the descriptor that was analysed, like every rewritten wheel."""

    def write(dst: BinaryIO) -> None:
        at = 0  # pread: the shared descriptor's file position is the zip reader's
        while chunk := os.pread(source_fd, _COPY_CHUNK, at):
            dst.write(chunk)
            at += len(chunk)

    replace_atomically(target, write, os.fstat(source_fd).st_mode & 0o777, kind_of=WHEEL_FILE)
