"""tables/shimorigin.py: the provenance vocabulary of the shim table as
``data/shim_versions.json`` spells it."""

from __future__ import annotations

import pytest

from torchwheel.tables.shimorigin import EXPORT, HEADER_GATE, Origin, TorchWheelOrigin
from torchwheel.version import FeatureVersion


def test_origin_defaults_to_a_header_gate() -> None:
    assert Origin().to_json(None) == {"introduced": None, "platforms": {}, "source": "header-gate"}


def test_origin_platforms_are_sorted_so_equal_origins_compare_equal() -> None:
    a = Origin(EXPORT, (("windows-x86_64", "2.10.0"), ("linux-x86_64", "2.9.0")))
    b = Origin(EXPORT, (("linux-x86_64", "2.9.0"), ("windows-x86_64", "2.10.0")))
    assert a == b
    assert a.platforms == (("linux-x86_64", "2.9.0"), ("windows-x86_64", "2.10.0"))
    assert a.to_json(FeatureVersion(2, 9)) == {
        "introduced": "2.9.0",
        "platforms": {"linux-x86_64": "2.9.0", "windows-x86_64": "2.10.0"},
        "source": "export",
    }
    assert (HEADER_GATE, EXPORT) == ("header-gate", "export")  # the words data/shim_versions.json uses


def test_wheel_source_round_trips() -> None:
    raw = {"file": "torch.whl", "sha256": "ab" * 32, "release": "2.13.0", "platform": "linux-x86_64",
           "variant": "cpu"}  # fmt: skip
    source = TorchWheelOrigin.from_json(raw)
    assert source == TorchWheelOrigin("torch.whl", "ab" * 32, "2.13.0", "linux-x86_64", "cpu")
    assert source.to_json() == raw


@pytest.mark.parametrize(
    "raw",
    [
        None,
        [],
        {"file": "t.whl"},
        {"file": "t", "sha256": "x", "release": "2.13", "platform": "p", "variant": 1},
    ],
)
def test_wheel_source_refuses_a_malformed_entry(raw: object) -> None:
    with pytest.raises(ValueError) as info:
        TorchWheelOrigin.from_json(raw)
    assert str(info.value) == (
        "symbol table: a wheel entry needs string fields file, sha256, release, platform, variant"
    )
