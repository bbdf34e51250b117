"""One way to name an index: ``-i/--index-url`` and ``--extra-index-url`` on every command
that reads one (``select``, ``install``, ``matrix``, ``index``, ``scan``), over a real HTTP
server on 127.0.0.1; and the recorded torchao and torchcodec pages (``fixtures/pages/``),
which those commands refused for their ``"requires-python": null``, read by each of them.

The commands run in this process (``cli.exits.run``, the entry point's own exit-code
decision); the recorded pages' file URLs are pointed at the local server, which holds none
of the files, so no byte leaves the machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchwheel.cli import cli
from torchwheel.cli.exits import run

from ..lib.index_server import Behaviour, serve

PAGES = Path(__file__).resolve().parents[2] / "fixtures" / "pages"
PLAN = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")
NO_FIT = ("--torch", "2.13", "--python-version", "2.7", "--platform", "win_arm64")  # no file of theirs
TOKEN = "s3cr3t-t0ken"


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(cli, list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def _recorded(root: Path, base: str, project: str, form: str) -> int:
    """``fixtures/pages/PROJECT.FORM`` as ``root/PROJECT/index.FORM``, its files on ``base``;
    the number of wheels it links."""
    text = (PAGES / f"{project}.{form}").read_text()
    text = text.replace("https://files.pythonhosted.org/", f"{base}/files/")
    (root / project).mkdir(parents=True, exist_ok=True)
    (root / project / f"index.{form}").write_text(text)
    files = json.loads((PAGES / f"{project}.json").read_text())["files"]
    return sum(f["filename"].endswith(".whl") for f in files)  # both forms link the same files


@pytest.fixture
def site(tmp_path: Path, fixture_wheels: dict[str, Path]) -> Iterator[tuple[str, Behaviour, Path]]:
    """``json/`` and ``html/``: the recorded pages in one form each; ``demo/``: a PEP 503
    index of a real fixture wheel; every path behind a Basic-auth token."""
    wheel = fixture_wheels["clean"]
    demo = tmp_path / "site" / "demo" / "demo-stable"
    demo.mkdir(parents=True)
    shutil.copy2(wheel, demo / wheel.name)
    (demo / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    with serve(tmp_path / "site", Behaviour(token=TOKEN)) as (base, behaviour):
        yield base.replace("://", f"://user:{TOKEN}@"), behaviour, tmp_path


@pytest.mark.parametrize("form", ["json", "html"])
@pytest.mark.parametrize("project", ["torchao", "torchcodec"])
def test_select_reads_the_recorded_pages(
    site: tuple[str, Behaviour, Path], capsys: pytest.CaptureFixture[str], project: str, form: str
) -> None:
    base, behaviour, tmp = site
    wheels = _recorded(tmp / "site" / form, base, project, form)
    code, out, err = _cli(
        capsys, "select", "--format", "json", *NO_FIT, "-i", f"{base}/{form}", "--name", project
    )
    assert code == 1, err  # read, and no wheel of it is for CPython 2.7 on Windows on ARM
    (found,) = json.loads(out)["projects"]
    assert found["name"] == project and len(found["not_opened"]) == wheels
    assert behaviour.downloads() == [] and f"/{form}/{project}/" in behaviour.requests


@pytest.mark.parametrize("project", ["torchao", "torchcodec"])
def test_scan_reads_the_recorded_pages(
    site: tuple[str, Behaviour, Path], capsys: pytest.CaptureFixture[str], project: str
) -> None:
    """By ``-i ROOT --name`` and by the project page's URL: a line per wheel the page links
    (each gone: the server holds none of them), and the scan goes on."""
    base, _, tmp = site
    wheels = _recorded(tmp / "site" / "json", base, project, "json")
    for n, source in enumerate((["-i", f"{base}/json", "--name", project], [f"{base}/json/{project}/"])):
        out = tmp / f"scan{n}.jsonl"
        code, _, err = _cli(capsys, "scan", *source, "-o", str(out), "--no-progress")
        assert code == 0, err
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(lines) == wheels and {line["error"]["code"] for line in lines} == {"not-found"}


def test_install_reads_the_recorded_page(
    site: tuple[str, Behaviour, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The page is read and the wheel that fits this interpreter is asked for: its absence
    (404 here) is the one error, not the page."""
    base, behaviour, tmp = site
    _recorded(tmp / "site" / "json", base, "torchao", "json")
    python = tmp / "venv" / "bin" / "python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True)
    code, _, err = _cli(capsys, "install", "--python", str(python), "-i", f"{base}/json", "--name", "torchao")
    assert code == 2 and "$.files" not in err and "HTTP 404" in err, err
    assert any(p.startswith("/files/") and "/torchao-" in p for p in behaviour.requests)


COMMANDS = {
    "select": ["select", *PLAN],
    "install": None,  # its own test above; here only its options
    "matrix": ["matrix"],
    "index": ["index", "-o", "{tmp}/out"],
    "scan": ["scan", "-o", "{tmp}/scan.jsonl", "--no-progress"],
}


@pytest.mark.parametrize("command", [c for c, args in COMMANDS.items() if args is not None])
def test_every_index_reading_command_takes_index_url_and_extra_index_url(
    site: tuple[str, Behaviour, Path], capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """``-i`` a root that lacks the project, ``--extra-index-url`` the one that has it: both
    are read, with the credentials of their URLs, and the wheel is found."""
    base, behaviour, tmp = site
    (tmp / "site" / "json").mkdir(exist_ok=True)
    args = [a.format(tmp=tmp) for a in COMMANDS[command] or []]
    roots = ["-i", f"{base}/json", "--extra-index-url", f"{base}/demo", "--name", "demo-stable"]
    code, out, err = _cli(capsys, *args, *roots)
    assert code == 0, (out, err)
    assert {"/json/demo-stable/", "/demo/demo-stable/"} <= set(behaviour.requests)
    assert TOKEN not in out + err
    if command == "scan":
        (line,) = (tmp / "scan.jsonl").read_text().splitlines()
        assert json.loads(line)["error"] is None


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_options_are_spelled_once(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = _cli(capsys, command, "--help")
    assert code == 0 and "-i, --index-url URL" in out and "--extra-index-url URL" in out


@pytest.mark.parametrize("command", ["matrix", "index", "scan"])
def test_no_source_and_no_index_is_a_misuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, _, err = _cli(capsys, command, *(["-o", str(tmp_path / "x")] if command != "matrix" else []))
    assert code == 2 and "-i INDEX" in err
