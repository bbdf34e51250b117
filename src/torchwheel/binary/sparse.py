"""A file of which only some byte ranges are known: what a streaming scan keeps.

Reading a 500 MB CUDA library out of a wheel, we hash and scan every byte as it inflates
but keep only the ranges its format's reader names (``FormatReader.needed_ranges``: for an
ELF file the headers, the section table, the dynamic symbol and string tables). Any other access raises ``MissingRange``, which tells the
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
        """Pieces as captured, not joined: a 15 MB head arrives as a few chunks, and copying
        it into one object at every question the stream asks would double its memory."""
        starts: list[int] = []
        chunks: list[bytes] = []
        reach = -1
        for start in sorted(ranges):
            data = ranges[start]
            if start + len(data) <= reach:
                continue  # inside what earlier pieces hold (a marker record inside the head)
            starts.append(start)
            chunks.append(data)
            reach = start + len(data)
        # Ends now grow with starts: the last piece starting at or before an offset is the
        # one that reaches furthest, which is what __getitem__'s bisect relies on.
        return cls(size, starts, chunks)

    def __len__(self) -> int:
        return self.size

    def find(self, sub: bytes, start: int, end: int) -> int:
        """``bytes.find`` for one byte (a string table's NUL) over the captured pieces, so a
        string table is searched where it lies instead of being copied out first."""
        if len(sub) != 1:
            raise ValueError("SparseBuffer.find looks for one byte")
        end = min(end, self.size)
        at = start
        i = bisect.bisect_right(self.starts, at) - 1
        while at < end:
            if i < 0 or i >= len(self.starts) or self.starts[i] > at:
                raise MissingRange(at, end)
            base, chunk = self.starts[i], self.chunks[i]
            stop = min(end, base + len(chunk))
            if stop > at:
                found = chunk.find(sub, at - base, stop - base)
                if found >= 0:
                    return base + found
                at = stop
            i += 1
        return -1

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("SparseBuffer supports plain slices only")
        start = 0 if key.start is None else key.start
        stop = self.size if key.stop is None else min(key.stop, self.size)
        if stop <= start:
            return b""
        i = bisect.bisect_right(self.starts, start) - 1
        if i < 0:
            raise MissingRange(start, stop)
        parts: list[bytes] = []
        at = start
        # walk forward through pieces that touch or overlap, until the slice is covered
        while i < len(self.starts) and at < stop:
            base, chunk = self.starts[i], self.chunks[i]
            if base > at:
                break  # a hole
            end = base + len(chunk)
            if end > at:
                parts.append(chunk[at - base : min(stop, end) - base])
                at = min(stop, end)
            i += 1
        if at < stop:
            raise MissingRange(start, stop)
        return parts[0] if len(parts) == 1 else b"".join(parts)
