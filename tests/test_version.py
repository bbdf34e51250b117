from __future__ import annotations

import pytest

from torchwheel.version import FeatureVersion


def test_pack_matches_pytorch_layout() -> None:
    assert FeatureVersion(2, 10).to_int() == 0x020A000000000000
    assert FeatureVersion(2, 12).to_int() == 147492887796383744
    assert FeatureVersion(2, 11, 3, 7).to_int() == 0x020B030000000007
    assert FeatureVersion.from_int(0x020B030000000007) == FeatureVersion(2, 11, 3, 7)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.10", FeatureVersion(2, 10, 0)),
        ("2.10.0", FeatureVersion(2, 10, 0)),
        (" 2.11.3 ", FeatureVersion(2, 11, 3)),
        ("2.11.3+abi7", FeatureVersion(2, 11, 3, 7)),
        ("0x020A000000000000", FeatureVersion(2, 10)),
    ],
)
def test_parse(text: str, expected: FeatureVersion) -> None:
    assert FeatureVersion.parse(text) == expected


@pytest.mark.parametrize("text", ["", "2", "two.ten", "2.10.0.1", "2.300", "0xZZ", "0x1" + "0" * 16])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        FeatureVersion.parse(text)


def test_order_and_text() -> None:
    assert FeatureVersion(2, 9, 9) < FeatureVersion(2, 10) < FeatureVersion(2, 10, 0, 1)
    assert max(FeatureVersion(2, 13), FeatureVersion(2, 9)) == FeatureVersion(2, 13)
    assert str(FeatureVersion(2, 11, 3)) == "2.11.3"
    assert str(FeatureVersion(2, 11, 3, 7)) == "2.11.3+abi7"
    assert FeatureVersion(2, 11, 3, 7).release == "2.11.3"
    assert FeatureVersion.parse(str(FeatureVersion(2, 11, 3, 7))) == FeatureVersion(2, 11, 3, 7)


def test_out_of_range() -> None:
    with pytest.raises(ValueError):
        FeatureVersion(256, 0)
    with pytest.raises(ValueError):
        FeatureVersion(2, 0, 0, 1 << 40)
    with pytest.raises(ValueError):
        FeatureVersion.from_int(-1)
