"""binary/pe.py: the fixture PE files (MinGW and MSVC, x86-64, x86, arm64) read as LIEF reads
them (``tests/lib/lief_reference.py``), headers that are no PE refused in one line, and the
ranges a streaming scan must capture before the tables can be read."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from torchwheel.binary import marker_record
from torchwheel.binary.facts import BinaryError
from torchwheel.binary.pe import needed_ranges, read_pe
from torchwheel.binary.sparse import SparseBuffer

from ..lib.lief_reference import read_pe as lief_read_pe

_SCENARIOS = [
    "pe_mingw_marker_2_10",
    "pe_mingw_def_export",
    "pe_mingw_unstable_cpp",
    "pe_msvc_marker_2_11",
    "pe_msvc_unstable_cpp",
    "pe_probe_x86",
    "pe_probe_arm64",
]


@pytest.mark.parametrize("scenario", _SCENARIOS)
def test_read_pe_agrees_with_lief(built_fixtures: dict[str, Path], scenario: str) -> None:
    data = built_fixtures[scenario].read_bytes()
    ours, ref = read_pe(data, scenario), lief_read_pe(data, scenario)
    assert (ours.arch, ours.exports, ours.needed, ours.imports) == (
        ref.arch,
        ref.exports,
        ref.needed,
        ref.imports,
    )
    assert ours.marker == ref.marker
    assert ours.companions == ref.companions


def test_the_arch_of_each_machine(built_fixtures: dict[str, Path]) -> None:
    arches = [
        read_pe(built_fixtures[s].read_bytes(), s).arch
        for s in ("pe_msvc_marker_2_11", "pe_probe_x86", "pe_probe_arm64")
    ]
    assert arches == ["x86_64", "x86", "arm64"]


def _patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


def _refusal(data: bytes) -> str:
    with pytest.raises(BinaryError) as info:
        read_pe(data, "x.pyd")
    return str(info.value)


def test_headers_that_are_no_pe(built_fixtures: dict[str, Path]) -> None:
    data = built_fixtures["pe_msvc_marker_2_11"].read_bytes()
    pe_at = struct.unpack_from("<I", data, 0x3C)[0]
    assert _refusal(data[:0x30]) == "truncated DOS header"
    assert _refusal(_patched(data, pe_at, "<I", 0)) == (
        "no PE signature where the DOS header points (a DOS program or truncated)"
    )
    assert _refusal(_patched(data, 0x3C, "<I", len(data))) == (
        "no PE signature where the DOS header points (a DOS program or truncated)"
    )
    assert _refusal(_patched(data, pe_at + 24, "<H", 0x107)) == "optional header is neither PE32 nor PE32+"
    assert _refusal(_patched(data, pe_at + 20, "<H", 90)) == "optional header is truncated"
    table = _refusal(_patched(data, pe_at + 6, "<H", 0xFFFF))  # 65,535 sections
    assert table.startswith("section table at 0x") and table.endswith(" lies outside the file")


def test_needed_ranges_of_a_head_only_capture(built_fixtures: dict[str, Path]) -> None:
    data = built_fixtures["pe_msvc_marker_2_11"].read_bytes()
    head = SparseBuffer.from_ranges(len(data), {0: data[:0x40]})
    ranges = needed_ranges(head)
    assert len(ranges) == 1 and ranges[0][0] == struct.unpack_from("<I", data, 0x3C)[0]  # the PE header next


def test_needed_ranges_lead_to_a_complete_reading(built_fixtures: dict[str, Path]) -> None:
    """What a streaming scan does (``memberscan``): keep the marker records it passes, capture
    the ranges asked for until nothing new is asked, then read; the reading equals the whole
    file's."""
    data = built_fixtures["pe_msvc_marker_2_11"].read_bytes()
    hits = marker_record.Hits()
    marker_record.collect_hits(data, hits)
    pieces = {0: data[:0x40], **hits.raw}
    for _ in range(10):
        view = SparseBuffer.from_ranges(len(data), pieces)
        more = {
            lo: data[lo:hi] for lo, hi in needed_ranges(view) if lo not in pieces or len(pieces[lo]) < hi - lo
        }
        if not more:
            break
        pieces.update(more)
    whole = read_pe(data, "x.pyd")
    partial = read_pe(SparseBuffer.from_ranges(len(data), pieces), "x.pyd", raw_hits=hits.ordered())
    assert (partial.exports, partial.imports, partial.needed, partial.marker) == (
        whole.exports, whole.imports, whole.needed, whole.marker,
    )  # fmt: skip
    assert sum(len(p) for p in pieces.values()) < len(data)  # only a part was needed


def test_not_a_pe_needs_no_ranges() -> None:
    assert needed_ranges(SparseBuffer.from_ranges(64, {0: b"\0" * 64})) == []
