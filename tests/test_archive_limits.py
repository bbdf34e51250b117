"""The archive layer under hostile input: every claim bounded, every refusal one line.

The hostile archives are built here with plain ``zipfile`` and ``struct`` (never with
torchwheel's writer), so a bug in the writer cannot hide a bug in the reader.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import struct
import subprocess
import sys
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

from torchwheel import limits
from torchwheel.errors import InputError
from torchwheel.wheel.archive import WheelArchive, WheelContents, parse_filename, parse_record

from .lib.helpers import torchwheel

DIST = "evil-1.0.dist-info"
WHEEL = b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
METADATA = b"Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"
NAME = "evil-1.0-py3-none-any.whl"


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(
    members: dict[str, bytes],
    *,
    wheel: bytes = WHEEL,
    record: bytes | None = None,
    method: int = zipfile.ZIP_DEFLATED,
) -> bytearray:
    """A valid little wheel (RECORD right) unless ``record`` replaces RECORD."""
    files = {**members, f"{DIST}/WHEEL": wheel, f"{DIST}/METADATA": METADATA}
    rows = "".join(f"{n},{_hash(d)},{len(d)}\n" for n, d in files.items()) + f"{DIST}/RECORD,,\n"
    files[f"{DIST}/RECORD"] = rows.encode() if record is None else record
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0))
            info.compress_type = method
            info.external_attr = 0o100644 << 16
            zf.writestr(info, data)
    return bytearray(buf.getvalue())


def _central(data: bytearray) -> list[int]:
    """Offsets of the central entries, in order."""
    eocd = data.rfind(b"PK\x05\x06")
    count, _, start = struct.unpack_from("<HII", data, eocd + 10)
    out, at = [], start
    for _ in range(count):
        out.append(at)
        nlen, elen, clen = struct.unpack_from("<HHH", data, at + 28)
        at += 46 + nlen + elen + clen
    return out


def _entry(data: bytearray, name: str) -> tuple[int, int]:
    """(central entry offset, local header offset) of member ``name``."""
    for at in _central(data):
        nlen = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + nlen] == name.encode():
            return at, struct.unpack_from("<I", data, at + 42)[0]
    raise KeyError(name)


def _write(tmp_path: Path, data: bytes | bytearray, name: str = NAME) -> Path:
    path = tmp_path / "in" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(bytes(data))
    return path


def _refused(
    path: Path, *words: str, command: tuple[str, ...] = ("check",), env: dict[str, str] | None = None
) -> str:
    """Exit 2, one line naming ``words``, no traceback, the input untouched."""
    before = path.read_bytes()
    result = torchwheel(*command, str(path), cwd=path.parent, env=env)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr
    assert path.read_bytes() == before
    return lines[0]


# -- finding 4: compressed tag sets are bounded before they are expanded ----------------------


def _dotted(prefix: str, n: int) -> str:
    return ".".join(f"{prefix}{i}" for i in range(n))


def test_wheel_tag_lines_are_bounded_before_expanding() -> None:
    contents = WheelContents(
        path="x",
        filename_name="evil",
        filename_version="1.0",
        filename_tags=frozenset(),
        build_tag=None,
        dist_info=DIST,
        wheel_text=f"Wheel-Version: 1.0\nTag: {_dotted('p', 20)}-{_dotted('a', 20)}-{_dotted('x', 20)}\n",
        metadata_text="",
        record=None,
    )
    with pytest.raises(limits.LimitExceeded, match="max-tags"):
        contents.wheel_tags  # noqa: B018 - the property is the parser


def test_file_name_tags_are_bounded_before_expanding() -> None:
    name = f"evil-1.0-{_dotted('p', 17)}-{_dotted('a', 17)}-{_dotted('x', 17)}.whl"
    with pytest.raises(limits.LimitExceeded, match="max-tags"):
        parse_filename(name)
    assert len(parse_filename("evil-1.0-py2.py3-none-any.whl").tags) == 2


def test_tag_bomb_in_wheel_is_one_line(tmp_path: Path) -> None:
    bomb = f"Tag: {_dotted('p', 40)}-{_dotted('a', 40)}-{_dotted('x', 40)}\n".encode()
    path = _write(tmp_path, _wheel({}, wheel=WHEEL + bomb))
    _refused(path, "max-tags", "TORCHWHEEL_MAX_TAGS")


# -- finding 5: bzip2/lzma output is capped at the declared size ------------------------------


def _lying(method: int, payload: bytes, declared: int) -> bytearray:
    """A member whose compressed stream inflates to ``payload`` while both headers say
    ``declared`` bytes."""
    data = _wheel({"evil/bomb.bin": payload}, method=method)
    central, local = _entry(data, "evil/bomb.bin")
    struct.pack_into("<I", data, central + 24, declared)
    struct.pack_into("<I", data, local + 22, declared)
    return data


@pytest.fixture(scope="module")
def zeros() -> bytes:
    return b"\0" * (32 << 20)


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_lying_bzip2_lzma_size_caps_output(method: int, zeros: bytes, tmp_path: Path) -> None:
    path = _write(tmp_path, _lying(method, zeros, 1000))
    assert path.stat().st_size < 1 << 20  # 32 MiB inflated from a few KB
    with WheelArchive(path) as archive:
        tracemalloc.start()
        try:
            with pytest.raises(InputError, match="beyond its declared 1,000 bytes"):
                for _ in archive.stream("evil/bomb.bin"):
                    pass
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 1 << 20, peak  # zipfile inflated all 32 MiB at once
    _refused(path, "beyond its declared")


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_honest_bzip2_lzma_members_read(method: int, tmp_path: Path) -> None:
    payload = bytes(range(256)) * 4096
    path = _write(tmp_path, _wheel({"evil/data.bin": payload}, method=method))
    with WheelArchive(path) as archive:
        assert archive.read("evil/data.bin") == payload
    assert torchwheel("check", str(path), cwd=tmp_path).returncode == 0


# -- finding 6: overlapping entries ----------------------------------------------------------


def test_many_central_entries_on_one_local_header(tmp_path: Path) -> None:
    """The overlapping-entry bomb: thousands of central entries, one local header."""
    data = _wheel({"evil/a.py": b"x = 1\n" * 1000})
    central, _ = _entry(data, "evil/a.py")
    nlen = struct.unpack_from("<H", data, central + 28)[0]
    entry = bytes(data[central : central + 46 + nlen])
    eocd = data.rfind(b"PK\x05\x06")
    count, size, _start = struct.unpack_from("<HII", data, eocd + 10)
    assert nlen == 9
    extra = b"".join(entry[:46] + f"e/{i:07d}".encode() for i in range(3000))
    out = data[:eocd] + extra + data[eocd:]
    struct.pack_into("<HHI", out, len(out) - 22 + 8, count + 3000, count + 3000, size + len(extra))
    path = _write(tmp_path, out)
    _refused(path, "overlap")


def test_local_header_inside_another_members_data(tmp_path: Path) -> None:
    """A second entry whose local header lies inside the first member's stored data."""
    inner = _wheel({"evil/inner.py": b"y = 2\n"}, method=zipfile.ZIP_STORED)
    inner_at = _entry(inner, "evil/inner.py")[1]
    data = _wheel({"evil/outer.bin": bytes(inner)}, method=zipfile.ZIP_STORED)
    _, outer_local = _entry(data, "evil/outer.bin")
    nlen, elen = struct.unpack_from("<HH", data, outer_local + 26)
    outer_data = outer_local + 30 + nlen + elen
    central_inner, _ = _entry(inner, "evil/inner.py")
    entry = inner[central_inner : central_inner + 46 + len("evil/inner.py")]
    struct.pack_into("<I", entry, 42, outer_data + inner_at)
    eocd = data.rfind(b"PK\x05\x06")
    count, size, _ = struct.unpack_from("<HII", data, eocd + 10)
    out = data[:eocd] + entry + data[eocd:]
    struct.pack_into("<HHI", out, len(out) - 22 + 8, count + 1, count + 1, size + len(entry))
    _refused(_write(tmp_path, out), "overlap")


