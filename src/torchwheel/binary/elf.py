"""A focused ELF reader: the dynamic symbol table, DT_NEEDED and the marker bytes.

Why not LIEF here: LIEF parses whole files (0.8-1.7 s for the 434 MB libtorch_cpu.so,
plus 0.3 s to import it) although all we need is ``.dynsym``/``.dynstr``, a few program
headers and 17 bytes at one address. This reader touches only those bytes of a ``bytes``
object or an ``mmap``, so a huge CUDA library costs what its symbol table costs.
``tests/test_elf_differential.py`` holds it to LIEF's answers on every fixture and on the
libraries of an installed torch.

Three modules: ``elflayout`` reads the header, segments and section table as checked
rows; ``elfsymbols`` the dynamic symbols by the loader's two routes (the section headers,
and PT_DYNAMIC when a tool stripped or corrupted them); this one assembles the facts, the
GPU code's whereabouts and the ranges a partial read needs, and is the format's row
(``READER``). Every offset read is checked against the file size, and every loop is
bounded by it, so hostile input ends in ``BinaryError``, never a hang.

The budget (``limits``): every count and size from a header (e_phnum, e_shnum, sh_size,
DT_STRSZ, symbol counts, hash buckets and chains, dynamic entries) is checked against the
bytes present before anything is allocated or looped over; tables are read a window at a
time; names are decoded only for the symbols kept (``strtab.Names``). A limit crossed
inside a binary (``max-symbols``, ``max-needed``) is a ``BinaryError`` carrying the limit's
text: that member is reported unreadable (TW406) and the rest of the wheel is still judged.
"""

from __future__ import annotations

import struct

from torchwheel import limits
from torchwheel.binary import gpucode
from torchwheel.binary.common import Buffer, companions_of, exported_marker, slice_facts
from torchwheel.binary.elflayout import (
    PT_LOAD,
    SHT_DYNAMIC,
    SHT_DYNSYM,
    SHT_NOBITS,
    Reader,
    sections,
    shstrtab,
)
from torchwheel.binary.elfsymbols import dynamic_ranges, dynamic_route, section_route
from torchwheel.binary.facts import BinaryError, SliceFacts
from torchwheel.binary.format import FormatReader
from torchwheel.binary.gpucode import GpuScan
from torchwheel.binary.marker_record import RawHit
from torchwheel.binary.sparse import MissingRange, SparseBuffer

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


def _gpu_sections(r: Reader) -> dict[str, tuple[int, int]] | None:
    """(offset, size) of the sections that hold or register GPU code, by name; None when
    the file has no readable section table (then ``gpucode`` trusts the segments alone)."""
    if r.shoff == 0 or r.shnum == 0:
        return None
    try:
        table = sections(r)
        names_at = shstrtab(r, table)
        if names_at is None:
            return None
        names = r.strtab(names_at.offset, names_at.size)
        out: dict[str, tuple[int, int]] = {}
        for sec in table:
            if sec.type == SHT_NOBITS or sec.name == 0:
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
    r = Reader(buf, "")
    readonly: list[tuple[int, int]] = []
    for row in r.table(r.lay.phdr, r.phoff, r.phentsize, r.phnum, "program header table"):
        if r.lay.is64:
            p_type, p_flags, p_offset, _, _, p_filesz, _, _ = row
        else:
            p_type, p_offset, _, _, p_filesz, _, p_flags, _ = row
        if p_type == PT_LOAD and not p_flags & 3:  # neither PF_X nor PF_W
            readonly.append((p_offset, p_offset + p_filesz))
    return readonly


def gpu_sections(buf: Buffer | SparseBuffer) -> dict[str, tuple[int, int]] | None:
    """(offset, size) by name of the sections that hold or register GPU code; None when the
    section table or its names cannot be read (not captured, stripped, or lying)."""
    try:
        return _gpu_sections(Reader(buf, ""))
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
        r = Reader(buf, "")
    except (MissingRange, BinaryError):
        return []  # not even a readable header: the final read reports it
    out: list[tuple[int, int]] = []
    if r.shoff and r.shnum:
        out.append((r.shoff, r.shoff + r.shentsize * r.shnum))
    try:
        loads, dynamic = r.segments()
        if dynamic is not None:
            out.append((dynamic.offset, dynamic.offset + dynamic.filesz))
            out += dynamic_ranges(r, loads, dynamic)
        table = sections(r) if r.shoff and r.shnum else []
    except (MissingRange, BinaryError):
        return out
    names = shstrtab(r, table)  # section names: which one is .nv_fatbin
    if names is not None:
        out.append((names.offset, names.offset + names.size))
    for sec in table:
        if sec.type in (SHT_DYNSYM, SHT_DYNAMIC):
            out.append((sec.offset, sec.offset + sec.size))
            if sec.type == SHT_DYNSYM and sec.link < len(table):
                strtab = table[sec.link]
                out.append((strtab.offset, strtab.offset + strtab.size))
    return out


def read_elf(
    buf: Buffer | SparseBuffer, path: str, raw_hits: list[RawHit] | None = None, gpu: GpuScan | None = None
) -> SliceFacts:
    """``raw_hits``, ``gpu``: what a streaming scan already found (then ``buf`` may be sparse);
    without ``raw_hits`` the buffer is scanned here, with them and no ``gpu`` scan for no GPU code."""
    r = Reader(buf, path)
    loads, dynamic = r.segments()
    try:
        routed = section_route(r)
    except BinaryError:
        routed = None  # the section table lies: fall back to what the loader uses
        if dynamic is None:
            raise
    if routed is None:
        routed = dynamic_route(r, loads, dynamic)
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


READER = FormatReader(
    name="elf",
    title="ELF",
    magics=frozenset({b"\x7fELF"}),
    slices=lambda buf, path, raw_hits, gpu: (read_elf(buf, path, raw_hits, gpu),),
    ranges=needed_ranges,
    sections=gpu_sections,
    zones=gpu_zones,
)
