"""Finding a byte string in a large buffer without holding the GIL: glibc's ``memmem``.

The raw marker scan looks at every byte of every compiled member (700 MB in vLLM's wheel)
while other threads inflate and hash. ``bytes.find`` holds the GIL for the whole search and
runs at about 2 GB/s here; ``memmem`` (glibc, macOS's libc) runs at about 6 GB/s, and called
through ``ctypes`` (a ``CDLL`` function) it lets the GIL go, so the workers stop waiting on
each other for it. No library on PyPI offers a GIL-free ``find`` on a buffer, hence these
few lines. Where the C library has no ``memmem`` (Windows' CRT), where the buffer cannot
lend its address (a read-only map), and for short spans, where a ``ctypes`` call costs more
than it saves, the buffer's own ``find`` answers: the result is the same either way
(``tests/binary/test_bytesearch.py`` holds the two to each other).

Many small texts (a package's thousands of ``.py`` files, each below ``MIN_SPAN``) are
searched a few MB at a time, joined (``holders``), so that they too are searched by
``memmem``, once per needle and group instead of once per needle and file.
"""

from __future__ import annotations

import bisect
import mmap
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

Buffer = bytes | bytearray | mmap.mmap

MIN_SPAN = 1 << 16  # below this a ctypes call (about 1 µs) costs more than it saves
# (``ctypes`` itself is imported the first time a span is this long: a small wheel never pays)

_Memmem = Callable[[int, int, bytes, int], int | None]
_memmem: _Memmem | None = None
_loaded = False


def _load() -> _Memmem | None:
    """The C library's ``memmem`` with its argument types set, or None where there is none."""
    global _memmem, _loaded
    if _loaded:
        return _memmem
    _loaded = True
    try:
        import ctypes

        fn: Any = ctypes.CDLL(None).memmem  # the C library already in the process
    except (OSError, AttributeError, TypeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
    _memmem = cast(_Memmem, fn)
    return _memmem


def _address(buf: Buffer) -> tuple[int, Any] | None:
    """Where ``buf``'s bytes start in memory, and the object that must stay alive (and, for
    a map, be dropped before the map may close) while the address is used."""
    import ctypes

    if isinstance(buf, bytes):
        pointer = ctypes.c_char_p(buf)  # the bytes object's own storage: no copy
        return ctypes.cast(pointer, ctypes.c_void_p).value or 0, pointer
    try:
        view = ctypes.c_char.from_buffer(buf)  # bytearray, a writable map
    except (TypeError, ValueError, BufferError):
        return None  # a read-only map: its own find
    return ctypes.addressof(view), view


def find(buf: Buffer, needle: bytes, start: int = 0, end: int | None = None) -> int:
    """``buf.find(needle, start, end)``, searched by ``memmem`` with the GIL released when
    the span is long enough to pay for the call."""
    stop = len(buf) if end is None else min(end, len(buf))
    start = max(0, start)
    if stop - start < MIN_SPAN or not needle:
        return buf.find(needle, start, stop)
    memmem = _load()
    located = _address(buf) if memmem is not None else None
    if memmem is None or located is None:
        return buf.find(needle, start, stop)
    base, keep = located
    del located
    try:
        hit = memmem(base + start, stop - start, needle, len(needle))
    finally:
        del keep  # a map's exported buffer is released here, before anyone closes the map
    return -1 if hit is None else hit - base


GROUP = 1 << 20  # texts are joined into buffers of about this size: a bounded copy each


def holders(texts: Sequence[bytes], needles: Iterable[bytes]) -> dict[bytes, list[int]]:
    """Each needle -> the indexes of the texts that hold it, ascending: what ``needle in
    text`` says of every text, with each group of texts searched by one ``find`` per needle
    and text holding it (vLLM's 2,349 ``.py`` files, 33 MB, searched for 61 names: 0.62 s by
    ``in``, 0.21 s so). The texts are joined with a NUL between them, so a needle without
    one cannot match across two; a needle with one (or empty) is looked for text by text.
    A needle that holds another is looked for only in that one's holders, where they are few
    (``LoadLibraryEx`` in ``LoadLibrary``'s)."""
    wanted = list(dict.fromkeys(needles))
    out: dict[bytes, list[int]] = {n: [] for n in wanted}
    whole = [n for n in wanted if n and b"\0" not in n]
    for n in wanted:
        if n not in whole:
            out[n] = [i for i, text in enumerate(texts) if n in text]
    total = sum(map(len, texts))
    inside: dict[bytes, bytes] = {}  # a needle -> the shortest other it holds
    for n in whole:
        shorter = min((s for s in whole if s != n and s in n), key=len, default=None)
        if shorter is not None:
            inside[n] = shorter
    searched = [n for n in whole if n not in inside]
    first = 0
    while first < len(texts) and searched:
        starts = [0]  # where each text of the group starts in the joined buffer, and its end
        last = first
        while last < len(texts) and (last == first or starts[-1] + len(texts[last]) <= GROUP):
            starts.append(starts[-1] + len(texts[last]) + 1)
            last += 1
        joined = b"\0".join(texts[first:last])
        for n in searched:
            at = find(joined, n)
            while at >= 0:
                k = bisect.bisect_right(starts, at) - 1
                out[n].append(first + k)
                at = find(joined, n, starts[k + 1])
        first = last
    for n, s in inside.items():  # the texts that hold n hold s: only those, where they are few
        if sum(len(texts[i]) for i in out[s]) * 4 < total:
            out[n] = [i for i in out[s] if n in texts[i]]
        else:
            out[n] = holders(texts, [n])[n]
    return out
