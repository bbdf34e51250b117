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

import bisect
import struct
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from torchwheel import limits
from torchwheel.binary.marker_record import Buffer  # bytes, or an mmap of a file read whole

try:  # the standard library's from Python 3.14 on, the backport before
    from compression.zstd import ZstdDecompressor, ZstdError  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - depends on the Python version
    from backports.zstd import ZstdDecompressor, ZstdError  # type: ignore[import-not-found, unused-ignore, no-redef]

FATBIN_MAGIC = struct.pack("<IHH", 0xBA55ED50, 1, 16)  # magic, version 1, header size 16
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
CUDA_SECTIONS = (".nv_fatbin", ".nv_fatb")  # ELF; PE names are cut to 8 bytes
HIP_SECTIONS = (".hip_fatbin", ".hip_fat")
REGISTRATION_SECTIONS = (".nvFatBinSegment", ".nvFatBi")  # nvcc's host-side wrapper
SECTION_NAMES = frozenset(CUDA_SECTIONS + HIP_SECTIONS + REGISTRATION_SECTIONS)
_BUNDLE_ALIGN = 4096
_ENTRY = 64
_MAX_HEADER = 1 << 16  # an entry header (a -concat group lists every image) or a bundle's table
_MAX_RUNS = 4096  # runs of adjacent containers kept with their offsets
_MAX_PROBLEMS = 16
_MAX_TARGETS = 256
_MAX_INFLATED_TABLE = 1 << 16  # bytes of a compressed bundle decompressed to read its table
_PTX, _CUBIN, _CONCAT = 1, 2, 0x100
_FLAG_COMPRESSED = 0x8000 | 0x2000
_FLAG_ARCH_SPECIFIC = 0x100000
_FLAG_FAMILY = 0x200000
_FLAGS_KEPT = _FLAG_COMPRESSED | _FLAG_ARCH_SPECIFIC | _FLAG_FAMILY
_ENTRY_HEAD = struct.Struct("<HHIQIIHHIIIQ")
_Key = tuple[int, int, int, int, int, bool]  # kind, arch, kept flags, major, minor, compressed size given

Kind = Literal["cubin", "ptx"]


@dataclass(frozen=True, order=True)
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


@dataclass(frozen=True)
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


@dataclass
class _Run:
    """Adjacent containers (or one offload bundle) and what they hold."""

    lo: int
    hi: int
    raw: dict[_Key, int] = field(default_factory=dict)  # entry header fields -> count
    containers: int = 0
    targets: dict[str, None] = field(default_factory=dict)
    bundles: int = 0


@dataclass(frozen=True)
class GpuScan:
    """The raw result of a scan: runs and problems by file offset, before sections filter them."""

    runs: tuple[_Run, ...] = ()
    problems: tuple[tuple[int, str], ...] = ()


class _Cursor:
    """Feeds ``process`` every chunk, and the seam before it when an item started in the
    previous chunk and needs bytes of this one; keeps only that item's bytes (< 64 KiB)."""

    def __init__(self) -> None:
        self.carry = b""
        self.carry_at = 0

    def process(self, data: Buffer, base: int, stop: int) -> int | None:
        """Handle the items starting before ``stop``; the offset of one that needs more bytes."""
        raise NotImplementedError

    def feed(self, pos: int, chunk: Buffer) -> None:
        if self.carry:
            seam = self.carry + bytes(chunk[:_MAX_HEADER])
            keep = self.process(seam, self.carry_at, pos)
            if keep is not None:  # a chunk shorter than the item: keep gathering
                joined = self.carry + bytes(chunk[: len(chunk)])
                self.carry, self.carry_at = joined[keep - self.carry_at :], keep
                return
            self.carry = b""
        keep = self.process(chunk, pos, pos + len(chunk))
        if keep is not None:
            self.carry, self.carry_at = bytes(chunk[keep - pos : len(chunk)]), keep


class _Scan:
    """What both cursors record into."""

    def __init__(self) -> None:
        self.runs: list[_Run] = []
        self.los: list[int] = []  # run starts, for ``cuda_end``
        self.problems: list[tuple[int, str]] = []
        self.images = 0
        self.cap = limits.current().max_gpu_images

    def problem(self, at: int, text: str) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append((at, text))

    def cuda_end(self, at: int) -> int:
        """The end of the CUDA run that holds ``at``, or ``at`` when none does."""
        i = bisect.bisect_right(self.los, at) - 1
        if i >= 0 and self.runs[i].containers and at < self.runs[i].hi:
            return self.runs[i].hi
        return at

    def run_at(self, lo: int) -> _Run | None:
        """The run a container at ``lo`` joins: the last one when it ends right there (nvcc
        pads containers to 8 bytes), else a new one; None past ``_MAX_RUNS``."""
        if self.runs and 0 <= lo - self.runs[-1].hi < 16:
            return self.runs[-1]
        if len(self.runs) >= _MAX_RUNS:
            self.problem(lo, f"more than {_MAX_RUNS} separate fatbins; the rest were not read")
            return None
        self.runs.append(_Run(lo, lo))
        self.los.append(lo)
        return self.runs[-1]