def test_data_running_into_the_central_directory(tmp_path: Path) -> None:
    data = _wheel({"evil/a.py": b"x = 1\n"}, method=zipfile.ZIP_STORED)
    central, local = _entry(data, "evil/a.py")
    for at in (central + 20, central + 24, local + 18, local + 22):
        struct.pack_into("<I", data, at, 1 << 20)
    _refused(_write(tmp_path, data), "overlap")


# -- finding 10: local name differs from the central one --------------------------------------


def _raw_zip(entries: list[tuple[str, str, bytes]]) -> bytes:
    """Stored members written by hand: (central name, local name, data)."""
    out, central = bytearray(), bytearray()
    for cname, lname, data in entries:
        crc = zlib.crc32(data)
        offset = len(out)
        out += struct.pack(
            "<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0x5821, crc, len(data), len(data), len(lname), 0
        )
        out += lname.encode() + data
        central += struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            0x314,
            20,
            0,
            0,
            0,
            0x5821,
            crc,
            len(data),
            len(data),
            len(cname),
            0,
            0,
            0,
            0,
            0o100644 << 16,
            offset,
        )
        central += cname.encode()
    eocd = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(central), len(out), 0
    )
    return bytes(out + central + eocd)


def _renamed_locally(local_name: str) -> bytes:
    return _raw_zip(
        [
            ("evil/ok.py", local_name, b"print('hi')\n"),
            (f"{DIST}/WHEEL", f"{DIST}/WHEEL", WHEEL),
            (f"{DIST}/METADATA", f"{DIST}/METADATA", METADATA),
        ]
    )


