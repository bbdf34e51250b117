"""What a reader learns from one compiled file, independent of its format.

Readers produce these and decide nothing; the torch and CPython analyses and the rules
consume them. Keeping the facts format-neutral is what lets one rule serve ELF, Mach-O
and PE alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from torchwheel.binary.gpucode import NO_GPU_CODE, GpuCode
from torchwheel.binary.marker_record import MarkerRecord, RawHit
from torchwheel.frozen import frozen
from torchwheel.version import FeatureVersion

Format = Literal["elf", "macho", "pe"]


class BinaryError(ValueError):
    """The bytes are not a binary we can read, or they contradict themselves."""


@dataclass(frozen=True, order=True, slots=True)
class Import:
    """An undefined symbol; ``library`` is the DLL (PE) or dylib (Mach-O) when the format says.

    ``weak``: the loader leaves it null when nothing defines it instead of refusing to load
    (ELF STB_WEAK undefined, Mach-O N_WEAK_REF / weak-import binding; PE has no such thing),
    so the library calls it only when present and it sets no floor on what it loads with.
    """

    name: str
    library: str | None = None
    weak: bool = False


@frozen
class ExportedMarker:
    """The marker found through the export table: the authoritative declared target.

    ``record`` is None when the exported symbol's bytes are not a record at all (a
    symbol of that name defined by something else, or pointing at no file bytes);
    ``problem`` then says why, and the rules report it instead of guessing.
    """

    record: MarkerRecord | None
    offset: int | None  # file offset of the record (for a fat Mach-O: in the whole file)
    problem: str | None = None


# IMAGE_COR20_HEADER.Flags (ECMA-335 II.25.3.3.1) that decide where the code runs; the others
# (NATIVE_ENTRYPOINT 0x10, 32BITPREFERRED 0x20000, STRONGNAMESIGNED 0x8) change nothing here
CLR_ILONLY = 0x1
CLR_32BITREQUIRED = 0x2


@frozen
class ClrHeader:
    """The CLR runtime header of a PE (data directory 14): the file is a .NET assembly.

    Its flags decide which processes can load it, and the PE machine field alone does not:
    an IL-only PE32 marked i386 without 32BITREQUIRED is AnyCPU, JIT-compiled in a process
    of any architecture (and by a CLR on any OS), so the architecture rules must not read
    its machine field as x86. 32BITREQUIRED (with or without 32BITPREFERRED, which corflags
    documents as a load failure for a DLL in a 64-bit process) restricts it to 32-bit
    processes; without ILONLY (C++/CLI mixed mode) the file holds native code for its machine.
    """

    flags: int
    pe32plus: bool

    @property
    def il_only(self) -> bool:
        return bool(self.flags & CLR_ILONLY)

    @property
    def requires_32bit(self) -> bool:
        return bool(self.flags & CLR_32BITREQUIRED)


@frozen
class SliceFacts:
    """One architecture's view: a thin binary has one slice, a universal Mach-O several."""

    arch: str
    exports: tuple[str, ...]
    imports: tuple[Import, ...]
    needed: tuple[str, ...]
    marker: ExportedMarker | None
    raw_markers: tuple[RawHit, ...]
    companions: tuple[FeatureVersion, ...]
    file_range: tuple[int, int] = (0, 0)
    # raw records beyond ``limits.max_marker_hits`` that were counted, not kept (marker.Hits)
    raw_markers_omitted: int = 0
    gpu: GpuCode = NO_GPU_CODE  # fatbins and offload bundles (``gpucode``)
    clr: ClrHeader | None = None  # a .NET assembly (PE only)

    @property
    def runs_in(self) -> str:
        """The process architecture that can load this slice: ``arch`` for native code,
        ``"any"`` for an AnyCPU IL-only assembly, ``"32-bit"`` for an IL-only assembly
        marked 32BITREQUIRED. An IL-only PE32+ (or a PE32 for a machine other than i386) is
        compiled for that one machine's processes, so it keeps ``arch``."""
        clr = self.clr
        if clr is None or not clr.il_only:
            return self.arch
        if clr.requires_32bit:
            return "32-bit"
        return "any" if not clr.pe32plus and self.arch == "x86" else self.arch

    @property
    def managed(self) -> bool:
        """IL-only .NET code: no native code, so the CPU-facing rules have nothing to judge."""
        return self.clr is not None and self.clr.il_only

    @property
    def arch_label(self) -> str:
        """What ``show`` and ``inspect`` print for the architecture: the machine field of a
        managed assembly would say x86 for code that runs in every process."""
        if self.clr is None:
            return self.arch
        if not self.clr.il_only:
            return f"{self.arch} (mixed-mode .NET)"
        where = self.runs_in
        return f"managed (.NET, {'AnyCPU' if where == 'any' else where + ' only'})"

    @property
    def hooks(self) -> tuple[str, ...]:
        """CPython module export hooks (PEP 489 ``PyInit_``, PEP 793 ``PyModExport_``)."""
        return tuple(
            name
            for name in self.exports
            if name.startswith(("PyInit_", "PyInitU_", "PyModExport_", "PyModExportU_"))
        )


@frozen
class BinaryFacts:
    path: str
    format: Format
    size: int
    slices: tuple[SliceFacts, ...] = field(default_factory=tuple)
