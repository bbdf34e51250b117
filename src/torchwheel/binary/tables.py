"""A compiled file's tables alone, read where they lie: what an environment's triage needs.

``doctor`` asks of every compiled file of every installed distribution whether it touches
torch at all (torch imports, a torch or toolkit library it links, the marker). A CUDA
environment holds 4 GB of such files (cuBLAS, cuDNN, triton), whose code says nothing about
that: the answer is in their headers and dynamic tables, a few hundred KB. So the file is
read as a partial file (``binary.FormatReader``'s protocol): its head and tail, then the
ranges ``needed_ranges`` names until it names nothing new, then ``read`` with no marker scan
and no GPU scan, each ``MissingRange`` fetched and read again. Every byte comes by ``pread``
(no map whose pages a hostile layout could make resident), and the bytes fetched are held to
``max-binary-tables``: a file whose tables claim more is a ``BinaryError``.

The facts lack what only a scan of every byte finds (raw marker records, GPU code):
``memberscan`` reads the files that turn out to touch torch, whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from torchwheel import limits
from torchwheel.binary import BinaryError, BinaryFacts, FormatReader, not_a_binary, sniff
from torchwheel.binary.sparse import MissingRange, SparseBuffer
from torchwheel.safeopen import open_regular

T = TypeVar("T")

_EDGE = 64 << 10  # the head and the tail fetched first: headers, program and section tables
_ROUNDS = 64  # needed_ranges questions plus MissingRange fetches, per file


def read_tables(path: Path, label: str, follow_symlinks: bool = False) -> BinaryFacts:
    """The facts of the file at ``path`` (named ``label``) from its tables alone; a
    ``BinaryError`` for a file that is no readable binary, ``OSError`` for one that cannot be
    opened (a FIFO, a device, mode 000)."""

    def read(fmt: FormatReader, buf: SparseBuffer) -> BinaryFacts:
        return fmt.read(buf, label, [], None)

    return read_ranged(path, read, lambda fmt, buf: fmt.needed_ranges(buf), follow_symlinks)


def read_ranged(
    path: Path,
    read: Callable[[FormatReader, SparseBuffer], T],
    ranges: Callable[[FormatReader, SparseBuffer], list[tuple[int, int]]],
    follow_symlinks: bool = False,
) -> T:
    """``read`` of the file at ``path`` from the byte ranges ``ranges`` names (asked until it
    names nothing new), each ``MissingRange`` fetched and ``read`` asked again, within
    ``max-binary-tables`` (module docstring): any reader of a file's tables, such as
    ``elfdynamic``'s for the loader."""
    fd = open_regular(path, follow_symlinks)
    try:
        return _read(_Ranged(fd, os.fstat(fd).st_size), read, ranges)
    finally:
        os.close(fd)


class _Ranged:
    """The pieces of one file fetched so far, and the budget left for more."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        self.pieces: dict[int, bytes] = {}
        self.left = limits.current().max_binary_tables.value

    def fetch(self, lo: int, hi: int) -> bool:
        """Hold bytes ``[lo, hi)`` (clipped to the file); False when all were held already."""
        lo, hi = max(0, lo), min(self.size, hi)
        if hi <= lo or self._held(lo, hi):
            return False
        if hi - lo > self.left:
            raise BinaryError(
                f"its tables claim more than the {limits.current().max_binary_tables.value:,} bytes "
                "a binary's tables may take (max-binary-tables)"
            )
        data = os.pread(self.fd, hi - lo, lo)
        if len(data) < hi - lo:
            raise BinaryError(f"shrank while it was read (bytes {lo:#x}..{hi:#x} are gone)")
        self.left -= len(data)
        self.pieces[lo] = data
        return True

    def _held(self, lo: int, hi: int) -> bool:
        return any(start <= lo and hi <= start + len(data) for start, data in self.pieces.items())

    def view(self) -> SparseBuffer:
        return SparseBuffer.from_ranges(self.size, self.pieces)


def _read(
    file: _Ranged,
    read: Callable[[FormatReader, SparseBuffer], T],
    ranges: Callable[[FormatReader, SparseBuffer], list[tuple[int, int]]],
) -> T:
    if file.size == 0:
        raise BinaryError("empty file")
    file.fetch(0, _EDGE)
    fmt = sniff(file.pieces[0][:4])
    if fmt is None:
        raise not_a_binary()
    file.fetch(file.size - _EDGE, file.size)
    for _ in range(_ROUNDS):
        fetched = [file.fetch(lo, hi) for lo, hi in ranges(fmt, file.view())]
        if not any(fetched):
            break
    for _ in range(_ROUNDS):
        try:
            return read(fmt, file.view())
        except MissingRange as missing:
            if not file.fetch(missing.start, missing.stop):
                raise BinaryError(
                    f"its reader asked again for bytes {missing.start:#x}..{missing.stop:#x}"
                ) from None
            for lo, hi in ranges(fmt, file.view()):
                file.fetch(lo, hi)
    raise BinaryError("its reader kept asking for more bytes; giving up")
