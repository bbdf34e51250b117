"""Reading a wheel without unpacking it: members streamed from the zip, metadata parsed.

Peers unzip to disk and spend most of their time there; we inflate each member once,
hash it on the way (RECORD needs every byte hashed anyway) and hand compiled members
to the readers from memory. Hostile archives (``../`` names, links, duplicates, absurd
declared sizes) are refused here with ``InputError`` before anything reads them; the zip
structure itself (counts, overlaps, local vs central headers) is checked in ``zipindex``,
and every bound comes from ``limits``. No member ever inflates past its declared size.
"""

from __future__ import annotations

import base64
import csv
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
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from torchwheel import limits, zipindex
from torchwheel.errors import InputError
from torchwheel.safeopen import open_regular
from torchwheel.zipindex import Member

if TYPE_CHECKING:
    from torchwheel.memberscan import Result

SIDE_FILE = "torchwheel.json"  # the facts `tag` records in .dist-info (see retag.py)
_RATIO_FLOOR = 1 << 24  # below 16 MiB inflated, any ratio is harmless (a file of zeros)
_COMPILED_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")


try:  # ISA-L inflates ~1.7x faster than zlib and releases the GIL; zlib is the fallback
    from isal import isal_zlib as _inflate_lib
except ImportError:  # pragma: no cover - isal has wheels for the platforms we support
    import zlib as _inflate_lib  # type: ignore[no-redef]

_INFLATE_ERROR: type[Exception] = _inflate_lib.error  # type: ignore[assignment]
_INFLATE_ERRORS = (_INFLATE_ERROR, *zipindex.DECOMPRESS_ERRORS)
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_COMPRESSED_CHUNK = 1 << 22  # 4 MiB of deflate in per read
_OUT_CHUNK = 1 << 23  # at most 8 MiB inflated per step


def local_data_offset(read_at: Callable[[int, int], bytes], info: zipfile.ZipInfo | Member) -> int:
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


@dataclass(frozen=True, slots=True)  # slots: a RECORD may have 400,000 rows
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
    def dist_info_matches(self) -> bool:
        """Does ``.dist-info`` name the file name's project? installer refuses a wheel where
        it does not (``WheelFile.dist_info_dir``: the part before the version, canonicalized)."""
        return canonicalize_name(self.dist_info.rsplit("-", 2)[0]) == canonicalize_name(self.filename_name)

    @property
    def wheel_tags(self) -> frozenset[Tag]:
        lines = [line.strip().split("-") for line in self.wheel_fields.get("Tag", [])]
        lines = [parts for parts in lines if len(parts) == 3]
        tag_set_size("WHEEL's Tag lines", lines)
        return frozenset(
            Tag(i, a, p)
            for parts in lines
            for i in parts[0].split(".")
            for a in parts[1].split(".")
            for p in parts[2].split(".")
        )


def tag_set_size(what: str, tag_triples: list[list[str]]) -> int:
    """The size of the expanded tag set, checked against ``max-tags`` before anything is
    expanded: dotted parts multiply (``a.b-c.d-e.f`` is 8 tags), so 5 KB can ask for 10^9."""
    total = 0
    for parts in tag_triples:
        product = 1
        for part in parts:
            product *= part.count(".") + 1
        total += product
    limits.current().max_tags.check(f"{what} expand to a tag set whose size", total)
    return total


def parse_filename(filename: str) -> tuple[str, str, tuple[int, str] | tuple[()], frozenset[Tag]]:
    """packaging's parse, after bounding the compressed tag set it would expand."""
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) in (5, 6):
        tag_set_size(f"the file name's tags {'-'.join(parts[-3:])[:60]!r}", [parts[-3:]])
    try:
        name, version, build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise InputError(f"{filename}: not a valid wheel file name ({exc})") from exc
    return str(name), str(version), build, frozenset(tags)


def _check_member(info: Member, seen: dict[str, Member], lim: limits.Limits) -> None:
    """Runs once per member (200,000 in a big wheel): cheap tests first, details on failure."""
    name = info.filename
    if name[0] == "/" or "\\" in name or name[1:2] == ":":
        raise InputError(f"member {name!r} has an absolute or Windows path")
    if ".." in name and ".." in name.split("/"):
        raise InputError(f"member {name!r} escapes the wheel with '..'")
    if name in seen:
        raise InputError(f"member {name!r} appears twice in the archive")
    seen[name] = info
    if stat.S_ISLNK(info.external_attr >> 16):
        raise InputError(f"member {name!r} is a symbolic link, which wheels cannot carry")
    if info.file_size > lim.max_member_size.value:
        lim.max_member_size.check(f"member {name!r} declares an inflated size", info.file_size)
    if info.file_size > _RATIO_FLOOR:
        ratio = info.file_size // max(info.compress_size, 1)
        lim.max_inflate_ratio.check(f"member {name!r} declares an inflate ratio (zip bomb?)", ratio)


def parse_record(text: str) -> dict[str, RecordEntry]:
    """installer's CSV reading (three fields, Windows separators made ``/``); the hash stays
    a string because an unknown algorithm is a finding (TW403), not unreadable input."""
    # counted before anything per row is built; a bound on rows, as a quoted field may span lines
    lines = text.count("\n") + text.count("\r") - text.count("\r\n") + 1
    limits.current().max_record_rows.check("RECORD's line count", lines)
    entries: dict[str, RecordEntry] = {}
    try:
        rows = parse_record_file(line for line in text.splitlines() if line.strip())
        for path, digest, size in rows:
            entries[path] = _record_entry(path, digest, size)
    except InvalidRecordEntry as exc:
        raise InputError(f"RECORD row {str(exc.elements)[:200]} does not have 3 fields") from exc
    except csv.Error as exc:  # a field over csv's 128 KiB limit, a stray quote or NUL
        raise InputError(f"RECORD is not readable CSV (row {len(entries) + 1}: {exc})") from exc
    return entries


