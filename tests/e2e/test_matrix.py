"""`torchwheel matrix`: wheels x torch releases, from metadata, in text, markdown and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchwheel.publish import matrix
from torchwheel.tables.tableset import shipped_tables
from torchwheel.torchabi.backend import TorchBuild

from ..lib.helpers import torchwheel
from ..lib.publish_helpers import labelled, labelled_release

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
    assert (
        "  does not load on torch 2.10-2.11: stable >= 2.12: torch 2.10-2.11 is older than its target"
        in lines
    )
    assert "  loads only on torch 2.13: unstable, torch 2.13 only: built for torch 2.13" in lines
    assert (
        "  does not load on torch 2.14-2.15: unstable, torch 2.13 only: built for torch 2.13, the target has 2.14-2.15"
        in lines
    )


def test_markdown_for_a_job_summary(release: Path) -> None:
    result = torchwheel("matrix", "--format", "markdown", str(release / labelled("212")))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "| wheel | 2.12 | 2.13* | 2.14-2.15 |"
    assert lines[1].startswith("|---|:-:|")
    assert lines[2] == f"| `{labelled('212')}` | ✅ | ✅ | ✅ |"


def test_an_only_cell_names_the_minors_its_build_loads_on(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """Per-minor builds for 2.6-2.8 beside an unstable build pinned to 2.8: the columns split at
    2.8, and each of the first wheel's cells says every minor it loads on, not "only" under a
    column of two minors (issue 50); the text grid keeps its short symbol, the legend says it."""
    for key in ("per_minor_ranged", "pin_local_cpu"):
        (tmp_path / fixture_wheels[key].name).write_bytes(fixture_wheels[key].read_bytes())
    result = torchwheel("matrix", "--format", "markdown", str(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    head = next(line for line in lines if line.startswith("| wheel |"))
    assert head.startswith("| wheel | 2.6-2.7 | 2.8 |")
    ranged = next(line for line in lines if line.startswith("| `wperminorr-"))
    assert ranged.split(" | ")[1:3] == ["✅ only 2.6-2.8", "✅ only 2.6-2.8"]
    pinned = next(line for line in lines if line.startswith("| `wpincpu-"))
    assert pinned.split(" | ")[1:3] == ["❌", "✅ only 2.8"]
    text = torchwheel("matrix", str(tmp_path)).stdout
    assert "only = loads on the torch minors it names and no other" in text


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


# --------------------------------------------------------------------------------------------
# one grammar (issue 42, item 6): a CUDA wheel among CPU ones gives a grid per torch build


@pytest.fixture(scope="module")
def mixed(fixture_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stable 2.10 wheel, a stable 2.13 one and a CUDA 13 one: a CPU grid and a cu130 grid."""
    folder = tmp_path_factory.mktemp("mixed")
    for key in ("clean", "tw503", "cuda13"):
        (folder / fixture_wheels[key].name).write_bytes(fixture_wheels[key].read_bytes())
    return folder


def _tables(text: str) -> list[list[str]]:
    """Each grid's header cells (the ``*`` of the installed torch dropped)."""
    heads = [line for line in text.splitlines() if line.startswith(("| wheel |", "wheel "))]
    cells = [h.strip("|").split("|")[1:] if h.startswith("|") else h.split()[1:] for h in heads]
    return [[c.strip().rstrip("*") for c in row] for row in cells]


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_every_builds_grid_has_the_same_columns_and_one_true_legend(mixed: Path, fmt: str) -> None:
    result = torchwheel("matrix", "--format", fmt, str(mixed))
    assert result.returncode == 0, result.stderr
    (cpu, cuda) = _tables(result.stdout)
    assert cpu == cuda == ["2.0-2.9", "2.10-2.12", "2.13", "2.14-2.15"]
    # the torch installed here (2.13, CPU) is marked in the CPU build's grid only, and the one
    # legend says so: not "no torch installed here"
    heads = [line for line in result.stdout.splitlines() if line.startswith(("| wheel |", "wheel "))]
    assert "2.13*" in heads[0] and "2.13*" not in heads[1]
    legends = [line for line in result.stdout.splitlines() if "= does not load" in line]
    assert len(legends) == 1 and legends[0].endswith("; * = installed torch (2.13, CPU build)")
    assert "no torch installed" not in result.stdout


def test_marks_are_told_apart_at_a_glance(mixed: Path) -> None:
    markdown = torchwheel("matrix", "--format", "markdown", str(mixed)).stdout
    (row,) = [line for line in markdown.splitlines() if line.startswith("| `w503-")][:1]
    assert row.endswith("| ❌ | ❌ | ✅ | ✅ |")
    assert "✅ = loads" in markdown and "❌ = does not load" in markdown
    text = torchwheel("matrix", str(mixed)).stdout
    (row,) = [line for line in text.splitlines() if line.startswith("w503-")][:1]
    assert row.split()[1:] == ["-", "-", "yes", "yes"]  # plain text under --format text
    assert "✅" not in text and "❌" not in text


def test_why_gives_each_refusal_as_select_words_it(mixed: Path) -> None:
    result = torchwheel("matrix", "--why", str(mixed))
    assert result.returncode == 0, result.stderr
    chosen = torchwheel("select", "--torch", "2.13", "--torch-backend", "cpu", str(mixed))
    (rejected,) = [line for line in chosen.stdout.splitlines() if "rejected wcuda13-" in line]
    reason = rejected.split("): ", 1)[1]  # select: "rejected FILE (in DIR): REASON"
    assert reason.startswith("needs a CUDA 13 build of torch, the target's torch is a CPU build")
    cpu_grid = result.stdout.split("torch build cu130")[0]
    assert f"  does not load on torch 2.0-2.15: {reason}" in cpu_grid.splitlines()
    older = "  does not load on torch 2.0-2.9: stable >= 2.10: torch 2.0-2.9 is older than its target"
    assert older in result.stdout.splitlines()
    assert "  loads on torch 2.10-2.15" in result.stdout.splitlines()


def test_the_legend_says_an_installed_torch_no_grid_shows() -> None:
    """A CUDA 12 torch installed while the grids are CPU and CUDA 13: no column is marked, and
    the legend says why rather than that no torch is installed."""
    grid = matrix.Matrix([(2, 13)], None, [], TorchBuild("cpu"), tables=shipped_tables())
    build = TorchBuild("cuda", 12, 8)
    line = matrix.legend([grid], False, (2, 13), build)
    assert line.endswith(
        f"; the installed torch (2.13, {build}) is none of these builds: no column is marked"
    )
    assert matrix.legend([grid], True, None, None).endswith("; no torch installed here")
