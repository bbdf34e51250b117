"""The installed console script, as a shell runs it: the named set of tests that still start a
real process for the command line (most tests run it in their own process through
``tests.lib.helpers.torchwheel``, which calls the same exit-code decision, ``cli.exits.run``).

What only a process shows: the ``torchwheel`` entry point pip wrote, the program name in the
help, the exit status the interpreter ends with (0, 1, 2, and 128 + the signal), and that
nothing but one line reaches stderr. Signals and kills mid-write have their own real-process
tests (``test_write_safety.py``, ``test_install_journal.py``, ``test_scan.py``).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..lib.helpers import FIXTURES
from ..lib.index_server import Behaviour, serve

SCRIPT = Path(sys.executable).with_name("torchwheel")
DEMO = FIXTURES / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=120, cwd=cwd, stdin=subprocess.DEVNULL
    )


def test_the_script_is_installed_and_names_itself() -> None:
    helped = _run("--help")
    assert helped.returncode == 0 and helped.stderr == ""
    assert helped.stdout.splitlines()[0] == "Usage: torchwheel [OPTIONS] COMMAND [ARGS]..."
    version = _run("-V")
    assert version.returncode == 0 and version.stdout.startswith("torchwheel, version ")


@pytest.mark.parametrize(
    ("scenario", "code"),
    [("clean", 0), ("tw503", 1)],
)
def test_check_exits_0_clean_and_1_on_an_error(
    scenario: str, code: int, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    result = _run("check", "--no-config", str(fixture_wheels[scenario]), cwd=tmp_path)
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stderr == ""


def test_an_unreadable_input_and_a_misuse_exit_2_with_one_line(tmp_path: Path) -> None:
    missing = _run("check", str(tmp_path / "nothing.whl"), cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert missing.stderr.startswith("torchwheel: error: ") and "Traceback" not in missing.stderr
    misuse = _run("check", "--no-such-option", str(DEMO), cwd=tmp_path)
    assert misuse.returncode == 2 and "No such option" in misuse.stderr


def test_the_readmes_first_command_through_the_script() -> None:
    checked = _run("check", str(DEMO))
    shown = _run("show", str(DEMO))
    assert (checked.returncode, shown.returncode) == (0, 0), checked.stderr + shown.stderr
    assert "all clean" in checked.stdout and "stable" in shown.stdout


def test_sigterm_ends_the_process_by_the_signal(tmp_path: Path) -> None:
    """A cancelled CI job: the command unwinds (temporary files go), then dies by SIGTERM, so
    the shell sees 143. The signal comes while ``select`` waits on an index page the server
    drips, so the command is past its start-up when it arrives, on any machine."""
    (tmp_path / "simple" / "demo-stable").mkdir(parents=True)
    (tmp_path / "simple" / "demo-stable" / "index.html").write_text("<html><body></body></html>\n")
    with serve(tmp_path, Behaviour(drip={"/demo-stable/": "headers"}, drip_every=1.0)) as (url, seen):
        proc = subprocess.Popen(
            [str(SCRIPT), "select", "--torch", "2.13", "-i", f"{url}/simple/", "--name", "demo-stable"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        deadline = time.monotonic() + 60
        while not seen.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen.requests, "select never asked for the page"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, err
    assert err.strip().splitlines()[-1] == "torchwheel: error: terminated by SIGTERM"
