"""The ldconfig cache (``/etc/ld.so.cache``): where ``ld.so`` finds a library by its name after
RPATH, ``LD_LIBRARY_PATH`` and RUNPATH, and before its default folders (ld.so(8)).

Read from the file, not from ``ldconfig -p`` (a program's output format, and a process per
run): glibc's own format, ``sysdeps/generic/dl-cache.h``. The new format ("glibc-ld.so.cache"
"1.1": a 48-byte header with the entry count and the string table's length, then 24-byte
entries ``i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap``, string offsets counted
from the header's start), alone or behind the old one ("ld.so-1.7.0", 12-byte entries; the
new header follows it at an 8-byte boundary). An entry's flags say its kind (``& 0xff``: 1 or
3, an ELF library) and its architecture (``& 0xff00``: ``0x0300`` x86-64, ``0x0a00`` AArch64;
0 for i386 and the 32-bit ones); the loader takes entries of its own architecture only.

Bounded: the file is read up to ``_MAX_BYTES`` (a cache of 50,000 libraries is 4 MB), every
count and offset is checked against the bytes present; a file that is not a cache is said so
(``CacheProblem``), never guessed at.
"""

from __future__ import annotations

import struct
from pathlib import Path

from torchwheel.frozen import frozen
from torchwheel.safeopen import read_regular

CACHE = Path("/etc/ld.so.cache")
_MAX_BYTES = 32 << 20
_OLD = b"ld.so-1.7.0"
_NEW = b"glibc-ld.so.cache1.1"
_HEADER = 48
_ENTRY = 24
# the architecture bits of an entry's flags (dl-cache.h) per ELF e_machine; a machine not
# named here keeps every ELF entry (the loader then refuses a file of another machine,
# which ``libsearch`` checks too)
_ARCH_FLAGS = {62: 0x0300, 22: 0x0400, 21: 0x0500, 183: 0x0A00, 3: 0x0000, 40: 0x0900}


@frozen
class LdCache:
    """Library name -> the paths the cache lists for it, in the cache's order."""

    entries: dict[str, tuple[str, ...]]
    source: str

    def lookup(self, name: str) -> tuple[str, ...]:
        return self.entries.get(name, ())


@frozen
class CacheProblem:
    """The cache could not be read: ``reason`` says why (no file, not a cache, truncated)."""

    source: str
    reason: str


def read_cache(path: Path = CACHE, machine: int | None = None) -> LdCache | CacheProblem:
    """The cache at ``path``, with the entries for ELF ``machine`` (e_machine: 62 x86-64;
    None: every ELF entry)."""
    try:
        data = read_regular(path, _MAX_BYTES)
    except OSError as exc:
        return CacheProblem(str(path), f"not read ({exc.strerror or exc})")
    try:
        return LdCache(parse_cache(data, machine), str(path))
    except ValueError as exc:
        return CacheProblem(str(path), str(exc))


def parse_cache(data: bytes, machine: int | None = None) -> dict[str, tuple[str, ...]]:
    """The entries of a cache file's bytes (module docstring); ``ValueError`` says what is wrong."""
    start = 0
    if data.startswith(_OLD):
        if len(data) < 16:
            raise ValueError("truncated old-format header")
        (old_count,) = struct.unpack_from("<I", data, 12)  # after the 11-byte magic, aligned
        start = 16 + 12 * old_count
        start = (start + 7) & ~7
    if data[start : start + len(_NEW)] != _NEW:
        raise ValueError("not a glibc ld.so.cache (no 'glibc-ld.so.cache1.1' header)")
    if len(data) < start + _HEADER:
        raise ValueError("truncated header")
    (count,) = struct.unpack_from("<I", data, start + 20)
    if start + _HEADER + count * _ENTRY > len(data):
        raise ValueError(f"{count} entries do not fit in its {len(data)} bytes")
    arch = _ARCH_FLAGS.get(machine) if machine is not None else None
    out: dict[str, list[str]] = {}
    for i in range(count):
        flags, key, value, _, _ = struct.unpack_from("<iIIIQ", data, start + _HEADER + i * _ENTRY)
        if flags & 0xFF not in (1, 3) or (arch is not None and flags & 0xFF00 != arch):
            continue
        out.setdefault(_string(data, start, key), []).append(_string(data, start, value))
    return {name: tuple(paths) for name, paths in out.items()}


def _string(data: bytes, start: int, offset: int) -> str:
    at = start + offset
    end = data.find(b"\0", at, at + 4096)
    if at >= len(data) or end < 0:
        raise ValueError(f"a string offset ({offset:#x}) lies outside the file")
    return data[at:end].decode("utf-8", "surrogateescape")