def _record_entry(path: str, digest: str, size: str) -> RecordEntry:
    try:
        return RecordEntry(path, digest or None, int(size) if size else None)
    except ValueError as exc:
        raise InputError(f"RECORD size {size[:40]!r} for {path[:200]!r} is not a number") from exc


def parse_wheel_fields(text: str) -> dict[str, list[str]]:
    msg = HeaderParser().parsestr(text)
    fields: dict[str, list[str]] = {}
    for key, value in msg.items():
        fields.setdefault(key, []).append(str(value).strip())
    return fields


class WheelArchive:
    """An open wheel: validated member list, metadata, and streaming member reads."""

    is_wheel_file = True

    def __init__(self, path: Path, filename: str | None = None) -> None:
        """``filename``: the name to parse instead of ``path.name`` (a wheel-variant name
        without its label: packaging rejects the draft form; see install/candidates.py)."""
        self.path = path
        name, version, build, tags = parse_filename(filename or path.name)
        # one descriptor for everything: the zip index, every member read, and later the
        # copy `tag` makes (wheelwriter): a file replaced meanwhile is never half read
        try:
            self._fd = open_regular(path)  # never a FIFO or device (safeopen)
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from exc
        try:
            self._index(path, name, version, build, tags)
        except BaseException:
            self.close()
            raise

    def _index(
        self, path: Path, name: str, version: str, build: tuple[int, str] | tuple[()], tags: frozenset[Tag]
    ) -> None:
        size = os.fstat(self._fd).st_size
        self.infos: dict[str, Member] = {}
        self.raw_crcs: dict[str, int] = {}  # CRC-32 of each fully read member's compressed bytes
        declared = 0
        lim = limits.current()
        try:
            entries, _ = zipindex.read_index(self._read_at, size)
            for info in entries:
                if not info.filename.endswith("/"):
                    _check_member(info, self.infos, lim)
                    declared += info.file_size
        except InputError as exc:
            raise InputError(f"{path.name}: {exc}") from exc
        del entries
        if declared > _RATIO_FLOOR:  # the whole archive, not only each member, is bounded
            limits.current().max_inflate_ratio.check(
                f"the members' declared inflated total ({declared:,} bytes) over the archive's size, a ratio",
                declared // max(size, 1),
            )
        dist_infos = {n.split("/", 1)[0] for n in self.infos if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dist_infos) != 1:
            found = ", ".join(sorted(dist_infos)) or "none"
            raise InputError(f"{path.name}: expected one .dist-info directory, found {found}")
        dist_info = dist_infos.pop()
        wheel_text = self.read_text(f"{dist_info}/WHEEL")
        metadata_text = self.read_text(f"{dist_info}/METADATA")
        record_name = f"{dist_info}/RECORD"
        record = None
        if record_name in self.infos:
            limits.current().max_record_bytes.check("RECORD's size", self.infos[record_name].file_size)
            record = parse_record(self.read_text(record_name, bounded=False))
        side_name = f"{dist_info}/{SIDE_FILE}"
        side = self.read_text(side_name).encode() if side_name in self.infos else None
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

    @property
    def fd(self) -> int:
        """The descriptor every byte of this archive was read through (``tag`` copies from it)."""
        return self._fd

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> WheelArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read_text(self, name: str, bounded: bool = True) -> str:
        """A metadata file, whole: its declared size is bounded first (``max-metadata-bytes``;
        RECORD has its own bound)."""
        if name not in self.infos:
            raise InputError(f"{self.path.name}: {name} is missing")
        if bounded:
            limits.current().max_metadata_bytes.check(
                f"{self.path.name}: {name}'s size", self.member_size(name)
            )
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
        # output per step: never more than one byte past the declared size (enough to refuse)
        decompressor = zipindex.decompressor(info, _inflate_lib, min(_OUT_CHUNK, info.file_size + 1))
        remaining = info.compress_size
        crc = raw_crc = 0
        produced = 0
        pos = info.data_offset
        try:
            while remaining:
                raw = self._read_at(pos, min(_COMPRESSED_CHUNK, remaining))
                if not raw:
                    raise InputError(f"{self.path.name}: member {name} is truncated")
                raw_crc = _inflate_lib.crc32(raw, raw_crc)
                pos += len(raw)
                remaining -= len(raw)
                # every method's output is bounded per step, and never beyond the declared
                # size: a lying header cannot make us produce (or hold) more than it claims
                for out in decompressor.push(raw):
                    produced += len(out)
                    if produced > info.file_size:
                        raise InputError(
                            f"{self.path.name}: member {name} inflates beyond its declared "
                            f"{info.file_size:,} bytes: refusing (zip bomb?)"
                        )
                    crc = _inflate_lib.crc32(out, crc)
                    yield out
                    if stop is not None and produced >= stop:
                        return
            tail = decompressor.finish()
            if tail:
                produced += len(tail)
                if produced > info.file_size:
                    raise InputError(f"{self.path.name}: member {name} inflates beyond its declared size")
                crc = _inflate_lib.crc32(tail, crc)
                yield tail
        except _INFLATE_ERRORS as exc:
            raise InputError(f"{self.path.name}: member {name} is corrupt ({exc})") from exc
        if produced != info.file_size or crc != info.CRC:
            raise InputError(f"{self.path.name}: member {name} is corrupt (size or CRC mismatch)")
        self.raw_crcs[name] = raw_crc  # `tag` checks its raw copy against it (writecheck)

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
