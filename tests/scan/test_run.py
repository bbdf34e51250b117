"""scan/run.py: what a run leaves out and what it writes. ``plan`` is the resume's decision
(a wheel the file holds by any of its keys is skipped, a page already recorded as unlisted is
not recorded twice, and both are counted as "already in the file"); ``scan`` in this process
(one job) shows the pieces together: a torn tail cut, nothing written twice, and a wheel
whose reading raises what no limit caught still gives a line."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchwheel import api
from torchwheel.net import fairness
from torchwheel.scan import run
from torchwheel.scan.jsonl import Done
from torchwheel.scan.listing import Listed
from torchwheel.scan.run import Judges, plan_scan, run_scan, scan_item
from torchwheel.scan.scanline import WheelSource
from torchwheel.tables.tablechoice import choose_tables

from ..lib.helpers import REPO
from ..lib.index_server import Behaviour, serve

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
A, C, D = "aa" * 32, "cc" * 32, "dd" * 32
JUDGES = Judges(api.check, api.need)  # what the command hands down


@pytest.fixture
def policy() -> Iterator[fairness.FairnessPolicy]:
    yield fairness.FairnessPolicy()
    fairness.configure(fairness.FairnessPolicy())  # run_scan() sets this process's caps: back to the defaults


def test_plan_skips_what_the_file_holds_by_any_key() -> None:
    listed = Listed(
        wheels=[
            WheelSource("https://h/a.whl", A),  # by the index's sha256
            WheelSource("/w/b.whl", None, 10, 5),  # by path, size, mtime
            WheelSource("/w/b2.whl", None, 10, 6),  # another file
            WheelSource("https://h/c.whl"),  # its last line was a network error
            WheelSource("https://h/d.whl", D),  # once hashed on download, now the index says the same
            WheelSource("https://h/e.whl", C),  # the URL is known, with other bytes
        ],
        unlisted=[("https://h/simple/gone/", "missing"), ("https://h/simple/new/", "missing")],
        yanked=3,
    )
    previous = Done(
        keys={
            f"sha256:{A}",
            "path:/w/b.whl:10:5",
            f"sha256:{D}",
            "url:https://h/d.whl",
            "url:https://h/e.whl",
            "unlisted:https://h/simple/gone/",
        },
        lines=7,
        end=700,
    )
    work = plan_scan(listed, previous)
    assert [w.location for w in work.todo] == ["/w/b2.whl", "https://h/c.whl", "https://h/e.whl"]
    assert work.unlisted == [("https://h/simple/new/", "missing")]
    assert (work.skipped, work.yanked) == (4, 3)  # 3 wheels and 1 unlisted page


def test_plan_of_a_first_run_does_everything() -> None:
    listed = Listed(wheels=[WheelSource("/w/a.whl", None, 1, 2)], unlisted=[("/w/gone", "missing")])
    work = plan_scan(listed, Done())
    assert (work.todo, work.unlisted, work.skipped, work.yanked) == (
        [WheelSource("/w/a.whl", None, 1, 2)],
        [("/w/gone", "missing")],
        0,
        0,
    )


def test_a_path_with_a_nul_byte_is_an_unreadable_line() -> None:
    """It was an internal error (``ValueError: embedded null byte``); safeopen names it now."""
    line = scan_item(WheelSource("bad\x00-1.0-py3-none-any.whl"), JUDGES)
    assert line["error"] == {
        "code": "unreadable",
        "message": "bad\x00-1.0-py3-none-any.whl: a path with a NUL byte names no file",
    }
    assert line["source"]["path"] == "bad\x00-1.0-py3-none-any.whl"
    assert (line["show"], line["check"], line["need"]) == (None, None, None)


def test_a_wheel_whose_reading_raises_is_a_line_not_a_stopped_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """What no limit caught (a bug, here raised on purpose) is a line too."""

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(run, "scan_line", boom)
    line = scan_item(WheelSource("/w/a-1.0-py3-none-any.whl"), JUDGES)
    assert line["error"] == {"code": "internal", "message": "internal error: RuntimeError: boom"}
    assert line["source"]["path"] == "/w/a-1.0-py3-none-any.whl"


def _index(root: Path) -> tuple[Path, Path, str]:
    """A local index: one project with its wheel and sha256, one project linked but missing."""
    project = root / "simple" / "demo-stable"
    project.mkdir(parents=True)
    wheel = Path(shutil.copy(DEMO, project))
    digest = hashlib.sha256(DEMO.read_bytes()).hexdigest()
    (project / "index.html").write_text(f'<a href="{DEMO.name}#sha256={digest}">{DEMO.name}</a>')
    (root / "simple" / "index.html").write_text('<a href="demo-stable/">d</a><a href="gone/">g</a>')
    return root / "simple", wheel, digest


def test_a_run_then_a_resume_after_a_kill(tmp_path: Path, policy: fairness.FairnessPolicy) -> None:
    index, wheel, digest = _index(tmp_path)
    out = tmp_path / "scan.jsonl"
    table = choose_tables(None, None)
    log = io.StringIO()
    work = run_scan([str(index)], out, 1, table, policy, log, tty=False, judges=JUDGES)
    assert (len(work.todo), work.skipped) == (1, 0)
    unlisted, line = (json.loads(text) for text in out.read_text().splitlines())
    assert unlisted == {
        "schema_version": 1,
        "source": {
            "path": f"{(index / 'gone').as_uri()}/",
            "filename": "gone",
            "sha256": None,
            "size": None,
            "mtime_ns": None,
            "origin": None,
        },
        "read": None,
        "fetched_bytes": 0,
        "sha256": None,
        "hashes_verified": {"file": None, "record": False},
        "show": None,
        "check": None,
        "need": None,
        "error": {"code": "unlisted", "message": f"linked from {index / 'index.html'} but missing"},
    }
    assert (line["source"]["path"], line["source"]["sha256"], line["sha256"]) == (str(wheel), digest, digest)
    assert line["error"] is None and line["hashes_verified"] == {"file": True, "record": True}
    assert re.fullmatch(
        r"scan: 2/2 wheels, 1 with errors, 0 B fetched, [0-9.]+ wheels/s, 0:00 left\n"
        r"scan: 2 wheels scanned \(1 with errors\), 0 B fetched in \d+:\d\d\n",
        log.getvalue(),
    ), log.getvalue()

    first = out.read_bytes()
    with out.open("ab") as fh:
        fh.write(b'{"schema_version":1,"source":{"path":"/w/x.wh')  # a kill's torn tail
    os.utime(wheel, ns=(1, 1))  # touched: still known by the sha256 its page gives
    log = io.StringIO()
    again = run_scan([str(index)], out, 1, table, policy, log, tty=False, judges=JUDGES)
    assert (again.todo, again.unlisted, again.skipped) == ([], [], 2)
    assert out.read_bytes() == first  # the tail cut, nothing added
    assert re.fullmatch(
        r"scan: 0 wheels scanned \(0 with errors, 2 already in the file\), 0 B fetched in \d+:\d\d\n",
        log.getvalue(),
    ), log.getvalue()


def test_fair_order_takes_each_host_in_turn() -> None:
    todo = [WheelSource(f"https://a/{i}.whl") for i in range(3)] + [WheelSource("https://b/0.whl")]
    todo += [WheelSource("/local/x.whl"), WheelSource("https://A/9.whl")]  # a host is case-blind
    assert [w.location for w in run.fair_order(todo)] == [
        "https://a/0.whl",
        "https://b/0.whl",
        "/local/x.whl",
        "https://a/1.whl",
        "https://a/2.whl",
        "https://A/9.whl",
    ]
    one_host = [WheelSource(f"https://a/{i}.whl") for i in range(5)]
    assert run.fair_order(one_host) == one_host  # one index keeps its order


def test_hosted_wheels_are_downloaded_ahead_of_their_checks(
    tmp_path: Path, policy: fairness.Policy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One checking process, and the downloads of the wheels after the one it checks already
    under way (every answer comes 0.3 s late: they overlap); each line is the one
    ``scan_one`` gives the same URL, and no downloaded file is left behind."""
    files = tmp_path / "files"
    files.mkdir()
    for i in range(6):
        shutil.copy(DEMO, files / DEMO.name.replace("1.0.0", f"1.0.{i}"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    out, listing = tmp_path / "scan.jsonl", tmp_path / "wheels.txt"
    table = choose_tables(None, None)
    with serve(files, Behaviour(slow={".whl": 0.3})) as (url, b):
        urls = [f"{url}/{p.name}" for p in sorted(files.iterdir())]
        listing.write_text("".join(f"{u}\n" for u in urls))
        work = run_scan([str(listing)], out, 1, table, policy, io.StringIO(), tty=False, judges=JUDGES)
        assert b.max_in_flight > 1  # downloads ran side by side, ahead of the one check
        lines = [json.loads(text) for text in out.read_text().splitlines()]
        assert [line["source"]["url"] for line in lines] == urls  # one host: the listing's order
        for line in lines:
            assert line == api.scan_one(line["source"], symbols=table)
    assert len(work.todo) == 6
    assert list(scratch.iterdir()) == []  # every download removed once its line was written


def test_a_failed_download_is_a_line_and_the_rest_go_on(tmp_path: Path, policy: fairness.Policy) -> None:
    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(DEMO, files / DEMO.name)
    out, listing = tmp_path / "scan.jsonl", tmp_path / "wheels.txt"
    with serve(files) as (url, _):
        listing.write_text(f"{url}/missing-1.0-py3-none-any.whl\n{url}/{DEMO.name}\n")
        run_scan(
            [str(listing)], out, 2, choose_tables(None, None), policy, io.StringIO(), tty=False, judges=JUDGES
        )
    lines = {
        json.loads(text)["source"]["filename"]: json.loads(text) for text in out.read_text().splitlines()
    }
    assert lines["missing-1.0-py3-none-any.whl"]["error"]["code"] == "not-found"
    assert lines[DEMO.name]["error"] is None and lines[DEMO.name]["read"] == "whole"
