"""Reading a wheel without unpacking it: members streamed from the zip, metadata parsed.

Peers unzip to disk and spend most of their time there; we inflate each member once,
hash it on the way (RECORD needs every byte hashed anyway) and hand compiled members
to the readers from memory. Hostile archives (``../`` names, links, duplicates, absurd
declared sizes) are refused here with ``InputError`` before anything reads them.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import struct
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path
from typing import TYPE_CHECKING

from installer.records import InvalidRecordEntry, parse_record_file
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from torchwheel.errors import InputError

if TYPE_CHECKING:
    from torchwheel.memberscan import Result

# One member inflating to more than this is refused: a zip bomb, not an extension.
MAX_MEMBER_SIZE = 8 << 30
SIDE_FILE = "torchwheel.json"  # the facts `tag` records in .dist-info (see retag.py)
_MAX_RATIO = 2000  # deflate tops out near 1032:1; a larger claim is a crafted header
_CHUNK = 1 << 20
_COMPILED_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")


try:  # ISA-L inflates ~1.7x faster than zlib and releases the GIL; zlib is the fallback
    from isal import isal_zlib as _inflate_lib
except ImportError:  # pragma: no cover - isal has wheels for the platforms we support
    import zlib as _inflate_lib  # type: ignore[no-redef]

_INFLATE_ERROR: type[Exception] = _inflate_lib.error  # type: ignore[assignment]
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_COMPRESSED_CHUNK = 1 << 22  # 4 MiB of deflate in per read
_OUT_CHUNK = 1 << 23  # at most 8 MiB inflated per step


def local_data_offset(read_at: Callable[[int, int], bytes], info: zipfile.ZipInfo) -> int:
    """Where a member's compressed bytes start: after its *local* header, whose extra field
    may differ in length from the central directory's copy."""
    head = read_at(info.header_offset, _LOCAL_HEADER.size)
    if len(head) != _LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
        raise InputError(f"member {info.filename}: local header is missing or corrupt")
    fields = _LOCAL_HEADER.unpack(head)
    return int(info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10])


def is_compiled_name(name: str) -> bool:
    """Members the binary readers look at: extensions and bundled libraries, incl. .so.N."""
    base = name.rsplit("/", 1)[-1]
    if base.endswith(_COMPILED_SUFFIXES):
        return True
    return ".so." in base and base.rsplit(".so.", 1)[1].replace(".", "").isdigit()


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@dataclass(frozen=True)
class RecordEntry:
    path: str
    hash: str | None
    size: int | None


@dataclass(frozen=True)
class RecordProblem:
    path: str
    problem: str  # "missing-from-record" | "hash-mismatch" | "size-mismatch" | "missing-file" | ...
    detail: str


@dataclass
class WheelContents:
    """What the metadata files and the archive say; binaries are added by the caller."""

    path: str
    filename_name: str
    filename_version: str
    filename_tags: frozenset[Tag]
    build_tag: str | None
    dist_info: str
    wheel_text: str
    metadata_text: str
    record: dict[str, RecordEntry] | None
    members: list[str] = field(default_factory=list)
    side_file: bytes | None = None  # .dist-info/torchwheel.json of an earlier `tag`, if any
    record_problems: list[RecordProblem] = field(default_factory=list)  # found while listing members
    installed: bool = False  # an installed distribution: RECORD follows the installed-project spec

    @property
    def wheel_fields(self) -> dict[str, list[str]]:
        return parse_wheel_fields(self.wheel_text)

    @property
    def wheel_tags(self) -> frozenset[Tag]:
        tags: set[Tag] = set()
        for line in self.wheel_fields.get("Tag", []):
            parts = line.strip().split("-")
            if len(parts) == 3:
                tags.update(
                    Tag(i, a, p)
                    for i in parts[0].split(".")
                    for a in parts[1].split(".")
                    for p in parts[2].split(".")
                )
        return frozenset(tags)


def _check_member(info: zipfile.ZipInfo, seen: set[str]) -> None:
    name = info.filename
    if name.startswith("/") or "\\" in name or (len(name) > 1 and name[1] == ":"):
        raise InputError(f"member {name!r} has an absolute or Windows path")
    if ".." in name.split("/"):
        raise InputError(f"member {name!r} escapes the wheel with '..'")
    if name in seen:
        raise InputError(f"member {name!r} appears twice in the archive")
    seen.add(name)
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise InputError(f"member {name!r} is a symbolic link, which wheels cannot carry")
    if info.file_size > MAX_MEMBER_SIZE or (
        info.compress_size and info.file_size > _MAX_RATIO * info.compress_size and info.file_size > 1 << 24
    ):
        raise InputError(f"member {name!r} declares {info.file_size} bytes inflated: refusing (zip bomb?)")


