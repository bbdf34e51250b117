"""Names out of a string table (ELF .dynstr; any NUL-terminated table), within a budget.

Our own few lines rather than LIEF for the reason ``binary.elf`` gives: we read only the
names the kept symbols reference, straight from a ``bytes``, an ``mmap`` or a
``SparseBuffer``, and a hostile table must not cost more than the table itself.
"""

from __future__ import annotations

from torchwheel.binary.common import Buffer
from torchwheel.binary.facts import BinaryError
from torchwheel.binary.sparse import SparseBuffer


class Names:
    """Names out of a string table, decoded only when a kept symbol asks, straight from
    the buffer (no copy of the table, no index of every offset: 16 MB of NULs were once a
    dict of 16 million entries, 1.5 GB). No memo of the names decoded either: symbols that
    share a name are rare (a versioned pair), while a memo of a million imports was 70 MB
    of the reader's peak.

    Linkers share suffixes and symbols may share a name, so the bytes decoded may exceed the
    table; they are held to twice it, which also bounds the time spent looking for NULs."""

    def __init__(self, buf: Buffer | SparseBuffer, offset: int, size: int, what: str = ".dynstr") -> None:
        self.buf, self.offset, self.size, self.what = buf, offset, size, what
        self.budget = 2 * size + (1 << 20)

    def __call__(self, at: int) -> str:
        if at >= self.size:
            raise BinaryError(f"string offset {at:#x} lies outside {self.what}")
        start = self.offset + at
        end = self.buf.find(b"\0", start, self.offset + self.size)
        if end < 0:
            raise BinaryError(f"the string at {self.what}+{at:#x} has no terminating NUL")
        self.budget -= end - start + 1
        if self.budget < 0:
            raise BinaryError(f"names overlapping in {self.what} decode to more than twice its size")
        return bytes(self.buf[start:end]).decode("utf-8", "backslashreplace")
