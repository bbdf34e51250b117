from __future__ import annotations

import mmap
from pathlib import Path

import pytest

from torchwheel.binary import marker_record
from torchwheel.binary.marker_record import MarkerError, MarkerRecord
from torchwheel.version import FeatureVersion

from ..lib.helpers import marker_hits

V210 = FeatureVersion(2, 10)


def test_encode_is_the_documented_bytes() -> None:
    assert marker_record.encode(V210).hex() == "544f52434841424901020a000000000000"


def test_round_trip_with_abi_tag() -> None:
    v = FeatureVersion(2, 11, 3, 7)
    assert marker_record.decode(marker_record.encode(v)) == MarkerRecord(1, v)


def test_longer_record_of_known_schema_is_accepted() -> None:
    assert marker_record.decode(marker_record.encode(V210) + b"future-fields").version == V210


def test_unknown_schema_is_reported_not_guessed() -> None:
    rec = marker_record.decode(b"TORCHABI\x02" + bytes(20))
    assert rec.schema == 2
    assert rec.version is None
    assert not rec.known


@pytest.mark.parametrize("raw", [b"", b"TORCHAB", b"NOTMAGIC\x01" + bytes(8), b"TORCHABI\x01\x02\x0a"])
def test_decode_rejects_non_records(raw: bytes) -> None:
    with pytest.raises(MarkerError):
        marker_record.decode(raw)


def test_scan_finds_every_record_and_skips_text() -> None:
    v212 = FeatureVersion(2, 12)
    buf = (
        b"\0" * 5
        + marker_record.encode(V210)
        + b"error: TORCHABI missing"  # text, not a record
        + marker_record.encode(v212)
        + b"TORCHABI\x03"
        + bytes(8)  # unknown schema
        + b"TORCHABI\x01\x02"  # truncated at the end
    )
    hits = marker_hits(buf)
    assert [h.record.version for h in hits] == [V210, v212, None]
    assert hits[0].offset == 5
    assert hits[2].record.schema == 3


def test_scan_respects_the_range() -> None:
    buf = marker_record.encode(V210) + bytes(3) + marker_record.encode(FeatureVersion(2, 12))
    assert [h.offset for h in marker_hits(buf, 1)] == [20]
    assert marker_hits(buf, 0, 16) == []


def test_scan_works_on_an_mmap(tmp_path: Path) -> None:
    p = tmp_path / "blob"
    p.write_bytes(bytes(100) + marker_record.encode(V210))
    with p.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert [(h.offset, h.record.version) for h in marker_hits(mm)] == [(100, V210)]
