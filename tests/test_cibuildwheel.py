"""The repair-wheel-command strings of docs/cibuildwheel.md, run as cibuildwheel runs them."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO

DOC = (REPO / "docs" / "cibuildwheel.md").read_text()


def recipe(platform: str) -> str:
    """The repair-wheel-command of one platform section, as TOML would hand it over."""
    section = (
        DOC.split(f"[tool.cibuildwheel.{platform}]", 1)[1] if platform else DOC.split("## Without", 1)[1]
    )
    match = re.search(r'repair-wheel-command = "((?:[^"\\]|\\.)*)"', section)
    assert match is not None, platform
    return match.group(1).replace('\\"', '"')


def cibuildwheel_run(command: str, wheel: Path, dest: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """As cibuildwheel: its known placeholders substituted everywhere with absolute paths
    (``format_safe``: unknown ones such as ``{repair_dir}`` pass through), an empty
    ``{dest_dir}``, then ``sh -c``."""
    dest.mkdir()
    line = command.replace("{wheel}", shlex.quote(str(wheel.resolve()))).replace(
        "{dest_dir}", shlex.quote(str(dest))
    )
    assert "{wheel}" not in line and "{dest_dir}" not in line
    line = line.replace("torchwheel ", f"{shlex.quote(sys.executable)} -m torchwheel ", 1)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_windows_recipe_with_delvewheel(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    # the fixture links the fake torch, torchfake.dll, which is no name of torch's
    command = recipe("windows").replace("delvewheel repair", "delvewheel repair --no-dll torchfake.dll")
    result = cibuildwheel_run(command, fixture_wheels["recipe_windows"], tmp_path / "dest", tmp_path)
    assert "delvewheel told to leave torch's" in result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    (out,) = (tmp_path / "dest").iterdir()
    assert out.name == "rwin-1.0.0-cp39-abi3-win_amd64.whl"
    check = subprocess.run(
        [sys.executable, "-m", "torchwheel", "show", "--json", str(out)], capture_output=True, text=True
    )
    assert '"label": "2.10"' in check.stdout


def test_plain_recipe_and_refusal(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    ok = cibuildwheel_run(recipe(""), fixture_wheels["clean"], tmp_path / "ok", tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert [p.name for p in (tmp_path / "ok").iterdir()] == [
        "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
    ]
    bad = cibuildwheel_run(recipe(""), fixture_wheels["tw201"], tmp_path / "bad", tmp_path)
    assert bad.returncode == 1
    assert "TW201" in bad.stdout + bad.stderr
    assert list((tmp_path / "bad").iterdir()) == []


def test_repair_with_a_failing_tool_is_exit_2(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    command = "torchwheel repair --repair-with 'false {wheel} {repair_dir}' -w {dest_dir} {wheel}"
    result = cibuildwheel_run(command, fixture_wheels["clean"], tmp_path / "dest", tmp_path)
    assert result.returncode == 2 and "failed with exit code 1" in result.stderr
    assert list((tmp_path / "dest").iterdir()) == []


@pytest.mark.parametrize("platform", ["linux", "macos", "windows", ""])
def test_recipes_are_well_formed(platform: str) -> None:
    command = recipe(platform)
    assert command.startswith("torchwheel repair ")
    assert command.endswith("-w {dest_dir} {wheel}")
