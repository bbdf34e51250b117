"""One entry point over three formats: bytes (or an mmap) in, ``BinaryFacts`` out.

The reader chosen is by magic, never by file name: wheels ship ``.so`` files that are
Mach-O and ``.pyd`` files are PE, and a misnamed file must still be read for what it is.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from torchwheel.binary.facts import BinaryError, BinaryFacts, Format, Import, SliceFacts
from torchwheel.binary.sparse import SparseBuffer
from torchwheel.marker import Buffer, RawHit

__all__ = [
    "BinaryError",
    "BinaryFacts",
    "Import",
    "SliceFacts",
    "read_binary",
    "read_path",
    "read_sparse_elf",
    "sniff",
]

_MACHO_THIN = {b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce"}
_MACHO_FAT = {b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"}
_NAMES = {"elf": "ELF", "macho": "Mach-O", "pe": "PE"}
_MAX_FAT_ARCHS = 32  # Java class files share 0xCAFEBABE; their "count" is a class version


def sniff(head: bytes) -> Format | None:
    """The format a file's first bytes claim, or None for anything else."""
    if head[:4] == b"\x7fELF":
        return "elf"
    if head[:4] in _MACHO_THIN or head[:4] in _MACHO_FAT:
        return "macho"
    if head[:2] == b"MZ":
        return "pe"
    return None


def _check_fat(buf: Buffer) -> None:
    """Validate a universal header before LIEF sees it: LIEF trusts the offsets."""
    if len(buf) < 8:
        raise BinaryError("truncated universal Mach-O header")
    is64 = bytes(buf[:4]) == b"\xca\xfe\xba\xbf"
    (count,) = struct.unpack_from(">I", buf, 4)
    if count == 0 or count > _MAX_FAT_ARCHS:
        raise BinaryError(f"universal header lists {count} slices (a Java class file?)")
    fmt, step = (">iiQQII", 32) if is64 else (">iiIII", 20)
    if 8 + count * step > len(buf):
        raise BinaryError("universal header is truncated")
    for i in range(count):
        _, _, offset, size, *_ = struct.unpack_from(fmt, buf, 8 + i * step)
        if offset + size > len(buf) or size == 0:
            raise BinaryError(f"slice {i} (offset {offset:#x}, size {size:#x}) lies outside the file")


def _check_pe(buf: Buffer) -> None:
    if len(buf) < 0x40:
        raise BinaryError("truncated DOS header")
    (pe_at,) = struct.unpack_from("<I", buf, 0x3C)
    if pe_at + 24 > len(buf) or bytes(buf[pe_at : pe_at + 4]) != b"PE\0\0":
        raise BinaryError("no PE signature where the DOS header points (a DOS program or truncated)")


def read_binary(buf: Buffer, path: str, raw_scan: bool = True) -> BinaryFacts:
    """Read one compiled file; every failure is a ``BinaryError`` naming the problem.

    ``raw_scan=False`` skips the byte scan for marker records in ELF files: for torch's own
    libraries, whose exports are all that is asked, it would page in every byte of a
    400 MB file (and count it as resident memory) to find nothing."""
    fmt = sniff(bytes(buf[:4]))
    if fmt is None:
        raise BinaryError("not an ELF, Mach-O or PE file")
    try:
        if fmt == "elf":
            from torchwheel.binary.elf import read_elf

            slices: tuple[SliceFacts, ...] = (read_elf(buf, path, None if raw_scan else []),)
        elif fmt == "macho":
            from torchwheel.binary.lief_reader import read_macho

            if bytes(buf[:4]) in _MACHO_FAT:
                _check_fat(buf)
            slices = tuple(read_macho(buf, path))
        else:
            from torchwheel.binary.lief_reader import read_pe

            _check_pe(buf)
            slices = (read_pe(buf, path),)
    except BinaryError as exc:
        raise BinaryError(f"malformed {_NAMES[fmt]}: {exc}") from exc
    except (struct.error, ValueError, IndexError, OverflowError, RuntimeError, TypeError) as exc:
        # LIEF surfaces malformed input as assorted exceptions; name the file, not a trace.
        raise BinaryError(f"malformed {_NAMES[fmt]}: {exc}") from exc
    return BinaryFacts(path=path, format=fmt, size=len(buf), slices=slices)


def read_sparse_elf(buf: SparseBuffer, path: str, raw_hits: list[RawHit]) -> BinaryFacts:
    """An ELF of which a streaming scan kept only some ranges (see ``memberscan``).

    ``MissingRange`` passes through: it asks the caller for more bytes, it is not an error.
    """
    from torchwheel.binary.elf import read_elf

    try:
        slice_ = read_elf(buf, path, raw_hits)
    except BinaryError as exc:
        raise BinaryError(f"malformed ELF: {exc}") from exc
    except (struct.error, ValueError, OverflowError) as exc:
        raise BinaryError(f"malformed ELF: {exc}") from exc
    return BinaryFacts(path=path, format="elf", size=len(buf), slices=(slice_,))


def read_path(path: str | os.PathLike[str], label: str | None = None, raw_scan: bool = True) -> BinaryFacts:
    """Map a file and read it; the map lets a 500 MB library cost only the pages we touch.

    ``label`` names the file in the facts (a member path inside an unpacked wheel)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise BinaryError("empty file")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return read_binary(mm, label or str(path), raw_scan)
    except OSError as exc:
        raise BinaryError(exc.strerror or str(exc)) from exc
