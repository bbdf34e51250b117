"""A member's bytes, inflated with the output bounded on every step: a zip bomb cannot
balloon one chunk, and no member comes out larger than the bytes asked for.

Stored, deflate (ISA-L: about 1.7x zlib's speed, and it lets go of the GIL, so threads inflate
members of one archive at once), bzip2 and lzma, the methods pip and ``installer`` read through
``zipfile``; anything else is refused by name. ``zipdir`` says where a member's bytes are,
``archive`` streams them through here.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from isal import isal_zlib

from torchwheel.errors import InputError
from torchwheel.wheel.zipdir import Member

if TYPE_CHECKING:  # bz2 and lzma are imported by the rare member that uses them: 1 ms of start-up
    import bz2
    import lzma

STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14
inflate_lib = isal_zlib  # ISA-L inflates ~1.7x faster than zlib and releases the GIL
INFLATE_ERROR: type[Exception] = isal_zlib.error  # type: ignore[assignment]


class Decompressor(Protocol):
    def push(self, data: bytes) -> Iterator[bytes]: ...

    def finish(self) -> bytes: ...


class _NothingHeldBack:
    """A decoder that yields everything it has as it goes: nothing is left for ``finish``."""

    def finish(self) -> bytes:
        return b""


class _Stored(_NothingHeldBack):
    def push(self, data: bytes) -> Iterator[bytes]:
        if data:
            yield data


class _Inflate:
    """Deflate with output bounded per call: a bomb cannot balloon one chunk."""

    def __init__(self, lib: object, out_chunk: int) -> None:
        self._d = lib.decompressobj(-15)  # type: ignore[attr-defined]
        self._out = out_chunk

    def push(self, data: bytes) -> Iterator[bytes]:
        while data:
            out: bytes = self._d.decompress(data, self._out)
            data = self._d.unconsumed_tail
            if not out:
                break
            yield out

    def finish(self) -> bytes:
        return bytes(self._d.flush())


class _Buffered(_NothingHeldBack):
    """bzip2 and lzma keep unread input inside: drain with ``max_length`` until they ask for more."""

    def __init__(self, d: bz2.BZ2Decompressor | lzma.LZMADecompressor, out_chunk: int) -> None:
        self._d, self._out = d, out_chunk

    def push(self, data: bytes) -> Iterator[bytes]:
        if self._d.eof:
            return  # bytes after the end of the stream: ignored, as zipfile does
        out = self._d.decompress(data, self._out)
        if out:
            yield out
        while not self._d.needs_input and not self._d.eof:
            out = self._d.decompress(b"", self._out)
            if out:
                yield out


class _Lzma(_NothingHeldBack):
    """zip's lzma: a 4-byte header and the LZMA1 properties, then the raw stream."""

    def __init__(self, member: Member, out_chunk: int) -> None:
        self._member, self._out = member, out_chunk
        self._head = b""
        self._inner: _Buffered | None = None

    def push(self, data: bytes) -> Iterator[bytes]:
        if self._inner is None:
            self._head += data
            if len(self._head) < 9:
                return
            psize = struct.unpack_from("<H", self._head, 2)[0]
            if psize != 5:
                raise ValueError(f"unsupported LZMA properties size {psize}")
            if len(self._head) < 4 + psize:
                return
            props, data = self._head[4:9], self._head[9:]
            lc_lp_pb, dict_size = props[0], struct.unpack_from("<I", props, 1)[0]
            if lc_lp_pb >= 9 * 5 * 5:
                raise ValueError("bad LZMA properties")
            import lzma

            # a dictionary bigger than the member is never needed: liblzma allocates it up front
            dict_size = max(4096, min(dict_size, self._member.file_size))
            lzma1 = {"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc_lp_pb % 9}
            lzma1 |= {"lp": lc_lp_pb // 9 % 5, "pb": lc_lp_pb // 45}
            raw = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[lzma1])
            self._inner = _Buffered(raw, self._out)
        import lzma  # imported above, when the stream began

        try:
            yield from self._inner.push(data)
        except lzma.LZMAError as exc:  # as a ValueError: DECOMPRESS_ERRORS need not import lzma
            raise ValueError(str(exc)) from exc


def decompressor(member: Member, out_chunk: int) -> Decompressor:
    if member.compress_type == STORED:
        return _Stored()
    if member.compress_type == DEFLATED:
        return _Inflate(inflate_lib, out_chunk)
    if member.compress_type == BZIP2:
        import bz2

        return _Buffered(bz2.BZ2Decompressor(), out_chunk)
    if member.compress_type == LZMA:
        return _Lzma(member, out_chunk)
    raise InputError(
        f"member {member.filename!r} uses compression method {member.compress_type}, which torchwheel "
        "does not read (stored, deflate, bzip2, lzma)",
        reference="archive-damaged",
    )


DECOMPRESS_ERRORS: tuple[type[Exception], ...] = (
    INFLATE_ERROR,
    zlib.error,
    OSError,
    EOFError,
    ValueError,  # lzma's errors too (_Lzma)
)
