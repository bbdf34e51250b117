"""An ELF file's dynamic symbols and DT_NEEDED, by the two routes the loader itself has:
the section headers (what linkers write: ``section_route``), and PT_DYNAMIC (what ``ld.so``
uses; the only route when a tool stripped or corrupted the section headers:
``dynamic_route``, with .dynsym sized by DT_HASH or DT_GNU_HASH), and what the PT_DYNAMIC
route will read of a partial file (``dynamic_ranges``).

Names are decoded only for the symbols kept (``strtab.Names``); a limit crossed inside a
binary (``max-symbols``, ``max-needed``) is a ``BinaryError`` carrying the limit's text.
"""

from __future__ import annotations

import array
import operator
import struct
import sys
from collections.abc import Sequence
from itertools import compress, repeat
from typing import NamedTuple

from torchwheel import limits
from torchwheel.binary import marker_record
from torchwheel.binary.common import within
from torchwheel.binary.elflayout import (
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_NOBITS,
    WINDOW,
    Reader,
    Segment,
    rows,
    sections,
)
from torchwheel.binary.facts import BinaryError, Import
from torchwheel.binary.sparse import MissingRange
from torchwheel.binary.strtab import Names

_DT_NULL, _DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB, _DT_STRSZ, _DT_SYMENT = 0, 1, 4, 5, 6, 10, 11
_DT_GNU_HASH = 0x6FFFFEF5
_DT_USED = frozenset({_DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB, _DT_STRSZ, _DT_SYMENT, _DT_GNU_HASH})
_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE = 1, 2, 10
_STV_DEFAULT, _STV_PROTECTED = 0, 3
_SHN_UNDEF = 0
_VISIBLE = frozenset((_STV_DEFAULT, _STV_PROTECTED))
_EXPORTED_BINDS = frozenset((_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE))
# low bit of a byte -> that bit, so ``translate`` + ``find`` locate the first odd GNU-hash
# chain word in C instead of a Python loop over words
_LOW_BIT = bytes(i & 1 for i in range(256))
_NATIVE = "<" if sys.byteorder == "little" else ">"


class Symbols(NamedTuple):
    """What the rules need from .dynsym, and nothing per symbol beyond it: libtorch_cpu.so
    has 100,000 dynamic symbols and a hostile file 500,000 (700 MB as one object each)."""

    exports: list[str]
    imports: list[Import]
    marker_value: int | None


def _symbols(r: Reader, offset: int, entsize: int, count: int, names: Names) -> Symbols:
    """Imports (undefined) and exports (global/weak/unique with default or protected
    visibility) by name; every other symbol is passed over without decoding its name.

    Column by column, a window of the table at a time: the rows turned into columns by one
    ``zip``, each test a ``map`` of a C function over a column, the kept names decoded in
    one loop (``Names.many``), so that Python runs a few steps per symbol instead of a
    dozen (libtorch_cpu.so: 75,000 symbols, 0.4 s before, about a third of it now). Symbols
    keep their table order, and the first bad name in it is the one reported."""
    spans = r.spans(r.lay.sym, offset, entsize, count, "dynamic symbol table")
    within(limits.current().max_symbols, "dynamic symbols", count)  # honest, yet too many
    exports: list[str] = []
    imports: list[Import] = []
    marker_value: int | None = None
    strided = r.lay.endian == _NATIVE and entsize == struct.calcsize(r.lay.sym)
    for span in spans:
        st_name, st_info, st_other, st_shndx, st_value = _columns(r, span, entsize, strided)
        binds = list(map(operator.rshift, st_info, repeat(4)))
        named = list(map(bool, st_name))
        undefined = list(map(operator.not_, st_shndx))
        exported = map(
            all,
            zip(
                named,
                map(operator.not_, undefined),
                map(_EXPORTED_BINDS.__contains__, binds),
                map(_VISIBLE.__contains__, map(operator.and_, st_other, repeat(3))),
                strict=True,
            ),
        )
        imported = list(map(operator.and_, named, undefined))
        kept = list(map(operator.or_, imported, exported))
        decoded = names.many(compress(st_name, kept))
        is_import = list(compress(imported, kept))
        weak = map(operator.eq, compress(binds, imported), repeat(_STB_WEAK))
        imports += map(Import, compress(decoded, is_import), repeat(None), weak)
        window_exports = list(compress(decoded, map(operator.not_, is_import)))
        if marker_record.SYMBOL in window_exports:  # the last one, as the loader's lookup ends
            values = list(compress(compress(st_value, kept), map(operator.not_, is_import)))
            last = len(window_exports) - 1 - window_exports[::-1].index(marker_record.SYMBOL)
            marker_value = values[last]
        exports += window_exports
    return Symbols(exports, imports, marker_value)


