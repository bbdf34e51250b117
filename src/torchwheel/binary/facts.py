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


@dataclass(frozen=True)
class ExportedMarker:
    """The marker found through the export table: the authoritative declared target.

    ``record`` is None when the exported symbol's bytes are not a record at all (a
    symbol of that name defined by something else, or pointing at no file bytes);
    ``problem`` then says why, and the rules report it instead of guessing.
    """

    record: MarkerRecord | None
    offset: int | None  # file offset of the record (for a fat Mach-O: in the whole file)
    problem: str | None = None


@dataclass(frozen=True)
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

    @property
    def hooks(self) -> tuple[str, ...]:
        """CPython module export hooks (PEP 489 ``PyInit_``, PEP 793 ``PyModExport_``)."""
        return tuple(
            name
            for name in self.exports
            if name.startswith(("PyInit_", "PyInitU_", "PyModExport_", "PyModExportU_"))
        )


@dataclass(frozen=True)
class BinaryFacts:
    path: str
    format: Format
    size: int
    slices: tuple[SliceFacts, ...] = field(default_factory=tuple)
