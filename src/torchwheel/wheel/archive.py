"""Reading a wheel file without unpacking it: members streamed from the zip, metadata read.

Peers unzip to disk and spend most of their time there; we inflate each member once,
hash it on the way (RECORD needs every byte hashed anyway) and hand compiled members
to the readers from memory. Hostile archives (``../`` names, links, duplicates, absurd
declared sizes) are refused here with ``InputError`` before anything reads them; the zip
structure itself (counts, overlaps, local vs central headers) is checked in ``zipdir``,
and every bound comes from ``limits``. No member ever inflates past its declared size.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from packaging.tags import Tag

from torchwheel import limits
from torchwheel.errors import InputError, system_error
from torchwheel.safeopen import open_regular
from torchwheel.wheel import inflate, zipdir
from torchwheel.wheel.contents import InvalidWheelName, WheelContents, WheelName, parse_filename, salvaged
from torchwheel.wheel.metadata import SIDE_FILE
from torchwheel.wheel.record import hash_chunks, parse_record, record_hash
from torchwheel.wheel.zipdir import Member

__all__ = ["WheelArchive"]

_RATIO_FLOOR = 1 << 24  # below 16 MiB inflated, any ratio is harmless (a file of zeros)
# Small steps: every buffer a stream allocates is freed within the step, and glibc keeps
# freed multi-MB blocks in the freeing thread's arena (one per worker). 4 MiB reads and
# 8 MiB of output per step cost 131 MB with eight workers on 300 members of 8 MB, 256 KiB
# steps 72 MB, at the same speed (a step's Python overhead is microseconds).
_COMPRESSED_CHUNK = 1 << 18  # 256 KiB of deflate in per read
_OUT_CHUNK = 1 << 18  # at most 256 KiB inflated per step


def _check_member(info: Member, seen: dict[str, Member], lim: limits.Limits) -> None:
    """Runs once per member (200,000 in a big wheel): cheap tests first, details on failure."""
    name = info.filename
    if name[0] == "/" or "\\" in name or name[1:2] == ":":
        raise InputError(f"member {name!r} has an absolute or Windows path", reference="wheel-invalid")
    if ".." in name and ".." in name.split("/"):
        raise InputError(f"member {name!r} escapes the wheel with '..'", reference="wheel-invalid")
    if name in seen:
        raise InputError(f"member {name!r} appears twice in the archive", reference="wheel-invalid")
    seen[name] = info
    if stat.S_ISLNK(info.external_attr >> 16):
        raise InputError(
            f"member {name!r} is a symbolic link, which wheels cannot carry", reference="wheel-invalid"
        )
    if info.file_size > lim.max_member_size.value:
        lim.max_member_size.check(f"member {name!r} declares an inflated size", info.file_size)
    if info.file_size > _RATIO_FLOOR:
        ratio = info.file_size // max(info.compress_size, 1)
        lim.max_inflate_ratio.check(f"member {name!r} declares an inflate ratio (zip bomb?)", ratio)


class WheelArchive:
    """An open wheel: validated member list, metadata, and streaming member reads."""

    is_wheel_file = True
    lazy_local_headers = False  # True: each member's local header is checked when first read

    def __init__(
        self, path: Path, filename: str | None = None, lenient_name: bool = False, fd: int | None = None
    ) -> None:
        """``filename``: the wheel's name when ``path`` is not named for it (the temporary
        file ``tag`` reads back before renaming it). ``lenient_name``: a name packaging
        refuses is read all the same (``contents.name_problem`` says why; ``check`` and
        ``show`` report on it, TW414), since pip downloads such wheels; otherwise it is
        refused, naming the valid name its metadata gives. ``fd``: ``path`` opened already
        with ``safeopen.open_regular``, owned by the archive from now on (``select`` hashes
        the whole file through it first: one open per candidate)."""
        self.path = path
        shown = filename or path.name
        parsed: WheelName | None = None
        invalid: InvalidWheelName | None = None
        try:
            parsed = parse_filename(shown)  # wheel-variant names (draft standards) included
        except InvalidWheelName as exc:
            invalid = exc
        # one descriptor for everything: the zip index, every member read, and later the
        # copy `tag` makes (writer): a file replaced meanwhile is never half read
        try:
            self._fd = open_regular(path) if fd is None else fd  # never a FIFO or device (safeopen)
        except OSError as exc:
            raise system_error(path, exc) from exc
        try:
            self._index(path, parsed, invalid)
            if invalid is not None and not lenient_name:
                fix = self.contents.valid_name
                rename = f"rename it to {fix}" if fix else "rename it to name-version-python-abi-platform.whl"
                raise InputError(
                    f"{invalid}: {rename} first (`torchwheel check` reads it as it is)",
                    reference="bad-wheel-name",
                )
        except BaseException:
            self.close()
            raise

    def _index(self, path: Path, parsed: WheelName | None, invalid: InvalidWheelName | None) -> None:
        size = os.fstat(self._fd).st_size
        self.infos: dict[str, Member] = {}
        self.raw_crcs: dict[str, int] = {}  # CRC-32 of each fully read member's compressed bytes
        declared = 0
        lim = limits.current()
        try:
            entries, self._cd_start = zipdir.read_index(self._read_at, size, not self.lazy_local_headers)
            for info in entries:
                if not info.filename.endswith("/"):
                    _check_member(info, self.infos, lim)
                    declared += info.file_size
        except InputError as exc:
            raise exc.restated(f"{path.name}: {exc}", path) from exc
        self._entries = entries if self.lazy_local_headers else []  # for ``member``'s check
        del entries
        if declared > _RATIO_FLOOR:  # the whole archive, not only each member, is bounded
            limits.current().max_inflate_ratio.check(
                f"the members' declared inflated total ({declared:,} bytes) over the archive's size, a ratio",
                declared // max(size, 1),
            )
        dist_infos = {n.split("/", 1)[0] for n in self.infos if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dist_infos) != 1:
            found = ", ".join(sorted(dist_infos)) or "none"
            raise InputError(
                f"{path.name}: expected one .dist-info directory, found {found}",
                reference="wheel-invalid",
                path=path,
            )
        dist_info = dist_infos.pop()
        wheel_text = self.read_text(f"{dist_info}/WHEEL")
        metadata_text = self.read_text(f"{dist_info}/METADATA")
        record_name = f"{dist_info}/RECORD"
        record = None
        if record_name in self.infos:
            limits.current().max_record_bytes.check("RECORD's size", self.infos[record_name].file_size)
            record = parse_record(self.read_text(record_name, bounded=False))
        side_name = f"{dist_info}/{SIDE_FILE}"
        side = self.read_bounded(side_name) if side_name in self.infos else None  # judged by TW412
        tags: frozenset[Tag] = frozenset()
        build: str | None = None
        variant: str | None = None
        if parsed is None:  # the parts that parse; the rest as the .dist-info says (like a directory)
            project, version = salvaged(invalid.filename if invalid else path.name)
            dist_project, _, dist_version = dist_info.removesuffix(".dist-info").partition("-")
            name, version = project or dist_project, version or dist_version
        else:
            name, version, tags = str(parsed.name), str(parsed.version), frozenset(parsed.tags)
            build = f"{parsed.build[0]}{parsed.build[1]}" if parsed.build else None
            variant = parsed.variant
        self.contents = WheelContents(
            path=str(path),
            filename_name=name,
            filename_version=version,
            filename_tags=tags,
            build_tag=build,
            dist_info=dist_info,
            wheel_text=wheel_text,
            metadata_text=metadata_text,
            record=record,
            members=sorted(self.infos),
            side_file=side,
            variant=variant,
            name_problem=None if invalid is None else invalid.reason,
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
            raise InputError(
                f"{self.path.name}: {name} is missing", reference="wheel-invalid", path=self.path
            )
        try:
            return (self.read_bounded(name) if bounded else self.read(name)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{self.path.name}: {name} is not UTF-8", reference="wheel-invalid", path=self.path
            ) from exc

    def read_bounded(self, name: str) -> bytes:
        """A metadata-sized member, whole, its declared size checked (``max-metadata-bytes``)."""
        limits.current().max_metadata_bytes.check(f"{self.path.name}: {name}'s size", self.member_size(name))
        return self.read(name)

    def _read_at(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)  # no shared file position: thread-safe

    def member(self, name: str) -> Member:
        """A member's central entry, its local header checked (once, when the archive checks
        them lazily: then only the local headers of the members read are ever read)."""
        info = self.infos[name]
        if not info.local_size:
            try:
                zipdir.check_local_headers(self._read_at, self._entries, self._cd_start, (name,))
            except InputError as exc:
                raise exc.restated(f"{self.path.name}: {exc}", self.path) from exc
        return info

    def stream(self, name: str, stop: int | None = None) -> Iterator[bytes]:
        """Inflated chunks of one member, CRC and size checked at the end.

        Our own raw read plus ISA-L instead of ``zipfile.open``: several threads can inflate
        members of one archive at once (pread, GIL released), about twice as fast. With
        ``stop`` the stream ends once that many bytes came out (no CRC check then: a later
        full pass has checked it already).
        """
        info = self.member(name)
        # output per step: never more than one byte past the declared size (enough to refuse)
        decompressor = inflate.decompressor(info, min(_OUT_CHUNK, info.file_size + 1))
        remaining = info.compress_size
        crc = raw_crc = 0
        produced = 0
        pos = info.data_offset
        try:
            while remaining:
                raw = self._read_at(pos, min(_COMPRESSED_CHUNK, remaining))
                if not raw:
                    raise InputError(
                        f"{self.path.name}: member {name} is truncated",
                        reference="archive-damaged",
                        path=self.path,
                    )
                raw_crc = inflate.inflate_lib.crc32(raw, raw_crc)
                pos += len(raw)
                remaining -= len(raw)
                # every method's output is bounded per step, and never beyond the declared
                # size: a lying header cannot make us produce (or hold) more than it claims
                for out in decompressor.push(raw):
                    produced += len(out)
                    if produced > info.file_size:
                        raise InputError(
                            f"{self.path.name}: member {name} inflates beyond its declared "
                            f"{info.file_size:,} bytes: refusing (zip bomb?)",
                            reference="archive-damaged",
                            path=self.path,
                        )
                    crc = inflate.inflate_lib.crc32(out, crc)
                    yield out
                    if stop is not None and produced >= stop:
                        return
            tail = decompressor.finish()
            if tail:
                produced += len(tail)
                if produced > info.file_size:
                    raise InputError(
                        f"{self.path.name}: member {name} inflates beyond its declared size",
                        reference="archive-damaged",
                        path=self.path,
                    )
                crc = inflate.inflate_lib.crc32(tail, crc)
                yield tail
        except inflate.DECOMPRESS_ERRORS as exc:
            raise InputError(
                f"{self.path.name}: member {name} is corrupt ({exc})",
                reference="archive-damaged",
                path=self.path,
            ) from exc
        if produced != info.file_size or crc != info.CRC:
            raise InputError(
                f"{self.path.name}: member {name} is corrupt (size or CRC mismatch)",
                reference="archive-damaged",
                path=self.path,
            )
        self.raw_crcs[name] = raw_crc  # `tag` checks its raw copy against it (readback)

    def read(self, name: str) -> bytes:
        return b"".join(self.stream(name))

    def hash_member(self, name: str) -> tuple[str, int]:
        """RECORD-style hash and size, streamed: a 500 MB member never sits in memory. A
        small one is read in one step (``_hash_small``)."""
        info = self.member(name)
        if info.compress_size <= _COMPRESSED_CHUNK and info.file_size < _OUT_CHUNK:
            hashed = self._hash_small(name, info)
            if hashed is not None:
                return hashed
        return hash_chunks(self.stream(name))

    def _hash_small(self, name: str, info: Member) -> tuple[str, int] | None:
        """One read, one inflate, one CRC, one hash: most of a wheel's members (vLLM has
        5,800) are a few kB, and the stream's generators and per-step checks were most of
        their cost, with the GIL held while other threads wait for it. Only the common case
        is taken here (stored or deflate, every byte there, size and CRC as declared); any
        other answer, None, sends the member through ``stream``, which says what is wrong
        exactly as before."""
        if info.compress_type not in (inflate.STORED, inflate.DEFLATED):
            return None
        raw = self._read_at(info.data_offset, info.compress_size)
        if len(raw) != info.compress_size:
            return None
        data = raw
        if info.compress_type == inflate.DEFLATED:
            decompressor = inflate.inflate_lib.decompressobj(-15)
            try:
                # at most one byte past the declared size, as ``stream``: never a bomb's worth
                data = decompressor.decompress(raw, info.file_size + 1)
                if decompressor.unconsumed_tail or not decompressor.eof:
                    return None
            except inflate.DECOMPRESS_ERRORS:
                return None
        if len(data) != info.file_size or inflate.inflate_lib.crc32(data) != info.CRC:
            return None
        self.raw_crcs[name] = inflate.inflate_lib.crc32(raw)
        return record_hash(data), len(data)

    def member_size(self, name: str) -> int:
        return self.infos[name].file_size
