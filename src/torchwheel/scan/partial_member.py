"""One compiled member of a hosted wheel read from the compressed prefix its reader names
(``scan.partial``; the bytes come from ``ranged.Inflating``).

An ELF member is read as the loader reads it, through ``PT_DYNAMIC``: the ELF header, the
program headers, the dynamic section, the .dynsym, .dynstr and hash table it names, the
marker's bytes at the symbol's address. The section table lies at the end of the file and
reaching it would inflate every byte, so the reader is shown the member as if it had none
(``_sectionless``: ``e_shoff``/``e_shnum`` read as 0, in the copy the reader sees). The
format row's protocol does the rest (``binary.format``): ``needed_ranges`` until it names
nothing new, then ``read`` with ``raw_hits=[]``, each ``MissingRange`` inflated up to and
read again. A marker record that no symbol exports is not looked for: finding one means
inflating every byte of the member, which on today's wheels (none exports a marker) would
cost the whole download; ``partial`` reports the marker axis as not read instead.

Anything else is read whole by ``memberscan.scan``, the full read's own path: Mach-O and PE
(their tables lie at the end), ``--gpu-code`` (GPU code needs the section table), and a member
whose reader named bytes it had already inflated past (``layout``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchwheel.binary import BinaryError, BinaryFacts, FormatReader, sniff
from torchwheel.binary.capture import Capture, covered, merge
from torchwheel.binary.memberscan import scan
from torchwheel.binary.sparse import MissingRange, SparseBuffer
from torchwheel.net.ranged import Inflating, RangedWheel, stream_of

PARTIAL, WHOLE = "partial", "whole"
_HEAD = 1 << 16  # an ELF member's first bytes: its header and program headers
_KEEP = 8 << 20  # and at least this much of its head, kept as it goes by (``_Held``)
_QUESTIONS = 32  # rounds of needed_ranges / read per member before it is read whole
_ELF_MAGIC = b"\x7fELF"


def _zeroed(pieces: dict[int, bytes], lo: int, hi: int) -> None:
    """Bytes ``[lo, hi)`` read as zeros in every piece that holds some of them."""
    for start, data in list(pieces.items()):
        a, b = max(lo, start), min(hi, start + len(data))
        if a < b:
            pieces[start] = data[: a - start] + bytes(b - a) + data[b - start :]


def _sectionless(pieces: dict[int, bytes], size: int) -> SparseBuffer:
    """The captured bytes as the reader is shown them: an ELF header without a section table
    (``e_shoff``, ``e_shnum`` and ``e_shstrndx`` zero), so it takes the loader's route."""
    shown = dict(pieces)
    try:
        head = SparseBuffer.from_ranges(size, pieces)[0:5]
    except MissingRange:
        head = b""
    if head[:4] == _ELF_MAGIC and len(head) == 5:
        is64 = head[4] == 2
        _zeroed(shown, *((0x28, 0x30) if is64 else (0x20, 0x24)))  # e_shoff
        _zeroed(shown, *((0x3C, 0x40) if is64 else (0x30, 0x34)))  # e_shnum, e_shstrndx
    return SparseBuffer.from_ranges(size, shown)


class _Held:
    """What a member's reader holds: the ranges it named (``wanted``: inflated up to, and
    kept), and its head as far as the stream goes by anyway (``kept``: the first 1/32 of the
    member, at least ``_KEEP``, as ``memberscan`` keeps it). The loader's tables lie in the
    head, but only the dynamic section names them, and it lies behind the code: on the way
    to it, the head goes by first."""

    def __init__(self, name: str, size: int) -> None:
        self.size = size
        self.wanted = Capture([(0, min(size, _HEAD))], name)
        self.kept = Capture([(0, min(size, max(_KEEP, size // 32)))], name)

    def feed(self, at: int, chunk: bytes) -> None:
        self.wanted.feed(at, chunk)
        self.kept.feed(at, chunk)

    @property
    def pieces(self) -> dict[int, bytes]:
        pieces = dict(self.kept.pieces)
        merge(pieces, self.wanted.pieces)
        return pieces


def _advance(inflating: Inflating, held: _Held, size: int) -> bool:
    """Inflate until every range the reader named is held; False when one of them was
    inflated past before it was named (only a new pass has it)."""
    held.feed(*inflating.last)  # ranges named since the last chunk went by, from that chunk
    view = SparseBuffer.from_ranges(size, held.pieces)
    target = 0
    wanted = held.wanted
    for lo, hi in zip(wanted.los, wanted.his, strict=True):
        if not covered(view, lo, min(hi, size)):
            if lo < inflating.produced and not covered(view, lo, inflating.produced):
                return False
            target = max(target, hi)
    for at, chunk in inflating.advance(target):
        held.feed(at, chunk)
    return True


@dataclass
class _Pass:
    """A member's partial read: its reader asked, its prefix inflated, until it answers."""

    fmt: FormatReader
    inflating: Inflating
    held: _Held
    name: str
    size: int

    def read(self) -> BinaryFacts | BinaryError | None:
        """The facts from the prefix the reader names, or None: read the member whole."""
        capture = self.held.wanted
        for _ in range(_QUESTIONS):
            if not _advance(self.inflating, self.held, self.size):
                return None
            view = _sectionless(self.held.pieces, self.size)
            new = [(lo, hi) for lo, hi in self.fmt.needed_ranges(view) if not covered(view, lo, hi)]
            if new:
                if not any([capture.want(lo, hi) for lo, hi in new]):
                    return None  # named, wanted, and still not held: past the member's end
                continue
            try:
                return self.fmt.read(view, self.name, [], None)
            except MissingRange as missing:
                if not capture.want(missing.start, missing.stop):
                    return None
            except BinaryError as exc:
                return exc
        return None

    def stats(self, wheel: RangedWheel) -> dict[str, Any]:
        """The inflated prefix, the furthest byte named, and the compressed bytes they took."""
        at = self.inflating.at - wheel.infos[self.name].data_offset
        return {"inflated_bytes": self.inflating.produced, "needed_to": max(self.held.wanted.his)} | {
            "compressed_bytes": at
        }


def read_member(
    wheel: RangedWheel, name: str, whole: str | None
) -> tuple[BinaryFacts | BinaryError, dict[str, Any]]:
    """One compiled member's facts, and how it was read: ``partial`` (with ``_Pass.stats``),
    or ``whole`` and why (``whole``: a reason given, else ``format`` or ``layout``)."""
    size = wheel.member_size(name)
    how: dict[str, Any] = {"read": WHOLE, "why": whole or "format", "size": size}
    if size and whole is None:
        held = _Held(name, size)
        inflating = wheel.inflating(name)
        for at, chunk in inflating.advance(min(size, _HEAD)):
            held.feed(at, chunk)
        fmt = sniff(bytes(SparseBuffer.from_ranges(size, held.pieces)[0:4]))
        if fmt is not None and fmt.name == "elf":
            member = _Pass(fmt, inflating, held, name, size)
            facts = member.read()
            how |= member.stats(wheel)
            if facts is not None:
                return facts, how | {"read": PARTIAL, "why": None}
            how["why"] = "layout"
    _, read = scan(name, size, stream_of(wheel, name), hashing=False)
    return read, how
