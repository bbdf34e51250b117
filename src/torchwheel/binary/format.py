"""One row of the format table (``binary.FORMATS``): all that the entry point and the
streaming scan ask of one binary format, so that dispatch is a lookup, never an
``if fmt ==`` chain, and a new format is one module that defines its row plus that row
added to the table.

A row holds the format's own functions, unguarded, as the format module writes them; its
methods add what every caller needs around them: the ``BinaryFacts`` with the format's
name, one ``malformed <title>: ...`` error for whatever a reader trips over, and the
fallbacks of the GPU questions for bytes that were not captured.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from torchwheel import limits
from torchwheel.binary.facts import BinaryError, BinaryFacts, Format, SliceFacts
from torchwheel.binary.gpucode import GpuScan
from torchwheel.binary.marker_record import Buffer, RawHit
from torchwheel.binary.sparse import MissingRange, SparseBuffer
from torchwheel.frozen import frozen

Ranges = list[tuple[int, int]]  # [start, stop) file offsets
Sections = dict[str, tuple[int, int]]  # section name -> (file offset, size)
ReadSlices = Callable[
    [Buffer | SparseBuffer, str, list[RawHit] | None, GpuScan | None], tuple[SliceFacts, ...]
]

# what a GPU question on captured bytes may trip over; the answer is then "unknown"
_UNANSWERED = (MissingRange, BinaryError, struct.error, limits.LimitExceeded)


@frozen
class FormatReader:
    """A binary format: how its files start, how they are read, what a reader of a partial
    file must fetch, and where GPU code lies in it.

    ``slices(buf, path, raw_hits, gpu)``: every slice of the file (one, or one per
    architecture of a universal Mach-O); ``buf`` may be a ``SparseBuffer``, and then
    ``MissingRange`` names bytes to fetch (it is not an error). ``raw_hits`` are the marker
    records a scan of every byte found (None: scan ``buf`` here), ``gpu`` what the GPU scan
    found (None with ``raw_hits`` given: no GPU code was looked for).

    ``ranges(buf)``: the byte ranges ``slices`` will read, as far as the bytes captured so
    far tell; see ``needed_ranges``.

    ``sections(buf)`` and ``zones(head)``: the GPU sections by name, and where GPU code may
    lie as a file's head tells (``gpucode``); None for a format that carries no GPU code
    (Mach-O: CUDA left macOS).
    """

    name: Format  # ``BinaryFacts.format``, the value the JSON documents carry
    title: str  # the format in messages: "malformed ELF: ..."
    magics: frozenset[bytes]  # the first bytes that claim the format (at most four)
    slices: ReadSlices
    ranges: Callable[[SparseBuffer], Ranges]
    sections: Callable[[SparseBuffer], Sections | None] | None = None
    zones: Callable[[SparseBuffer], Ranges] | None = None

    def claims(self, head: bytes) -> bool:
        """Whether a file's first bytes (four are enough for every format) are this format's."""
        return any(head.startswith(magic) for magic in self.magics)

    def read(
        self, buf: Buffer | SparseBuffer, path: str, raw_hits: list[RawHit] | None, gpu: GpuScan | None = None
    ) -> BinaryFacts:
        """The facts of a file already known to be of this format; every failure is one
        ``BinaryError`` naming the format, except ``MissingRange`` (fetch, then ask again)."""
        bytes(buf[:4])  # the magic first, as a sniff would: a sparse buffer without it asks for it alone
        try:
            slices = self.slices(buf, path, raw_hits, gpu)
        except (struct.error, ValueError, OverflowError) as exc:  # BinaryError is a ValueError
            raise BinaryError(f"malformed {self.title}: {exc}") from exc
        return BinaryFacts(path=path, format=self.name, size=len(buf), slices=slices)

    def needed_ranges(self, buf: SparseBuffer) -> Ranges:
        """The byte ranges ``read`` will read, as far as the bytes held so far tell.

        This is the whole protocol of a partial read (the streaming scan, or a reader that
        fetches byte ranges over HTTP): hold the head, ask, fetch what is named, ask again
        once those bytes are held, until an answer names nothing new; each answer only adds
        ranges (the header names the tables, the tables name the strings they point at).
        Ranges that cannot be known yet are left out, never guessed, so ``read`` may still
        raise ``MissingRange``: fetch that range (and ask again) and read again."""
        try:
            bytes(buf[:4])
        except MissingRange:
            return [(0, min(4, len(buf)))]  # not even the magic yet: the reader starts there
        return self.ranges(buf)

    def gpu_sections(self, buf: SparseBuffer) -> Sections | None:
        """The GPU sections by name (offset, size) as far as the captured bytes tell; None
        when they do not, ``{}`` for a format without GPU code."""
        if self.sections is None:
            return {}
        try:
            return self.sections(buf)
        except _UNANSWERED:
            return None

    def gpu_zones(self, head: SparseBuffer) -> Ranges:
        """Where GPU code may lie, from a file's head: the whole file when the head does not
        tell, nothing for a format without GPU code."""
        if self.zones is None:
            return []
        try:
            return self.zones(head)
        except _UNANSWERED:
            return [(0, len(head))]
