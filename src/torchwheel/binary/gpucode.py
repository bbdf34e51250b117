"""GPU code inside a library, read from its bytes as they stream by: the CUDA cubin and PTX
images of its fatbins (architecture, PTX ISA, compression) and the targets of its ROCm
clang offload bundles. Only entry headers are read, never a payload.

Why a streaming state machine: a CUDA library is mostly fatbin (vllm's flash-attention
library: 300 MB), and the section table that says where ``.nv_fatbin`` lies comes at the end
of an ELF file, after the fatbin went by. So the scanner is fed every chunk of the member
as it inflates (beside the RECORD hash and the marker scan) and keeps nothing but a tally:

* CUDA: a container (``fatbinary_section.h`` names the sections; the container header,
  magic ``0xBA55ED50``, version 1, header size 16, then the size of its entries, is what
  nvcc writes and ``cuobjdump`` reads) is searched for only until one is found; from there
  the walk jumps from entry header to entry header (``header size + payload size``) and
  from container to the next one right behind it, so the bulk of the fatbin costs no
  search at all. The search itself runs only in read-only segments (ELF) or in the
  ``.nv_fatb`` section (PE, whose section table comes first), never over code.
* ROCm: clang places each offload bundle (``__CLANG_OFFLOAD_BUNDLE__``, or ``CCOB`` when
  compressed) at a 4096-byte boundary of ``.hip_fatbin``; only those offsets are looked
  at. A compressed bundle's target list sits at the start of its compressed stream: only
  that much is decompressed (zstd or zlib, as LLVM's ``CompressedOffloadBundle`` writes).

Everything found is tallied per run of adjacent containers with its offset, and
``gpu_code`` keeps the runs that lie inside the named sections once the section table is
known, so a look-alike byte pattern elsewhere counts for nothing. Every size read is
checked against the bytes present; a header that lies ends the walk with a problem noted
(a partial reading, said so), never a hang: each step advances by at least 64 bytes and
the steps are capped (``limits.max_gpu_images``).

The entry header layout is not in a public header; it was read from nvcc 13.5 output and
checked against ``cuobjdump --list-elf/--list-ptx`` (``tests/test_gpucode.py``,
``benchmarks/cuda_agreement.py``): u16 kind (1 PTX, 2 cubin, 0x100 a ``-Xfatbin -concat``
group), u16, u32 header size, u64 payload size, u32 compressed size, u32 offset of the
header's extension, u16 minor, u16 major (the PTX ISA for PTX), u32 arch, u32 name offset,
u32 name size, u64 flags (0x8000 and 0x2000: compressed; 0x100000: arch-specific ``a``;
0x200000: family ``f``), u64, u64 uncompressed size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Literal

from torchwheel.binary.fatbin import FLAG_ARCH_SPECIFIC, FLAG_COMPRESSED, FLAG_FAMILY, PTX, CudaCursor
from torchwheel.binary.gpuscan import GpuScan, Key, Scan
from torchwheel.binary.marker_record import Buffer
from torchwheel.binary.offload import BundleCursor
from torchwheel.frozen import frozen

__all__ = ["CudaImage", "GpuCode", "GpuScan", "GpuScanner", "gpu_code", "scan_buffer"]

CUDA_SECTIONS = (".nv_fatbin", ".nv_fatb")  # ELF; PE names are cut to 8 bytes
HIP_SECTIONS = (".hip_fatbin", ".hip_fat")
REGISTRATION_SECTIONS = (".nvFatBinSegment", ".nvFatBi")  # nvcc's host-side wrapper
SECTION_NAMES = frozenset(CUDA_SECTIONS + HIP_SECTIONS + REGISTRATION_SECTIONS)

Kind = Literal["cubin", "ptx"]


@frozen(order=True)
class CudaImage:
    """One kind of image a fatbin holds: ``sm_90a`` cubin, or ``compute_90`` PTX of ISA 9.0."""

    kind: Kind
    arch: int  # 90 for sm_90 / compute_90
    variant: Literal["", "a", "f"] = ""  # arch-specific (sm_90a) or family (sm_100f) code
    ptx_isa: tuple[int, int] | None = None  # PTX only: (major, minor)
    compressed: bool = False

    @property
    def name(self) -> str:
        return f"{'sm' if self.kind == 'cubin' else 'compute'}_{self.arch}{self.variant}"


@frozen
class GpuCode:
    """What a library carries for GPUs; empty when it carries nothing.

    ``registered``: nvcc's host-side registration wrapper (``.nvFatBinSegment``) is there,
    so some CUDA runtime registers the fatbins at load time: the one the library imports,
    or one linked into it (``torchabi.accelerators`` tells which)."""

    cuda: tuple[tuple[CudaImage, int], ...] = ()  # image -> how many entries
    containers: int = 0
    rocm_targets: tuple[str, ...] = ()  # offload targets: "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"
    rocm_bundles: int = 0
    registered: bool = False
    problems: tuple[str, ...] = ()  # a partial reading, and why


NO_GPU_CODE = GpuCode()


def _image(key: Key) -> CudaImage:
    kind, arch, flags, major, minor, compressed = key
    variant: Literal["", "a", "f"] = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    compressed = compressed or bool(flags & FLAG_COMPRESSED)
    if kind == PTX:
        return CudaImage("ptx", arch, variant, (major, minor), compressed)
    return CudaImage("cubin", arch, variant, None, compressed)


class GpuScanner:
    """Fed every chunk of a member in order (``feed``), or a whole buffer at once."""

    def __init__(self, size: int, zones: Iterable[tuple[int, int]]) -> None:
        self.scan = Scan()
        zs = sorted((max(0, lo), min(size, hi)) for lo, hi in zones if lo < hi)
        self.zones = tuple(zs)
        self.cuda = CudaCursor(self.scan, zs, size)
        self.bundles = BundleCursor(self.scan, zs)
        self.active = bool(zs)

    def feed(self, pos: int, chunk: Buffer) -> None:
        if self.active:
            self.cuda.feed(pos, chunk)
            self.bundles.feed(pos, chunk)

    def result(self) -> GpuScan:
        if self.cuda.walking and self.cuda.end > self.cuda.at:
            self.scan.problem(self.cuda.at, "the file ends inside a fatbin: the rest was not read")
        if self.bundles.inflating is not None:
            self.bundles._finish_compressed()
        return GpuScan(tuple(self.scan.runs), tuple(self.scan.problems))


def scanned_sections(sections: Mapping[str, tuple[int, int]]) -> list[tuple[int, int]]:
    """The file ranges of the sections that hold GPU code (not the registration wrappers)."""
    return [(lo, lo + size) for name, (lo, size) in sections.items() if name in CUDA_SECTIONS + HIP_SECTIONS]


def unscanned(
    sections: Mapping[str, tuple[int, int]], zones: Iterable[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The GPU sections a stream did not look through (they lie outside its zones)."""
    zs = list(zones)
    return [
        (lo, hi)
        for lo, hi in scanned_sections(sections)
        if hi > lo and not any(a <= lo and hi <= b for a, b in zs)
    ]


