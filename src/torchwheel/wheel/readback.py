"""Proof that a wheel ``tag`` wrote is the one it meant to write, before it replaces anything.

Four independent views of the finished temp file: our own (RECORD complete and right,
the rewritten members byte-identical to the plan), the bytes themselves (every copied
member inflates to the CRC and size the *analysed* central directory recorded: a file
changed under us since the analysis cannot slip through as a raw copy), an installer's
(``installer.sources.WheelFile``: the ``.dist-info`` matches the file name, RECORD names
every member), and torchwheel's own reader (``WheelArchive``, with every limit in force:
what ``tag`` writes, every command must read back). Installer's own content validation
would hash every byte a second time; the CRC pass gives the same guarantee for copied
members at inflate cost.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

from installer.exceptions import InstallerError
from installer.sources import WheelFile

from torchwheel.errors import InputError
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.inflate import INFLATE_ERROR
from torchwheel.wheel.inflate import inflate_lib as _zlib
from torchwheel.wheel.record import parse_record, record_hash
from torchwheel.wheel.writer import SourceEntry
from torchwheel.wheel.zipdir import local_data_offset

_CHUNK = 1 << 22


def verify_written(
    path: Path,
    target_name: str,
    new_members: dict[str, bytes],
    expected_hashes: dict[str, tuple[str, int]],
    analysed: Mapping[str, SourceEntry],
    raw_crcs: Mapping[str, int] | None = None,
) -> None:
    """Raise ``InputError`` unless ``path`` (to be renamed to ``target_name``) verifies.

    ``raw_crcs``: CRC-32 of each member's compressed bytes as the analysis read them
    (``WheelArchive.raw_crcs``); a copy is then checked without inflating it again."""
    raw_crcs = raw_crcs or {}
    try:
        with open(path, "rb") as fh, zipfile.ZipFile(fh) as zf:
            zf.filename = target_name  # installer parses the wheel's name from it
            _ours(zf, target_name, new_members, expected_hashes)
            for info in zf.infolist():
                if info.filename not in new_members and not info.filename.endswith(".dist-info/RECORD"):
                    raw_crc = raw_crcs.get(info.filename)
                    if raw_crc is None:
                        _same_as_analysed(fh.fileno(), zf, info, analysed[info.filename], target_name)
                    else:
                        _same_raw_bytes(fh.fileno(), info, analysed[info.filename], raw_crc, target_name)
            source = WheelFile(zf)
            source.dist_info_dir  # noqa: B018 - raises when .dist-info and file name disagree
            source.validate_record(validate_contents=False)
    except (zipfile.BadZipFile, StopIteration, KeyError, ValueError, InstallerError, INFLATE_ERROR) as exc:
        raise InputError(
            f"{target_name}: the written wheel does not verify ({exc}): nothing replaced",
            reference="internal-error",
        ) from exc
    _reads_back(path, target_name)


def _reads_back(path: Path, target: str) -> None:
    """Every command opens a wheel through ``WheelArchive``: its limits (metadata and side
    file within ``max-metadata-bytes``, RECORD within its own) must hold for our output too.
    A 39 MB side file once made a wheel that ``check`` refused; ``side_file`` now stays far
    inside, and this is the proof rather than the hope."""
    try:
        with WheelArchive(path, filename=target):
            pass
    except InputError as exc:
        raise InputError(
            f"{target}: torchwheel would not read the written wheel back ({exc}): nothing replaced",
            reference="internal-error",
            path=target,
        ) from exc


def _ours(
    zf: zipfile.ZipFile, target: str, new_members: dict[str, bytes], expected: dict[str, tuple[str, int]]
) -> None:
    names = [i.filename for i in zf.infolist()]
    if len(set(names)) != len(names):
        raise InputError(
            f"{target}: duplicate members after writing", reference="internal-error", path=target
        )
    record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
    record = parse_record(zf.read(record_name).decode())
    for name in names:
        if name == record_name:
            continue
        entry = record.get(name)
        if entry is None:
            raise InputError(
                f"{target}: {name!r} missing from the written RECORD", reference="internal-error", path=target
            )
        if name in new_members:
            data = zf.read(name)
            if entry.hash != record_hash(data) or data != new_members[name]:
                raise InputError(
                    f"{target}: {name!r} does not match what was written",
                    reference="internal-error",
                    path=target,
                )
        elif (entry.hash, entry.size) != expected[name]:
            raise InputError(
                f"{target}: RECORD entry of {name!r} differs from the input's",
                reference="internal-error",
                path=target,
            )


def _same_raw_bytes(fd: int, info: zipfile.ZipInfo, analysed: SourceEntry, raw_crc: int, target: str) -> None:
    """The copied compressed bytes are the ones the analysis inflated and hashed (CRC-32 of
    the raw stream: page-cache reads at GB/s, no second inflate)."""
    if (info.CRC, info.file_size, info.compress_size) != (
        analysed.CRC,
        analysed.file_size,
        analysed.compress_size,
    ):
        raise InputError(
            f"{target}: {info.filename!r}: CRC or sizes differ from the analysed input",
            reference="internal-error",
            path=target,
        )
    pos = local_data_offset(lambda offset, size: os.pread(fd, size, offset), info)
    remaining, crc = info.compress_size, 0
    while remaining and (raw := os.pread(fd, min(_CHUNK, remaining), pos)):
        crc = _zlib.crc32(raw, crc)
        pos, remaining = pos + len(raw), remaining - len(raw)
    if remaining or crc != raw_crc:
        raise InputError(
            f"{target}: {info.filename!r} is not the analysed bytes "
            "(the input changed while tag ran?): nothing replaced",
            reference="input-changed",
            path=target,
        )


def _same_as_analysed(
    fd: int, zf: zipfile.ZipFile, info: zipfile.ZipInfo, analysed: SourceEntry, target: str
) -> None:
    """The copied member inflates to what the analysed central directory promised."""
    if (info.CRC, info.file_size) != (analysed.CRC, analysed.file_size):
        raise InputError(
            f"{target}: {info.filename!r}: CRC or size differ from the analysed input",
            reference="internal-error",
            path=target,
        )
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        with zf.open(info) as member:  # zipfile checks the CRC at the end
            while member.read(_CHUNK):
                pass
        return
    inflater = _zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    pos = local_data_offset(lambda offset, size: os.pread(fd, size, offset), info)
    remaining, crc, produced = info.compress_size, 0, 0
    while remaining:
        raw = os.pread(fd, min(_CHUNK, remaining), pos)
        if not raw:
            break
        pos, remaining = pos + len(raw), remaining - len(raw)
        while raw:
            if inflater is None:
                out, raw = raw, b""
            else:  # bounded output per call: a lying member cannot balloon
                out = inflater.decompress(raw, _CHUNK)
                raw = inflater.unconsumed_tail
            if not out:
                break
            produced += len(out)
            if produced > info.file_size:
                break
            crc = _zlib.crc32(out, crc)
    if inflater is not None and produced <= info.file_size:
        tail = inflater.flush()
        produced, crc = produced + len(tail), _zlib.crc32(tail, crc)
    if (crc, produced) != (info.CRC, info.file_size):
        raise InputError(
            f"{target}: {info.filename!r} does not inflate to the analysed bytes "
            "(the input changed while tag ran?): nothing replaced",
            reference="input-changed",
            path=target,
        )
