"""How an ELF file is laid out: its header, the program headers (segments) and the section
table, read as checked rows out of a ``bytes``, an ``mmap`` or a ``SparseBuffer``.

What ``elf`` and ``elfsymbols`` build on. Every row is checked against the bytes present
before the first is read, and tables are read a window at a time, so a header that lies
about a count or a size ends in ``BinaryError`` and costs no copy.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from typing import NamedTuple

from torchwheel.binary.common import Buffer
from torchwheel.binary.facts import BinaryError
from torchwheel.binary.sparse import SparseBuffer
from torchwheel.binary.strtab import Names
from torchwheel.frozen import frozen

SHT_DYNSYM = 11
SHT_DYNAMIC = 6
SHT_NOBITS = 8
PT_LOAD = 1
_PT_DYNAMIC = 2
WINDOW = 1 << 20  # tables are read this many bytes at a time: a lying size costs no copy


@frozen
class Layout:
    """Struct formats for one ELF class and byte order."""

    endian: str
    is64: bool

    @property
    def ehdr(self) -> str:  # e_type .. e_shstrndx, after e_ident
        return self.endian + ("HHIQQQIHHHHHH" if self.is64 else "HHIIIIIHHHHHH")

    @property
    def shdr(self) -> str:
        return self.endian + ("IIQQQQIIQQ" if self.is64 else "IIIIIIIIII")

    @property
    def phdr(self) -> str:
        return self.endian + ("IIQQQQQQ" if self.is64 else "IIIIIIII")

    @property
    def sym(self) -> str:
        return self.endian + ("IBBHQQ" if self.is64 else "IIIBBH")

    @property
    def dyn(self) -> str:
        return self.endian + ("qQ" if self.is64 else "iI")


@frozen
class Segment:
    vaddr: int
    offset: int
    filesz: int


class Reader:
    """An ELF file's header, and checked access to the tables it points at."""

    def __init__(self, buf: Buffer | SparseBuffer, path: str) -> None:
        self.buf = buf
        self.path = path
        self.size = len(buf)
        if self.size < 52:
            raise BinaryError("truncated ELF header")
        ident = buf[0:16]
        ei_class, ei_data = ident[4], ident[5]
        if ei_class not in (1, 2) or ei_data not in (1, 2):
            raise BinaryError(f"unknown ELF class/encoding {ei_class}/{ei_data}")
        self.lay = Layout("<" if ei_data == 1 else ">", ei_class == 2)
        fields = self.unpack(self.lay.ehdr, 16, "ELF header")
        (_, self.machine, _, _, self.phoff, self.shoff, _, _, self.phentsize, self.phnum,
         self.shentsize, self.shnum, self.shstrndx) = fields  # fmt: skip

    def unpack(self, fmt: str, offset: int, what: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if offset < 0 or offset + size > self.size:
            raise BinaryError(f"{what} at offset {offset:#x} lies outside the file")
        return struct.unpack(fmt, self.buf[offset : offset + size])

    def table(self, fmt: str, offset: int, entsize: int, count: int, what: str) -> Iterator[tuple[int, ...]]:
        """Rows of a table, checked against the bytes present before the first is read; a
        row at a time, so a walk that stops early (PT_DYNAMIC at DT_NULL) unpacks no more."""
        size = self._fits(fmt, offset, entsize, count, what)
        return itertools.chain.from_iterable(
            rows(fmt, size, entsize, span) for span in self._spans(offset, entsize, count)
        )

    def spans(self, fmt: str, offset: int, entsize: int, count: int, what: str) -> Iterator[bytes]:
        """The table's bytes a window at a time (``elfsymbols`` slices each window into
        columns in C), checked against the bytes present before the first is read."""
        self._fits(fmt, offset, entsize, count, what)
        return self._spans(offset, entsize, count)

    def _fits(self, fmt: str, offset: int, entsize: int, count: int, what: str) -> int:
        """A row's size, once the table is known to lie within the file."""
        size = struct.calcsize(fmt)
        if count and (entsize < size or offset < 0 or offset + entsize * count > self.size):
            raise BinaryError(f"{what} ({count} entries at {offset:#x}) lies outside the file")
        return size

    def _spans(self, offset: int, entsize: int, count: int) -> Iterator[bytes]:
        # Slicing (not unpack_from on the buffer) lets the same code read bytes, an mmap or a
        # SparseBuffer that holds only the ranges a streaming scan captured; a window at a
        # time, so a table of hundreds of MB is never copied whole.
        per = max(1, WINDOW // max(1, entsize))
        for first in range(0, count, per):
            n = min(per, count - first)
            yield bytes(self.buf[offset + first * entsize : offset + (first + n) * entsize])

    # -- program headers -------------------------------------------------------------
    def segments(self) -> tuple[list[Segment], Segment | None]:
        loads: list[Segment] = []
        dynamic: Segment | None = None
        rows = self.table(self.lay.phdr, self.phoff, self.phentsize, self.phnum, "program header table")
        for row in rows:
            if self.lay.is64:
                p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = row
            else:
                p_type, p_offset, p_vaddr, _, p_filesz, _, _, _ = row
            seg = Segment(p_vaddr, p_offset, p_filesz)
            if p_type == PT_LOAD:
                loads.append(seg)
            elif p_type == _PT_DYNAMIC:
                dynamic = seg
        return loads, dynamic

    @staticmethod
    def vaddr_to_offset(loads: list[Segment], vaddr: int) -> int | None:
        for seg in loads:
            if seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
                return seg.offset + (vaddr - seg.vaddr)
        return None

    # -- string tables ---------------------------------------------------------------
    def strtab(self, offset: int, size: int) -> Names:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise BinaryError(f"string table at {offset:#x} (+{size}) lies outside the file")
        return Names(self.buf, offset, size)


class Section(NamedTuple):
    type: int
    offset: int
    size: int
    link: int
    entsize: int
    name: int = 0  # offset in .shstrtab


def rows(fmt: str, size: int, entsize: int, span: bytes) -> Iterator[tuple[int, ...]]:
    """The rows of one window of a table (``Reader.spans``), entries of ``entsize`` bytes
    of which ``fmt`` (``size`` bytes) reads the start."""
    if entsize == size:
        return struct.iter_unpack(fmt, span)
    return (struct.unpack_from(fmt, span, at) for at in range(0, len(span) - entsize + 1, entsize))


def sections(r: Reader) -> list[Section]:
    """The section header table (what linkers write; a stripped file may have none)."""
    return [
        Section(row[1], row[4], row[5], row[6], row[9], row[0])
        for row in r.table(r.lay.shdr, r.shoff, r.shentsize, r.shnum, "section header table")
    ]


def shstrtab(r: Reader, table: list[Section]) -> Section | None:
    """The section that holds the section names, when the header names one with bytes."""
    if 0 < r.shstrndx < len(table) and table[r.shstrndx].type != SHT_NOBITS:
        return table[r.shstrndx]
    return None
