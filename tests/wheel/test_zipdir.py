"""wheel/zipdir.py: the central directory read as ``zipfile`` reads it (the reference, as
lief is for the binary readers), and the APPNOTE defects pip and installer refuse through
3.12's zipfile refused on every Python before any member is read."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from torchwheel.errors import InputError
from torchwheel.wheel.zipdir import Member, local_data_offset, read_index


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, (2024, 5, 17, 13, 45, 58))
            info.compress_type = method
            zf.writestr(info, data)
    return buf.getvalue()


def _index(data: bytes) -> list[Member]:
    members, _ = read_index(lambda at, n: data[at : at + n], len(data))
    return members


def _refused(data: bytes) -> str:
    with pytest.raises(InputError) as info:
        _index(data)
    return str(info.value)


_TWO = {"demo/__init__.py": b"x = 1\n" * 50, "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\n"}


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
)
def test_members_agree_with_zipfile(method: int) -> None:
    data = _zip(_TWO, method)
    ref = zipfile.ZipFile(io.BytesIO(data)).infolist()
    got = _index(data)
    assert [
        (m.filename, m.header_offset, m.compress_size, m.file_size, m.CRC, m.compress_type) for m in got
    ] == [(i.filename, i.header_offset, i.compress_size, i.file_size, i.CRC, i.compress_type) for i in ref]
    assert got[0].date_time == (2024, 5, 17, 13, 45, 58)
    assert [m.data_offset for m in got] == [local_data_offset(lambda a, n: data[a : a + n], i) for i in ref]


def test_directory_start_is_returned() -> None:
    data = _zip(_TWO)
    _, start = read_index(lambda at, n: data[at : at + n], len(data))
    assert data[start : start + 4] == b"PK\x01\x02"


def test_bytes_prepended_shift_every_offset() -> None:
    plain = _zip(_TWO)
    data = b"#!/bin/sh\n" + plain
    assert [m.header_offset for m in _index(data)] == [m.header_offset + 10 for m in _index(plain)]


def test_is_dir_and_an_empty_archive() -> None:
    assert [m.is_dir() for m in _index(_zip({"pkg/": b"", "pkg/a": b"1"}))] == [True, False]
    assert _index(_zip({})) == []


def test_not_a_zip() -> None:
    assert _refused(b"just some bytes") == "not a zip archive (no end-of-central-directory record)"


def _patch(data: bytes, at: int, fmt: str, value: int) -> bytes:
    return data[:at] + struct.pack(fmt, value) + data[at + struct.calcsize(fmt) :]


def _central_at(data: bytes, k: int = 0) -> int:
    at = -1
    for _ in range(k + 1):
        at = data.index(b"PK\x01\x02", at + 1)
    return at


def test_an_encrypted_member_is_refused() -> None:
    data = _zip({"a": b"1"})
    data = _patch(data, _central_at(data) + 8, "<H", 1)
    assert _refused(data) == "member 'a' is encrypted, which wheels cannot be"


def test_a_newer_zip_version_is_refused() -> None:
    data = _zip({"a": b"1"})
    data = _patch(data, _central_at(data) + 6, "<H", 64)
    assert _refused(data) == "member 'a' needs zip version 6.4; 6.3 is the newest read"


def test_a_local_name_other_than_the_central_name_is_refused() -> None:
    data = _zip({"demo/ok.py": b"1"}, zipfile.ZIP_STORED)
    data = data.replace(b"demo/ok.py", b"../evil.py", 1)  # the first copy is the local header's
    assert (
        _refused(data)
        == "member 'demo/ok.py': local header names it '../evil.py'; refusing (pip and installer do)"
    )


def test_a_crc_that_disagrees_with_the_local_header_is_refused() -> None:
    data = _zip({"a": b"1"})
    data = _patch(data, _central_at(data) + 16, "<I", 0xDEADBEEF)
    assert _refused(data) == "member 'a': local and central headers disagree on CRC or sizes"


def test_overlapping_members_are_refused() -> None:
    data = _zip({"a": b"1" * 100, "b": b"2" * 100}, zipfile.ZIP_STORED)
    second = _central_at(data, 1)
    first_offset = struct.unpack_from("<I", data, _central_at(data) + 42)[0]
    data = _patch(data, second + 42, "<I", first_offset)  # b's entry points at a's bytes
    assert _refused(data) == "member 'a': its data overlap 'b' (overlapping entries: a zip bomb)"


def test_a_member_count_that_disagrees_with_the_directory_is_refused() -> None:
    data = _zip(_TWO)
    eocd = data.rindex(b"PK\x05\x06")
    one = _patch(_patch(data, eocd + 8, "<H", 1), eocd + 10, "<H", 1)
    assert _refused(one) == "the central directory holds more entries than the 1 it declares"


def test_a_directory_bigger_than_the_file_is_refused() -> None:
    data = _zip({"a": b"1"})
    eocd = data.rindex(b"PK\x05\x06")
    data = _patch(data, eocd + 12, "<I", 10_000)
    assert _refused(data) == f"the central directory claims 10,000 bytes; only {eocd:,} precede its end"


def test_multi_disk_archives_are_refused() -> None:
    data = _zip({"a": b"1"})
    eocd = data.rindex(b"PK\x05\x06")
    assert _refused(_patch(data, eocd + 4, "<H", 1)) == "multi-disk zip archives are not supported"


def test_a_corrupt_central_signature_is_refused() -> None:
    data = _zip(_TWO)
    at = _central_at(data, 1)
    data = data[:at] + b"PK\x09\x09" + data[at + 4 :]
    assert _refused(data) == "central entry 2 is corrupt (bad signature)"


def test_a_nul_in_a_name_is_refused() -> None:
    data = _zip({"ab": b"1"}, zipfile.ZIP_STORED).replace(b"ab", b"a\0")
    assert _refused(data) == "central entry 1: member name b'a\\x00' contains a NUL byte"


def test_cp437_and_utf8_names() -> None:
    assert [m.filename for m in _index(_zip({"demo/naïve.py": b"1"}))] == ["demo/naïve.py"]  # UTF-8 flagged
    data = _zip({"x": b"1"}, zipfile.ZIP_STORED).replace(b"x", b"\x82")  # no UTF-8 flag: cp437
    assert [m.filename for m in _index(data)] == ["é"]


class _Unseekable(io.BytesIO):
    def seekable(self) -> bool:
        return False

    def seek(self, *args: object) -> int:
        raise io.UnsupportedOperation("seek")


def test_a_data_descriptor_must_repeat_the_central_entry() -> None:
    buf = _Unseekable()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("a", "w") as f:
        f.write(b"hello" * 10)  # written to a stream: sizes and CRC in a data descriptor
    good = buf.getvalue()
    assert [m.file_size for m in _index(good)] == [50]
    desc = good.index(b"PK\x07\x08")
    bad = _patch(good, desc + 4, "<I", 0)
    assert (
        _refused(bad)
        == "member 'a': its data descriptor disagrees with the central directory on CRC or sizes"
    )


def test_local_data_offset_of_a_missing_local_header() -> None:
    data = _zip({"a": b"1"})
    entry = Member("a", 3, 0, 0, 0, 0, 0, 0, 0)
    with pytest.raises(InputError, match=r"^member 'a': local header is missing or corrupt$"):
        local_data_offset(lambda at, n: data[at : at + n], entry)
