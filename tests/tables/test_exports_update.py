"""``exports_update``: the one encoder of export indexes, a release added (``symbols update``)
and the releases past a minor dropped (the tables "as they were"), each read back by the
reader the shipped indexes go through."""

from __future__ import annotations

from typing import Any

import pytest

from torchwheel.tables.exports import ExportIndex
from torchwheel.tables.exports_update import add_release, encode_exports, masks_of, restrict

NAMES = {
    "2.12.1": ["_ZN2at3oldEv", "_ZN2at6sharedEv"],
    "2.13.0": ["_ZN2at6sharedEv", "_ZN2at3newEv"],
}


def _entry(version: str, build: str = "cu130") -> dict[str, Any]:
    return {
        "version": version,
        "builds": [build],
        "wheels": [{"file": f"torch-{version}.whl", "sha256": "0" * 64}],
    }


def _index(releases: dict[str, list[str]]) -> ExportIndex:
    entries = [{**_entry(v), "names": len(n)} for v, n in releases.items()]
    data = encode_exports(
        "linux-x86_64", entries, masks_of(list(releases.values())), "2026-12-05", "test", "zlib"
    )
    return ExportIndex.from_bytes(data, "test index")


def _minors(index: ExportIndex, *names: str) -> set[tuple[int, int]]:
    return set(index.dating(names).minors)


def test_a_new_minor_is_added_after_the_others() -> None:
    data, what = add_release(
        _index(NAMES),
        "linux-x86_64",
        _entry("2.14.0"),
        ["_ZN2at3newEv", "_ZN2at4nextEv"],
        "2026-12-05",
        "test",
    )
    index = ExportIndex.from_bytes(data, "added")
    assert [str(r) for r in index.releases] == ["2.12.1", "2.13.0", "2.14.0"]
    assert _minors(index, "_ZN2at3newEv") == {(2, 13), (2, 14)}
    assert _minors(index, "_ZN2at4nextEv") == {(2, 14)} and _minors(index, "_ZN2at3oldEv") == {(2, 12)}
    assert (
        index.header["releases"][2]["names"] == 2
        and what == "linux-x86_64: torch 2.14.0 added (2 unstable names)"
    )


def test_a_minor_between_others_moves_their_bits() -> None:
    data, _ = add_release(
        _index({"2.12.1": ["_ZN2at1aEv"], "2.14.0": ["_ZN2at1bEv"]}),
        "linux-x86_64",
        _entry("2.13.0"),
        ["_ZN2at1aEv"],
        "2026-12-05",
        "test",
    )
    index = ExportIndex.from_bytes(data, "between")
    assert [str(r) for r in index.releases] == ["2.12.1", "2.13.0", "2.14.0"]
    assert _minors(index, "_ZN2at1aEv") == {(2, 12), (2, 13)} and _minors(index, "_ZN2at1bEv") == {(2, 14)}


def test_one_release_per_minor_its_newest_patch() -> None:
    base = _index(NAMES)
    data, _ = add_release(base, "linux-x86_64", _entry("2.13.1"), ["_ZN2at5patchEv"], "2026-12-05", "test")
    index = ExportIndex.from_bytes(data, "patch")
    assert [str(r) for r in index.releases] == ["2.12.1", "2.13.1"]  # 2.13.0's names are gone with it
    assert _minors(index, "_ZN2at3newEv") == set() and _minors(index, "_ZN2at5patchEv") == {(2, 13)}
    kept, what = add_release(base, "linux-x86_64", _entry("2.12.0"), ["_ZN2at3oldEv"], "2026-12-05", "test")
    assert kept == b"" and "kept torch 2.12.1, newer than 2.12.0" in what
    again, what = add_release(
        base, "linux-x86_64", _entry("2.13.0", "cpu"), ["_ZN2at3cpuEv"], "2026-12-05", "test"
    )
    index = ExportIndex.from_bytes(again, "again")
    assert index.builds[1] == ("cpu", "cu130") and _minors(index, "_ZN2at3cpuEv", "_ZN2at3newEv") == {(2, 13)}
    assert "read again" in what


def test_restrict_is_the_index_of_the_releases_up_to_a_minor() -> None:
    cut = ExportIndex.from_bytes(restrict(_index(NAMES), (2, 12), "2026-12-05", "test"), "cut")
    assert cut == _index({"2.12.1": NAMES["2.12.1"]})
    assert dict(cut.entries()) == dict(_index({"2.12.1": NAMES["2.12.1"]}).entries())
    assert cut.dating(["_ZN2at3newEv"]).known == 0  # gone with 2.13
    with pytest.raises(ValueError, match="no release"):
        restrict(_index(NAMES), (2, 4), "2026-12-05", "test")


def test_an_empty_index_gets_its_first_release() -> None:
    data, _ = add_release(None, "macos-arm64", _entry("2.16.0", "cpu"), ["_ZN2at1xEv"], "2026-12-05", "test")
    index = ExportIndex.from_bytes(data, "first")
    assert index.platform == "macos-arm64" and index.newest == (2, 16)
