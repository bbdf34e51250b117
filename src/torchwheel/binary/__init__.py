"""Bytes (or an mmap) in, ``BinaryFacts`` out, over one table of formats (``FORMATS``).

The reader chosen is by magic, never by file name: wheels ship ``.so`` files that are
Mach-O and ``.pyd`` files are PE, and a misnamed file must still be read for what it is.
``sniff`` looks a file's first bytes up in the table, once, and hands back its row
(``format.FormatReader``); everything after that asks the row, never the table again:

* ``read_binary`` / ``read_path``: a file at hand, whole;
* a partial file (``memberscan``'s stream, or byte ranges fetched over HTTP): sniff the
  head, then ``fmt.needed_ranges(buf)`` on a ``SparseBuffer`` of the bytes held, fetch what
  it names and ask again until it names nothing new, then ``fmt.read(buf, path, raw_hits,
  gpu)``; a ``MissingRange`` from ``read`` names bytes still to fetch. ``raw_hits`` are the
  marker records of a scan of every byte (``marker_record.Hits``); a reader that did not
  see every byte passes ``[]`` and reports no raw records. ``fmt.gpu_zones(head)`` and
  ``fmt.gpu_sections(buf)`` say where GPU code may lie (``gpucode``).

A new format is one module that defines its ``FormatReader`` row, that row in ``FORMATS``,
and its name in ``facts.Format`` (the value the JSON documents carry); nothing in this
package dispatches on the format but ``sniff``.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from torchwheel.binary import elf, macho, pe
from torchwheel.binary.facts import BinaryError, BinaryFacts, Import, SliceFacts
from torchwheel.binary.format import FormatReader
from torchwheel.binary.marker_record import Buffer
from torchwheel.safeopen import open_regular

__all__ = [
    "FORMATS",
    "BinaryError",
    "BinaryFacts",
    "FormatReader",
    "Import",
    "SliceFacts",
    "not_a_binary",
    "read_binary",
    "read_path",
    "sniff",
]

#: Every format read, one row each; their magics are disjoint, so the order is only the
#: order of the error message.
FORMATS: tuple[FormatReader, ...] = (elf.READER, macho.READER, pe.READER)


def sniff(head: bytes) -> FormatReader | None:
    """The format a file's first bytes (four are enough) claim, or None for anything else."""
    return next((fmt for fmt in FORMATS if fmt.claims(head)), None)


def not_a_binary() -> BinaryError:
    """What a file no row claims is: "not an ELF, Mach-O or PE file"."""
    titles = [fmt.title for fmt in FORMATS]
    return BinaryError(f"not an {', '.join(titles[:-1])} or {titles[-1]} file")


def read_binary(buf: Buffer, path: str, raw_scan: bool = True) -> BinaryFacts:
    """Read one compiled file; every failure is a ``BinaryError`` naming the problem.

    ``raw_scan=False`` skips the byte scan for marker records: for torch's own libraries,
    whose exports are all that is asked, it would page in every byte of a 400 MB file (and
    count it as resident memory) to find nothing."""
    fmt = sniff(bytes(buf[:4]))
    if fmt is None:
        raise not_a_binary()
    return fmt.read(buf, path, None if raw_scan else [])


def read_path(path: str | os.PathLike[str], label: str | None = None, raw_scan: bool = True) -> BinaryFacts:
    """Map a file and read it; the map lets a 500 MB library cost only the pages we touch.

    ``label`` names the file in the facts (a member path inside an unpacked wheel)."""
    p = Path(path)
    try:
        with open(open_regular(p), "rb") as fh:  # never a FIFO or device (safeopen)
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise BinaryError("empty file")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return read_binary(mm, label or str(path), raw_scan)
    except OSError as exc:
        raise BinaryError(exc.strerror or str(exc)) from exc
