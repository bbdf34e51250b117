"""``torchabi.torch_backends``: the backends torch is published for are data (one of the tables
``symbols update`` refreshes), and a backend the tables do not list is "newer than the
tables", judged by its kind and major, never "an unknown build"."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchwheel import api
from torchwheel.tables import tablechoice
from torchwheel.torchabi import torch_backends
from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild, from_local_label, parse_backend

SHIPPED = torch_backends.shipped_backends()


def test_the_shipped_list_knows_the_2026_backends() -> None:
    names = SHIPPED.names
    assert {"cu130", "cu132", "cu134", "rocm7.1", "rocm7.2", "rocm7.14", "xpu", "cpu"} <= set(names)
    assert names[0] == "cpu" and names[-1] == "xpu"  # PyPI's order: CPU, CUDA, ROCm, XPU
    assert names.index("cu134") > names.index("cu132") > names.index("cu130") > names.index("cu118")
    assert names.index("rocm7.14") > names.index("rocm7.2")  # 7.14 is newer than 7.2


@pytest.mark.parametrize(
    ("label", "build", "known"),
    [
        ("cu132", TorchBuild("cuda", 13, 2), True),
        ("cu134", TorchBuild("cuda", 13, 4), True),
        ("rocm7.2", TorchBuild("rocm", 7, 2), True),
        ("rocm7.14.0", TorchBuild("rocm", 7, 14), True),  # 2.12.0+rocm7.14.0, as AMD labels it
        ("cu140", TorchBuild("cuda", 14, 0), False),
        ("rocm8.0", TorchBuild("rocm", 8, 0), False),
    ],
)
def test_every_label_is_a_build_known_or_newer(label: str, build: TorchBuild, known: bool) -> None:
    read = from_local_label(label)
    assert read == build  # never None: the kind and major are read whatever the tables list
    assert SHIPPED.known(build) is known
    assert SHIPPED.backend_newer_than_tables(build) is not known
    if not known:
        note = SHIPPED.backend_tables_note(build)
        assert note.startswith(f"torch build {build.backend} is newer than this torchwheel's tables")
        assert "torchwheel symbols update" in note


def test_a_need_without_a_backend_name_is_never_asked() -> None:
    assert SHIPPED.known(TorchBuild("cuda", 13)) and not SHIPPED.backend_newer_than_tables(None)


def test_columns_and_index_folders_keep_their_backends() -> None:
    """Which backend stands for a major in ``matrix`` and ``index`` is the table's: the
    published ``torch-2.13-cu130`` folders stay; a major the table does not name gets its .0."""
    axes = [frozenset({TorchBuild("cuda", 13)}), frozenset({TorchBuild("cuda", 12)}), ANY_BUILD]
    assert [b.backend for b in SHIPPED.representative_backends(axes)] == ["cpu", "cu128", "cu130"]
    assert SHIPPED.representative("cuda", 14) == "cu140"
    assert SHIPPED.representative("rocm", 7) == "rocm7.1"
    assert SHIPPED.representative("cuda", None) == "cu130"


def test_a_verdict_on_a_backend_past_the_tables_says_so(fixture_wheels: dict[str, Path]) -> None:
    """A CUDA 13 wheel on cu134 (known): loads, nothing to add. On cu140 (past the tables):
    judged by the major (no CUDA 13 runtime there), and the verdict says the tables end."""
    wheel = fixture_wheels["cuda13"]
    known = api.loads_on(wheel, torch="2.15.0", backend="cu134")
    assert known.cell == "loads" and not known.verdict.newer
    past = api.loads_on(wheel, torch="2.15.0", backend="cu140")
    assert (past.cell, past.axis, past.verdict.newer) == ("no", "build", True)
    assert "the target's torch is a CUDA 14.0 build (cu140)" in past.reason
    assert "torch build cu140 is newer than this torchwheel's tables (newest cu134)" in past.reason
    assert "unknown build" not in past.reason
    anywhere = api.loads_on(fixture_wheels["clean"], torch="2.15.0", backend="cu140")
    assert anywhere.cell == "loads" and not anywhere.verdict.newer  # no build needed: nothing to say


def test_a_tables_file_brings_its_backends(tmp_path: Path) -> None:
    """Schema 4's ``backends`` is the run's list; a schema 3 file keeps the shipped one. Each
    is a value of its own: the shipped list, held beside, still lacks cu140."""
    shipped = tablechoice.choose_tables(None, None)
    text = shipped.shims.to_json({"backends": [*SHIPPED.names, "cu140"]})
    path = tmp_path / "tables.json"
    path.write_text(text)
    chosen = tablechoice.choose_tables(path, None)
    assert "cu140" in chosen.backends.names and chosen.backends.known(parse_backend("cu140"))
    assert chosen.backends.representatives == SHIPPED.representatives
    assert chosen.to_json()["backends"][-2:] == ["rocm7.14", "xpu"]
    old = tmp_path / "schema3.json"
    old.write_text(shipped.shims.to_json().replace('"schema_version": 4', '"schema_version": 3'))
    assert tablechoice.choose_tables(old, None).backends is SHIPPED
    assert not SHIPPED.known(parse_backend("cu140"))