_Column = Sequence[int]


def _columns(
    r: Reader, span: bytes, entsize: int, strided: bool
) -> tuple[_Column, _Column, _Column, _Column, _Column]:
    """st_name, st_info, st_other, st_shndx and st_value of a window of symbols, a column
    each: sliced out of the bytes with a stride (``memoryview.cast``, all in C) when the
    file's byte order is the machine's and its entries have the standard size, else
    gathered from the unpacked rows."""
    if strided:
        view = memoryview(span)
        words, halves = view.cast("I"), view.cast("H")
        if r.lay.is64:  # st_name u32, st_info u8, st_other u8, st_shndx u16, st_value u64, st_size u64
            value = view.cast("Q")[1::3].tolist()
            return words[0::6].tolist(), span[4::24], span[5::24], halves[3::12].tolist(), value
        # st_name u32, st_value u32, st_size u32, st_info u8, st_other u8, st_shndx u16
        return words[0::4].tolist(), span[12::16], span[13::16], halves[7::8].tolist(), words[1::4].tolist()
    fmt = r.lay.sym
    table = rows(fmt, struct.calcsize(fmt), entsize, span)
    if r.lay.is64:
        st_name, st_info, st_other, st_shndx, st_value, _ = zip(*table, strict=True)
    else:
        st_name, st_value, _, st_info, st_other, st_shndx = zip(*table, strict=True)
    return st_name, st_info, st_other, st_shndx, st_value


