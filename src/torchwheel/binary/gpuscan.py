"""The plumbing of the GPU code scan (``gpucode``): a cursor fed every chunk of a member in
order, the seam between two chunks handled for it, and the tally both readers (``fatbin``,
``offload``) record into: runs of adjacent containers or bundles with their file offsets,
and the problems of a partial reading, each with its offset so that ``gpucode.gpu_code``
can keep only what lies in the GPU sections.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from torchwheel import limits
from torchwheel.binary.marker_record import Buffer  # bytes, or an mmap of a file read whole
from torchwheel.frozen import frozen

MAX_HEADER = 1 << 16  # an entry header (a -concat group lists every image) or a bundle's table
Key = tuple[int, int, int, int, int, bool]  # kind, arch, kept flags, major, minor, compressed size given


@dataclass
class Run:
    """Adjacent containers (or one offload bundle) and what they hold."""

    lo: int
    hi: int
    raw: dict[Key, int] = field(default_factory=dict)  # entry header fields -> count
    containers: int = 0
    targets: dict[str, None] = field(default_factory=dict)
    bundles: int = 0


@frozen
class GpuScan:
    """The raw result of a scan: runs and problems by file offset, before sections filter them."""

    runs: tuple[Run, ...] = ()
    problems: tuple[tuple[int, str], ...] = ()


class Cursor:
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
            seam = self.carry + bytes(chunk[:MAX_HEADER])
            keep = self.process(seam, self.carry_at, pos)
            if keep is not None:  # a chunk shorter than the item: keep gathering
                joined = self.carry + bytes(chunk[: len(chunk)])
                self.carry, self.carry_at = joined[keep - self.carry_at :], keep
                return
            self.carry = b""
        keep = self.process(chunk, pos, pos + len(chunk))
        if keep is not None:
            self.carry, self.carry_at = bytes(chunk[keep - pos : len(chunk)]), keep


class Scan:
    """What both cursors record into."""

    def __init__(self) -> None:
        self.runs: list[Run] = []
        self.los: list[int] = []  # run starts, for ``cuda_end``
        self.problems: list[tuple[int, str]] = []
        self.images = 0
        lim = limits.current()
        self.cap = lim.max_gpu_images
        self.max_runs, self.max_problems = lim.max_gpu_runs, lim.max_gpu_problems.value

    def problem(self, at: int, text: str) -> None:
        if len(self.problems) < self.max_problems:
            self.problems.append((at, text))

    def cuda_end(self, at: int) -> int:
        """The end of the CUDA run that holds ``at``, or ``at`` when none does."""
        i = bisect.bisect_right(self.los, at) - 1
        if i >= 0 and self.runs[i].containers and at < self.runs[i].hi:
            return self.runs[i].hi
        return at

    def run_at(self, lo: int) -> Run | None:
        """The run a container at ``lo`` joins: the last one when it ends right there (nvcc
        pads containers to 8 bytes), else a new one; None past ``max-gpu-runs``."""
        if self.runs and 0 <= lo - self.runs[-1].hi < 16:
            return self.runs[-1]
        if len(self.runs) >= self.max_runs.value:
            self.problem(
                lo,
                f"more than {self.max_runs.value} separate fatbins ({self.max_runs.name}); the rest were not read",
            )
            return None
        self.runs.append(Run(lo, lo))
        self.los.append(lo)
        return self.runs[-1]
