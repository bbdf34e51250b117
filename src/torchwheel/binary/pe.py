"""A focused PE reader: export names, imported DLLs and symbols (also delay-load), the marker.

Why not LIEF: LIEF parses whole files, and a Windows CUDA ``.pyd`` or ``torch_cpu.dll`` is
300 MB to 1 GB; holding it to read its export directory broke the memory budget. This reader
slices only the headers, the section table, the export directory with its tables and names,
the import descriptors with their thunks and hint/name entries, and the CLR runtime header
of a .NET assembly (with its metadata signature), out of ``bytes``, an
``mmap`` or a ``SparseBuffer`` (an uncaptured range raises ``MissingRange``, which the
streaming scan answers). ``tests/test_macho_pe_differential.py`` holds it to LIEF's answers.

Hand-written because no field library reads PE from a partial buffer (pefile wants the
whole file too). Every count and RVA read from the file is checked against the bytes
present before anything is looped over.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from torchwheel import limits
from torchwheel.binary import gpucode, marker_record
from torchwheel.binary.common import Buffer, coalesce, companions_of, exported_marker, slice_facts
from torchwheel.binary.facts import BinaryError, ClrHeader, ExportedMarker, Import, SliceFacts
from torchwheel.binary.format import FormatReader
from torchwheel.binary.marker_record import RawHit
from torchwheel.binary.sparse import MissingRange, SparseBuffer

Buf = Buffer | SparseBuffer

_DIR_EXPORT, _DIR_IMPORT, _DIR_DELAY, _DIR_CLR = 0, 1, 13, 14
_CLR_HEADER = 72  # sizeof(IMAGE_COR20_HEADER)
_CLR_METADATA_SIGNATURE = b"BSJB"  # ECMA-335 II.24.2.1, the metadata root's first four bytes
_NAME_WINDOWS = (256, 4096, 32768)  # a name is looked for in growing windows, never past 32 KiB
_THUNK_BLOCK = 512

# one spelling per architecture across formats, so rules compare slices and tags alike
_MACHINE = {0x8664: "x86_64", 0x14C: "x86", 0xAA64: "arm64", 0x1C4: "arm"}


class _Section(NamedTuple):
    va: int
    vsize: int
    raw_size: int
    raw_at: int


class _Headers(NamedTuple):
    machine: int
    pe32plus: bool
    image_base: int
    size_of_headers: int
    dirs: list[tuple[int, int]]  # (rva, size) per data directory
    sections: list[_Section]


def _get(buf: Buf, offset: int, size: int, what: str) -> bytes:
    if offset < 0 or size < 0 or offset + size > len(buf):
        raise BinaryError(f"{what} at {offset:#x} (+{size:#x}) lies outside the file")
    limits.current().max_binary_tables.check(f"bytes of the {what}", size)  # also when read whole
    return bytes(buf[offset : offset + size])


def _headers(buf: Buf) -> _Headers:
    size = len(buf)
    if size < 0x40:
        raise BinaryError("truncated DOS header")
    (pe_at,) = struct.unpack("<I", _get(buf, 0x3C, 4, "DOS header"))
    if pe_at + 24 > size or _get(buf, pe_at, 4, "PE signature") != b"PE\0\0":
        raise BinaryError("no PE signature where the DOS header points (a DOS program or truncated)")
    machine, nsections, _, _, _, opt_size, _ = struct.unpack(
        "<HHIIIHH", _get(buf, pe_at + 4, 20, "COFF header")
    )
    opt_at = pe_at + 24
    opt = _get(buf, opt_at, opt_size, "optional header")
    if len(opt) < 2 or struct.unpack_from("<H", opt)[0] not in (0x10B, 0x20B):
        raise BinaryError("optional header is neither PE32 nor PE32+")
    plus = struct.unpack_from("<H", opt)[0] == 0x20B
    base_fmt, base_at, count_at = ("<Q", 24, 108) if plus else ("<I", 28, 92)
    if len(opt) < count_at + 4:
        raise BinaryError("optional header is truncated")
    (image_base,) = struct.unpack_from(base_fmt, opt, base_at)
    (size_of_headers,) = struct.unpack_from("<I", opt, 60)
    (ndirs,) = struct.unpack_from("<I", opt, count_at)
    ndirs = min(ndirs, 16, (len(opt) - count_at - 4) // 8)  # the spec's 16; no more than present
    dirs = [struct.unpack_from("<II", opt, count_at + 4 + 8 * i) for i in range(ndirs)]
    table = _get(buf, opt_at + opt_size, 40 * nsections, "section table")  # nsections <= 65535
    sections = [
        _Section(va, vsize, raw_size, raw_at)
        for _, vsize, va, raw_size, raw_at, *_ in struct.iter_unpack("<8sIIIIIIHHI", table)
    ]
    return _Headers(machine, plus, image_base, size_of_headers, [(r, s) for r, s in dirs], sections)


def _offset(h: _Headers, rva: int) -> int | None:
    """File offset of an RVA: through the section that maps it, or the headers themselves."""
    for sec in h.sections:
        if sec.va <= rva < sec.va + max(sec.vsize, sec.raw_size):
            if rva - sec.va >= sec.raw_size:
                return None  # zero-filled at load time: no bytes in the file
            return sec.raw_at + (rva - sec.va)
    return rva if rva < h.size_of_headers else None


def _at(h: _Headers, rva: int, what: str) -> int:
    off = _offset(h, rva)
    if off is None:
        raise BinaryError(f"{what} (RVA {rva:#x}) lies in no section of the file")
    return off


def _extent(h: _Headers, rva: int, size: int) -> tuple[int, int]:
    """File offset and length of a data directory, clipped to its section's file bytes."""
    off = _at(h, rva, "data directory")
    for sec in h.sections:
        if sec.va <= rva < sec.va + max(sec.vsize, sec.raw_size):
            return off, max(0, min(size, sec.raw_at + sec.raw_size - off))
    return off, max(0, min(size, h.size_of_headers - off))


