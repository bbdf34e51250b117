"""A focused ELF reader: the dynamic symbol table, DT_NEEDED and the marker bytes.

Why not LIEF here: LIEF parses whole files (0.8-1.7 s for the 434 MB libtorch_cpu.so,
plus 0.3 s to import it) although all we need is ``.dynsym``/``.dynstr``, a few program
headers and 17 bytes at one address. This reader touches only those bytes of a ``bytes``
object or an ``mmap``, so a huge CUDA library costs what its symbol table costs.
``tests/test_elf_differential.py`` holds it to LIEF's answers on every fixture and on the
libraries of an installed torch.

Two routes to the symbol table, as the loader itself has: the section headers (what
linkers write), and PT_DYNAMIC (what ``ld.so`` uses; the only route when a tool stripped
or corrupted the section headers). Every offset read is checked against the file size,
and every loop is bounded by it, so hostile input ends in ``BinaryError``, never a hang.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple

from torchwheel import marker
from torchwheel.binary.common import Buffer, companions_of, exported_marker, slice_facts
from torchwheel.binary.facts import BinaryError, Import, SliceFacts
from torchwheel.binary.sparse import MissingRange, SparseBuffer
from torchwheel.marker import RawHit

_SHT_DYNSYM = 11
_SHT_DYNAMIC = 6
_SHT_NOBITS = 8
_PT_LOAD = 1
_PT_DYNAMIC = 2
_DT_NULL, _DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB, _DT_STRSZ, _DT_SYMENT = 0, 1, 4, 5, 6, 10, 11
_DT_GNU_HASH = 0x6FFFFEF5
_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE = 1, 2, 10
_STV_DEFAULT, _STV_PROTECTED = 0, 3
_SHN_UNDEF = 0

# manylinux / uname spellings, so that rules can compare with platform tags directly
_MACHINES = {
    3: "i686",
    8: "mips",
    20: "ppc",
    21: "ppc64",  # EM_PPC64; read_elf names a little-endian one ppc64le
    22: "s390x",
    40: "armv7l",
    62: "x86_64",
    183: "aarch64",
    243: "riscv64",
    258: "loongarch64",
}


@dataclass(frozen=True)
class _Layout:
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


@dataclass(frozen=True)
class _Segment:
    vaddr: int
    offset: int
    filesz: int


class _Symbol(NamedTuple):
    """A NamedTuple, not a dataclass: libtorch_cpu.so has 75,000 of these."""

    name: str
    value: int
    bind: int
    visibility: int
    shndx: int


class _Reader:
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
        self.lay = _Layout("<" if ei_data == 1 else ">", ei_class == 2)
        fields = self._unpack(self.lay.ehdr, 16, "ELF header")
        (_, self.machine, _, _, self.phoff, self.shoff, _, _, self.phentsize, self.phnum,
         self.shentsize, self.shnum, self.shstrndx) = fields  # fmt: skip

    def _unpack(self, fmt: str, offset: int, what: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if offset < 0 or offset + size > self.size:
            raise BinaryError(f"{what} at offset {offset:#x} lies outside the file")
        return struct.unpack(fmt, self.buf[offset : offset + size])

    def _table(self, fmt: str, offset: int, entsize: int, count: int, what: str) -> Iterator[tuple[int, ...]]:
        size = struct.calcsize(fmt)
        if count == 0:
            return iter(())
        if entsize < size or offset < 0 or offset + entsize * count > self.size:
            raise BinaryError(f"{what} ({count} entries at {offset:#x}) lies outside the file")
        # Slicing (not unpack_from on the buffer) lets the same code read bytes, an mmap or a
        # SparseBuffer that holds only the ranges a streaming scan captured.
        data = self.buf[offset : offset + entsize * count]
        if entsize == size:
            return struct.iter_unpack(fmt, data)
        return (struct.unpack_from(fmt, data, i * entsize) for i in range(count))

    # -- program headers -------------------------------------------------------------
    def segments(self) -> tuple[list[_Segment], _Segment | None]:
        loads: list[_Segment] = []
        dynamic: _Segment | None = None
        rows = self._table(self.lay.phdr, self.phoff, self.phentsize, self.phnum, "program header table")
        for row in rows:
            if self.lay.is64:
                p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = row
            else:
                p_type, p_offset, p_vaddr, _, p_filesz, _, _, _ = row
            seg = _Segment(p_vaddr, p_offset, p_filesz)
            if p_type == _PT_LOAD:
                loads.append(seg)
            elif p_type == _PT_DYNAMIC:
                dynamic = seg
        return loads, dynamic

    @staticmethod
    def vaddr_to_offset(loads: list[_Segment], vaddr: int) -> int | None:
        for seg in loads:
            if seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
                return seg.offset + (vaddr - seg.vaddr)
        return None

    # -- strings and symbols ---------------------------------------------------------
    def strtab(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise BinaryError(f"string table at {offset:#x} (+{size}) lies outside the file")
        return bytes(self.buf[offset : offset + size])

    def symbols(self, offset: int, entsize: int, count: int, strings: bytes) -> list[_Symbol]:
        out: list[_Symbol] = []
        rows = self._table(self.lay.sym, offset, entsize, count, "dynamic symbol table")
        # One split of .dynstr and a dict from offset to name, instead of a find() and a
        # slice per symbol: torch's libraries have 100,000 dynamic symbols. A name that
        # starts inside another (linkers share suffixes) is not a key: find() covers it.
        parts = strings.split(b"\0")
        names = dict(
            zip(accumulate((len(p) + 1 for p in parts), initial=0), parts, strict=False)
        )  # one more offset than names
        find = strings.find
        limit = len(strings)
        is64 = self.lay.is64
        for row in rows:
            if is64:
                st_name, st_info, st_other, st_shndx, st_value, _ = row
            else:
                st_name, st_value, _, st_info, st_other, st_shndx = row
            if st_name == 0:
                continue
            raw = names.get(st_name)
            if raw is None:
                if st_name >= limit:
                    raise BinaryError(f"symbol name offset {st_name:#x} lies outside .dynstr")
                end = find(b"\0", st_name)
                raw = strings[st_name : limit if end < 0 else end]
            out.append(
                _Symbol(
                    raw.decode("utf-8", "backslashreplace"), st_value, st_info >> 4, st_other & 3, st_shndx
                )
            )
        return out

    def dynamic_entries(self, offset: int, size: int) -> list[tuple[int, int]]:
        entsize = struct.calcsize(self.lay.dyn)
        entries: list[tuple[int, int]] = []
        for tag, val in self._table(self.lay.dyn, offset, entsize, size // entsize, "dynamic section"):
            if tag == _DT_NULL:
                break
            entries.append((tag, val))
        return entries


class _Section(NamedTuple):
    type: int
    offset: int
    size: int
    link: int
    entsize: int


def _sections(r: _Reader) -> list[_Section]:
    return [
        _Section(row[1], row[4], row[5], row[6], row[9])
        for row in r._table(r.lay.shdr, r.shoff, r.shentsize, r.shnum, "section header table")
    ]


def needed_ranges(buf: SparseBuffer) -> list[tuple[int, int]]:
    """The byte ranges ``read_elf`` will read, as far as the bytes captured so far tell.

    A streaming reader asks this after the head (ELF and program headers give the section
    table and PT_DYNAMIC) and again once the section table went by (it gives .dynsym,
    .dynstr and .dynamic, which patchelf may have moved behind it). Ranges it cannot know
    yet are simply not listed; ``MissingRange`` on the final read catches any it missed.
    """
    try:
        r = _Reader(buf, "")
    except (MissingRange, BinaryError):
        return []  # not even a readable header: the final read reports it
    out: list[tuple[int, int]] = []
    if r.shoff and r.shnum:
        out.append((r.shoff, r.shoff + r.shentsize * r.shnum))
    try:
        _, dynamic = r.segments()
        if dynamic is not None:
            out.append((dynamic.offset, dynamic.offset + dynamic.filesz))
        sections = _sections(r) if r.shoff and r.shnum else []
    except (MissingRange, BinaryError):
        return out
    for sec in sections:
        if sec.type in (_SHT_DYNSYM, _SHT_DYNAMIC):
            out.append((sec.offset, sec.offset + sec.size))
            if sec.type == _SHT_DYNSYM and sec.link < len(sections):
                strtab = sections[sec.link]
                out.append((strtab.offset, strtab.offset + strtab.size))
    return out


def _section_route(r: _Reader) -> tuple[list[_Symbol], list[str]] | None:
    """Read .dynsym/.dynstr/.dynamic through the section headers; None when there are none."""
    if r.shoff == 0 or r.shnum == 0:
        return None
    sections = _sections(r)
    dynsym = next((sec for sec in sections if sec.type == _SHT_DYNSYM), None)
    if dynsym is None:
        return None
    if dynsym.link >= len(sections) or dynsym.entsize == 0:
        raise BinaryError(".dynsym links to a string table that does not exist")
    strtab = sections[dynsym.link]
    if strtab.type == _SHT_NOBITS:
        raise BinaryError(".dynstr has no bytes in the file")
    strings = r.strtab(strtab.offset, strtab.size)
    symbols = r.symbols(dynsym.offset, dynsym.entsize, dynsym.size // dynsym.entsize, strings)
    needed: list[str] = []
    dynamic = next((sec for sec in sections if sec.type == _SHT_DYNAMIC), None)
    if dynamic is not None:
        for tag, val in r.dynamic_entries(dynamic.offset, dynamic.size):
            if tag == _DT_NEEDED:
                needed.append(_cstr(strings, val))
    return symbols, needed


def _gnu_hash_count(r: _Reader, offset: int) -> int:
    """Number of .dynsym entries implied by DT_GNU_HASH (the loader's own way to know)."""
    nbuckets, symoffset, bloom_size, _ = r._unpack(r.lay.endian + "IIII", offset, "DT_GNU_HASH")
    word = 8 if r.lay.is64 else 4
    buckets_at = offset + 16 + bloom_size * word
    if nbuckets > r.size // 4:
        raise BinaryError("DT_GNU_HASH bucket count exceeds the file")
    buckets = r._unpack(f"{r.lay.endian}{nbuckets}I", buckets_at, "DT_GNU_HASH buckets")
    last = max(buckets, default=0)
    if last < symoffset:
        return symoffset
    chains_at = buckets_at + 4 * nbuckets
    index = last
    while True:  # bounded: each step reads 4 bytes further and is checked against the file
        (value,) = r._unpack(r.lay.endian + "I", chains_at + 4 * (index - symoffset), "DT_GNU_HASH chain")
        index += 1
        if value & 1:
            return index


def _dynamic_route(
    r: _Reader, loads: list[_Segment], dynamic: _Segment | None
) -> tuple[list[_Symbol], list[str]]:
    if dynamic is None:
        return [], []  # a static executable or object: nothing dynamic to read
    entries = r.dynamic_entries(dynamic.offset, dynamic.filesz)
    values = {tag: val for tag, val in entries}
    if _DT_SYMTAB not in values or _DT_STRTAB not in values:
        raise BinaryError("PT_DYNAMIC has no DT_SYMTAB/DT_STRTAB")

    def offset(tag: int) -> int:
        off = r.vaddr_to_offset(loads, values[tag])
        if off is None:
            raise BinaryError(f"dynamic tag {tag:#x} points outside every loaded segment")
        return off

    strings = r.strtab(offset(_DT_STRTAB), values.get(_DT_STRSZ, 0))
    entsize = values.get(_DT_SYMENT, struct.calcsize(r.lay.sym))
    if _DT_HASH in values:
        (_, count) = r._unpack(r.lay.endian + "II", offset(_DT_HASH), "DT_HASH")
    elif _DT_GNU_HASH in values:
        count = _gnu_hash_count(r, offset(_DT_GNU_HASH))
    else:
        raise BinaryError("PT_DYNAMIC has neither DT_HASH nor DT_GNU_HASH to size .dynsym")
    symbols = r.symbols(offset(_DT_SYMTAB), entsize, count, strings)
    needed = [_cstr(strings, val) for tag, val in entries if tag == _DT_NEEDED]
    return symbols, needed


def _cstr(strings: bytes, offset: int) -> str:
    if offset >= len(strings):
        raise BinaryError(f"string offset {offset:#x} lies outside .dynstr")
    end = strings.find(b"\0", offset)
    return strings[offset : len(strings) if end < 0 else end].decode("utf-8", "backslashreplace")


def read_elf(buf: Buffer | SparseBuffer, path: str, raw_hits: list[RawHit] | None = None) -> SliceFacts:
    """``raw_hits``: the records a streaming scan already found (then ``buf`` may be sparse)."""
    r = _Reader(buf, path)
    loads, dynamic = r.segments()
    try:
        routed = _section_route(r)
    except BinaryError:
        routed = None  # the section table lies: fall back to what the loader uses
        if dynamic is None:
            raise
    symbols, needed = routed if routed is not None else _dynamic_route(r, loads, dynamic)

    exports: list[str] = []
    imports: list[Import] = []
    marker_value: int | None = None
    for sym in symbols:
        if sym.shndx == _SHN_UNDEF:
            imports.append(Import(sym.name, weak=sym.bind == _STB_WEAK))
        elif sym.bind in (_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE) and sym.visibility in (
            _STV_DEFAULT,
            _STV_PROTECTED,
        ):
            exports.append(sym.name)
            if sym.name == marker.SYMBOL:
                marker_value = sym.value

    found = None
    if marker_value is not None:
        off = r.vaddr_to_offset(loads, marker_value)
        found = exported_marker(buf, off)
    arch = _MACHINES.get(r.machine, f"elf-machine-{r.machine}")
    if r.machine == 21:  # EM_PPC64: the byte order names the platform
        arch = "ppc64le" if r.lay.endian == "<" else "ppc64"
    return slice_facts(
        buf,
        arch=arch,
        exports=exports,
        imports=imports,
        needed=needed,
        exported=found,
        companions=companions_of(exports),
        file_range=(0, r.size),
        raw_hits=raw_hits,
    )