def test_raw_zip_helper_is_a_valid_wheel(tmp_path: Path) -> None:
    path = _write(tmp_path, _renamed_locally("evil/ok.py"))
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
    result = torchwheel("check", str(path), cwd=tmp_path)
    assert result.returncode == 1 and not result.stderr, result.stderr  # read: it only lacks a RECORD
    assert "TW401" in result.stdout


def test_local_name_differs_from_central(tmp_path: Path) -> None:
    path = _write(tmp_path, _renamed_locally("../../../../tmp/evil.py"))
    _refused(path, "local header names it", "../../../../tmp/evil.py")
    _refused(path, "local header names it", command=("tag", "-w", str(tmp_path / "out")))
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_same_length_local_rename(tmp_path: Path) -> None:
    _refused(_write(tmp_path, _renamed_locally("evil/ok.pz")), "local header names it")


# -- finding 16: real messages, not "internal error" ------------------------------------------


def test_record_field_over_csv_limit(tmp_path: Path) -> None:
    record = f'"{"x" * 200_000}",sha256=abc,1\n'.encode()
    _refused(_write(tmp_path, _wheel({}, record=record)), "RECORD is not readable CSV")


def test_record_with_cr_only_line_endings(tmp_path: Path) -> None:
    good = _wheel({"evil/a.py": b"x = 1\n"})
    with zipfile.ZipFile(io.BytesIO(bytes(good))) as zf:
        rows = zf.read(f"{DIST}/RECORD").replace(b"\n", b"\r")
    path = _write(tmp_path, _wheel({"evil/a.py": b"x = 1\n"}, record=rows))
    result = torchwheel("check", str(path), cwd=tmp_path)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr  # a CR alone ends a row, as csv reads it


def test_record_with_a_quote_and_cr_inside_a_field(tmp_path: Path) -> None:
    record = b'evil/a.py,"sha256=\rabc,1\r\x00\n'
    result = torchwheel("check", str(_write(tmp_path, _wheel({}, record=record))), cwd=tmp_path)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert result.returncode == 2, result.stderr  # the quote runs past the CR: a row of two fields
    assert "does not have 3 fields" in result.stderr


def test_version_needed_above_6_3(tmp_path: Path) -> None:
    data = _wheel({"evil/a.py": b"x = 1\n"})
    central, _ = _entry(data, "evil/a.py")
    struct.pack_into("<H", data, central + 6, 64)
    _refused(_write(tmp_path, data), "needs zip version 6.4")


def test_empty_member_name(tmp_path: Path) -> None:
    data = _wheel({"evil/a.py": b"x = 1\n"})
    central, local = _entry(data, "evil/a.py")
    for at in (central + 28, local + 26):  # a zero-length name; the old bytes become extra field
        nlen, elen = struct.unpack_from("<HH", data, at)
        struct.pack_into("<HH", data, at, 0, nlen + elen)
    _refused(_write(tmp_path, data), "empty member name")


def test_memory_error_is_one_line_naming_the_budget(tmp_path: Path) -> None:
    """A MemoryError no limit caught (here: every limit raised, address space capped at
    400 MB, a 600 MB METADATA) still ends in one line that names the budget."""
    path = tmp_path / "in" / NAME
    path.parent.mkdir()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr(f"{DIST}/WHEEL", WHEEL)
        with zf.open(f"{DIST}/METADATA", "w", force_zip64=True) as fh:
            fh.write(METADATA + b"\n")
            chunk = b"a" * (1 << 20)
            for _ in range(600):
                fh.write(chunk)
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))\n"
        "from torchwheel import cli\n"
        f"sys.argv = ['torchwheel', 'show', {str(path)!r}]\n"
        "cli.main()\n"
    )
    env = {**os.environ, "TORCHWHEEL_MAX_METADATA_BYTES": "2G"}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "out of memory" in result.stderr and "300 MB" in result.stderr, result.stderr


# -- finding 8 and the budget: counts, names, sizes, ratios -----------------------------------


def _many(n: int) -> bytearray:
    return _wheel({f"evil/m{i}.py": b"" for i in range(n)})


