"""LIEF's view of ELF, Mach-O and PE: the reference our own readers are held to.

torchwheel reads all three formats with its own range-slicing readers (``binary/elf.py``,
``binary/macho.py``, ``binary/pe.py``); these functions are what they read before, and what
``test_elf_differential.py`` and ``test_macho_pe_differential.py`` compare them with on
every fixture and on torch's own libraries. The recipes follow
``shared/reference/marker-and-binaries.md`` section 7; each comment names the pitfall it
avoids. LIEF is a test dependency only.
"""

from __future__ import annotations

import io
from typing import Any

from torchwheel.binary import marker_record
from torchwheel.binary.common import Buffer, companions_of, exported_marker, slice_facts
from torchwheel.binary.facts import BinaryError, ExportedMarker, Import, SliceFacts

_lief: Any = None
_WEAK_DEFINITION = 0x4  # EXPORT_SYMBOL_FLAGS_WEAK_DEFINITION
_N_WEAK_REF = 0x40  # n_desc of an undefined symbol the loader may leave null (weak_import)


def _load() -> Any:
    global _lief
    if _lief is None:
        import lief

        lief.logging.disable()  # pitfall 14: LIEF prints "Can't read value at offset" otherwise
        _lief = lief
    return _lief


def _stream(buf: Buffer) -> io.BytesIO:
    # pitfall 3: raw bytes are first taken as a file name; BytesIO is also ~2x faster
    return io.BytesIO(bytes(buf) if not isinstance(buf, bytes) else buf)


_MACHO_ARCH = {
    "x86_64": "x86_64",
    "X86_64": "x86_64",
    "ARM64": "arm64",
    "arm64": "arm64",
    "x86": "i386",
    "X86": "i386",
    "I386": "i386",
    "ARM": "arm",
    "POWERPC": "ppc",
    "POWERPC64": "ppc64",
}


def read_macho(buf: Buffer, path: str) -> list[SliceFacts]:
    lief = _load()
    fat = lief.MachO.parse(_stream(buf))  # pitfall 2: MachO.parse sees every slice
    if fat is None or len(fat) == 0:
        raise BinaryError("LIEF could not parse this Mach-O file")
    load_types = {
        lief.MachO.LoadCommand.TYPE.LOAD_DYLIB,
        lief.MachO.LoadCommand.TYPE.LOAD_WEAK_DYLIB,
        lief.MachO.LoadCommand.TYPE.REEXPORT_DYLIB,
        lief.MachO.LoadCommand.TYPE.LOAD_UPWARD_DYLIB,
        lief.MachO.LoadCommand.TYPE.LAZY_LOAD_DYLIB,
    }
    slices: list[SliceFacts] = []
    for i in range(len(fat)):  # pitfall 1: keep `fat` alive while slices are in use
        b = fat.at(i)
        base = int(b.fat_offset)
        end = base + int(b.original_size)
        if end > len(buf):
            raise BinaryError(f"slice {i} ({base:#x}+{b.original_size:#x}) lies outside the file")
        exports: list[str] = []
        imports: list[Import] = []
        seen: set[str] = set()
        found: ExportedMarker | None = None
        for s in b.symbols:
            raw_name = s.name
            name = raw_name[1:] if raw_name.startswith("_") else raw_name  # pitfall 9
            if s.has_export_info:  # pitfall 7: weak definitions also carry binding info
                exports.append(name)
                if name == marker_record.SYMBOL:
                    va = b.imagebase + s.export_info.address  # pitfall 10
                    off = b.virtual_address_to_offset(va)
                    found = exported_marker(buf, None if off < 0 or off > end else base + off)
            elif raw_name in seen:
                continue
            elif s.has_binding_info:
                seen.add(raw_name)
                bi = s.binding_info
                # A symbol has a lazy and a non-lazy binding; LIEF shows one, and the linkers
                # set N_WEAK_REF in the nlist as well (also for every import of a dylib linked
                # with -weak-l / -weak_framework), so either says "weak import".
                weak = bool(bi.weak_import) or bool(s.description & _N_WEAK_REF)
                imports.append(Import(name, bi.library.name if bi.has_library else None, weak))
            elif (s.raw_type & 0xE0) == 0 and (s.raw_type & 0x0E) == 0 and (s.raw_type & 1):
                seen.add(raw_name)  # pitfall 8: N_UNDF|N_EXT resolved by dynamic_lookup
                imports.append(Import(name, None, bool(s.description & _N_WEAK_REF)))
        libs = [c.name for c in b.commands if c.command in load_types]
        cpu = str(b.header.cpu_type).rsplit(".", 1)[-1]
        slices.append(
            slice_facts(
                buf,
                arch=_MACHO_ARCH.get(cpu, cpu.lower()),
                exports=exports,
                imports=[i for i in imports if i.name != "dyld_stub_binder"],
                needed=libs,
                exported=found,
                companions=companions_of(exports),
                file_range=(base, end),  # pitfall 11: raw hits per slice
            )
        )
    return slices