class _CudaCursor(_Cursor):
    """Search (in the zones) for a container; walk its entries; at its end, continue with
    the container right behind it or go back to searching."""

    def __init__(self, scan: _Scan, zones: Sequence[tuple[int, int]], size: int) -> None:
        super().__init__()
        self.scan = scan
        self.zones = zones
        self.size = size
        self.at = 0  # searching: from here; walking: the next entry header
        self.walking = False
        self.end = 0  # end of the container being walked
        self.run: _Run | None = None
        self.done = False

    def process(self, data: Buffer, base: int, stop: int) -> int | None:
        end = base + len(data)
        while not self.done:
            if self.walking:
                if self.at >= self.end:
                    self.walking = False
                    continue  # the next container is looked for right here first
                if self.at >= stop:
                    return None
                keep = self._walk(data, base, stop, end)
                if keep is not None:
                    return keep
                continue
            got = self._find(data, base, stop, end)
            if got is None:
                return None
            is_start, found = got
            if not is_start:
                return found
            head = bytes(data[found - base : found - base + 16])
            if len(head) < 16:
                return found
            (size,) = struct.unpack_from("<Q", head, 8)
            self.at, self.end, self.walking = found + 16, found + 16 + size, True
            if self.end > self.size:
                self.scan.problem(
                    found, f"fatbin at {found:#x} claims {size:,} bytes, past the end of the file"
                )
                self.end = self.size
            self.run = self.scan.run_at(found)
            if self.run is None:
                self.done = True
                return None
            self.run.containers += 1
            self.run.hi = max(self.run.hi, self.end)
        return None

    def _find(self, data: Buffer, base: int, stop: int, end: int) -> tuple[bool, int] | None:
        """The next container start below ``stop``: right behind the last one, or by search
        within the zones. (True, offset): found; (False, offset): keep the bytes from there
        (a magic may straddle into the next chunk); None: none in this data."""
        n = len(FATBIN_MAGIC)
        if self.run is not None and self.at == self.run.hi:
            # behind the container just walked (after up to 8 bytes of padding)
            lo = self.at - base
            if self.at + 24 <= end:
                k = bytes(data[lo : lo + 24]).find(FATBIN_MAGIC)
                if 0 <= k <= 8:
                    return True, self.at + k
            elif self.at < stop:
                return False, self.at
        for zlo, zhi in self.zones:
            a, b = max(self.at, zlo, base), min(stop + n - 1, zhi, end)
            if a >= b:
                continue
            k = data.find(FATBIN_MAGIC, a - base, b - base)
            if k >= 0:
                return True, base + k
            if b == end and end < zhi and end < stop + n - 1:
                self.at = max(a, end - n + 1)
                return False, self.at
        self.at = max(self.at, stop)
        return None

    def _walk(self, data: Buffer, base: int, stop: int, end: int) -> int | None:
        """Entry after entry of the container, in one tight loop (a hostile fatbin of a
        million empty entries must not cost a second each): an image is tallied by its raw
        header fields, turned into a ``CudaImage`` once at the end. Returns the offset to
        keep from when an entry header runs past ``data``."""
        assert self.run is not None
        raw, cap, scan = self.run.raw, self.scan.cap.value, self.scan
        at, cend = self.at, self.end
        unpack = _ENTRY_HEAD.unpack_from
        try:
            while at < cend:
                if at >= stop:
                    return None
                if at + _ENTRY > end:
                    return at
                kind, _, hsize, psize, csize, _, minor, major, arch, _, _, flags = unpack(data, at - base)
                nxt = at + hsize + psize
                if hsize < _ENTRY or hsize > _MAX_HEADER or nxt > cend:
                    scan.problem(
                        at,
                        f"fatbin entry at {at:#x} claims {hsize:,}+{psize:,} bytes, past its container: rest not read",
                    )
                    self.walking, at = False, at + 1
                    return None
                if kind in (_PTX, _CUBIN):
                    scan.images += 1
                    if scan.images > cap:
                        self._capped(at)
                        return None
                    key = (kind, arch, flags & _FLAGS_KEPT, major, minor, csize != 0)
                    raw[key] = raw.get(key, 0) + 1
                elif kind == _CONCAT:
                    if at + hsize > end:
                        return at
                    if not self._group(at, bytes(data[at - base : at - base + hsize])):
                        return None
                at = nxt
            return None
        finally:
            self.at = at

    def _capped(self, at: int) -> None:
        self.scan.problem(
            at, f"more than {self.scan.cap.value:,} GPU images ({self.scan.cap.name}); the rest were not read"
        )
        self.done = True

    def _group(self, at: int, group: bytes) -> bool:
        """A ``-Xfatbin -concat`` entry: one compressed payload, its images listed in the
        header's extension (count, size, then a 64-byte header per image, each followed by
        an extension when its offset field says so). A layout that does not add up to the
        header size is reported, not guessed at."""
        assert self.run is not None
        if len(group) < _ENTRY + 8:
            self.scan.problem(at, f"fatbin group at {at:#x} is too short to list its images")
            return True
        count, size = struct.unpack_from("<II", group, _ENTRY)
        off, stop = _ENTRY + 8, _ENTRY + size
        images: list[_Key] = []
        compressed = bool(struct.unpack_from("<Q", group, 40)[0] & _FLAG_COMPRESSED)
        seen = 0
        while off + _ENTRY <= min(stop, len(group)) and seen < count:
            kind, _, _, _, _, ext, minor, major, arch, _, _, flags = struct.unpack_from(
                "<HHIQIIHHIIIQ", group, off
            )
            seen += 1
            if kind in (_PTX, _CUBIN):
                images.append((kind, arch, flags & _FLAGS_KEPT, major, minor, compressed))
            off += _ENTRY
            if ext:
                if off + 8 > len(group):
                    break
                (elen,) = struct.unpack_from("<I", group, off + 4)
                off += (12 + elen + 7) & ~7
        if seen != count or off != stop or stop != len(group):
            self.scan.problem(
                at, f"fatbin group at {at:#x}: its list of {count} images does not add up; not read"
            )
            return True
        for key in images:
            self.scan.images += 1
            if self.scan.images > self.scan.cap.value:
                self._capped(at)
                return False
            self.run.raw[key] = self.run.raw.get(key, 0) + 1
        return True


