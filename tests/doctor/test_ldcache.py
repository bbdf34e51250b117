"""``doctor.ldcache``: the ldconfig cache read from the file, held to ``ldconfig -p`` on this
machine, in both of glibc's layouts, and refused (never guessed) when it is not a cache."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from torchwheel.doctor.ldcache import CacheProblem, LdCache, parse_cache, read_cache


def _ldconfig() -> dict[str, list[str]]:
    proc = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True)
    out: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines()[1:]:
        if "=>" in line and "x86-64" in line:
            name = line.strip().split(" (")[0]
            out.setdefault(name, []).append(line.rsplit("=> ", 1)[1])
    return out


def test_the_cache_is_what_ldconfig_lists() -> None:
    cache = read_cache(machine=62)
    assert isinstance(cache, LdCache), cache
    want = _ldconfig()
    assert len(want) > 50
    assert {k: list(v) for k, v in cache.entries.items()} == want
    assert cache.lookup("libc.so.6") and not cache.lookup("libavutil.so.58")


def _new_format(entries: list[tuple[int, str, str]]) -> bytes:
    strings = b""
    header_and_entries = 48 + 24 * len(entries)
    rows = b""
    for flags, key, value in entries:
        k = header_and_entries + len(strings)
        strings += key.encode() + b"\0"
        v = header_and_entries + len(strings)
        strings += value.encode() + b"\0"
        rows += struct.pack("<iIIIQ", flags, k, v, 0, 0)
    header = b"glibc-ld.so.cache1.1" + struct.pack("<II", len(entries), len(strings)) + bytes(20)
    return header + rows + strings


def test_both_layouts_and_the_architecture() -> None:
    entries = [(0x0303, "libfoo.so.1", "/x/libfoo.so.1"), (0x0A03, "libfoo.so.1", "/arm/libfoo.so.1"),
               (0x0003, "libbar.so.2", "/i386/libbar.so.2")]  # fmt: skip
    new = _new_format(entries)
    assert parse_cache(new, 62) == {"libfoo.so.1": ("/x/libfoo.so.1",)}
    assert parse_cache(new, 183) == {"libfoo.so.1": ("/arm/libfoo.so.1",)}
    assert set(parse_cache(new)) == {"libfoo.so.1", "libbar.so.2"}
    # the old layout in front (libc5-era entries, 12 bytes each), the new one at an 8-byte boundary
    old = b"ld.so-1.7.0" + b"\0" + struct.pack("<I", 1) + struct.pack("<iII", 1, 0, 0)
    old += bytes((-len(old)) % 8)
    assert parse_cache(old + new, 62) == {"libfoo.so.1": ("/x/libfoo.so.1",)}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "not a glibc ld.so.cache"),
        (b"glibc-ld.so.cache1.1" + struct.pack("<II", 10**6, 0) + bytes(20), "do not fit"),
        (_new_format([(0x0303, "a", "b")])[:-3], "outside the file"),
    ],
)
def test_not_a_cache(data: bytes, words: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=words):
        parse_cache(data, 62)
    path = tmp_path / "ld.so.cache"
    path.write_bytes(data)
    found = read_cache(path, 62)
    assert isinstance(found, CacheProblem) and words in found.reason
    assert isinstance(read_cache(tmp_path / "absent"), CacheProblem)
