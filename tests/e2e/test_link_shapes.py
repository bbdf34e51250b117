"""Index links in the shapes pip 26.3 reads and torchwheel once misread, over a real HTTP
server on 127.0.0.1: an href with a raw space (pip quotes it to ``%20`` before it asks for
it) and a fragment that carries more than the digest (``#sha256=...&subdirectory=...``: pip
takes the digest up to the ``&``). ``select`` downloads the same file pip downloads from the
same page, checked against the same digest; a wrong digest costs the file, as in pip."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchwheel.cli import cli
from torchwheel.cli.exits import run

from ..lib.index_server import Behaviour, serve
from ..lib.publish_helpers import offline_env

PLAN = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")


def _site(root: Path, wheel: Path, fragment: str) -> None:
    """``simple/demo-stable/index.html`` linking ``files/with space/<wheel>`` by a raw space."""
    files = root / "files" / "with space"
    files.mkdir(parents=True)
    shutil.copy2(wheel, files / wheel.name)
    page = root / "simple" / "demo-stable"
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        f'<a href="../../files/with space/{wheel.name}#{fragment}">{wheel.name}</a>\n'
    )


@pytest.mark.parametrize(
    "digest_first", [True, False], ids=["sha256-then-subdirectory", "subdirectory-then-sha256"]
)
def test_select_reads_a_raw_space_and_a_long_fragment_as_pip_does(
    fixture_wheels: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], digest_first: bool
) -> None:
    wheel = fixture_wheels["clean"]
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    fragment = f"sha256={sha}&subdirectory=sub" if digest_first else f"subdirectory=sub&sha256={sha}"
    _site(tmp_path / "site", wheel, fragment)
    with serve(tmp_path / "site", Behaviour()) as (base, behaviour):
        code = run(
            cli, ["select", "--format", "json", *PLAN, "-i", f"{base}/simple", "--name", "demo-stable"]
        )
        got = capsys.readouterr()
        assert code == 0, got.err
        (project,) = json.loads(got.out)["projects"]
        assert project["chosen"]["file"] == wheel.name
        assert project["chosen"]["sha256"] == sha
        ours = [p for p in behaviour.requests if p.endswith(".whl")]
        # pip, on the same page: the same file, and the digest checked (--require-hashes would refuse none)
        behaviour.requests.clear()
        out = tmp_path / "pip"
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-cache-dir", "-d", str(out),
               "--index-url", f"{base}/simple", "--only-binary=:all:", "--platform", "manylinux_2_28_x86_64",
               "--python-version", "3.11", "demo-stable"]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=offline_env())
        assert result.returncode == 0, result.stderr
        assert [p.name for p in out.iterdir()] == [wheel.name]
        assert (
            [p for p in behaviour.requests if p.endswith(".whl")]
            == ours
            == [f"/files/with space/{wheel.name}"]
        )


def test_a_wrong_digest_beside_other_parameters_costs_the_file(
    fixture_wheels: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The digest is read up to the ``&``: a wrong one is a mismatch (pip: "THESE PACKAGES DO
    NOT MATCH THE HASHES"), never a digest that swallowed ``&subdirectory=sub`` and so is
    ignored as unreadable."""
    wheel = fixture_wheels["clean"]
    _site(tmp_path / "site", wheel, f"sha256={'0' * 64}&subdirectory=sub")
    with serve(tmp_path / "site", Behaviour()) as (base, _):
        code = run(
            cli, ["select", "--format", "json", *PLAN, "-i", f"{base}/simple", "--name", "demo-stable"]
        )
        got = capsys.readouterr()
        assert code != 0
        assert "sha256" in got.out + got.err
        out = tmp_path / "pip"
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-cache-dir", "-d", str(out),
               "--index-url", f"{base}/simple", "--only-binary=:all:", "--platform", "manylinux_2_28_x86_64",
               "--python-version", "3.11", "demo-stable"]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=offline_env())
        assert result.returncode != 0 and "HASH" in result.stderr.upper()
