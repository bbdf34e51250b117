"""One judgement of a wheel's integrity (issue 16): what ``check`` calls broken, ``index`` does
not publish, ``select``/``install``/``matrix`` do not choose and ``tag``/``repair`` do not
rewrite; and every exit 2 of those commands is one line on stderr.

The fixture wheels of ``fixtures/wheels.py`` (each with its exact set of codes, asserted in
tests/e2e/test_check.py) are the inputs: the new TW407 shapes, TW409, TW410, TW411 and TW412.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from torchwheel import rules
from torchwheel.analysis.load import load_facts
from torchwheel.rules.registry import Policy
from torchwheel.tables.tableset import shipped_tables
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.defects import archive_defects

from ..lib.helpers import fixture_wheels_module, torchwheel

WHEELS = fixture_wheels_module().WHEELS
PLAN = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")
BROKEN = [
    "tw407_folded",
    "tw407_duplicate_name",
    "tw409",
    "tw409_version",
    "tw410",
    "tw410_conflict",
    "tw411",
]
BROKEN += ["tw411_long", "tw401", "tw403", "tw407", "tw408", "tw414"]
BINARY_CODES = {"TW405", "TW406"}  # the compiled members' facts: check's and tag's alone


@pytest.mark.parametrize("name", sorted(WHEELS))
def test_the_shared_judgement_is_checks_own(name: str, fixture_wheels: dict[str, Path]) -> None:
    """For every fixture wheel: the TW4xx errors ``check`` reports (but those of the compiled
    members) are exactly those ``archive_defects`` finds, with every member hashed as
    ``index`` hashes them: one set of rules, one verdict."""
    (facts,) = load_facts((fixture_wheels[name],), (), shipped_tables())
    from_check = {
        f.code
        for f in rules.run_rules(facts, Policy())
        if f.code.startswith("TW4") and f.severity == "error" and f.code not in BINARY_CODES
    }
    with WheelArchive(fixture_wheels[name], lenient_name=True) as archive:  # tw414: read as check reads it
        hashes = {m: archive.hash_member(m) for m in archive.contents.members}
        shared = {f.code for f in archive_defects(archive.contents, archive.member_size, dict(hashes))}
    assert shared == from_check


def _one_line(result_stderr: str) -> str:
    lines = result_stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchwheel: error: "), result_stderr
    assert "internal error" not in lines[0]
    return lines[0]


@pytest.mark.parametrize("name", BROKEN)
def test_broken_wheels_are_neither_published_nor_chosen(
    name: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    wheel = fixture_wheels[name]
    (code,) = sorted(c for c in WHEELS[name].expected if c not in BINARY_CODES)
    out = tmp_path / "index"
    published = torchwheel("index", str(wheel), "-o", str(out), cwd=tmp_path)
    assert published.returncode == 2 and code in _one_line(published.stderr)
    assert not out.exists()
    chosen = torchwheel("select", "--format", "json", *PLAN, str(wheel), cwd=tmp_path)
    assert chosen.returncode == 2 and code in _one_line(chosen.stderr)
    (skipped,) = json.loads(chosen.stdout)["skipped"]
    assert skipped["reason"].startswith(f"{wheel.name}: {code}")
    grid = torchwheel("matrix", str(wheel), cwd=tmp_path)
    assert grid.returncode == 2 and code in _one_line(grid.stderr)


def test_a_broken_wheel_beside_a_good_one(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """select chooses the good one and lists the broken one, exiting 2 for the broken one's
    project (0 when only the good project is asked for); matrix shows the good one and exits
    2 with one line; index refuses to publish either (exit 2, nothing written)."""
    folder = tmp_path / "dist"
    folder.mkdir()
    for name in ("clean", "tw410"):
        shutil.copy2(fixture_wheels[name], folder)
    chosen = torchwheel("select", *PLAN, str(folder), cwd=tmp_path)
    assert chosen.returncode == 2 and "w410: a candidate could not be read" in _one_line(chosen.stderr)
    assert "chose demo_stable" in chosen.stdout and "skipped" in chosen.stdout and "TW410" in chosen.stdout
    named = torchwheel("select", *PLAN, "--name", "demo-stable", str(folder), cwd=tmp_path)
    assert named.returncode == 0, named.stderr
    grid = torchwheel("matrix", str(folder), cwd=tmp_path)
    assert grid.returncode == 2 and "TW410" in _one_line(grid.stderr)
    assert "demo_stable" in grid.stdout and "skipped" in grid.stdout
    published = torchwheel("index", str(folder), "-o", str(tmp_path / "idx"), cwd=tmp_path)
    assert published.returncode == 2 and "TW410" in _one_line(published.stderr)
    assert not (tmp_path / "idx").exists()


def test_index_hashes_every_member(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """A member whose bytes changed but not its size: RECORD's hash (TW402) is only seen when
    the member is read. select does not read members (installer checks them on install);
    index, which publishes the file, does."""
    wheel = fixture_wheels["tw402"]
    assert torchwheel("select", *PLAN, str(wheel), cwd=tmp_path).returncode == 0
    published = torchwheel("index", str(wheel), "-o", str(tmp_path / "idx"), cwd=tmp_path)
    assert published.returncode == 2 and "TW402" in _one_line(published.stderr)


def test_tag_refuses_and_rewrites_the_facts_file(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    for name in ("tw409", "tw411", "tw407_folded"):
        refused = torchwheel("tag", "-w", str(tmp_path / "out"), str(fixture_wheels[name]), cwd=tmp_path)
        assert refused.returncode == 1 and "refusing to rewrite" in refused.stderr, (name, refused.stderr)
    assert not (tmp_path / "out").exists()
    for name in ("tw410", "tw410_conflict"):  # the rewrite replaces every Torch-ABI line: fixed
        fixed = torchwheel("tag", "-w", str(tmp_path / name), str(fixture_wheels[name]), cwd=tmp_path)
        assert fixed.returncode == 0, (name, fixed.stderr)
        (out,) = (tmp_path / name).glob("*.whl")
        assert torchwheel("check", str(out), cwd=tmp_path).returncode == 0
    tagged = torchwheel("tag", "-w", str(tmp_path / "ok"), str(fixture_wheels["tw412"]), cwd=tmp_path)
    assert tagged.returncode == 0, tagged.stderr
    (out,) = (tmp_path / "ok").glob("*.whl")
    again = torchwheel("check", "--format", "json", str(out), cwd=tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["findings"] == []


def test_select_with_nothing_readable_is_one_line(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """Issue 16: select exited 2 with nothing on stderr (the reasons went to stdout)."""
    folder = tmp_path / "bad"
    folder.mkdir()
    for name in ("bad_not_a_zip", "bad_truncated_zip"):
        shutil.copy2(fixture_wheels[name], folder / f"{name.removeprefix('bad_')}-1.0-py3-none-any.whl")
    for fmt in ("text", "json"):
        result = torchwheel("select", "--format", fmt, *PLAN, str(folder), cwd=tmp_path)
        assert result.returncode == 2
        line = _one_line(result.stderr)
        assert "no readable candidate" in line and "(and 1 more)" in line
        assert "zip" in result.stdout  # the report still lists every reason
