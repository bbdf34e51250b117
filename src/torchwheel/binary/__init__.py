"""One entry point over three formats: bytes (or an mmap) in, ``BinaryFacts`` out.

The reader chosen is by magic, never by file name: wheels ship ``.so`` files that are
Mach-O and ``.pyd`` files are PE, and a misnamed file must still be read for what it is.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from torchwheel import limits
from torchwheel.binary.elf import gpu_sections as elf_sections
from torchwheel.binary.elf import gpu_zones as elf_zones
from torchwheel.binary.elf import needed_ranges as elf_ranges
from torchwheel.binary.elf import read_elf
from torchwheel.binary.facts import BinaryError, BinaryFacts, Format, Import, SliceFacts
from torchwheel.binary.gpucode import GpuScan
from torchwheel.binary.macho import FAT, THIN, read_macho
from torchwheel.binary.macho import needed_ranges as macho_ranges
from torchwheel.binary.marker_record import Buffer, RawHit
from torchwheel.binary.pe import gpu_sections as pe_sections
from torchwheel.binary.pe import gpu_zones as pe_zones
from torchwheel.binary.pe import needed_ranges as pe_ranges
from torchwheel.binary.pe import read_pe
from torchwheel.binary.sparse import MissingRange, SparseBuffer
from torchwheel.safeopen import open_regular

__all__ = [
    "BinaryError",
    "BinaryFacts",
    "Import",
    "SliceFacts",
    "gpu_sections",
    "gpu_zones",
    "needed_ranges",
    "read_binary",
    "read_path",
    "read_sparse",
    "sniff",
]

_NAMES = {"elf": "ELF", "macho": "Mach-O", "pe": "PE"}


def sniff(head: bytes) -> Format | None:
    """The format a file's first bytes claim, or None for anything else."""
    if head[:4] == b"\x7fELF":
        return "elf"
    if head[:4] in THIN or head[:4] in FAT:
        return "macho"
    if head[:2] == b"MZ":
        return "pe"
    return None


def _read(
    buf: Buffer | SparseBuffer, path: str, raw_hits: list[RawHit] | None, gpu: GpuScan | None = None
) -> BinaryFacts:
    """Our own readers for all three formats: each slices only the ranges its facts need,
    so ``buf`` may be a ``SparseBuffer`` (then ``MissingRange`` passes through: it asks the
    caller for more bytes, it is not an error)."""
    fmt = sniff(bytes(buf[:4]))
    if fmt is None:
        raise BinaryError("not an ELF, Mach-O or PE file")
    try:
        if fmt == "elf":
            slices: tuple[SliceFacts, ...] = (read_elf(buf, path, raw_hits, gpu),)
        elif fmt == "macho":
            slices = tuple(read_macho(buf, path, raw_hits))
        else:
            slices = (read_pe(buf, path, raw_hits, gpu),)
    except BinaryError as exc:
        raise BinaryError(f"malformed {_NAMES[fmt]}: {exc}") from exc
    except (struct.error, ValueError, OverflowError) as exc:
        raise BinaryError(f"malformed {_NAMES[fmt]}: {exc}") from exc
    return BinaryFacts(path=path, format=fmt, size=len(buf), slices=slices)


def read_binary(buf: Buffer, path: str, raw_scan: bool = True) -> BinaryFacts:
    """Read one compiled file; every failure is a ``BinaryError`` naming the problem.

    ``raw_scan=False`` skips the byte scan for marker records: for torch's own libraries,
    whose exports are all that is asked, it would page in every byte of a 400 MB file (and
    count it as resident memory) to find nothing."""
    return _read(buf, path, None if raw_scan else [])


def read_sparse(
    buf: SparseBuffer, path: str, raw_hits: list[RawHit], gpu: GpuScan | None = None
) -> BinaryFacts:
    """A binary of which a streaming scan kept only some ranges (see ``memberscan``), with
    the marker records and the GPU code that scan found."""
    return _read(buf, path, raw_hits, gpu)


def gpu_sections(buf: SparseBuffer) -> dict[str, tuple[int, int]] | None:
    """The GPU sections by name (offset, size) as far as the captured bytes tell; None when
    they do not (a Mach-O has none: CUDA left macOS)."""
    try:
        fmt = sniff(bytes(buf[:4]))
        if fmt == "elf":
            return elf_sections(buf)
        if fmt == "pe":
            return pe_sections(buf)
    except (MissingRange, BinaryError, struct.error, limits.LimitExceeded):
        return None
    return {}


def gpu_zones(head: SparseBuffer) -> list[tuple[int, int]]:
    """Where GPU code may lie, from a file's head (ELF program headers, PE section table);
    the whole file when the head does not tell, nothing for Mach-O (CUDA left macOS)."""
    try:
        fmt = sniff(bytes(head[:4]))
        if fmt == "elf":
            return elf_zones(head)
        if fmt == "pe":
            return pe_zones(head)
    except (MissingRange, BinaryError, struct.error, limits.LimitExceeded):
        return [(0, len(head))]
    return []


def needed_ranges(buf: SparseBuffer) -> list[tuple[int, int]]:
    """The byte ranges the reader for ``buf``'s format will read, as far as the bytes
    captured so far tell (a streaming scan asks this as the member goes by)."""
    try:
        fmt = sniff(bytes(buf[:4]))
    except MissingRange:
        return [(0, min(4, len(buf)))]
    if fmt == "elf":
        return elf_ranges(buf)
    if fmt == "macho":
        return macho_ranges(buf)
    if fmt == "pe":
        return pe_ranges(buf)
    return []


def read_path(path: str | os.PathLike[str], label: str | None = None, raw_scan: bool = True) -> BinaryFacts:
    """Map a file and read it; the map lets a 500 MB library cost only the pages we touch.

    ``label`` names the file in the facts (a member path inside an unpacked wheel)."""
    p = Path(path)
    try:
        with open(open_regular(p), "rb") as fh:  # never a FIFO or device (safeopen)
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise BinaryError("empty file")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return read_binary(mm, label or str(path), raw_scan)
    except OSError as exc:
        raise BinaryError(exc.strerror or str(exc)) from exc
