"""The command-line habits of ruff and pip: help on stdout, -V, -q/-qq, --exit-zero, colour
only where a person reads it, repair's log, and what repair says of a used directory."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from torchwheel import __version__

from ..lib.helpers import torchwheel

ANSI = "\x1b["


def test_no_command_prints_the_help_on_stdout() -> None:
    for args in ((), ("symbols",)):
        result = torchwheel(*args)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("Usage: ") and "torchwheel" in result.stdout.splitlines()[0]
        assert "Commands:" in result.stdout
        assert "\\n" not in result.stdout and result.stderr == ""


def test_version_short_and_long() -> None:
    for flag in ("-V", "--version"):
        result = torchwheel(flag)
        assert (result.returncode, result.stdout.strip()) == (0, f"torchwheel, version {__version__}")


def test_quiet_and_exit_zero(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    broken, clean = str(fixture_wheels["tw201"]), str(fixture_wheels["clean"])
    loud = torchwheel("check", "--no-config", broken, cwd=tmp_path)
    assert loud.returncode == 1 and "1 input checked: 1 error(s)" in loud.stdout
    quiet = torchwheel("check", "--no-config", "-q", broken, cwd=tmp_path)
    assert quiet.returncode == 1
    assert quiet.stdout.splitlines() == loud.stdout.splitlines()[:-1]  # the findings, no summary
    silent = torchwheel("check", "--no-config", "-qq", broken, cwd=tmp_path)
    assert (silent.returncode, silent.stdout, silent.stderr) == (1, "", "")
    assert torchwheel("check", "--no-config", "-q", clean, cwd=tmp_path).stdout == ""
    zero = torchwheel("check", "--no-config", "--exit-zero", broken, cwd=tmp_path)
    assert zero.returncode == 0 and zero.stdout == loud.stdout
    github = torchwheel("check", "--no-config", "-q", "--format", "github", broken, cwd=tmp_path)
    assert github.stdout.startswith("::error ") and "input checked" not in github.stdout
    unreadable = tmp_path / "x-1.0-py3-none-any.whl"
    unreadable.write_bytes(b"junk")
    still = torchwheel("check", "--exit-zero", str(unreadable), cwd=tmp_path)
    assert still.returncode == 2 and still.stderr.startswith("torchwheel: error: ")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    return {**env, **extra}


@pytest.mark.parametrize(
    ("extra", "coloured"),
    [({}, False), ({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False)],
)
def test_colour_in_a_pipe(
    fixture_wheels: dict[str, Path], tmp_path: Path, extra: dict[str, str], coloured: bool
) -> None:
    result = torchwheel("check", "--no-config", str(fixture_wheels["tw201"]), cwd=tmp_path, env=_env(**extra))
    assert result.returncode == 1
    assert (ANSI in result.stdout) == coloured
    if coloured:
        assert "\x1b[31m\x1b[1merror\x1b[0m" in result.stdout


def _on_a_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run with stdout on a pseudo-terminal, as a person at a shell sees it."""
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "torchwheel", *args], stdout=follower, stderr=subprocess.PIPE, cwd=cwd, env=env
    ) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its side
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    args = ["check", "--no-config", str(fixture_wheels["tw201"])]
    assert "\x1b[31m\x1b[1merror\x1b[0m" in _on_a_terminal(args, tmp_path, _env(TERM="xterm"))
    assert ANSI not in _on_a_terminal(args, tmp_path, _env(TERM="xterm", NO_COLOR="1"))
    assert ANSI not in _on_a_terminal(args, tmp_path, _env(TERM="dumb"))


def test_repair_logs_fixes_as_fixed_and_names_what_was_there(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "dest"
    first = torchwheel("repair", "--no-config", "-w", str(out), str(fixture_wheels["tw503"]), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "TW503 fixed by the rewrite: " in first.stderr
    assert "error" not in first.stderr.lower() and "repaired: TW503 fixed by the rewrite" in first.stderr
    assert "already held" not in first.stderr
    second = torchwheel("repair", "--no-config", "-w", str(out), str(fixture_wheels["tw501"]), cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    old = next(p.name for p in out.iterdir() if p.name.startswith("w503"))
    assert f"already held 1 other wheel(s), left as they were: {old}" in second.stderr
    again = torchwheel(
        "repair", "--no-config", "--overwrite", "-w", str(out), str(fixture_wheels["tw501"]), cwd=tmp_path
    )
    assert "replaced the older w501-" in again.stderr
    assert len(list(out.iterdir())) == 2


def test_github_format_annotates_an_unreadable_wheel(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """A job's summary page shows why its check stopped, not only the raw log's stderr line."""
    unreadable = tmp_path / "x-1.0-py3-none-any.whl"
    unreadable.write_bytes(b"junk")
    result = torchwheel(
        "check",
        "--no-config",
        "--format",
        "github",
        str(fixture_wheels["clean"]),
        str(unreadable),
        cwd=tmp_path,
    )
    assert result.returncode == 2
    line, summary = result.stdout.splitlines()  # the clean wheel was checked all the same
    assert line.startswith(
        f"::error file={unreadable},title=torchwheel (input error)::x-1.0-py3-none-any.whl: "
    ), line
    assert summary == "1 input checked: 0 error(s), 0 warning(s), 0 info(s); 1 input could not be read"
    assert result.stderr.startswith("torchwheel: error: x-1.0-py3-none-any.whl: ")
