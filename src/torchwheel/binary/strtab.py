"""Names out of a string table (ELF .dynstr; any NUL-terminated table), within a budget.

Our own few lines rather than LIEF for the reason ``binary.elf`` gives: we read only the
names the kept symbols reference, straight from a ``bytes``, an ``mmap`` or a
``SparseBuffer``, and a hostile table must not cost more than the table itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from torchwheel.binary.common import Buffer
from torchwheel.binary.facts import BinaryError
from torchwheel.binary.sparse import MissingRange, SparseBuffer

_JOINED = 64 << 20  # a string table larger than this stays in its pieces


class Names:
    """Names out of a string table, decoded only when a kept symbol asks, straight from
    the buffer (no copy of the table, no index of every offset: 16 MB of NULs were once a
    dict of 16 million entries, 1.5 GB). No memo of the names decoded either: symbols that
    share a name are rare (a versioned pair), while a memo of a million imports was 70 MB
    of the reader's peak.

    Linkers share suffixes and symbols may share a name, so the bytes decoded may exceed the
    table; they are held to twice it, which also bounds the time spent looking for NULs."""

    def __init__(self, buf: Buffer | SparseBuffer, offset: int, size: int, what: str = ".dynstr") -> None:
        self.size, self.what = size, what
        self.budget = 2 * size + (1 << 20)
        # The table as one object: in a streamed member it was captured as chunk-sized
        # pieces, and searching one ``bytes`` (a C-level find and a slice per name) costs
        # a fraction of going through the SparseBuffer's pieces for every name
        # (libtorch_cpu.so: 75,000 names). Joined once when every piece is there and the
        # table is of a sane size (the capture's budget already bounds it); else the
        # buffer itself, and a missing piece is raised when a name needs it.
        self.data: Buffer | SparseBuffer = buf
        self.start = offset
        if isinstance(buf, SparseBuffer) and size <= _JOINED:
            with contextlib.suppress(MissingRange):
                self.data, self.start = buf[offset : offset + size], 0
        self.stop = self.start + size

    def __call__(self, at: int) -> str:
        return self.many((at,))[0]

    def many(self, offsets: Iterable[int]) -> list[str]:
        """The names at ``offsets``, in order: one tight loop for a whole symbol table,
        each name checked and counted against the budget as it comes (the first bad one
        is the one reported)."""
        data, start, stop, size = self.data, self.start, self.stop, self.size
        find = data.find
        budget = self.budget
        out: list[str] = []
        append = out.append
        for at in offsets:
            if at >= size:
                raise BinaryError(f"string offset {at:#x} lies outside {self.what}")
            lo = start + at
            end = find(b"\0", lo, stop)
            if end < 0:
                raise BinaryError(f"the string at {self.what}+{at:#x} has no terminating NUL")
            budget -= end - lo + 1
            if budget < 0:
                raise BinaryError(f"names overlapping in {self.what} decode to more than twice its size")
            append(data[lo:end].decode("utf-8", "backslashreplace"))
        self.budget = budget
        return out
