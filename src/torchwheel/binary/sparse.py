"""A file of which only some byte ranges are known: what a streaming scan keeps.

Reading a 500 MB CUDA library out of a wheel, we hash and scan every byte as it inflates
but keep only the ranges the ELF reader needs (headers, the dynamic symbol and string
tables, the section table). Any other access raises ``MissingRange``, which tells the
streaming reader exactly what to capture on its next pass: a fast path with a checked
fallback, never a silent guess.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass


class MissingRange(LookupError):
    def __init__(self, start: int, stop: int) -> None:
        super().__init__(f"bytes {start:#x}..{stop:#x} were not captured")
        self.start = start
        self.stop = stop


@dataclass
class SparseBuffer:
    size: int
    starts: list[int]
    chunks: list[bytes]

    @classmethod
    def from_ranges(cls, size: int, ranges: dict[int, bytes]) -> SparseBuffer:
        merged: list[tuple[int, bytes]] = []
        for start in sorted(ranges):
            data = ranges[start]
            if merged and start <= merged[-1][0] + len(merged[-1][1]):
                prev_start, prev = merged[-1]
                end = max(prev_start + len(prev), start + len(data))
                joined = bytearray(end - prev_start)
                joined[: len(prev)] = prev
                joined[start - prev_start : start - prev_start + len(data)] = data
                merged[-1] = (prev_start, bytes(joined))
            else:
                merged.append((start, data))
        return cls(size, [s for s, _ in merged], [d for _, d in merged])

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("SparseBuffer supports plain slices only")
        start = 0 if key.start is None else key.start
        stop = self.size if key.stop is None else min(key.stop, self.size)
        if stop <= start:
            return b""
        i = bisect.bisect_right(self.starts, start) - 1
        if i >= 0:
            base = self.starts[i]
            chunk = self.chunks[i]
            if stop <= base + len(chunk):
                return chunk[start - base : stop - base]
        raise MissingRange(start, stop)
