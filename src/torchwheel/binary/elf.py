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

The budget (``limits``): every count and size from a header (e_phnum, e_shnum, sh_size,
DT_STRSZ, symbol counts, hash buckets and chains, dynamic entries) is checked against the
bytes present before anything is allocated or looped over; tables are read a window at a
time; names are decoded only for the symbols kept (``strtab.Names``). A limit crossed
inside a binary (``max-symbols``, ``max-needed``) is a ``BinaryError`` carrying the limit's
text: that member is reported unreadable (TW406) and the rest of the wheel is still judged.
"""

from __future__ import annotations

import array
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from torchwheel import limits
from torchwheel.binary import gpucode, marker_record
from torchwheel.binary.common import Buffer, companions_of, exported_marker, slice_facts, within
from torchwheel.binary.facts import BinaryError, Import, SliceFacts
from torchwheel.binary.gpucode import GpuScan
from torchwheel.binary.marker_record import RawHit
from torchwheel.binary.sparse import MissingRange, SparseBuffer
from torchwheel.binary.strtab import Names

_SHT_DYNSYM = 11
_SHT_DYNAMIC = 6
_SHT_NOBITS = 8
_PT_LOAD = 1
_PT_DYNAMIC = 2
_DT_NULL, _DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB, _DT_STRSZ, _DT_SYMENT = 0, 1, 4, 5, 6, 10, 11
_DT_GNU_HASH = 0x6FFFFEF5
_DT_USED = frozenset({_DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB, _DT_STRSZ, _DT_SYMENT, _DT_GNU_HASH})
_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE = 1, 2, 10
_STV_DEFAULT, _STV_PROTECTED = 0, 3
_SHN_UNDEF = 0
_VISIBLE = (_STV_DEFAULT, _STV_PROTECTED)
_WINDOW = 1 << 20  # tables are read this many bytes at a time: a lying size costs no copy
# low bit of a byte -> that bit, so ``translate`` + ``find`` locate the first odd GNU-hash
# chain word in C instead of a Python loop over words
_LOW_BIT = bytes(i & 1 for i in range(256))
_NATIVE = "<" if sys.byteorder == "little" else ">"

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


class _Symbols(NamedTuple):
    """What the rules need from .dynsym, and nothing per symbol beyond it: libtorch_cpu.so
    has 100,000 dynamic symbols and a hostile file 500,000 (700 MB as one object each)."""

    exports: list[str]
    imports: list[Import]
    marker_value: int | None


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
        """Rows of a table, checked against the bytes present before the first is read."""
        size = struct.calcsize(fmt)
        if count == 0:
            return iter(())
        if entsize < size or offset < 0 or offset + entsize * count > self.size:
            raise BinaryError(f"{what} ({count} entries at {offset:#x}) lies outside the file")
        return self._rows(fmt, size, offset, entsize, count)

    def _rows(self, fmt: str, size: int, offset: int, entsize: int, count: int) -> Iterator[tuple[int, ...]]:
        # Slicing (not unpack_from on the buffer) lets the same code read bytes, an mmap or a
        # SparseBuffer that holds only the ranges a streaming scan captured; a window at a
        # time, so a table of hundreds of MB is never copied whole.
        per = max(1, _WINDOW // entsize)
        for first in range(0, count, per):
            n = min(per, count - first)
            data = self.buf[offset + first * entsize : offset + (first + n) * entsize]
            if entsize == size:
                yield from struct.iter_unpack(fmt, data)
            else:
                yield from (struct.unpack_from(fmt, data, i * entsize) for i in range(n))

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
    def strtab(self, offset: int, size: int) -> Names:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise BinaryError(f"string table at {offset:#x} (+{size}) lies outside the file")
        return Names(self.buf, offset, size)

    def symbols(self, offset: int, entsize: int, count: int, names: Names) -> _Symbols:
        """Imports (undefined) and exports (global/weak/unique with default or protected
        visibility) by name; every other symbol is passed over without decoding its name."""
        rows = self._table(self.lay.sym, offset, entsize, count, "dynamic symbol table")
        within(limits.current().max_symbols, "dynamic symbols", count)  # honest, yet too many
        exports: list[str] = []
        imports: list[Import] = []
        marker_value: int | None = None
        is64 = self.lay.is64
        for row in rows:
            if is64:
                st_name, st_info, st_other, st_shndx, st_value, _ = row
            else:
                st_name, st_value, _, st_info, st_other, st_shndx = row
            if st_name == 0:
                continue
            bind = st_info >> 4
            if st_shndx == _SHN_UNDEF:
                imports.append(Import(names(st_name), weak=bind == _STB_WEAK))
            elif bind in (_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE) and st_other & 3 in _VISIBLE:
                name = names(st_name)
                exports.append(name)
                if name == marker_record.SYMBOL:
                    marker_value = st_value
        return _Symbols(exports, imports, marker_value)

    def dynamic_entries(self, offset: int, size: int) -> list[tuple[int, int]]:
        """The tags this reader uses, up to DT_NULL: a PT_DYNAMIC of millions of entries
        is walked within its bytes, and only the few that matter are kept."""
        entsize = struct.calcsize(self.lay.dyn)
        entries: list[tuple[int, int]] = []
        needed = 0
        max_needed = limits.current().max_needed
        for tag, val in self._table(self.lay.dyn, offset, entsize, size // entsize, "dynamic section"):
            if tag == _DT_NULL:
                break
            if tag == _DT_NEEDED:
                needed += 1
                within(max_needed, "DT_NEEDED entries", needed)
            if tag in _DT_USED:
                entries.append((tag, val))
        return entries


class _Section(NamedTuple):
    type: int
    offset: int
    size: int
    link: int
    entsize: int
    name: int = 0  # offset in .shstrtab


def _sections(r: _Reader) -> list[_Section]:
    return [
        _Section(row[1], row[4], row[5], row[6], row[9], row[0])
        for row in r._table(r.lay.shdr, r.shoff, r.shentsize, r.shnum, "section header table")
    ]


def _shstrtab(r: _Reader, sections: list[_Section]) -> _Section | None:
    if 0 < r.shstrndx < len(sections) and sections[r.shstrndx].type != _SHT_NOBITS:
        return sections[r.shstrndx]
    return None


def _gpu_sections(r: _Reader) -> dict[str, tuple[int, int]] | None:
    """(offset, size) of the sections that hold or register GPU code, by name; None when
    the file has no readable section table (then ``gpucode`` trusts the segments alone)."""
    if r.shoff == 0 or r.shnum == 0:
        return None
    try:
        sections = _sections(r)
        names_at = _shstrtab(r, sections)
        if names_at is None:
            return None
        names = r.strtab(names_at.offset, names_at.size)
        out: dict[str, tuple[int, int]] = {}
        for sec in sections:
            if sec.type == _SHT_NOBITS or sec.name == 0:
                continue
            name = names(sec.name)
            if name in gpucode.SECTION_NAMES:
                out[name] = (sec.offset, sec.size)
        return out
    except BinaryError:
        return None


def gpu_zones(buf: Buffer | SparseBuffer) -> list[tuple[int, int]]:
    """Where a stream looks for fatbins and offload bundles before the section table (at
    the end of the file) says where they are: the PT_LOAD segments that are neither
    executable nor writable, where GNU ld (-z separate-code, its default on x86-64 since
    2.31) and lld put .nv_fatbin and .hip_fatbin beside .rodata. A file without such a
    segment (everything read-only in one R+X segment, as in torch's own libraries) is not
    searched at all while it streams: searching its code would cost a third of inflating
    it, and ``memberscan`` reads a GPU section such a file turns out to have in a second,
    exact pass."""
    r = _Reader(buf, "")
    readonly: list[tuple[int, int]] = []
    for row in r._table(r.lay.phdr, r.phoff, r.phentsize, r.phnum, "program header table"):
        if r.lay.is64:
            p_type, p_flags, p_offset, _, _, p_filesz, _, _ = row
        else:
            p_type, p_offset, _, _, p_filesz, _, p_flags, _ = row
        if p_type == _PT_LOAD and not p_flags & 3:  # neither PF_X nor PF_W
            readonly.append((p_offset, p_offset + p_filesz))
    return readonly


def gpu_sections(buf: Buffer | SparseBuffer) -> dict[str, tuple[int, int]] | None:
    """(offset, size) by name of the sections that hold or register GPU code; None when the
    section table or its names cannot be read (not captured, stripped, or lying)."""
    try:
        return _gpu_sections(_Reader(buf, ""))
    except (MissingRange, BinaryError, struct.error, limits.LimitExceeded):
        return None


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
        loads, dynamic = r.segments()
        if dynamic is not None:
            out.append((dynamic.offset, dynamic.offset + dynamic.filesz))
            out += _dynamic_ranges(r, loads, dynamic)
        sections = _sections(r) if r.shoff and r.shnum else []
    except (MissingRange, BinaryError):
        return out
    names = _shstrtab(r, sections)  # section names: which one is .nv_fatbin
    if names is not None:
        out.append((names.offset, names.offset + names.size))
    for sec in sections:
        if sec.type in (_SHT_DYNSYM, _SHT_DYNAMIC):
            out.append((sec.offset, sec.offset + sec.size))
            if sec.type == _SHT_DYNSYM and sec.link < len(sections):
                strtab = sections[sec.link]
                out.append((strtab.offset, strtab.offset + strtab.size))
    return out


def _dynamic_ranges(r: _Reader, loads: list[_Segment], dynamic: _Segment) -> list[tuple[int, int]]:
    """What the PT_DYNAMIC route will read, as far as the captured bytes tell: asked again
    as each range goes by, a stream learns the hash table, then .dynsym's size, in its one
    pass, instead of a fallback pass per table behind a hostile (or moved) layout."""
    out: list[tuple[int, int]] = []
    try:
        values = dict(r.dynamic_entries(dynamic.offset, dynamic.filesz))
    except (MissingRange, BinaryError):
        return out
    where = {tag: r.vaddr_to_offset(loads, val) for tag, val in values.items() if tag != _DT_NEEDED}
    strtab, symtab = where.get(_DT_STRTAB), where.get(_DT_SYMTAB)
    if strtab is not None:
        out.append((strtab, strtab + values.get(_DT_STRSZ, 0)))
    entsize = values.get(_DT_SYMENT, struct.calcsize(r.lay.sym))
    hashed, gnu = where.get(_DT_HASH), where.get(_DT_GNU_HASH)
    try:
        if hashed is not None:
            out.append((hashed, hashed + 8))
            (_, count) = r._unpack(r.lay.endian + "II", hashed, "DT_HASH")
        elif gnu is not None:
            out.append((gnu, gnu + 16))
            nbuckets, _, bloom_size, _ = r._unpack(r.lay.endian + "IIII", gnu, "DT_GNU_HASH")
            buckets_at = gnu + 16 + bloom_size * (8 if r.lay.is64 else 4)
            out.append((buckets_at, buckets_at + 4 * nbuckets + _WINDOW))  # and the chains' start
            count = _gnu_hash_count(r, gnu)
        else:
            return out
    except (MissingRange, BinaryError):
        return out
    if symtab is not None and count > 0 and symtab + count * entsize <= r.size:
        out.append((symtab, symtab + count * entsize))
    return [(lo, min(hi, r.size)) for lo, hi in out if 0 <= lo < min(hi, r.size)]


def _section_route(r: _Reader) -> tuple[_Symbols, list[str]] | None:
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
    names = r.strtab(strtab.offset, strtab.size)
    symbols = r.symbols(dynsym.offset, dynsym.entsize, dynsym.size // dynsym.entsize, names)
    needed: list[str] = []
    dynamic = next((sec for sec in sections if sec.type == _SHT_DYNAMIC), None)
    if dynamic is not None:
        for tag, val in r.dynamic_entries(dynamic.offset, dynamic.size):
            if tag == _DT_NEEDED:
                needed.append(names(val))
    return symbols, needed


def _gnu_hash_count(r: _Reader, offset: int) -> int:
    """Number of .dynsym entries implied by DT_GNU_HASH (the loader's own way to know):
    one past the end of the chain that starts at the highest bucket.

    Buckets and chain are searched a window at a time in C (``max`` over an ``array``,
    ``translate`` + ``find`` for the first word with its low bit set), never word by word
    in Python, and never past what a symbol table could hold in this file: a chain that
    does not end there is malformed (a 256 MB endless chain once took 26 s)."""
    nbuckets, symoffset, bloom_size, _ = r._unpack(r.lay.endian + "IIII", offset, "DT_GNU_HASH")
    word = 8 if r.lay.is64 else 4
    buckets_at = offset + 16 + bloom_size * word
    chains_at = buckets_at + 4 * nbuckets
    if chains_at > r.size:
        raise BinaryError(f"DT_GNU_HASH buckets ({nbuckets}) at {buckets_at:#x} lie outside the file")
    last = 0
    for at in range(buckets_at, chains_at, _WINDOW):
        words = array.array("I", r.buf[at : min(chains_at, at + _WINDOW)])
        if r.lay.endian != _NATIVE:
            words.byteswap()
        last = max(last, max(words, default=0))
    if last < symoffset:
        return symoffset
    # A symbol table cannot have more entries than the file has room for.
    end = min(r.size, chains_at + 4 * (r.size // struct.calcsize(r.lay.sym) - symoffset + 1))
    low = 0 if r.lay.endian == "<" else 3  # the byte holding each word's low bit
    start = chains_at + 4 * (last - symoffset)
    at, span = start, 4096
    while at < end:
        data = r.buf[at : min(end, at + span)]
        found = data[low::4].translate(_LOW_BIT).find(1)
        if found >= 0:
            return last + (at - start) // 4 + found + 1
        at += len(data) - len(data) % 4
        if len(data) < 4:
            break
        span = min(span * 4, _WINDOW)
    raise BinaryError(f"DT_GNU_HASH chain from {start:#x} does not end within the file")


def _dynamic_route(r: _Reader, loads: list[_Segment], dynamic: _Segment | None) -> tuple[_Symbols, list[str]]:
    if dynamic is None:
        return _Symbols([], [], None), []  # a static executable or object: nothing dynamic
    entries = r.dynamic_entries(dynamic.offset, dynamic.filesz)
    values = {tag: val for tag, val in entries}
    if _DT_SYMTAB not in values or _DT_STRTAB not in values:
        raise BinaryError("PT_DYNAMIC has no DT_SYMTAB/DT_STRTAB")

    def offset(tag: int) -> int:
        off = r.vaddr_to_offset(loads, values[tag])
        if off is None:
            raise BinaryError(f"dynamic tag {tag:#x} points outside every loaded segment")
        return off

    names = r.strtab(offset(_DT_STRTAB), values.get(_DT_STRSZ, 0))
    entsize = values.get(_DT_SYMENT, struct.calcsize(r.lay.sym))
    if _DT_HASH in values:
        (_, count) = r._unpack(r.lay.endian + "II", offset(_DT_HASH), "DT_HASH")
    elif _DT_GNU_HASH in values:
        count = _gnu_hash_count(r, offset(_DT_GNU_HASH))
    else:
        raise BinaryError("PT_DYNAMIC has neither DT_HASH nor DT_GNU_HASH to size .dynsym")
    symbols = r.symbols(offset(_DT_SYMTAB), entsize, count, names)
    needed = [names(val) for tag, val in entries if tag == _DT_NEEDED]
    return symbols, needed


def read_elf(
    buf: Buffer | SparseBuffer, path: str, raw_hits: list[RawHit] | None = None, gpu: GpuScan | None = None
) -> SliceFacts:
    """``raw_hits``, ``gpu``: what a streaming scan already found (then ``buf`` may be sparse);
    without ``raw_hits`` the buffer is scanned here, with them and no ``gpu`` scan for no GPU code."""
    r = _Reader(buf, path)
    loads, dynamic = r.segments()
    try:
        routed = _section_route(r)
    except BinaryError:
        routed = None  # the section table lies: fall back to what the loader uses
        if dynamic is None:
            raise
    if routed is None:
        routed = _dynamic_route(r, loads, dynamic)
    (exports, imports, marker_value), needed = routed

    found = None
    if marker_value is not None:
        off = r.vaddr_to_offset(loads, marker_value)
        found = exported_marker(buf, off)
    if gpu is None and raw_hits is None:  # the whole file at hand: its GPU sections exactly
        exact = _gpu_sections(r)
        zones = gpu_zones(buf) if exact is None else gpucode.scanned_sections(exact)
        gpu = gpucode.scan_buffer(buf, zones)  # type: ignore[arg-type]  # bytes or mmap
    code = gpucode.NO_GPU_CODE
    if gpu is not None and (gpu.runs or gpu.problems):  # only then are section names needed
        sections = _gpu_sections(r)
        registered = sections is not None and any(n in sections for n in gpucode.REGISTRATION_SECTIONS)
        code = gpucode.gpu_code(gpu, sections, registered)
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
        gpu=code,
    )
