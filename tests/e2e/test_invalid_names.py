"""Wheels whose file name packaging refuses but whose archive and metadata parse (issue 22, the
k2 1.23.4 ``py3.9-none-any`` shape): ``check`` and ``show`` read them and report TW414 beside
the real findings; ``select`` and ``matrix`` report them under their project and go on;
``index`` publishes nothing (it vouches for every file, as for any broken wheel); ``tag``
refuses with the name to rename to, since it keeps the file name's tags and will not guess.

The wheels are built here with ``fixtures/wheels.py`` from the compiled fixtures.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from torchwheel.errors import InputError
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.contents import InvalidWheelName, parse_wheel_name, project_of, salvaged, suggested_name

from ..lib.helpers import fixture_wheels_module, torchwheel

PLAN = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")


def _k2_like(built: dict[str, Path], folder: Path, filename: str = "demo_k-1.0.0-py3.9-none-any.whl") -> Path:
    """bdist_wheel's output for a ``--python-tag py3.9`` typo: the name keeps ``py3.9``, WHEEL
    splits it into ``py3`` and ``9``; inside, an extension module (as k2 ships one)."""
    wheels = fixture_wheels_module()
    spec = wheels.WheelSpec(
        "k2_like", "demo_k", "py3.9-none-any", (("demo_k/_ext.abi3.so", "elf_marker_2_10"),), requires=()
    )
    written = wheels.write_wheel(folder / spec.filename, spec, built)
    return written.rename(folder / filename) if written.name != filename else written


def test_the_reason_and_the_name_to_rename_to() -> None:
    with pytest.raises(InvalidWheelName) as caught:
        parse_wheel_name("k2-1.23.4-py3.9-none-any.whl")
    assert caught.value.reason == "invalid tag component in 'py3.9-none-any'"
    assert str(caught.value).startswith("k2-1.23.4-py3.9-none-any.whl: not a valid wheel file name")
    assert isinstance(caught.value, InputError)  # every caller's existing refusal still holds
    assert suggested_name("k2", "1.23.4", ["py3-none-any", "9-none-any"]) == "k2-1.23.4-py3-none-any.whl"
    assert (
        suggested_name("Demo.Pkg", "1.0", ["cp39-abi3-linux_x86_64"])
        == "demo_pkg-1.0-cp39-abi3-linux_x86_64.whl"
    )
    assert suggested_name("k2", "1.0", ["9-none-any"]) is None  # no tag that parses
    assert suggested_name("k2", "1.0", ["cp39-cp39-linux_x86_64", "cp310-abi3-win32"]) is None  # no one name
    assert suggested_name("k2", "not a version", ["py3-none-any"]) is None


@pytest.mark.parametrize(
    ("filename", "project", "version"),
    [
        ("k2-1.23.4-py3.9-none-any.whl", "k2", "1.23.4"),
        ("demo-1.0.x-py3-none-any.whl", "", ""),  # the version does not parse: nor is "demo" sure
        ("bad name-1.0-py3-none-any.whl", "", ""),  # nor the project
        ("demo-1.0-py3-none.whl", "", ""),  # four parts: nothing is where it should be
    ],
)
def test_salvaged_parts(filename: str, project: str, version: str) -> None:
    assert salvaged(filename) == (project, version)
    assert project_of(filename) == (project or None)


def test_check_reads_it_and_reports_the_real_findings(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    wheel = _k2_like(built_fixtures, tmp_path)
    result = torchwheel("check", "--no-config", "--format", "json", str(wheel), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    codes = {f["code"] for f in findings}
    assert {"TW414", "TW405", "TW306"} <= codes, codes  # the name, and what k2 hid behind it
    assert "TW404" not in codes  # the name has no tags to compare with WHEEL's
    (name,) = [f["message"] for f in findings if f["code"] == "TW414"]
    assert "invalid tag component in 'py3.9-none-any'" in name
    assert "rename it to demo_k-1.0.0-py3-none-any.whl" in name and "\n" not in name
    text = torchwheel("check", "--no-config", str(wheel), cwd=tmp_path)
    assert text.returncode == 1 and "TW414 error" in text.stdout and "Traceback" not in text.stderr


def test_show_reads_it(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    wheel = _k2_like(built_fixtures, tmp_path)
    shown = torchwheel("show", str(wheel), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    tags = next(line for line in shown.stdout.splitlines() if line.strip().startswith("tags"))
    assert "py3-none-any" in tags and "TW414" in tags
    doc = json.loads(torchwheel("show", "--json", str(wheel), cwd=tmp_path).stdout)["wheels"][0]
    assert doc["filename_problem"] == "invalid tag component in 'py3.9-none-any'"
    assert (doc["name"], doc["version"], doc["filename_tags"]) == ("demo_k", "1.0.0", [])
    assert doc["wheel_tags"] == ["9-none-any", "py3-none-any"]


@pytest.mark.parametrize(
    "filename",
    ["demo_k-1.0.x-py3-none-any.whl", "demo k-1.0.0-py3-none-any.whl", "demo_k-1.0.0-py3-none.whl"],
)
def test_other_invalid_names_fall_back_to_the_dist_info(
    filename: str, built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """Where the name's project or version does not parse, the .dist-info's stand in, so no
    TW408/TW409 is made up from a broken name."""
    wheel = _k2_like(built_fixtures, tmp_path, filename)
    with WheelArchive(wheel, lenient_name=True) as archive:
        c = archive.contents
        assert c.name_problem and (c.filename_name, c.filename_version) == ("demo_k", "1.0.0")
    result = torchwheel("check", "--no-config", "--format", "json", str(wheel), cwd=tmp_path)
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert result.returncode == 1 and "TW414" in codes and not codes & {"TW408", "TW409"}, codes


def test_tag_refuses_with_the_name_to_rename_to(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """tag keeps the file name's tags (installers select by them) and will not guess them from
    WHEEL: the rename is the user's decision, and py3-none-any would be wrong here anyway."""
    wheel = _k2_like(built_fixtures, tmp_path)
    for args in (("--dry-run",), ("-w", str(tmp_path / "out"))):
        refused = torchwheel("tag", *args, str(wheel), cwd=tmp_path)
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 2 and len(lines) == 1, refused.stderr
        assert (
            "not a valid wheel file name" in lines[0]
            and "rename it to demo_k-1.0.0-py3-none-any.whl" in lines[0]
        )
    assert not (tmp_path / "out").exists()
    with pytest.raises(InputError, match=re.escape("rename it to demo_k-1.0.0-py3-none-any.whl first")):
        WheelArchive(wheel)  # strict: every caller but check/show and the selection


