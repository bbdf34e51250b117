"""What ``ld.so`` reads of an ELF file to load it: its SONAME, the libraries it needs
(DT_NEEDED), where it looks for them (DT_RPATH, DT_RUNPATH, DF_1_NODEFLIB), the symbol
versions it needs of each (DT_VERNEED: ``GLIBCXX_3.4.32`` of ``libstdc++.so.6``) and those it
defines (DT_VERDEF), and its class and machine (a library of another is passed over).

Read through PT_DYNAMIC only, the loader's own route (section headers are for linkers), from
a ``SparseBuffer`` of the bytes fetched so far: ``dynamic_needed_ranges`` names what to fetch next,
``read_dynamic`` reads or raises ``MissingRange``; ``binary.tables.read_ranged`` drives the
two over a file by ``pread``, so a 500 MB cuBLAS costs its headers and dynamic tables.
Every count is checked against the bytes present and held to ``limits`` (``max-needed``;
version entries to ``max-symbols``); a chain of version entries that loops or leaves the
file is a ``BinaryError``. Our own few lines: LIEF (the tests' reference) parses whole files.

Given ``needles``, it also says which of them the dynamic string table holds: the cheapest
bytes that tell whether a library may use another's symbols. A library can use torch only by
naming it, a ``DT_NEEDED`` entry or an undefined dynamic symbol, and the dynamic string table
holds every dynamic symbol's name; one that holds none of the needles cannot import a symbol
whose name contains one, and a reader can pass the file over without its symbol table (a few
MB, 100,000 entries in libtorch_cpu.so). One that holds a needle may (an export or a plain
string may match too) and is read whole. ``doctor`` asks this of an environment's compiled
files before their symbol tables (``doctor.environment``; issue 49: 111 of 114 files, 103 MB,
were read only to learn they do not touch torch).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

from torchwheel import limits
from torchwheel.binary import bytesearch
from torchwheel.binary.common import within
from torchwheel.binary.elflayout import Reader, Segment
from torchwheel.binary.facts import BinaryError
from torchwheel.binary.format import FormatReader
from torchwheel.binary.sparse import SparseBuffer
from torchwheel.binary.strtab import Names
from torchwheel.binary.tables import read_ranged
from torchwheel.frozen import frozen

_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
_DT_FLAGS_1, _DT_VERDEF, _DT_VERDEFNUM = 0x6FFFFFFB, 0x6FFFFFFC, 0x6FFFFFFD
_DT_VERNEED, _DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
_DF_1_NODEFLIB = 0x800
_VER_FLG_BASE, _VER_FLG_WEAK = 0x1, 0x2
_WINDOW = 64 << 10  # fetched at a version table's start: its entries are a few KB


@frozen
class VersionNeed:
    """The versions an object needs of one library (``libstdc++.so.6``: ``GLIBCXX_3.4.32``);
    ``weak``: versions whose absence the loader only warns about."""

    library: str
    versions: tuple[str, ...]
    weak: tuple[str, ...] = ()


@frozen
class DynamicFacts:
    """One ELF object as the loader sees it (module docstring). ``elf_class`` is 32 or 64;
    ``rpath``/``runpath`` are the raw strings (``$ORIGIN/../lib:/opt/x``), "" when absent."""

    machine: int
    elf_class: int
    soname: str
    needed: tuple[str, ...]
    rpath: str
    runpath: str
    nodeflib: bool
    version_needs: tuple[VersionNeed, ...]
    versions_defined: frozenset[str] | None  # None: no DT_VERDEF (then the loader checks no need of it)
    interpreter: str = ""  # PT_INTERP: an executable's loader (``/lib64/ld-linux-x86-64.so.2``)
    holds: frozenset[bytes] = frozenset()  # the caller's needles the dynamic string table holds


_PT_INTERP = 3


def _program(r: Reader) -> tuple[list[Segment], Segment | None, Segment | None]:
    """PT_LOAD segments, PT_DYNAMIC and PT_INTERP (read here: ``Reader.segments`` keeps two kinds)."""
    loads, dynamic = r.segments()
    interp = None
    for row in r.table(r.lay.phdr, r.phoff, r.phentsize, r.phnum, "program header table"):
        p_type, p_offset, p_filesz = (row[0], row[2], row[5]) if r.lay.is64 else (row[0], row[1], row[4])
        if p_type == _PT_INTERP:
            interp = Segment(0, p_offset, p_filesz)
    return loads, dynamic, interp


def _entries(r: Reader, dynamic: Segment) -> list[tuple[int, int]]:
    """The dynamic entries up to DT_NULL, DT_NEEDED counted against ``max-needed``."""
    entsize = struct.calcsize(r.lay.dyn)
    out: list[tuple[int, int]] = []
    needed = 0
    for tag, val in r.table(r.lay.dyn, dynamic.offset, entsize, dynamic.filesz // entsize, "dynamic section"):
        if tag == _DT_NULL:
            break
        if tag == _DT_NEEDED:
            needed += 1
            within(limits.current().max_needed, "DT_NEEDED entries", needed)
        out.append((tag, val))
    return out


def _offset(r: Reader, loads: list[Segment], vaddr: int, what: str) -> int:
    off = r.vaddr_to_offset(loads, vaddr)
    if off is None:
        raise BinaryError(f"{what} points outside every loaded segment")
    return off


def dynamic_needed_ranges(buf: SparseBuffer) -> list[tuple[int, int]]:
    """The byte ranges ``read_dynamic`` reads, as far as the bytes held so far tell."""
    try:
        r = Reader(buf, "")
        loads, dynamic, interp = _program(r)
    except (LookupError, BinaryError, struct.error):
        return []
    out: list[tuple[int, int]] = []
    if interp is not None:
        out.append((interp.offset, interp.offset + interp.filesz))
    if dynamic is None:
        return out
    out.append((dynamic.offset, dynamic.offset + dynamic.filesz))
    try:
        values = dict(_entries(r, dynamic))
    except (LookupError, BinaryError, struct.error):
        return out
    for tag, size in ((_DT_STRTAB, values.get(_DT_STRSZ, 0)), (_DT_VERNEED, _WINDOW), (_DT_VERDEF, _WINDOW)):
        if tag in values and (at := r.vaddr_to_offset(loads, values[tag])) is not None:
            out.append((at, min(r.size, at + size)))
    return [(lo, hi) for lo, hi in out if 0 <= lo < hi]


def dynamic_facts(path: Path, needles: Iterable[bytes] = ()) -> DynamicFacts:
    """The loader's facts of the file at ``path`` (links followed, as the loader follows
    them), and which of ``needles`` its dynamic string table holds; ``BinaryError`` for a
    file that is no readable ELF, ``OSError`` for one that cannot be opened."""
    wanted = tuple(needles)

    def read(fmt: FormatReader, buf: SparseBuffer) -> DynamicFacts:
        if fmt.name != "elf":
            raise BinaryError(f"a {fmt.title} file, not ELF")
        return read_dynamic(buf, wanted)

    return read_ranged(
        path, read, lambda fmt, buf: dynamic_needed_ranges(buf) if fmt.name == "elf" else [], True
    )


def read_dynamic(buf: SparseBuffer, needles: tuple[bytes, ...] = ()) -> DynamicFacts:
    """The loader's facts of one ELF object (``needles``: see the module's docstring);
    ``BinaryError`` for what is no readable ELF, ``MissingRange`` for bytes still to fetch."""
    r = Reader(buf, "")
    loads, dynamic, interp = _program(r)
    interpreter = ""
    if interp is not None and 0 < interp.filesz <= 4096:
        interpreter = (
            bytes(r.buf[interp.offset : interp.offset + interp.filesz])
            .split(b"\0")[0]
            .decode("utf-8", "backslashreplace")
        )
    elf_class = 64 if r.lay.is64 else 32
    if dynamic is None:  # a static executable: it needs nothing
        return DynamicFacts(r.machine, elf_class, "", (), "", "", False, (), None, interpreter)
    entries = _entries(r, dynamic)
    values = dict(entries)
    if _DT_STRTAB not in values:
        raise BinaryError("PT_DYNAMIC has no DT_STRTAB")
    names = r.strtab(_offset(r, loads, values[_DT_STRTAB], "DT_STRTAB"), values.get(_DT_STRSZ, 0))
    holds = _held(names, needles) if needles else frozenset()

    def text(tag: int) -> str:
        return names(values[tag]) if tag in values else ""

    needs: tuple[VersionNeed, ...] = ()
    if _DT_VERNEED in values:
        at = _offset(r, loads, values[_DT_VERNEED], "DT_VERNEED")
        needs = _version_needs(r, at, values.get(_DT_VERNEEDNUM, 0), names)
    defined: frozenset[str] | None = None
    if _DT_VERDEF in values:
        at = _offset(r, loads, values[_DT_VERDEF], "DT_VERDEF")
        defined = _versions_defined(r, at, values.get(_DT_VERDEFNUM, 0), names)
    return DynamicFacts(
        machine=r.machine,
        elf_class=elf_class,
        soname=text(_DT_SONAME),
        needed=tuple(names(v) for tag, v in entries if tag == _DT_NEEDED),
        rpath=text(_DT_RPATH),
        runpath=text(_DT_RUNPATH),
        nodeflib=bool(values.get(_DT_FLAGS_1, 0) & _DF_1_NODEFLIB),
        version_needs=needs,
        versions_defined=defined,
        interpreter=interpreter,
        holds=holds,
    )


def _held(names: Names, needles: tuple[bytes, ...]) -> frozenset[bytes]:
    """The needles the string table holds, each looked for anywhere in it (by ``memmem``):
    in the one object ``Names`` joined it into, else in its bytes copied out once."""
    data, start, stop = names.data, names.start, names.stop
    if isinstance(data, SparseBuffer):
        data, start, stop = data[start:stop], 0, stop - start
    return frozenset(n for n in needles if n and bytesearch.find(data, n, start, stop) >= 0)


def _bounded(count: int, what: str) -> int:
    within(limits.current().max_symbols, what, count)
    return count


def _version_needs(r: Reader, at: int, count: int, names: Names) -> tuple[VersionNeed, ...]:
    """Elf_Verneed entries (u16 version, u16 count, u32 file, u32 aux, u32 next), each with
    its Elf_Vernaux chain (u32 hash, u16 flags, u16 other, u32 name, u32 next): the same
    layout in both ELF classes. Offsets are relative to the entry; each must move forward."""
    e = r.lay.endian
    out: list[VersionNeed] = []
    for _ in range(_bounded(count, "DT_VERNEEDNUM entries")):
        _, cnt, file, aux, nxt = r.unpack(e + "HHIII", at, "Elf_Verneed")
        versions: list[str] = []
        weak: list[str] = []
        here = at + aux
        for _ in range(_bounded(cnt, "Elf_Vernaux entries")):
            _, flags, _, name, step = r.unpack(e + "IHHII", here, "Elf_Vernaux")
            (weak if flags & _VER_FLG_WEAK else versions).append(names(name))
            if step == 0:
                break
            here += step
        out.append(VersionNeed(names(file), tuple(versions), tuple(weak)))
        if nxt == 0:
            break
        at += nxt
    return tuple(out)


def _versions_defined(r: Reader, at: int, count: int, names: Names) -> frozenset[str]:
    """Elf_Verdef entries (u16 version, u16 flags, u16 index, u16 count, u32 hash, u32 aux,
    u32 next); the first Elf_Verdaux (u32 name, u32 next) names the version. The base entry
    (the file's own name) defines no version a need can ask for."""
    e = r.lay.endian
    out: set[str] = set()
    for _ in range(_bounded(count, "DT_VERDEFNUM entries")):
        _, flags, _, cnt, _, aux, nxt = r.unpack(e + "HHHHIII", at, "Elf_Verdef")
        if cnt and not flags & _VER_FLG_BASE:
            (name, _) = r.unpack(e + "II", at + aux, "Elf_Verdaux")
            out.add(names(name))
        if nxt == 0:
            break
        at += nxt
    return frozenset(out)