def _cstr(buf: Buf, h: _Headers, rva: int, what: str) -> str:
    off = _at(h, rva, what)
    data = b""
    at = off
    for window in _NAME_WINDOWS:  # each step reads only the bytes past the previous one
        stop_at = min(off + window, len(buf))
        part = _get(buf, at, stop_at - at, what)
        end = part.find(b"\0")
        if end >= 0:
            return (data + part[:end]).decode("utf-8", "backslashreplace")
        data, at = data + part, stop_at
        if stop_at == len(buf):
            break
    raise BinaryError(f"{what} at RVA {rva:#x} has no end")


def _name(buf: Buf, h: _Headers, rva: int, what: str, missing: list[tuple[int, int]] | None) -> str:
    """``_cstr``; when planning (``missing`` given), an uncaptured name is noted, not raised,
    so one question names every range a table points at."""
    if missing is None:
        return _cstr(buf, h, rva, what)
    try:
        return _cstr(buf, h, rva, what)
    except MissingRange as gap:
        missing.append((gap.start, max(gap.stop, gap.start + _NAME_WINDOWS[0])))
        return ""


def _exports(
    buf: Buf, h: _Headers, missing: list[tuple[int, int]] | None = None
) -> tuple[list[str], int | None, bool]:
    """(names, RVA of the marker's bytes or None, whether the marker is exported)."""
    if len(h.dirs) <= _DIR_EXPORT or h.dirs[_DIR_EXPORT][0] == 0:
        return [], None, False
    dir_rva, dir_size = h.dirs[_DIR_EXPORT]
    fields = struct.unpack(
        "<IIHHIIIIIII", _get(buf, _at(h, dir_rva, "export directory"), 40, "export directory")
    )
    nfuncs, nnames, funcs_rva, names_rva, ords_rva = fields[6:11]
    if nnames == 0:
        return [], None, False
    limits.current().max_symbols.check("exported names", nnames)
    names_at = _get(buf, _at(h, names_rva, "export name table"), 4 * nnames, "export name table")
    ords_at = _get(buf, _at(h, ords_rva, "export ordinal table"), 2 * nnames, "export ordinal table")
    limits.current().max_symbols.check("exported functions", nfuncs)
    funcs = _get(buf, _at(h, funcs_rva, "export address table"), 4 * nfuncs, "export address table")
    names: list[str] = []
    marker_rva: int | None = None
    exported = False
    # The names lie inside the directory's extent in linker output: read it once and find
    # each name there (torch_cpu.dll: 60,000 names); any name elsewhere is read by itself.
    block_at, block_size = _extent(h, dir_rva, dir_size)
    block = _get(buf, block_at, block_size, "export directory")
    if missing is not None:  # planning: only the names outside the directory need reading
        for (name_rva,) in struct.iter_unpack("<I", names_at):
            if not 0 <= name_rva - dir_rva < block_size:
                _name(buf, h, name_rva, "export name", missing)
        return [], None, False
    for (name_rva,), (index,) in zip(
        struct.iter_unpack("<I", names_at), struct.iter_unpack("<H", ords_at), strict=True
    ):
        if index >= nfuncs:
            continue  # a name for no function: the loader cannot bind it either
        inner = name_rva - dir_rva
        stop = block.find(b"\0", inner) if 0 <= inner < block_size else -1
        if stop >= 0:
            name = block[inner:stop].decode("utf-8", "backslashreplace")
        else:
            name = _name(buf, h, name_rva, "export name", missing)
        if not name:
            continue
        names.append(name)
        if name == marker_record.SYMBOL:
            (rva,) = struct.unpack_from("<I", funcs, 4 * index)
            if not dir_rva <= rva < dir_rva + dir_size:  # inside the directory: a forwarder
                exported, marker_rva = True, rva
    return names, marker_rva, exported