def _image(key: _Key) -> CudaImage:
    kind, arch, flags, major, minor, compressed = key
    variant: Literal["", "a", "f"] = (
        "a" if flags & _FLAG_ARCH_SPECIFIC else "f" if flags & _FLAG_FAMILY else ""
    )
    compressed = compressed or bool(flags & _FLAG_COMPRESSED)
    if kind == _PTX:
        return CudaImage("ptx", arch, variant, (major, minor), compressed)
    return CudaImage("cubin", arch, variant, None, compressed)


class _BundleCursor(_Cursor):
    """Looks at every 4096-byte boundary in the zones for an offload bundle and reads its
    table of targets (decompressing only the start of a compressed one)."""

    def __init__(self, scan: _Scan, zones: Sequence[tuple[int, int]]) -> None:
        super().__init__()
        self.scan = scan
        self.zones = zones
        self.at = 0
        self.skip_to = 0  # past the bundle just read
        self.inflating: _Inflate | None = None

    def process(self, data: Buffer, base: int, stop: int) -> int | None:
        end = base + len(data)
        if self.inflating is not None:
            if not self.inflating.feed(data, base, end):
                self.at = max(self.at, min(stop, end))
                return None
            self._finish_compressed()
        for zlo, zhi in self.zones:
            first = max(self.at, self.skip_to, zlo, base)
            k = -(-first // _BUNDLE_ALIGN) * _BUNDLE_ALIGN
            while k < min(stop, zhi):
                inside = self.scan.cuda_end(k)
                if inside > k:  # a CUDA fatbin holds no offload bundle: jump past it
                    k = -(-inside // _BUNDLE_ALIGN) * _BUNDLE_ALIGN
                    continue
                if k + len(BUNDLE_MAGIC) > end:
                    self.at = k
                    return k
                lead = bytes(data[k - base : k - base + len(BUNDLE_MAGIC)])
                if lead == BUNDLE_MAGIC:
                    got = _bundle_table(data, k - base, len(data))
                    if got is None:
                        self.at = k
                        return k
                    self._record(k, *got)
                elif lead.startswith(CCOB_MAGIC):
                    keep = self._compressed(data, base, k, end)
                    if keep is not None or self.inflating is not None:
                        self.at = k + _BUNDLE_ALIGN
                        return keep
                k += _BUNDLE_ALIGN
        self.at = max(self.at, stop)
        return None

    def _record(self, at: int, targets: list[str], extent: int | str) -> None:
        if isinstance(extent, str):
            self.scan.problem(at, f"offload bundle at {at:#x}: {extent}")
            return
        run = self.scan.run_at(at)
        if run is None:
            return
        run.hi, run.bundles = max(run.hi, at + extent), run.bundles + 1
        for t in targets[:_MAX_TARGETS]:
            run.targets[t] = None
        self.skip_to = at + extent

    def _compressed(self, data: Buffer, base: int, at: int, end: int) -> int | None:
        if at + 32 > end:
            return at
        head = bytes(data[at - base : at - base + 32])
        version, method = struct.unpack_from("<HH", head, 4)
        header = {1: 20, 2: 24, 3: 32}.get(version)
        if header is None or method not in (0, 1):
            self.scan.problem(
                at, f"compressed offload bundle at {at:#x}: version {version}, method {method} unknown"
            )
            return None
        total = struct.unpack_from("<I" if version == 2 else "<Q", head, 8)[0] if version >= 2 else 0
        inflater = _Inflate(at, at + header, method, at + total if total else 0)
        self.inflating = inflater
        if inflater.feed(data, base, end):
            self._finish_compressed()
        return None

    def _finish_compressed(self) -> None:
        inflating, self.inflating = self.inflating, None
        assert inflating is not None
        got = _bundle_table(inflating.out, 0, len(inflating.out))
        if got is None or isinstance(got[1], str) or inflating.error:
            why = inflating.error or (
                got[1] if got is not None and isinstance(got[1], str) else "table not found"
            )
            self.scan.problem(inflating.at, f"compressed offload bundle at {inflating.at:#x}: {why}")
            return
        run = self.scan.run_at(inflating.at)
        if run is None:
            return
        run.bundles += 1
        run.hi = max(run.hi, inflating.end or inflating.at + _BUNDLE_ALIGN)
        for t in got[0][:_MAX_TARGETS]:
            run.targets[t] = None
        self.skip_to = max(self.skip_to, inflating.end)


class _Inflate:
    """The start of a compressed bundle's stream, decompressed until its table is whole."""

    def __init__(self, at: int, data_at: int, method: int, end: int) -> None:
        self.at, self.pos, self.end = at, data_at, end
        self.out = b""
        self.error = ""
        self.z: ZstdDecompressor | None = ZstdDecompressor() if method == 1 else None
        self.zl = zlib.decompressobj() if method == 0 else None

    def feed(self, data: Buffer, base: int, end: int) -> bool:
        """True when done (the table is whole, the output cap or the bundle's end reached)."""
        stop = min(end, self.end) if self.end else end
        while self.pos < stop:
            piece = bytes(data[self.pos - base : min(stop, self.pos + (1 << 16)) - base])
            self.pos += len(piece)
            try:
                if self.z is not None:
                    self.out += self.z.decompress(piece, _MAX_INFLATED_TABLE - len(self.out))
                elif self.zl is not None:
                    self.out += self.zl.decompress(piece, _MAX_INFLATED_TABLE - len(self.out))
            except (ZstdError, zlib.error, EOFError) as exc:
                self.error = f"does not decompress ({exc})"
                return True
            if _bundle_table(self.out, 0, len(self.out)) is not None or len(self.out) >= _MAX_INFLATED_TABLE:
                return True
        return bool(self.end) and self.pos >= self.end


def _bundle_table(data: Buffer, off: int, end: int) -> tuple[list[str], int | str] | None:
    """(targets, extent of the bundle) of a bundle at ``off``; ``extent`` is a problem text
    when the table contradicts itself; None when ``data`` ends before the table does."""
    if off + 32 > end:
        return None
    (count,) = struct.unpack_from("<Q", bytes(data[off + 24 : off + 32]))
    if count > _MAX_TARGETS:
        return [], f"claims {count:,} entries"
    at, extent, targets = off + 32, 0, []
    for _ in range(count):
        if at + 24 > end:
            return None
        entry_off, size, tlen = struct.unpack_from("<QQQ", bytes(data[at : at + 24]))
        if tlen > 4096:
            return [], f"an entry names a {tlen:,}-byte target"
        if at + 24 + tlen > end:
            return None
        triple = bytes(data[at + 24 : at + 24 + tlen]).decode("ascii", "backslashreplace")
        at += 24 + tlen
        extent = max(extent, entry_off + size)
        if not triple.startswith("host-"):
            targets.append(triple)
    return targets, max(extent, at - off)


class GpuScanner:
    """Fed every chunk of a member in order (``feed``), or a whole buffer at once."""

    def __init__(self, size: int, zones: Iterable[tuple[int, int]]) -> None:
        self.scan = _Scan()
        zs = sorted((max(0, lo), min(size, hi)) for lo, hi in zones if lo < hi)
        self.zones = tuple(zs)
        self.cuda = _CudaCursor(self.scan, zs, size)
        self.bundles = _BundleCursor(self.scan, zs)
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
