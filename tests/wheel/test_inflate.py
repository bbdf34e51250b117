"""wheel/inflate.py: every method pip and installer read through ``zipfile`` (stored,
deflate, bzip2, lzma) inflates to the member's bytes with no chunk over the bound asked for;
any other method is refused by name."""

from __future__ import annotations

import io
import os
import zipfile

import pytest

from torchwheel.errors import InputError
from torchwheel.wheel.inflate import BZIP2, DECOMPRESS_ERRORS, DEFLATED, LZMA, STORED, decompressor
from torchwheel.wheel.zipdir import Member, read_index

_DATA = os.urandom(3000) + b"\0" * 200_000  # incompressible, then a run that inflates 1000-fold


def _member_and_bytes(method: int) -> tuple[Member, bytes]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        zf.writestr("m", _DATA)
    data = buf.getvalue()
    (m,), _ = read_index(lambda at, n: data[at : at + n], len(data))
    return m, data[m.data_offset : m.data_offset + m.compress_size]


@pytest.mark.parametrize("method", [STORED, DEFLATED, BZIP2, LZMA])
@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_each_method_inflates_to_the_members_bytes_in_bounded_chunks(method: int, piece: int) -> None:
    m, raw = _member_and_bytes(method)
    d = decompressor(m, 8192)
    chunks: list[bytes] = []
    for at in range(0, len(raw), piece):
        chunks.extend(d.push(raw[at : at + piece]))
    # the bound holds per push; ISA-L's finish() hands back what it buffered (tens of KiB at
    # most), which the caller (``archive``) counts against the declared size
    assert max(len(c) for c in chunks) <= (piece if method == STORED else 8192)
    assert b"".join([*chunks, d.finish()]) == _DATA


def test_bytes_after_a_bzip2_stream_are_ignored_as_zipfile_does() -> None:
    m, raw = _member_and_bytes(BZIP2)
    d = decompressor(m, 1 << 20)
    out = b"".join([*d.push(raw), *d.push(b"trailing garbage")])
    assert out == _DATA


def test_an_unknown_method_is_refused_by_name() -> None:
    m, _ = _member_and_bytes(STORED)
    m.compress_type = 93  # zstd: zipfile (before 3.14) does not read it
    with pytest.raises(InputError) as info:
        decompressor(m, 8192)
    assert str(info.value) == (
        "member 'm' uses compression method 93, which torchwheel does not read (stored, deflate, bzip2, lzma)"
    )


def test_lzma_properties_of_another_size_are_refused() -> None:
    m, raw = _member_and_bytes(LZMA)
    bad = raw[:2] + (6).to_bytes(2, "little") + raw[4:]
    with pytest.raises(ValueError, match="unsupported LZMA properties size 6"):
        list(decompressor(m, 8192).push(bad))


def test_a_corrupt_lzma_stream_is_one_of_the_decompress_errors() -> None:
    """lzma's own error comes out as a ValueError: DECOMPRESS_ERRORS holds no lzma type, so a
    wheel with no lzma member never imports lzma."""
    m, raw = _member_and_bytes(LZMA)
    bad = raw[:9] + bytes(b ^ 0xFF for b in raw[9:])
    with pytest.raises(DECOMPRESS_ERRORS):
        dec = decompressor(m, 8192)
        list(dec.push(bad))
        dec.finish()
