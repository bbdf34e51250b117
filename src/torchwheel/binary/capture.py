"""The byte ranges a streaming scan keeps of a member (``memberscan``): the few it was told
to want, cut out of each chunk as it goes by, within ``max-binary-tables``.
"""

from __future__ import annotations

import bisect

from torchwheel import limits
from torchwheel.binary.sparse import MissingRange, SparseBuffer


class Capture:
    """The ranges to keep from a stream, held as sorted disjoint intervals (a chunk finds
    its few by bisection, however many names a hostile table scatters); their total is held
    to ``max-binary-tables`` so a header that claims a 1 GB symbol table cannot make us
    keep 1 GB."""

    def __init__(self, wanted: list[tuple[int, int]], label: str = "") -> None:
        self.label = label  # the member, named in a refusal
        self.los: list[int] = []
        self.his: list[int] = []
        self.total = 0
        self.pieces: dict[int, bytes] = {}
        for lo, hi in wanted:
            self.want(lo, hi, counted=False)

    def want(self, lo: int, hi: int, counted: bool = True) -> bool:
        """Add a range; True when it holds bytes not wanted before."""
        if hi <= lo:
            return False
        i = bisect.bisect_left(self.his, lo)  # first interval that ends at or after lo
        j = bisect.bisect_right(self.los, hi)  # intervals i..j-1 touch [lo, hi)
        old = sum(self.his[k] - self.los[k] for k in range(i, j))
        new_lo = min([lo, *self.los[i:j]])
        new_hi = max([hi, *self.his[i:j]])
        added = (new_hi - new_lo) - old
        if added <= 0:
            return False
        self.los[i:j] = [new_lo]
        self.his[i:j] = [new_hi]
        if counted:
            self.total += added
            limits.current().max_binary_tables.check(
                f"{self.label}: bytes of binary tables to keep", self.total
            )
        return True

    def feed(self, pos: int, chunk: bytes) -> None:
        end = pos + len(chunk)
        k = bisect.bisect_right(self.his, pos)
        while k < len(self.los) and self.los[k] < end:
            a, b = max(self.los[k], pos), min(self.his[k], end)
            if a < b and len(self.pieces.get(a, b"")) < b - a:
                self.pieces[a] = chunk[a - pos : b - pos]
            k += 1


def covered(view: SparseBuffer, lo: int, hi: int) -> bool:
    """Whether the captured bytes hold ``[lo, hi)`` whole."""
    try:
        view[lo:hi]
    except MissingRange:
        return False
    return True


def merge(pieces: dict[int, bytes], more: dict[int, bytes]) -> None:
    """Add pieces; where two start at one offset, keep the longer (a 25-byte marker record
    must not replace a captured chunk that starts at the same byte)."""
    for start, data in more.items():
        if len(data) > len(pieces.get(start, b"")):
            pieces[start] = data