def test_member_count_limit_and_env(tmp_path: Path) -> None:
    path = _write(tmp_path, _many(20))
    env = {**os.environ, "TORCHWHEEL_MAX_MEMBERS": "10"}
    _refused(path, "max-members", "TORCHWHEEL_MAX_MEMBERS", env=env)


def test_member_count_claimed_beyond_the_directory(tmp_path: Path) -> None:
    """65,535 entries claimed in a few hundred bytes: refused before anything is built."""
    data = _many(3)
    struct.pack_into("<HH", data, len(data) - 22 + 8, 0xFFFF - 1, 0xFFFF - 1)
    _refused(_write(tmp_path, data), "central directory claims")


def test_hidden_entries_beyond_the_declared_count(tmp_path: Path) -> None:
    data = _many(3)
    count = struct.unpack_from("<H", data, len(data) - 22 + 10)[0]
    struct.pack_into("<HH", data, len(data) - 22 + 8, count - 1, count - 1)
    _refused(_write(tmp_path, data), "more entries than")


def test_name_length_limit(tmp_path: Path) -> None:
    _refused(_write(tmp_path, _wheel({"evil/" + "n" * 5000 + ".py": b""})), "max-name-length")


def test_record_row_limit(tmp_path: Path) -> None:
    env = {**os.environ, "TORCHWHEEL_MAX_RECORD_ROWS": "3"}
    _refused(_write(tmp_path, _many(5)), "max-record-rows", env=env)
    with pytest.raises(limits.LimitExceeded):
        parse_record("a,,\n" * 500_000)


def test_metadata_size_limit(tmp_path: Path) -> None:
    env = {**os.environ, "TORCHWHEEL_MAX_METADATA_BYTES": "10"}
    _refused(_write(tmp_path, _many(1)), "max-metadata-bytes", env=env)


def test_max_member_size_option(tmp_path: Path) -> None:
    path = _write(tmp_path, _wheel({"evil/big.bin": bytes(range(256)) * 8192}))  # 2 MiB
    line = _refused(
        path, "max-member-size", "--max-member-size", command=("--max-member-size", "1M", "check")
    )
    assert "2,097,152" in line
    ok = torchwheel("--max-member-size", "4M", "check", str(path), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    env = {**os.environ, "TORCHWHEEL_MAX_MEMBER_SIZE": "1M"}
    _refused(path, "max-member-size", env=env)
    bad = torchwheel("--max-member-size", "lots", "check", str(path), cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1


def _declare(data: bytearray, name: str, size: int) -> None:
    central, local = _entry(data, name)
    struct.pack_into("<I", data, central + 24, size)
    struct.pack_into("<I", data, local + 22, size)


def test_member_inflate_ratio(tmp_path: Path) -> None:
    data = _wheel({"evil/huge.so": b"\0" * 4096})
    _declare(data, "evil/huge.so", 0xF0000000)  # both headers agree: 3.9 GB from ~30 bytes
    _refused(_write(tmp_path, data), "max-inflate-ratio")


def test_total_inflate_ratio(tmp_path: Path) -> None:
    """Each member under the per-member floor, together 2,000x the archive."""
    names = [f"evil/part{i}.bin" for i in range(40)]
    data = _wheel({n: b"\0" for n in names})
    for n in names:
        _declare(data, n, 15 << 20)
    _refused(_write(tmp_path, data), "max-inflate-ratio", "declared inflated total")


def test_limits_module_parses_sizes() -> None:
    assert limits._parse_size("64K") == 64 << 10 and limits._parse_size("2GiB") == 2 << 30
    with pytest.raises(ValueError):
        limits._parse_size("lots")


# -- honest variants the stricter reader must still accept ------------------------------------


class _Unseekable(io.RawIOBase):
    """zipfile writes data descriptors (flag bit 3) when it cannot seek back."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: bytes) -> int:  # type: ignore[override]
        self.buf += b
        return len(b)


def test_data_descriptors_zip64_and_prepended_bytes_still_read(tmp_path: Path) -> None:
    plain = _wheel({"evil/a.py": b"x = 1\n" * 100})
    out = _Unseekable()
    with zipfile.ZipFile(io.BytesIO(bytes(plain))) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            with zout.open(info.filename, "w", force_zip64=True) as fh:
                fh.write(zin.read(info))
    assert any(i.flag_bits & 0x8 for i in zipfile.ZipFile(io.BytesIO(bytes(out.buf))).infolist())
    for data in (bytes(out.buf), b"#!/bin/sh\nexit 0\n" + bytes(plain)):  # zipfile accepts both
        path = _write(tmp_path, data)
        with WheelArchive(path) as archive:
            assert archive.read("evil/a.py") == b"x = 1\n" * 100
        result = torchwheel("check", str(path), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
