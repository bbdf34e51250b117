"""A focused Mach-O reader (thin and universal): exports, imports, dylibs and the marker.

Why not LIEF: LIEF parses whole files, so a 300 MB ``libtorch_cpu.dylib`` had to be held in
memory (and copied) to learn its exports. This reader slices only the byte ranges the facts
need -- the fat header, each slice's load commands, the export trie and the symbol and
string tables -- out of ``bytes``, an ``mmap`` or a ``SparseBuffer`` (what a streaming scan
kept; an uncaptured range raises ``MissingRange`` and the scan fetches it). LIEF stays the
reference: ``tests/test_macho_pe_differential.py`` holds this reader to LIEF's answers
(``tests/lib/lief_reference.py`` reads them).

Hand-written because no field library reads Mach-O from a partial buffer. Every count and
offset read from a header is checked against the bytes present before it is looped over.
"""

from __future__ import annotations

import struct
from itertools import pairwise
from typing import NamedTuple

from torchwheel import limits
from torchwheel.binary import marker_record
from torchwheel.binary.common import Buffer, companions_of, exported_marker, slice_facts
from torchwheel.binary.facts import BinaryError, ExportedMarker, Import, SliceFacts
from torchwheel.binary.format import FormatReader
from torchwheel.binary.marker_record import RawHit
from torchwheel.binary.sparse import MissingRange, SparseBuffer

Buf = Buffer | SparseBuffer

