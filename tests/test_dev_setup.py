"""``scripts/dev-setup`` skips what is already installed: a second run takes seconds and runs
neither pip nor apt, and a venv that lacks anything (a fresh one above all, as on CI's clean
clone) is still filled by pip. ``scripts/dev_setup_check.py`` is the question it asks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .lib.helpers import REPO, fresh_venv, load_script

check = load_script("torchwheel_dev_setup_check", REPO / "scripts" / "dev_setup_check.py")


def test_this_venv_is_complete_and_a_second_run_installs_nothing() -> None:
    """The suite runs after dev-setup (README, .ci/run): the venv meets pyproject.toml, so a
    run now is the second run. Traced by bash itself: no pip, no apt-get; seconds."""
    assert check.missing() is None, "run `bash scripts/dev-setup` first"
    started = time.monotonic()
    run = subprocess.run(
        ["bash", "-x", str(REPO / "scripts" / "dev-setup")], capture_output=True, text=True, timeout=600
    )
    took = time.monotonic() - started
    assert run.returncode == 0, run.stderr[-3000:]
    traced = [line for line in run.stderr.splitlines() if line.startswith("+")]
    assert traced and not [line for line in traced if "pip install" in line or "apt-get" in line], traced
    assert took < 60, took  # a couple of seconds on an idle machine; pip alone took 30-60 s


def test_a_missing_or_old_requirement_is_found(tmp_path: Path) -> None:
    project = (REPO / "pyproject.toml").read_text()
    for added, said in (
        ('"no-such-package-for-torchwheel>=1",', "no-such-package-for-torchwheel is not installed"),
        ('"pytest<1",', "pytest "),
        ("\"never-here>=1; python_version < '3'\",", None),  # a marker that does not apply
    ):
        pyproject = tmp_path / "pyproject.toml"
        pyproject.write_text(project.replace("test = [\n", f"test = [\n    {added}\n", 1))
        problem = check.missing(pyproject)
        if said is None:
            assert problem is None
        else:
            assert problem is not None and problem.startswith(said), problem
            assert "does not meet" in problem or "not installed" in problem


def test_a_fresh_venv_is_filled(tmp_path: Path) -> None:
    """A venv just made has nothing: the check says so (exit 1), so dev-setup runs pip."""
    python = fresh_venv(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = subprocess.run(
        [str(python), str(REPO / "scripts" / "dev_setup_check.py")], capture_output=True, text=True, env=env
    )
    assert run.returncode == 1
    assert run.stderr == "dev-setup: packaging is not installed: running pip\n"
    assert sys.executable != str(python)