def dynamic_entries(r: Reader, offset: int, size: int) -> list[tuple[int, int]]:
    """The tags this reader uses, up to DT_NULL: a PT_DYNAMIC of millions of entries
    is walked within its bytes, and only the few that matter are kept."""
    entsize = struct.calcsize(r.lay.dyn)
    entries: list[tuple[int, int]] = []
    needed = 0
    max_needed = limits.current().max_needed
    for tag, val in r.table(r.lay.dyn, offset, entsize, size // entsize, "dynamic section"):
        if tag == _DT_NULL:
            break
        if tag == _DT_NEEDED:
            needed += 1
            within(max_needed, "DT_NEEDED entries", needed)
        if tag in _DT_USED:
            entries.append((tag, val))
    return entries


def dynamic_ranges(r: Reader, loads: list[Segment], dynamic: Segment) -> list[tuple[int, int]]:
    """What the PT_DYNAMIC route will read, as far as the captured bytes tell: asked again
    as each range goes by, a stream learns the hash table, then .dynsym's size, in its one
    pass, instead of a fallback pass per table behind a hostile (or moved) layout."""
    out: list[tuple[int, int]] = []
    try:
        values = dict(dynamic_entries(r, dynamic.offset, dynamic.filesz))
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
            (_, count) = r.unpack(r.lay.endian + "II", hashed, "DT_HASH")
        elif gnu is not None:
            out.append((gnu, gnu + 16))
            nbuckets, _, bloom_size, _ = r.unpack(r.lay.endian + "IIII", gnu, "DT_GNU_HASH")
            buckets_at = gnu + 16 + bloom_size * (8 if r.lay.is64 else 4)
            out.append((buckets_at, buckets_at + 4 * nbuckets + WINDOW))  # and the chains' start
            count = _gnu_hash_count(r, gnu)
        else:
            return out
    except (MissingRange, BinaryError):
        return out
    if symtab is not None and count > 0 and symtab + count * entsize <= r.size:
        out.append((symtab, symtab + count * entsize))
    return [(lo, min(hi, r.size)) for lo, hi in out if 0 <= lo < min(hi, r.size)]


def section_route(r: Reader) -> tuple[Symbols, list[str]] | None:
    """Read .dynsym/.dynstr/.dynamic through the section headers; None when there are none."""
    if r.shoff == 0 or r.shnum == 0:
        return None
    table = sections(r)
    dynsym = next((sec for sec in table if sec.type == SHT_DYNSYM), None)
    if dynsym is None:
        return None
    if dynsym.link >= len(table) or dynsym.entsize == 0:
        raise BinaryError(".dynsym links to a string table that does not exist")
    strtab = table[dynsym.link]
    if strtab.type == SHT_NOBITS:
        raise BinaryError(".dynstr has no bytes in the file")
    names = r.strtab(strtab.offset, strtab.size)
    symbols = _symbols(r, dynsym.offset, dynsym.entsize, dynsym.size // dynsym.entsize, names)
    needed: list[str] = []
    dynamic = next((sec for sec in table if sec.type == SHT_DYNAMIC), None)
    if dynamic is not None:
        for tag, val in dynamic_entries(r, dynamic.offset, dynamic.size):
            if tag == _DT_NEEDED:
                needed.append(names(val))
    return symbols, needed


def _gnu_hash_count(r: Reader, offset: int) -> int:
    """Number of .dynsym entries implied by DT_GNU_HASH (the loader's own way to know):
    one past the end of the chain that starts at the highest bucket.

    Buckets and chain are searched a window at a time in C (``max`` over an ``array``,
    ``translate`` + ``find`` for the first word with its low bit set), never word by word
    in Python, and never past what a symbol table could hold in this file: a chain that
    does not end there is malformed (a 256 MB endless chain once took 26 s)."""
    nbuckets, symoffset, bloom_size, _ = r.unpack(r.lay.endian + "IIII", offset, "DT_GNU_HASH")
    word = 8 if r.lay.is64 else 4
    buckets_at = offset + 16 + bloom_size * word
    chains_at = buckets_at + 4 * nbuckets
    if chains_at > r.size:
        raise BinaryError(f"DT_GNU_HASH buckets ({nbuckets}) at {buckets_at:#x} lie outside the file")
    last = 0
    for at in range(buckets_at, chains_at, WINDOW):
        words = array.array("I", r.buf[at : min(chains_at, at + WINDOW)])
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
        span = min(span * 4, WINDOW)
    raise BinaryError(f"DT_GNU_HASH chain from {start:#x} does not end within the file")


def dynamic_route(r: Reader, loads: list[Segment], dynamic: Segment | None) -> tuple[Symbols, list[str]]:
    """Read .dynsym/.dynstr and DT_NEEDED through PT_DYNAMIC, as ``ld.so`` does."""
    if dynamic is None:
        return Symbols([], [], None), []  # a static executable or object: nothing dynamic
    entries = dynamic_entries(r, dynamic.offset, dynamic.filesz)
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
        (_, count) = r.unpack(r.lay.endian + "II", offset(_DT_HASH), "DT_HASH")
    elif _DT_GNU_HASH in values:
        count = _gnu_hash_count(r, offset(_DT_GNU_HASH))
    else:
        raise BinaryError("PT_DYNAMIC has neither DT_HASH nor DT_GNU_HASH to size .dynsym")
    symbols = _symbols(r, offset(_DT_SYMTAB), entsize, count, names)
    needed = [names(val) for tag, val in entries if tag == _DT_NEEDED]
    return symbols, needed