THIN = {b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce"}
FAT = {b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"}
MAX_FAT_ARCHS = 32  # Java class files share 0xCAFEBABE; their "count" is a class version

_LC_SEGMENT, _LC_SEGMENT_64, _LC_SYMTAB, _LC_DYSYMTAB = 0x1, 0x19, 0x2, 0xB
_LC_DYLD_INFO, _LC_DYLD_INFO_ONLY, _LC_DYLD_EXPORTS_TRIE = 0x22, 0x80000022, 0x80000033
# LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LOAD_UPWARD_DYLIB, LC_LAZY_LOAD_DYLIB:
# the dylibs a two-level-namespace library ordinal counts, in load-command order
_DYLIB_CMDS = {0xC, 0x80000018, 0x8000001F, 0x80000023, 0x20}
_MH_TWOLEVEL = 0x80
_N_STAB, _N_TYPE, _N_EXT, _N_PEXT, _N_SECT = 0xE0, 0x0E, 0x01, 0x10, 0x0E
_N_WEAK_REF = 0x40  # n_desc of an undefined symbol the loader may leave null (weak_import)
_EXPORT_REEXPORT, _EXPORT_STUB_AND_RESOLVER = 0x08, 0x10
_MARKER_RAW = b"_" + marker_record.SYMBOL.encode()
_NAME_WINDOW = 4096  # string-table bytes read past the last external name's start

# the spellings the readers have always reported (LIEF's enum names, lowered and aliased)
_CPU = {
    0x01000007: "x86_64",
    0x0100000C: "arm64",
    7: "i386",
    12: "arm",
    18: "ppc",
    0x01000012: "ppc64",
    0x0200000C: "arm64_32",
}


class _Segment(NamedTuple):
    name: bytes
    vmaddr: int
    vmsize: int
    fileoff: int


class _Commands(NamedTuple):
    """What one slice's load commands say; offsets are relative to the slice."""

    cpu: int
    flags: int
    segments: list[_Segment]
    dylibs: list[str]
    symtab: tuple[int, int, int, int] | None  # symoff, nsyms, stroff, strsize
    externals: tuple[int, int] | None  # LC_DYSYMTAB: first and end index of the external nlist
    trie: tuple[int, int] | None  # offset, size
    is64: bool
    endian: str


def _get(buf: Buf, offset: int, size: int, end: int, what: str) -> bytes:
    """``size`` bytes at ``offset``, refused when they reach past ``end`` (the slice's end)."""
    if offset < 0 or size < 0 or offset + size > end:
        raise BinaryError(f"{what} at {offset:#x} (+{size:#x}) lies outside the file")
    limits.current().max_binary_tables.check(f"bytes of the {what}", size)  # also when read whole
    return bytes(buf[offset : offset + size])


def slices(buf: Buf) -> list[tuple[int, int]]:
    """(start, end) of each architecture: one for a thin file, validated ranges for a fat one."""
    size = len(buf)
    magic = _get(buf, 0, 4, size, "Mach-O magic")
    if magic in THIN:
        return [(0, size)]
    if magic not in FAT:
        raise BinaryError("not a Mach-O file")
    (count,) = struct.unpack(">I", _get(buf, 4, 4, size, "universal header"))
    if count == 0 or count > MAX_FAT_ARCHS:
        raise BinaryError(f"universal header lists {count} slices (a Java class file?)")
    fmt, step = (">iiQQII", 32) if magic == b"\xca\xfe\xba\xbf" else (">iiIII", 20)
    if 8 + count * step > size:
        raise BinaryError("universal header is truncated")
    table = _get(buf, 8, count * step, size, "universal header")
    out: list[tuple[int, int]] = []
    for i in range(count):
        _, _, offset, length, *_ = struct.unpack_from(fmt, table, i * step)
        if offset + length > size or length == 0 or offset < 8 + count * step:
            raise BinaryError(f"slice {i} (offset {offset:#x}, size {length:#x}) lies outside the file")
        out.append((offset, offset + length))
    for (_, end_a), (start_b, _) in pairwise(sorted(out)):
        if start_b < end_a:
            raise BinaryError(f"universal slices overlap (at {start_b:#x})")
    return out


def _commands(buf: Buf, base: int, end: int) -> _Commands:
    magic = _get(buf, base, 4, end, "Mach-O header")
    if magic not in THIN:
        raise BinaryError(f"slice at {base:#x} is not a Mach-O image")
    endian = "<" if magic[0] in (0xCF, 0xCE) else ">"
    is64 = magic in (b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf")
    hsize = 32 if is64 else 28
    cpu, _, _, ncmds, sizeofcmds, flags = struct.unpack(
        endian + "iiIIII", _get(buf, base + 4, 24, end, "Mach-O header")
    )
    if ncmds * 8 > sizeofcmds or base + hsize + sizeofcmds > end:
        raise BinaryError(f"{ncmds} load commands in {sizeofcmds:#x} bytes do not fit the file")
    limits.current().max_load_commands.check("load commands", ncmds)
    block = _get(buf, base + hsize, sizeofcmds, end, "load commands")
    segments: list[_Segment] = []
    dylibs: list[str] = []
    symtab: tuple[int, int, int, int] | None = None
    trie: tuple[int, int] | None = None
    externals: tuple[int, int] | None = None
    at = 0
    for _ in range(ncmds):  # bounded by ncmds, and every step advances within the block
        if at + 8 > sizeofcmds:
            raise BinaryError("load commands run past sizeofcmds")
        cmd, cmdsize = struct.unpack_from(endian + "II", block, at)
        if cmdsize < 8 or at + cmdsize > sizeofcmds:
            raise BinaryError(f"load command {cmd:#x} has a bad size {cmdsize:#x}")
        body = block[at : at + cmdsize]
        if cmd == _LC_SEGMENT_64 and cmdsize >= 72:
            name, vmaddr, vmsize, fileoff = struct.unpack_from(endian + "16sQQQ", body, 8)
            segments.append(_Segment(name.rstrip(b"\0"), vmaddr, vmsize, fileoff))
        elif cmd == _LC_SEGMENT and cmdsize >= 56:
            name, vmaddr, vmsize, fileoff = struct.unpack_from(endian + "16sIII", body, 8)
            segments.append(_Segment(name.rstrip(b"\0"), vmaddr, vmsize, fileoff))
        elif cmd in _DYLIB_CMDS and cmdsize >= 24:
            (name_at,) = struct.unpack_from(endian + "I", body, 8)
            raw = body[name_at:] if 24 <= name_at < cmdsize else b""
            dylibs.append(raw.split(b"\0", 1)[0].decode("utf-8", "backslashreplace"))
        elif cmd == _LC_SYMTAB and cmdsize >= 24:
            symtab = struct.unpack_from(endian + "IIII", body, 8)
        elif cmd == _LC_DYSYMTAB and cmdsize >= 32:
            _, _, iext, next_, iundef, nundef = struct.unpack_from(endian + "6I", body, 8)
            externals = (min(iext, iundef), max(iext + next_, iundef + nundef))
        elif cmd in (_LC_DYLD_INFO, _LC_DYLD_INFO_ONLY) and cmdsize >= 48:
            off, size = struct.unpack_from(endian + "II", body, 40)
            trie = (off, size) if size else trie
        elif cmd == _LC_DYLD_EXPORTS_TRIE and cmdsize >= 16:
            trie = struct.unpack_from(endian + "II", body, 8)
        at += cmdsize
    return _Commands(cpu, flags, segments, dylibs, symtab, externals, trie, is64, endian)


def _uleb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise BinaryError("export trie: number runs past the end")
        byte = data[at]
        at += 1
        if shift < 64:  # more bytes than a 64-bit value needs are read and ignored
            value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _trie(data: bytes) -> list[tuple[bytes, int, int]]:
    """(name, flags, address) of every export. Iterative, each node visited once, names and
    their count bounded: a hostile trie (cycles, endless chains) ends in ``BinaryError``."""
    out: list[tuple[bytes, int, int]] = []
    max_symbols = limits.current().max_symbols
    longest = limits.current().max_symbol_name_bytes
    seen: set[int] = set()
    stack: list[tuple[int, bytes]] = [(0, b"")] if data else []
    while stack:
        node, prefix = stack.pop()
        if node in seen:
            raise BinaryError(f"export trie: node {node:#x} is reached twice")
        seen.add(node)
        terminal, at = _uleb(data, node)
        children_at = at + terminal
        if terminal:
            flags, at = _uleb(data, at)
            address = 0
            if not flags & _EXPORT_REEXPORT:
                address, at = _uleb(data, at)
            out.append((prefix, flags, address))
            max_symbols.check("exported symbols", len(out))
        if children_at >= len(data):
            raise BinaryError("export trie: node runs past the end")
        count = data[children_at]
        at = children_at + 1
        for _ in range(count):
            stop = data.find(b"\0", at)
            if stop < 0:
                raise BinaryError("export trie: edge label without an end")
            name = prefix + data[at:stop]
            if len(name) > longest.value:
                raise BinaryError(
                    f"export trie: a symbol name is longer than {longest.value / 1024:g} KiB "
                    f"({longest.name}: raise it with {longest.env})"
                )
            child, at = _uleb(data, stop + 1)
            if child >= len(data):
                raise BinaryError(f"export trie: child {child:#x} lies outside the trie")
            stack.append((child, name))
    return out


def _vm_to_offset(segments: list[_Segment], va: int) -> int | None:
    for seg in segments:
        if seg.vmaddr <= va < seg.vmaddr + seg.vmsize:
            return seg.fileoff + (va - seg.vmaddr)
    return None


def _imagebase(c: _Commands) -> int:
    return next((s.vmaddr for s in c.segments if s.name == b"__TEXT"), 0)


def _strip(name: str) -> str:
    return name[1:] if name.startswith("_") else name  # C names carry an extra "_"


def _nlist_range(c: _Commands, slice_size: int) -> tuple[int, int]:
    """Slice-relative range of the nlist entries that can be external: with LC_DYSYMTAB only
    the defined-external and undefined ones (libtorch_cpu.dylib: 37,000 of 427,000 entries)."""
    assert c.symtab is not None
    symoff, nsyms, _, _ = c.symtab
    entsize = 16 if c.is64 else 12
    limits.current().max_symbols.check("symbols", nsyms)
    if symoff + nsyms * entsize > slice_size:
        raise BinaryError(f"LC_SYMTAB's {nsyms} symbols at {symoff:#x} lie outside the file")
    first, end = (0, nsyms) if c.externals is None else c.externals
    if end > nsyms:
        raise BinaryError(f"LC_DYSYMTAB names symbols up to {end}, LC_SYMTAB has {nsyms}")
    return symoff + first * entsize, symoff + end * entsize


def _string_prefix(strx: list[int], strsize: int) -> int:
    """How much of the string table the external names need: locals (54 of libtorch_cpu's
    56 MB of strings) come after them and are never read."""
    return min(strsize, max(strx, default=0) + _NAME_WINDOW)


def _symbols(buf: Buf, base: int, end: int, c: _Commands) -> list[tuple[bytes, int, int]]:
    """(raw name, n_type, n_desc) of the external nlist entries (the only ones that matter)."""
    if c.symtab is None:
        return []
    _, _, stroff, strsize = c.symtab
    lo, hi = _nlist_range(c, end - base)
    table = _get(buf, base + lo, hi - lo, end, "symbol table")
    rows = [
        row
        for row in struct.iter_unpack(c.endian + ("IBBHQ" if c.is64 else "IBBHI"), table)
        if not row[1] & _N_STAB and row[1] & _N_EXT and row[0] != 0
    ]
    if any(row[0] >= strsize for row in rows):
        raise BinaryError("a symbol name offset lies outside the string table")
    size = _string_prefix([row[0] for row in rows], strsize)
    strings = _get(buf, base + stroff, size, end, "string table")
    out: list[tuple[bytes, int, int]] = []
    for strx, n_type, _, n_desc, _ in rows:
        stop = strings.find(b"\0", strx)
        if stop < 0 and size < strsize:  # a name longer than the window: read up to its end
            size = strsize
            strings = _get(buf, base + stroff, size, end, "string table")
            stop = strings.find(b"\0", strx)
        out.append((strings[strx : size if stop < 0 else stop], n_type, n_desc))
    return out


def _marker_offset(c: _Commands, trie: list[tuple[bytes, int, int]], base: int, end: int) -> int | None:
    """File offset of the exported marker's bytes (None: it points at no bytes of the slice)."""
    for raw, flags, address in trie:
        if raw == _MARKER_RAW and not flags & (_EXPORT_REEXPORT | _EXPORT_STUB_AND_RESOLVER):
            off = _vm_to_offset(c.segments, _imagebase(c) + address)  # trie address: image-relative
            return None if off is None or base + off >= end else base + off
    return None


def _slice(buf: Buf, base: int, end: int, raw_hits: list[RawHit] | None) -> SliceFacts:
    c = _commands(buf, base, end)
    exports: list[str] = []
    exported_raw: set[bytes] = set()
    found: ExportedMarker | None = None
    if c.trie is not None:
        trie = _trie(_get(buf, base + c.trie[0], c.trie[1], end, "export trie"))
        for raw, _, _ in trie:
            exports.append(_strip(raw.decode("utf-8", "backslashreplace")))
            exported_raw.add(raw)
        if _MARKER_RAW in exported_raw:
            found = exported_marker(buf, _marker_offset(c, trie, base, end))
    imports: list[Import] = []
    seen: set[bytes] = set()
    for raw_name, n_type, n_desc in _symbols(buf, base, end, c):
        if (n_type & _N_TYPE) == _N_SECT:
            if c.trie is None and not n_type & _N_PEXT:  # no trie (old linkers): nlist says
                exports.append(_strip(raw_name.decode("utf-8", "backslashreplace")))
            continue
        if (n_type & _N_TYPE) != 0 or raw_name in seen or raw_name in exported_raw:
            continue
        seen.add(raw_name)
        name = _strip(raw_name.decode("utf-8", "backslashreplace"))
        if name == "dyld_stub_binder":
            continue
        library = None
        ordinal = (n_desc >> 8) & 0xFF  # GET_LIBRARY_ORDINAL; 0 self, 0xFE/0xFF dynamic lookup
        if c.flags & _MH_TWOLEVEL and 1 <= ordinal <= len(c.dylibs):
            library = c.dylibs[ordinal - 1]
        imports.append(Import(name, library, bool(n_desc & _N_WEAK_REF)))
    if found is None and c.trie is None and marker_record.SYMBOL in exports:
        found = ExportedMarker(None, None, "no export trie to locate the marker")
    hits = None if raw_hits is None else [h for h in raw_hits if base <= h.offset < end]
    return slice_facts(
        buf,
        arch=_CPU.get(c.cpu, f"macho-cpu-{c.cpu & 0xFFFFFFFF:#x}"),
        exports=exports,
        imports=imports,
        needed=c.dylibs,
        exported=found,
        companions=companions_of(exports),
        file_range=(base, end),
        raw_hits=hits,
    )


def read_macho(buf: Buf, path: str, raw_hits: list[RawHit] | None = None) -> list[SliceFacts]:
    """Every slice; ``raw_hits`` are the records a streaming scan found (``buf`` may be sparse)."""
    return [_slice(buf, base, end, raw_hits) for base, end in slices(buf)]


def needed_ranges(buf: SparseBuffer) -> list[tuple[int, int]]:
    """The ranges ``read_macho`` will read, as far as the bytes captured so far tell: the fat
    table, each slice's header and load commands, then its trie, symbol and string tables,
    then the marker's bytes. What cannot be known yet is left out; ``MissingRange`` on the
    final read catches anything missed."""
    try:
        spans = slices(buf)
    except MissingRange as missing:
        return [(missing.start, missing.stop)]
    except BinaryError:
        return []
    out: list[tuple[int, int]] = []
    for base, end in spans:
        try:
            c = _commands(buf, base, end)
        except MissingRange as missing:
            out.append((missing.start, missing.stop))
            continue
        except (BinaryError, limits.LimitExceeded):
            continue
        if c.symtab is not None:
            try:
                lo, hi = _nlist_range(c, end - base)
                out.append((base + lo, base + hi))
                _, _, stroff, strsize = c.symtab
                rows = _get(buf, base + lo, hi - lo, end, "symbol table")
                strx = [
                    row[0] for row in struct.iter_unpack(c.endian + ("IBBHQ" if c.is64 else "IBBHI"), rows)
                ]
                out.append((base + stroff, base + stroff + _string_prefix(strx, strsize)))
            except (MissingRange, BinaryError, limits.LimitExceeded):
                pass
        if c.trie is not None:
            out.append((base + c.trie[0], base + c.trie[0] + c.trie[1]))
            try:
                trie = _trie(_get(buf, base + c.trie[0], c.trie[1], end, "export trie"))
            except (MissingRange, BinaryError, limits.LimitExceeded):
                continue
            off = _marker_offset(c, trie, base, end)
            if off is not None:
                out.append((off, off + marker_record.MAX_RECORD))
    return [(lo, min(hi, len(buf))) for lo, hi in out if 0 <= lo < hi]


READER = FormatReader(
    name="macho",
    title="Mach-O",
    magics=frozenset(THIN | FAT),
    slices=lambda buf, path, raw_hits, gpu: tuple(read_macho(buf, path, raw_hits)),  # no GPU code on macOS
    ranges=needed_ranges,
)
