"""``torchwheel scan`` end to end: a folder, a PEP 503 index served from 127.0.0.1 and a file
of URLs into JSON Lines; resume skips what the file holds (no download), a corrupt wheel is
a line with its error while the scan goes on, a scan killed halfway and resumed loses and
duplicates no line, and ``--report`` counts from the file alone."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..lib.helpers import torchwheel
from ..lib.index_server import Behaviour, serve

# fixture wheels of distinct kinds: stable, unstable, a warning, errors
KINDS = ("clean", "tw101", "tw201", "tw503")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _where(line: dict[str, Any]) -> str:
    return str(line["source"].get("url") or line["source"].get("path"))


@pytest.fixture(scope="module")
def folder(fixture_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scan-folder")
    for kind in KINDS:
        shutil.copy(fixture_wheels[kind], out)
    (out / "broken-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 not really a zip")
    return out


def _index(folder: Path, root: Path) -> Path:
    """A PEP 503 index of ``folder``'s wheels: a root page, one page per project, each link
    with its ``#sha256=``."""
    files = root / "files"
    files.mkdir(parents=True)
    projects: dict[str, list[str]] = {}
    for wheel in sorted(folder.glob("*.whl")):
        shutil.copy(wheel, files)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        name = wheel.name.split("-")[0].replace("_", "-").lower()
        projects.setdefault(name, []).append(
            f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a>'
        )
    simple = root / "simple"
    for name, links in projects.items():
        (simple / name).mkdir(parents=True)
        (simple / name / "index.html").write_text("<html><body>" + "".join(links) + "</body></html>")
    (simple / "index.html").write_text("".join(f'<a href="{n}/">{n}</a>' for n in projects))
    return root


def _scan(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = torchwheel("scan", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result


def test_a_folder_gives_a_line_per_wheel_and_a_corrupt_one_an_error(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    result = _scan(str(folder), "-o", str(out), cwd=tmp_path)
    lines = {Path(_where(line)).name: line for line in _lines(out)}
    assert len(lines) == len(KINDS) + 1
    broken = lines.pop("broken-1.0-py3-none-any.whl")
    assert broken["error"]["code"] == "unreadable" and broken["show"] is None
    for line in lines.values():
        assert line["error"] is None and line["read"] == "whole"
        assert line["hashes_verified"] == {"file": None, "record": True}
        assert line["sha256"] == hashlib.sha256(Path(_where(line)).read_bytes()).hexdigest()
        assert line["show"]["wheels"][0]["path"] == _where(line)
        assert line["need"]["need"]["kind"] in ("stable", "unstable", "any", "none")
        assert "summary" in line["check"]
    assert "1 with errors" in result.stderr  # a log line, not a bar: stderr is no terminal
    assert "\r" not in result.stderr


def test_a_hosted_index_resumes_without_a_download(folder: Path, tmp_path: Path) -> None:
    site = _index(folder, tmp_path / "site")
    out = tmp_path / "scan.jsonl"
    with serve(site) as (url, b):
        _scan(f"{url}/simple/", "-o", str(out), "--jobs", "2", cwd=tmp_path)
        assert len(b.downloads()) == len(KINDS) + 1
        first = _lines(out)
        b.requests.clear()
        again = _scan(f"{url}/simple/", "-o", str(out), "--jobs", "2", cwd=tmp_path)
        assert b.downloads() == []  # skipped by the page's sha256: nothing fetched
    assert _lines(out) == first
    assert f"{len(KINDS) + 1} already in the file" in again.stderr
    good = [line for line in first if line["error"] is None]
    assert len(good) == len(KINDS)
    for line in good:
        assert _where(line).startswith(f"{url}/files/")
        assert line["hashes_verified"]["file"] is True and line["fetched_bytes"] > 0
        assert "torchwheel-scan-" not in json.dumps(line)  # no temporary path: the URL instead
        assert line["show"]["wheels"][0]["path"] == _where(line)


def test_a_file_of_urls(folder: Path, tmp_path: Path) -> None:
    wheels = sorted(folder.glob("*.whl"))[:2]
    listed = tmp_path / "wheels.txt"
    out = tmp_path / "scan.jsonl"
    with serve(folder) as (url, _):
        listed.write_text("# two wheels\n\n" + "".join(f"{url}/{w.name}\n" for w in wheels))
        _scan(str(listed), "-o", str(out), cwd=tmp_path)
    assert sorted(_where(line) for line in _lines(out)) == [f"{url}/{w.name}" for w in wheels]


def test_a_scan_killed_halfway_and_resumed_loses_and_repeats_no_line(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    many = tmp_path / "many"
    many.mkdir()
    clean = fixture_wheels["clean"]
    for i in range(60):
        shutil.copy(clean, many / f"copy{i:03d}-{clean.name}")
    out = tmp_path / "scan.jsonl"
    cmd = [sys.executable, "-m", "torchwheel", "scan", str(many), "-o", str(out), "--jobs", "2"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, start_new_session=True, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not out.exists() or out.read_bytes().count(b"\n") < 15):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    halfway = out.read_bytes().count(b"\n")
    assert 15 <= halfway < 60, halfway
    _scan(str(many), "-o", str(out), "--jobs", "2", cwd=tmp_path)
    lines = _lines(out)  # every line whole: a half line would not parse
    assert len(lines) == 60
    assert sorted(_where(line) for line in lines) == sorted(str(p) for p in many.glob("*.whl"))


def test_the_report_counts_from_the_file_alone(folder: Path, tmp_path: Path) -> None:
    copied = tmp_path / "wheels"
    shutil.copytree(folder, copied)
    out = tmp_path / "scan.jsonl"
    _scan(str(copied), "-o", str(out), cwd=tmp_path)
    shutil.rmtree(copied)  # nothing left to read again
    text = _scan("--report", str(out), cwd=tmp_path).stdout
    assert text.startswith(f"{len(KINDS) + 1} wheels, {len(KINDS)} read, 1 unreadable")
    doc = json.loads(_scan("--report", str(out), "--format", "json", cwd=tmp_path).stdout)
    assert doc["input_errors"] == {"unreadable": 1}
    assert sum(doc["kind"].values()) == len(KINDS)
    assert doc["error_findings"]  # tw201 and tw503 hold errors
    markdown = _scan("--report", str(out), "--format", "markdown", cwd=tmp_path).stdout
    assert "| need | wheels |" in markdown and "| `unreadable` | 1 |" in markdown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--report", "x.jsonl", "src"), "--report reads a scan file"),
        (("src",), "give SOURCES and -o"),
        (("--report", "missing.jsonl"), "no such scan file"),
        (("nowhere", "-o", "o.jsonl"), "no such file or directory"),
        (("--format", "markdown", "src", "-o", "o.jsonl"), "--format is for --report"),
    ],
)
def test_misuse_is_one_line_and_exit_2(args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    result = torchwheel("scan", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists()


def test_jobs_share_one_connection_cap_per_host(folder: Path, tmp_path: Path) -> None:
    site = _index(folder, tmp_path / "site")
    with serve(site, Behaviour(slow={".whl": 0.3})) as (url, b):
        _scan(
            f"{url}/simple/",
            "-o",
            str(tmp_path / "o.jsonl"),
            "--jobs",
            "3",
            "--max-host-connections",
            "1",
            cwd=tmp_path,
        )
    assert b.max_in_flight == 1
