"""An ELF file's ``DT_NEEDED`` and dynamic string table alone: the cheapest bytes that say
whether a library may use another one's symbols.

A library can use torch only by naming it: a ``DT_NEEDED`` entry on one of torch's libraries,
or an undefined dynamic symbol, whose name the dynamic string table holds (it holds every
dynamic symbol's name, and the needed libraries' names). Both lie in a few pages: the program
headers, ``PT_DYNAMIC`` and the string table it points at. The symbol table itself (a few MB,
100,000 entries in libtorch_cpu.so) is never read, and no name is decoded but the needed ones.
A string table that holds none of a caller's needles cannot name a symbol that starts with or
contains one: such a file cannot import it, and a reader can pass it over; one that holds a
needle may (an export or a string may match too) and is read whole.

``doctor`` asks this of every compiled file of an environment (issue 49: 114 files, 103 MB
read whole only to learn that 111 of them do not touch torch). The file is mapped, so only
the pages these tables lie in are read; everything is checked against the file's size by the
same readers ``elf`` uses (``elflayout.Reader``, ``elfsymbols.dynamic_entries``).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterable
from pathlib import Path

from torchwheel import limits
from torchwheel.binary import bytesearch
from torchwheel.binary.elflayout import Reader
from torchwheel.binary.elfsymbols import dynamic_entries
from torchwheel.binary.facts import BinaryError
from torchwheel.frozen import frozen
from torchwheel.safeopen import open_regular

_DT_NEEDED, _DT_STRTAB, _DT_STRSZ = 1, 5, 10


@frozen
class DynamicNames:
    """``needed``: the ``DT_NEEDED`` names in their order; ``found``: the needles the
    dynamic string table holds (each looked for anywhere in it)."""

    needed: tuple[str, ...]
    found: frozenset[bytes]


def dynamic_names(path: Path, needles: Iterable[bytes] = ()) -> DynamicNames | None:
    """What ``path`` needs and which of ``needles`` its dynamic string table holds; None for a
    file that is no ELF file, has no ``PT_DYNAMIC`` (a static executable: it loads nothing),
    or whose tables do not read (the caller reads such a file whole and says why).
    ``OSError`` (a FIFO, a device, an unreadable file) passes to the caller."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size < 64:
            return None
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mm:
            if mm[:4] != b"\x7fELF":
                return None
            try:
                return _read(mm, str(path), tuple(needles))
            except (BinaryError, struct.error, limits.LimitExceeded):
                return None
    finally:
        os.close(fd)


def _read(mm: mmap.mmap, label: str, needles: tuple[bytes, ...]) -> DynamicNames | None:
    r = Reader(mm, label)
    loads, dynamic = r.segments()
    if dynamic is None:
        return None
    entries = dynamic_entries(r, dynamic.offset, dynamic.filesz)
    values = dict(entries)
    if _DT_STRTAB not in values:
        return None
    start = r.vaddr_to_offset(loads, values[_DT_STRTAB])
    if start is None:
        return None
    names = r.strtab(start, values.get(_DT_STRSZ, 0))
    needed = tuple(names.many(val for tag, val in entries if tag == _DT_NEEDED))
    stop = names.start + names.size  # names.data is the map itself: offsets into the file
    found = frozenset(n for n in needles if n and bytesearch.find(mm, n, start, stop) >= 0)
    return DynamicNames(needed, found)
