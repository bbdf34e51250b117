"""``binary.FORMATS`` and its rows (``binary.format.FormatReader``): each row's magic claims
its own fixture binaries and nothing else, and every dispatch (``read_binary``, the streaming
scan) goes through the table alone, so a format added as one row is read everywhere."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

import torchwheel.binary
from torchwheel.binary import FORMATS, BinaryError, memberscan, not_a_binary, read_binary, sniff
from torchwheel.binary.common import companions_of, slice_facts
from torchwheel.binary.facts import SliceFacts
from torchwheel.binary.format import FormatReader
from torchwheel.binary.gpucode import GpuScan
from torchwheel.binary.marker_record import RawHit
from torchwheel.binary.sparse import SparseBuffer
from torchwheel.wheel.record import record_hash

from ..lib.helpers import fixture_build


def _scenarios(fmt: str) -> list[str]:
    return [name for name, sc in fixture_build().SCENARIOS.items() if sc.format == fmt]


@pytest.mark.parametrize("fmt", [row.name for row in FORMATS])
def test_each_row_claims_its_fixtures_and_no_other_row_does(
    built_fixtures: dict[str, Path], fmt: str
) -> None:
    names = _scenarios(fmt)
    assert names, f"no fixture binary of format {fmt}"
    for name in names:
        head = built_fixtures[name].read_bytes()[:4]
        assert [row.name for row in FORMATS if row.claims(head)] == [fmt], name
        found = sniff(head)
        assert found is not None and found.name == fmt
        assert read_binary(built_fixtures[name].read_bytes(), name).format == fmt


@pytest.mark.parametrize(
    "head",
    [b"", b"\x7fEL", b"PK\x03\x04", b"#!/b", b"TORC", b"\0\0\0\0", b"\xca\xfe\xba"],
)
def test_no_row_claims_other_bytes(head: bytes) -> None:
    assert sniff(head) is None


def test_the_text_fixtures_are_no_format(built_fixtures: dict[str, Path]) -> None:
    head = built_fixtures["bad_not_binary"].read_bytes()[:4]
    assert sniff(head) is None
    with pytest.raises(BinaryError, match=r"^not an ELF, Mach-O or PE file$"):
        read_binary(built_fixtures["bad_not_binary"].read_bytes(), "x")


def test_rows_are_distinct() -> None:
    assert len({row.name for row in FORMATS}) == len({row.title for row in FORMATS}) == len(FORMATS)
    magics = [(row.name, m) for row in FORMATS for m in row.magics]
    for name, magic in magics:  # no magic starts another's: the order of the table cannot matter
        assert [n for n, m in magics if m.startswith(magic) or magic.startswith(m)] == [name]
    assert str(not_a_binary()) == "not an ELF, Mach-O or PE file"


def test_a_format_without_gpu_code_answers_nothing() -> None:
    macho = next(row for row in FORMATS if row.name == "macho")
    head = SparseBuffer.from_ranges(64, {0: b"\xcf\xfa\xed\xfe" + bytes(60)})
    assert macho.sections is None and macho.gpu_sections(head) == {} and macho.gpu_zones(head) == []


def test_needed_ranges_asks_for_the_magic_first() -> None:
    for row in FORMATS:
        empty = SparseBuffer.from_ranges(1 << 20, {})
        assert row.needed_ranges(empty) == [(0, 4)]


# -- a format the package does not know, added as one row -------------------------------
# TOYF | u32 offset of a NUL-terminated export name | padding; the name lies far past the
# head, so a streaming scan finds it only by asking the row what it needs.

_TOY_SIZE = 1 << 20
_NAME_AT = 600_000


def _toy_file(name: bytes = b"PyInit_toy") -> bytes:
    data = bytearray(_TOY_SIZE)
    data[:8] = b"TOYF" + struct.pack(">I", _NAME_AT)
    data[_NAME_AT : _NAME_AT + len(name) + 1] = name + b"\0"
    return bytes(data)


class _Calls:
    def __init__(self) -> None:
        self.ranges = 0
        self.reads = 0


def _toy_row(calls: _Calls) -> FormatReader:
    def ranges(buf: SparseBuffer) -> list[tuple[int, int]]:
        calls.ranges += 1
        (at,) = struct.unpack(">I", buf[4:8])
        return [(at, at + 64)]

    def slices(
        buf: bytes | SparseBuffer, path: str, raw_hits: list[RawHit] | None, gpu: GpuScan | None
    ) -> tuple[SliceFacts, ...]:
        calls.reads += 1
        (at,) = struct.unpack(">I", buf[4:8])
        name = bytes(buf[at : at + 64]).split(b"\0", 1)[0].decode()
        return (
            slice_facts(
                buf,
                arch="toy",
                exports=[name],
                imports=[],
                needed=[],
                exported=None,
                companions=companions_of([name]),
                file_range=(0, len(buf)),
                raw_hits=raw_hits,
            ),
        )

    return FormatReader(
        name="toy",  # a format facts.Format does not name yet: the dispatch does not care
        title="TOY",
        magics=frozenset({b"TOYF"}),
        slices=slices,
        ranges=ranges,
    )


def _chunked(data: bytes, size: int = 1 << 16) -> memberscan.Stream:
    def stream(stop: int | None) -> Iterator[bytes]:
        end = len(data) if stop is None else min(len(data), stop)
        for at in range(0, end, size):
            yield data[at : min(at + size, end)]

    return stream


def test_a_new_row_is_read_whole_and_streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _Calls()
    monkeypatch.setattr(torchwheel.binary, "FORMATS", (*FORMATS, _toy_row(calls)))
    data = _toy_file()
    whole = read_binary(data, "toy.so")
    assert (whole.format, whole.slices[0].exports, whole.slices[0].hooks) == (
        "toy",
        ("PyInit_toy",),
        ("PyInit_toy",),
    )

    (digest, size), streamed = memberscan.scan("toy.so", len(data), _chunked(data), big=0, head=64, tail=0)
    assert isinstance(streamed, type(whole)) and streamed == whole
    assert (digest, size) == (record_hash(data), len(data))
    assert calls.ranges >= 1  # the stream asked the row, and kept the name as it went by
    assert calls.reads == 2  # once whole, once streamed: no fallback pass was needed
    with pytest.raises(BinaryError, match=r"^not an ELF, Mach-O, PE or TOY file$"):
        read_binary(b"JUNK" + bytes(60), "junk")


def test_a_streamed_member_is_sniffed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The row found on the first chunk is what every later question goes to."""
    calls = _Calls()
    monkeypatch.setattr(torchwheel.binary, "FORMATS", (*FORMATS, _toy_row(calls)))
    seen: list[bytes] = []

    def counting(head: bytes) -> FormatReader | None:
        seen.append(head)
        return torchwheel.binary.sniff(head)

    monkeypatch.setattr(memberscan, "sniff", counting)
    data = _toy_file()
    _, facts = memberscan.scan("toy.so", len(data), _chunked(data, 4096), big=0, head=64, tail=0)
    assert not isinstance(facts, BinaryError) and facts.format == "toy"
    assert seen == [b"TOYF"]
