"""`torchwheel matrix`: wheels x torch releases, from metadata, in text, markdown and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..helpers import torchwheel
from ..publish_helpers import labelled, labelled_release

# every minor some wheel of the release loads on or names (none loads on 2.9: no column)
TORCHES = ["2.10", "2.11", "2.12", "2.13", "2.14", "2.15"]
EXPECTED = {  # build -> the cell on each of TORCHES
    "210": ["loads", "loads", "loads", "loads", "loads", "loads"],
    "212": ["no", "no", "loads", "loads", "loads", "loads"],
    "213": ["no", "no", "no", "only", "no", "no"],
}


@pytest.fixture(scope="module")
def release(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return labelled_release(built_fixtures, tmp_path_factory.mktemp("mrelease"))


def test_json_cells_and_reasons(release: Path) -> None:
    result = torchwheel("matrix", "--format", "json", "--torch", "2.16", str(release))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["torches"] == [*TORCHES, "2.16"]
    assert doc["installed_torch"] == "2.13"  # the test environment's torch
    rows = {w["file"]: w for w in doc["wheels"]}
    for build, cells in EXPECTED.items():
        row = rows[labelled(build)]
        assert [row["cells"][t]["fit"] for t in TORCHES] == cells, build
        assert row["source"] == "WHEEL Torch-ABI"
    assert rows[labelled("212")]["cells"]["2.16"]["fit"] == "loads"
    assert "older than its target" in rows[labelled("212")]["cells"]["2.11"]["reason"]
    assert "built for torch 2.13" in rows[labelled("213")]["cells"]["2.12"]["reason"]


def test_text_grid_legend_and_why(release: Path) -> None:
    result = torchwheel("matrix", "--why", str(release))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # neighbouring minors with the same cell in every row share a column; the installed one not
    assert lines[0].split() == ["wheel", "2.10-2.11", "2.12", "2.13*", "2.14-2.15"]
    symbol = {"loads": "yes", "only": "only", "no": "-"}
    shown = [0, 2, 3, 4]  # the first minor of each column
    for build, cells in EXPECTED.items():
        (row,) = [line for line in lines if line.split()[:1] == [labelled(build)]]
        assert row.split()[1:] == [symbol[cells[i]] for i in shown], build
    assert any(line.startswith("yes = loads") and "* = installed torch" in line for line in lines)
    assert "  does not load on torch 2.10, 2.11" in result.stdout
    assert "  loads only on torch 2.13" in result.stdout


def test_markdown_for_a_job_summary(release: Path) -> None:
    result = torchwheel("matrix", "--format", "markdown", str(release / labelled("212")))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "| wheel | 2.12 | 2.13* | 2.14-2.15 |"
    assert lines[1].startswith("|---|:-:|")
    assert lines[2] == f"| `{labelled('212')}` | yes | yes | yes |"


def test_a_corrupt_wheel_is_listed_as_skipped(release: Path, tmp_path: Path) -> None:
    (tmp_path / labelled("210")).write_bytes((release / labelled("210")).read_bytes())
    (tmp_path / "bad-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    result = torchwheel("matrix", str(tmp_path))
    assert result.returncode == 2
    assert labelled("210") in result.stdout
    assert "skipped" in result.stderr and "bad-1.0-py3-none-any.whl" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_torch_option_is_one_line(release: Path) -> None:
    result = torchwheel("matrix", "--torch", "latest", str(release))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--torch" in result.stderr


def test_an_asked_torch_nothing_loads_on_is_exit_1(release: Path) -> None:
    result = torchwheel("matrix", "--torch", "2.9", "--torch", "2.13", str(release))
    assert result.returncode == 1
    assert result.stderr.strip() == "torchwheel: twidx: no wheel loads on torch 2.9"
    assert labelled("213") in result.stdout  # the grid is shown all the same
    assert torchwheel("matrix", "--torch", "2.13", str(release)).returncode == 0