def parse_record(text: str) -> dict[str, RecordEntry]:
    """installer's CSV reading (three fields, Windows separators made ``/``); the hash stays
    a string because an unknown algorithm is a finding (TW403), not unreadable input."""
    entries: dict[str, RecordEntry] = {}
    try:
        rows = list(parse_record_file(line for line in text.splitlines() if line.strip()))
    except InvalidRecordEntry as exc:
        raise InputError(f"RECORD row {exc.elements!r} does not have 3 fields") from exc
    for path, digest, size in rows:
        try:
            entries[path] = RecordEntry(path, digest or None, int(size) if size else None)
        except ValueError as exc:
            raise InputError(f"RECORD size {size!r} for {path!r} is not a number") from exc
    return entries


def parse_wheel_fields(text: str) -> dict[str, list[str]]:
    msg = HeaderParser().parsestr(text)
    fields: dict[str, list[str]] = {}
    for key, value in msg.items():
        fields.setdefault(key, []).append(str(value).strip())
    return fields


class WheelArchive:
    """An open wheel: validated member list, metadata, and streaming member reads."""

    is_wheel_file = True

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            name, version, build, tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename as exc:
            raise InputError(f"{path.name}: not a valid wheel file name ({exc})") from exc
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable zip archive ({exc})") from exc
        self._fd = -1
        try:
            self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            self._index(path, str(name), str(version), build, frozenset(tags))
        except BaseException:
            self.close()
            raise

    def _index(
        self, path: Path, name: str, version: str, build: tuple[int, str] | tuple[()], tags: frozenset[Tag]
    ) -> None:
        seen: set[str] = set()
        infos = [i for i in self.zip.infolist() if not i.is_dir()]
        for info in infos:
            _check_member(info, seen)
        self.infos = {i.filename: i for i in infos}
        dist_infos = {n.split("/", 1)[0] for n in self.infos if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dist_infos) != 1:
            found = ", ".join(sorted(dist_infos)) or "none"
            raise InputError(f"{path.name}: expected one .dist-info directory, found {found}")
        dist_info = dist_infos.pop()
        wheel_text = self.read_text(f"{dist_info}/WHEEL")
        metadata_text = self.read_text(f"{dist_info}/METADATA")
        record_name = f"{dist_info}/RECORD"
        record = parse_record(self.read_text(record_name)) if record_name in self.infos else None
        side_name = f"{dist_info}/{SIDE_FILE}"
        side = self.read(side_name) if side_name in self.infos else None
        self.contents = WheelContents(
            path=str(path),
            filename_name=str(name),
            filename_version=str(version),
            filename_tags=frozenset(tags),
            build_tag=f"{build[0]}{build[1]}" if build else None,
            dist_info=dist_info,
            wheel_text=wheel_text,
            metadata_text=metadata_text,
            record=record,
            members=sorted(self.infos),
            side_file=side,
        )

    def close(self) -> None:
        self.zip.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> WheelArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read_text(self, name: str) -> str:
        if name not in self.infos:
            raise InputError(f"{self.path.name}: {name} is missing")
        try:
            return self.read(name).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.path.name}: {name} is not UTF-8") from exc

    def _read_at(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)  # no shared file position: thread-safe

    def stream(self, name: str, stop: int | None = None) -> Iterator[bytes]:
        """Inflated chunks of one member, CRC and size checked at the end.

        Our own raw read plus ISA-L instead of ``zipfile.open``: several threads can inflate
        members of one archive at once (pread, GIL released), about twice as fast. With
        ``stop`` the stream ends once that many bytes came out (no CRC check then: a later
        full pass has checked it already).
        """
        info = self.infos[name]
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & 0x1:
            yield from self._stream_zipfile(info)
            return
        start = local_data_offset(self._read_at, info)
        remaining = info.compress_size
        inflater = _inflate_lib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
        crc = 0
        produced = 0
        pos = start
        try:
            while remaining:
                raw = self._read_at(pos, min(_COMPRESSED_CHUNK, remaining))
                if not raw:
                    raise InputError(f"{self.path.name}: member {name} is truncated")
                pos += len(raw)
                remaining -= len(raw)
                pending = raw
                while pending:
                    if inflater is None:
                        out, pending = pending, b""
                    else:  # bounded output per call: a bomb cannot balloon one chunk
                        out = inflater.decompress(pending, _OUT_CHUNK)
                        pending = inflater.unconsumed_tail
                    if not out:
                        break
                    produced += len(out)
                    if produced > info.file_size:
                        raise InputError(f"{self.path.name}: member {name} inflates beyond its declared size")
                    crc = _inflate_lib.crc32(out, crc)
                    yield out
                    if stop is not None and produced >= stop:
                        return
            if inflater is not None:
                tail = inflater.flush()
                if tail:
                    produced += len(tail)
                    crc = _inflate_lib.crc32(tail, crc)
                    yield tail
        except _INFLATE_ERROR as exc:
            raise InputError(f"{self.path.name}: member {name} is corrupt ({exc})") from exc
        if produced != info.file_size or crc != info.CRC:
            raise InputError(f"{self.path.name}: member {name} is corrupt (size or CRC mismatch)")

    def _stream_zipfile(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        """Other compressions (bzip2, lzma) and encryption: zipfile's own, rare, slower path."""
        try:
            with self.zip.open(info) as fh:
                while chunk := fh.read(_CHUNK):
                    yield chunk
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
            raise InputError(f"{self.path.name}: member {info.filename} cannot be read ({exc})") from exc

    def read(self, name: str) -> bytes:
        return b"".join(self.stream(name))

    def hash_member(self, name: str) -> tuple[str, int]:
        """RECORD-style hash and size, streamed: a 500 MB member never sits in memory."""
        digest = hashlib.sha256()
        size = 0
        for chunk in self.stream(name):
            digest.update(chunk)
            size += len(chunk)
        return "sha256=" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode(), size

    def scan_binary(self, name: str, hashing: bool = True) -> Result:
        """Hash and read one compiled member in a single streaming pass (``memberscan``)."""
        from torchwheel import memberscan

        return memberscan.scan(
            name, self.infos[name].file_size, lambda stop: self.stream(name, stop), hashing=hashing
        )

    def member_size(self, name: str) -> int:
        return self.infos[name].file_size

    def compiled_members(self) -> Iterator[str]:
        return (n for n in self.contents.members if is_compiled_name(n))


def verify_record(contents: WheelContents, hashes: dict[str, tuple[str | None, int]]) -> list[RecordProblem]:
    """Compare RECORD with the members' real hashes and sizes.

    ``hashes``: member -> (sha256 RECORD hash, or None when the caller chose not to hash
    it, and size). Unhashed members are still checked for presence and size.

    An installed distribution follows the installed-project spec instead of the wheel's:
    any entry may leave hash and size empty (pip does so for the ``.pyc`` it compiles and
    for RECORD), any hashlib algorithm is allowed, and a cached ``.pyc`` that is gone is
    no loss. A hash that is given must still match.
    """
    if contents.record is None:
        return [RecordProblem(f"{contents.dist_info}/RECORD", "missing-record", "the wheel has no RECORD")]
    problems = list(contents.record_problems)
    installed = contents.installed
    record_name = f"{contents.dist_info}/RECORD"
    unsigned = {record_name, f"{record_name}.jws", f"{record_name}.p7s"}
    for member in contents.members:
        if member in unsigned:
            continue
        entry = contents.record.get(member)
        if entry is None:
            problems.append(RecordProblem(member, "missing-from-record", "not listed in RECORD"))
            continue
        actual_hash, actual_size = hashes[member]
        algorithm = entry.hash.split("=", 1)[0] if entry.hash else None
        if entry.hash is None:
            if not installed:
                problems.append(RecordProblem(member, "no-hash", "RECORD lists it without a hash"))
        elif algorithm not in ("sha256", "sha384", "sha512") and not installed:
            problems.append(RecordProblem(member, "weak-hash", f"RECORD uses {algorithm}"))
        elif algorithm == "sha256" and actual_hash is not None and entry.hash != actual_hash:
            problems.append(
                RecordProblem(member, "hash-mismatch", f"RECORD {entry.hash}, actual {actual_hash}")
            )
        if entry.size is not None and entry.size != actual_size:
            problems.append(
                RecordProblem(member, "size-mismatch", f"RECORD {entry.size}, actual {actual_size}")
            )
    present = set(contents.members) | {p.path for p in contents.record_problems}
    where = "on disk" if installed else "in the wheel"
    for path in contents.record:
        if path in present or path in unsigned or (installed and path.endswith(".pyc")):
            continue
        problems.append(RecordProblem(path, "missing-file", f"listed in RECORD but not {where}"))
    return problems
