"""tables/tableset.py: the tables of a run are one immutable value, passed down. Two values in
one process (and in its threads at once) give two answers; neither changes the other."""

from __future__ import annotations

import base64
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from packaging.version import Version

from torchwheel import api
from torchwheel.errors import InputError
from torchwheel.tables import exports, tablechoice
from torchwheel.tables.tableset import Tables, shipped_tables
from torchwheel.torchabi.torch_releases import releases_from


def _ending_at(newest: str) -> Tables:
    """The shipped tables with a release list cut at ``newest``, as a tables file written
    before the next torch shipped would have it."""
    shipped = shipped_tables()
    kept = [v for v in shipped.releases.versions if v <= Version(newest)]
    return dataclasses.replace(shipped, releases=releases_from(kept), from_file=frozenset({"releases"}))


def test_two_tables_in_one_process_give_two_answers(fixture_wheels: dict[str, Path]) -> None:
    """The same stable wheel on torch 2.14.0: past a list that ends at 2.13, "loads" rests on
    the stable ABI's promise and says the torch is newer than the tables; a list that ends
    at 2.15 knows 2.14, and the verdict is plain. Asked alternately, and on threads at once."""
    wheel = fixture_wheels["clean"]
    old, new = _ending_at("2.13.0"), shipped_tables()
    assert new.releases.newest() >= Version("2.15.0")

    def ask(tables: Tables) -> api.LoadVerdict:
        return api.loads_on(wheel, torch="2.14.0", symbols=tables)

    for _ in range(2):  # in turn: nothing one call does is left behind for the next
        past, known = ask(old), ask(new)
        assert (past.cell, past.verdict.newer) == ("loads", True), past.reason
        assert "torch 2.14 is newer than this torchwheel's tables (newest 2.13)" in past.reason
        assert (known.cell, known.verdict.newer) == ("loads", False), known.reason
        assert "newer than" not in known.reason
    with ThreadPoolExecutor(4) as pool:  # at once: each thread judges by the value it holds
        found = list(pool.map(ask, [old, new] * 8))
    assert [v.verdict.newer for v in found] == [True, False] * 8


def test_the_shipped_tables_are_one_value_built_once() -> None:
    shipped = shipped_tables()
    assert shipped is shipped_tables()
    assert (shipped.origin, shipped.how, shipped.from_file, dict(shipped.indexes)) == (
        "shipped",
        "shipped",
        frozenset(),
        {},
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        shipped.releases = releases_from([Version("2.9.0")])  # type: ignore[misc]
    cut = _ending_at("2.13.0")
    assert cut.releases.newest() == Version("2.13.0") and shipped.releases.newest() > Version("2.13.0")


def test_a_file_index_is_read_once_inside_its_value(tmp_path: Path) -> None:
    """A tables file's export index is parsed when a verdict first needs it and kept in that
    value: another value with another index (or none: the shipped one) is not touched."""
    data = exports.shipped_index("linux-x86_64").raw  # type: ignore[union-attr]
    text = shipped_tables().shims.to_json({"exports": {"linux-x86_64": base64.b64encode(data).decode()}})
    path = tmp_path / "tables.json"
    path.write_text(text)
    mine = tablechoice.choose_tables(path, None)
    index = mine.exports_index("linux-x86_64")
    assert index is not None and index is mine.exports_index("linux-x86_64")  # parsed once
    assert index is not exports.shipped_index("linux-x86_64")  # its own, from its bytes
    assert shipped_tables().exports_index("linux-x86_64") is exports.shipped_index("linux-x86_64")
    assert mine.exports_index("macos-arm64") is exports.shipped_index("macos-arm64")  # a platform it lacks
    damaged = dataclasses.replace(mine, indexes={"linux-x86_64": data[:-1]})
    with pytest.raises(InputError, match="exports 'linux-x86_64'"):
        damaged.exports_index("linux-x86_64")
    assert mine.exports_index("linux-x86_64") is index  # the damaged copy is a value of its own