# one spelling per architecture across formats, so rules compare slices and tags alike
_PE_MACHINE = {0x8664: "x86_64", 0x14C: "x86", 0xAA64: "arm64", 0x1C4: "arm"}


def read_pe(buf: Buffer, path: str) -> SliceFacts:
    lief = _load()
    b = lief.PE.parse(_stream(buf))
    if b is None:
        raise BinaryError("LIEF could not parse this PE file")
    exports: list[str] = []
    found: ExportedMarker | None = None
    if b.has_exports:
        for e in b.get_export().entries:
            if not e.name:
                continue
            exports.append(e.name)
            if e.name == marker_record.SYMBOL and not e.is_forwarded:
                off = b.rva_to_offset(e.address)  # pitfall 12: export addresses are RVAs
                found = exported_marker(buf, off if 0 <= off < len(buf) else None)
    imports: list[Import] = []  # never weak: PE has no weak imports, every entry must resolve
    for imp in b.imports:
        for x in imp.entries:
            imports.append(Import(f"#{x.ordinal}" if x.is_ordinal else x.name, imp.name))
    for imp in b.delay_imports:  # pitfall 13: a separate table
        for x in imp.entries:
            imports.append(Import(x.name, imp.name))
    machine = int(b.header.machine)
    return slice_facts(
        buf,
        arch=_PE_MACHINE.get(machine, f"pe-machine-{machine:#x}"),
        exports=exports,
        imports=imports,
        needed=[imp.name for imp in b.imports] + [imp.name for imp in b.delay_imports],
        exported=found,
        companions=companions_of(exports),
        file_range=(0, len(buf)),
    )


def read_elf_with_lief(buf: Buffer, path: str) -> SliceFacts:
    """The reference answer our struct reader must match (pitfalls 6 and 15)."""
    lief = _load()
    b = lief.ELF.parse(_stream(buf))
    if b is None:
        raise BinaryError("LIEF could not parse this ELF file")
    bind, vis = lief.ELF.Symbol.BINDING, lief.ELF.Symbol.VISIBILITY
    exports: list[str] = []
    imports: list[Import] = []
    found: ExportedMarker | None = None
    for s in b.dynamic_symbols:
        if not s.name:
            continue
        if s.shndx == 0:
            imports.append(Import(s.name, weak=s.binding == bind.WEAK))
        elif s.binding in (bind.GLOBAL, bind.WEAK, bind.GNU_UNIQUE) and s.visibility in (
            vis.DEFAULT,
            vis.PROTECTED,
        ):
            exports.append(s.name)
            if s.name == marker_record.SYMBOL:
                try:
                    off = b.virtual_address_to_offset(s.value)
                except Exception:  # LIEF raises on an unmapped address
                    off = None
                found = exported_marker(buf, off)
    needed = [e.name for e in b.dynamic_entries if e.tag == lief.ELF.DynamicEntry.TAG.NEEDED]
    return slice_facts(
        buf,
        arch=str(b.header.machine_type).rsplit(".", 1)[-1],
        exports=exports,
        imports=imports,
        needed=needed,
        exported=found,
        companions=companions_of(exports),
        file_range=(0, len(buf)),
    )