def _thunks(buf: Buf, h: _Headers, rva: int, what: str) -> Iterator[int]:
    """The thunk values of one import lookup table, up to its terminating zero."""
    width, fmt = (8, "<Q") if h.pe32plus else (4, "<I")
    off = _at(h, rva, what)
    cap = limits.current().max_symbols
    count = 0
    while True:  # bounded: every block lies further into the file, and the count is capped
        n = min(_THUNK_BLOCK, (len(buf) - off) // width)
        if n <= 0:
            raise BinaryError(f"{what} at RVA {rva:#x} runs past the end of the file")
        for (value,) in struct.iter_unpack(fmt, _get(buf, off, n * width, what)):
            if value == 0:
                return
            count += 1
            cap.check("imported symbols of one DLL", count)
            yield value
        off += n * width


def _imports(
    buf: Buf, h: _Headers, index: int, delay: bool, missing: list[tuple[int, int]] | None = None
) -> list[tuple[str, list[str]]]:
    """(DLL, symbols) per descriptor of the import (or delay-load import) directory."""
    if len(h.dirs) <= index or h.dirs[index][0] == 0:
        return []
    dir_rva = h.dirs[index][0]
    step = 32 if delay else 20
    off = _at(h, dir_rva, "import directory")
    ordinal_bit = 1 << (63 if h.pe32plus else 31)
    out: list[tuple[str, list[str]]] = []
    for i in range(len(buf) // step):  # bounded by the bytes present
        row = _get(buf, off + i * step, step, "import descriptor")
        if delay:
            attrs, name_rva, _, iat_rva, int_rva, *_ = struct.unpack("<8I", row)
            if name_rva == 0:
                break
            rebase = 0 if attrs & 1 else h.image_base  # version 1 (attrs bit 0 clear) holds VAs
            name_rva, lookup = name_rva - rebase, (int_rva or iat_rva) - rebase
            mask = ~0 if attrs & 1 else 0xFFFFFFFF
        else:
            oft, _, _, name_rva, ft = struct.unpack("<5I", row)
            if name_rva == 0 and ft == 0:
                break
            lookup, rebase, mask = oft or ft, 0, ~0
        dll = _name(buf, h, name_rva, "imported DLL name", missing)
        symbols: list[str] = []
        try:
            for value in _thunks(buf, h, lookup, f"import table of {dll}"):
                if value & ordinal_bit:
                    symbols.append(f"#{value & 0xFFFF}")
                else:
                    hint_rva = ((value & mask) - rebase) & 0x7FFFFFFF
                    symbols.append(_name(buf, h, hint_rva + 2, f"imported name from {dll}", missing))
        except MissingRange as gap:
            if missing is None:
                raise
            missing.append((gap.start, gap.start + _THUNK_BLOCK * 8))
        out.append((dll, symbols))
    return out


def _clr(buf: Buf, h: _Headers) -> ClrHeader | None:
    """The CLR runtime header (IMAGE_COR20_HEADER), when data directory 14 names one.

    A directory that is present but too small, a header whose ``cb`` is short, or metadata
    that is not where the header points (no ``BSJB`` root) is a file no CLR loads and whose
    code is neither native nor managed as far as anyone can tell: an error, not a guess."""
    if len(h.dirs) <= _DIR_CLR or h.dirs[_DIR_CLR][0] == 0:
        return None
    rva, size = h.dirs[_DIR_CLR]
    if size < _CLR_HEADER:
        raise BinaryError(
            f"CLR runtime header is {size} bytes, fewer than the {_CLR_HEADER} of IMAGE_COR20_HEADER"
        )
    raw = _get(buf, _at(h, rva, "CLR runtime header"), _CLR_HEADER, "CLR runtime header")
    cb, _, _, md_rva, md_size, flags = struct.unpack_from("<IHHIII", raw)  # runtime version: 2.5 always
    if cb < _CLR_HEADER:
        raise BinaryError(
            f"CLR runtime header says it is {cb} bytes, fewer than the {_CLR_HEADER} it must be"
        )
    if md_rva == 0 or md_size < 16:  # the smallest root: signature, versions, reserved, length
        raise BinaryError("CLR runtime header points at no metadata")
    signature = _get(buf, _at(h, md_rva, "CLR metadata"), 4, "CLR metadata")
    if signature != _CLR_METADATA_SIGNATURE:
        raise BinaryError(f"CLR metadata at RVA {md_rva:#x} lacks the BSJB signature")
    return ClrHeader(flags, h.pe32plus)


def _section_names(buf: Buf, h: _Headers) -> list[str]:
    """The 8-byte names of the section table (``_headers`` keeps only the numbers)."""
    pe_at = struct.unpack("<I", _get(buf, 0x3C, 4, "DOS header"))[0]
    (opt_size,) = struct.unpack("<H", _get(buf, pe_at + 20, 2, "COFF header"))
    table = _get(buf, pe_at + 24 + opt_size, 40 * len(h.sections), "section table")
    return [table[i : i + 8].rstrip(b"\0").decode("latin-1") for i in range(0, len(table), 40)]


def gpu_sections(buf: Buf) -> dict[str, tuple[int, int]]:
    """(file offset, size) of the sections that hold or register GPU code, by name: PE's
    section table comes first, so a stream knows them before their bytes go by."""
    h = _headers(buf)
    return {
        name: (sec.raw_at, min(sec.raw_size, max(0, len(buf) - sec.raw_at)))
        for name, sec in zip(_section_names(buf, h), h.sections, strict=True)
        if name in gpucode.SECTION_NAMES
    }


def gpu_zones(buf: Buf) -> list[tuple[int, int]]:
    """Where GPU code can lie: exactly its sections (``gpu_sections``)."""
    return gpucode.scanned_sections(gpu_sections(buf))


def read_pe(
    buf: Buf, path: str, raw_hits: list[RawHit] | None = None, gpu: gpucode.GpuScan | None = None
) -> SliceFacts:
    """``raw_hits``, ``gpu``: what a streaming scan already found (then ``buf`` may be sparse);
    without ``raw_hits`` the buffer is scanned here, with them and no ``gpu`` scan for no GPU code."""
    h = _headers(buf)
    clr = _clr(buf, h)
    exports, marker_rva, has_marker = _exports(buf, h)
    found: ExportedMarker | None = None
    if has_marker and marker_rva is not None:
        off = _offset(h, marker_rva)  # export addresses are RVAs
        found = exported_marker(buf, off if off is not None and off < len(buf) else None)
    imports: list[Import] = []  # never weak: PE has no weak imports, every entry must resolve
    needed: list[str] = []
    for index, delay in ((_DIR_IMPORT, False), (_DIR_DELAY, True)):
        for dll, symbols in _imports(buf, h, index, delay):
            needed.append(dll)
            imports.extend(Import(name, dll) for name in symbols)
    code = gpucode.NO_GPU_CODE
    sections = gpu_sections(buf)
    if gpu is None and raw_hits is None:
        gpu = gpucode.scan_buffer(buf, gpu_zones(buf))  # type: ignore[arg-type]  # bytes or mmap
    if gpu is not None:
        registered = any(n in sections for n in gpucode.REGISTRATION_SECTIONS)
        code = gpucode.gpu_code(gpu, sections, registered)
    return slice_facts(
        buf,
        arch=_MACHINE.get(h.machine, f"pe-machine-{h.machine:#x}"),
        exports=exports,
        imports=imports,
        needed=needed,
        exported=found,
        companions=companions_of(exports),
        file_range=(0, len(buf)),
        raw_hits=raw_hits,
        gpu=code,
        clr=clr,
    )


def needed_ranges(buf: SparseBuffer) -> list[tuple[int, int]]:
    """The ranges ``read_pe`` will read, as far as the bytes captured so far tell: headers
    and section table, the export directory's whole extent (its tables and names live in
    it), the import descriptors, the CLR runtime header; then, once those went by, the thunk
    tables and the names they point at, and the CLR metadata's signature. ``MissingRange`` on the final read catches anything missed."""
    out: list[tuple[int, int]] = []
    try:
        h = _headers(buf)
    except MissingRange as missing:
        return [(missing.start, missing.stop)]
    except BinaryError:
        return []
    for index in (_DIR_EXPORT, _DIR_IMPORT, _DIR_DELAY, _DIR_CLR):
        if len(h.dirs) > index and h.dirs[index][0]:
            rva, size = h.dirs[index]
            off = _offset(h, rva)
            if off is not None:  # the CLR header is read at its fixed size, whatever the directory says
                out.append((off, off + (_CLR_HEADER if index == _DIR_CLR else max(size, 40))))
    gaps: list[tuple[int, int]] = []
    for attempt in (lambda: _exports(buf, h, gaps), lambda: _imports(buf, h, _DIR_IMPORT, False, gaps),
                    lambda: _imports(buf, h, _DIR_DELAY, True, gaps), lambda: _clr(buf, h)):  # fmt: skip
        try:
            attempt()
        except MissingRange as missing:  # a table itself: its pointers are read next time
            out.append((missing.start, missing.stop))
        except (BinaryError, limits.LimitExceeded):
            pass
    return coalesce(out + gaps, len(buf))


READER = FormatReader(
    name="pe",
    title="PE",
    magics=frozenset({b"MZ"}),
    slices=lambda buf, path, raw_hits, gpu: (read_pe(buf, path, raw_hits, gpu),),
    ranges=needed_ranges,
    sections=gpu_sections,
    zones=gpu_zones,
)