def test_folder_commands_report_it_under_its_project_and_go_on(
    built_fixtures: dict[str, Path], fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "dist"
    folder.mkdir()
    bad = _k2_like(built_fixtures, folder)
    shutil.copy2(fixture_wheels["clean"], folder)
    chosen = torchwheel("select", *PLAN, str(folder), cwd=tmp_path)
    assert "chose demo_stable" in chosen.stdout, chosen.stdout + chosen.stderr
    assert f"skipped {bad}: {bad.name}: TW414" in chosen.stdout
    line = chosen.stderr.strip()
    assert (
        chosen.returncode == 2 and line.count("\n") == 0 and "demo-k: a candidate could not be read" in line
    )
    named = torchwheel("select", *PLAN, "--name", "demo-stable", str(folder), cwd=tmp_path)
    assert named.returncode == 0, named.stderr  # another project's bad name spoils nothing
    asked = torchwheel("select", "--format", "json", *PLAN, "--name", "demo-k", str(folder), cwd=tmp_path)
    (skipped,) = json.loads(asked.stdout)["skipped"]
    assert asked.returncode == 2 and skipped["reason"].startswith(f"{bad.name}: TW414")
    grid = torchwheel("matrix", str(folder), cwd=tmp_path)
    assert "demo_stable" in grid.stdout and f"skipped {bad}: {bad.name}: TW414" in grid.stdout
    assert grid.returncode == 2 and grid.stderr.strip().count("\n") == 0
    published = torchwheel("index", str(folder), "-o", str(tmp_path / "idx"), cwd=tmp_path)
    assert (
        published.returncode == 2
        and "TW414" in published.stderr
        and published.stderr.strip().count("\n") == 0
    )
    assert not (tmp_path / "idx").exists()  # index vouches for every file it publishes


def test_a_name_with_no_part_that_parses_is_read_from_its_metadata(tmp_path: Path) -> None:
    """Once a bad archive of tests/e2e/test_check.py (exit 2): the zip and .dist-info parse, so the
    wheel is read, its name judged (TW414, the rename from METADATA) beside its RECORD (TW401)."""
    wheel = tmp_path / "not-a-valid-wheel-name.whl"
    wheel.write_bytes(fixture_wheels_module()._minimal([]))
    result = torchwheel("check", "--no-config", "--format", "json", str(wheel), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    findings = {f["code"]: f["message"] for f in json.loads(result.stdout)["findings"]}
    assert set(findings) == {"TW401", "TW414"}
    assert (
        "(invalid version)" in findings["TW414"]
        and "rename it to bad-1.0-py3-none-any.whl" in findings["TW414"]
    )
    tagged = torchwheel("tag", "--dry-run", str(wheel), cwd=tmp_path)
    assert tagged.returncode == 2 and tagged.stderr.strip().count("\n") == 0, tagged.stderr