def scan_buffer(buf: Buffer, zones: Iterable[tuple[int, int]]) -> GpuScan:
    scanner = GpuScanner(len(buf), zones)
    scanner.feed(0, buf)
    return scanner.result()


def gpu_code(
    scan: GpuScan, sections: Mapping[str, tuple[int, int]] | None, registered: bool = False
) -> GpuCode:
    """The runs that lie in a GPU section (``sections``: name -> (offset, size); None when
    the file has no section table, and then every run found in the zones counts)."""

    def inside(lo: int, names: tuple[str, ...]) -> bool:
        if sections is None:
            return True
        return any(name in sections and sections[name][0] <= lo < sum(sections[name]) for name in names)

    images: Counter[CudaImage] = Counter()
    targets: dict[str, None] = {}
    containers = bundles = 0
    for run in scan.runs:
        if run.containers and inside(run.lo, CUDA_SECTIONS):
            for key, n in run.raw.items():
                images[_image(key)] += n
            containers += run.containers
        if run.bundles and inside(run.lo, HIP_SECTIONS):
            targets.update(run.targets)
            bundles += run.bundles
    problems = tuple(text for at, text in scan.problems if inside(at, CUDA_SECTIONS + HIP_SECTIONS))
    return GpuCode(
        cuda=tuple(sorted(images.items())),
        containers=containers,
        rocm_targets=tuple(sorted(targets)),
        rocm_bundles=bundles,
        registered=registered,
        problems=problems,
    )
