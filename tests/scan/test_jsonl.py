"""scan/jsonl.py: the scan file is only ever appended to, and a resume trusts a line only
once its newline is there. These tests hold the promises a four-hour scan rests on: a torn
tail left by a kill is cut off before the next line and every whole line is kept, the resume
keys name a wheel before a byte of it is read (sha256, URL, path + size + mtime), and a
line whose error is the network's is not trusted, so the wheel is asked again."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from torchwheel import api
from torchwheel.errors import InputError
from torchwheel.install.scanline import WheelSource
from torchwheel.scan import jsonl
from torchwheel.scan.sources import list_sources

from ..helpers import REPO

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
A, B, C = "aa" * 32, "bb" * 32, "cc" * 32


def _line(source: dict[str, Any], sha256: str | None = None, code: str | None = None) -> dict[str, Any]:
    """A scan line as ``api.scan_one`` shapes it, with only what the resume reads filled in."""
    error = {"code": code, "message": f"{code} happened"} if code else None
    return {"schema_version": 1, "source": source, "sha256": sha256, "error": error}


def _write(path: Path, *lines: dict[str, Any], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines) + tail)


# keys_of / fingerprint: what names a work item before it is read


def test_a_hosted_wheel_with_a_digest_is_known_by_it_alone() -> None:
    assert jsonl.keys_of(WheelSource("https://h/x-1.0-py3-none-any.whl", A)) == {f"sha256:{A}"}


def test_a_hosted_wheel_without_a_digest_is_known_by_its_url() -> None:
    url = "https://h/x-1.0-py3-none-any.whl"
    assert jsonl.keys_of(WheelSource(url)) == {f"url:{url}"}
    assert jsonl.keys_of(WheelSource(url, size=10)) == {f"url:{url}"}  # a size is no fingerprint


def test_a_local_file_is_known_by_path_size_and_mtime_and_its_digest() -> None:
    assert jsonl.keys_of(WheelSource("/srv/w/x.whl", None, 10, 5)) == {"path:/srv/w/x.whl:10:5"}
    assert jsonl.keys_of(WheelSource("/srv/w/x.whl", B, 10, 5)) == {"path:/srv/w/x.whl:10:5", f"sha256:{B}"}


def test_a_local_fingerprint_is_of_the_absolute_normal_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    here = os.getcwd()
    assert jsonl.fingerprint(WheelSource("w/x.whl", None, 3, 7)) == f"path:{here}/w/x.whl:3:7"
    assert jsonl.fingerprint(WheelSource("/srv/lists/../w/x.whl", None, 3, 7)) == "path:/srv/w/x.whl:3:7"


@pytest.mark.parametrize(
    "source",
    [
        WheelSource("/srv/w/x.whl", None, None, 5),  # listed but gone: no size
        WheelSource("/srv/w/x.whl", None, 10, None),
        WheelSource("https://h/x.whl", None, 10, 5),  # hosted: never a path fingerprint
    ],
)
def test_no_fingerprint_without_every_part(source: WheelSource) -> None:
    assert jsonl.fingerprint(source) is None


def test_a_local_file_known_by_nothing_has_no_key() -> None:
    assert jsonl.keys_of(WheelSource("/srv/w/x.whl")) == set()


# lines / done: what a file already holds


def test_done_of_a_missing_file_is_empty(tmp_path: Path) -> None:
    found = jsonl.done(tmp_path / "none.jsonl")
    assert (found.keys, found.lines, found.end) == (set(), 0, 0)


def test_the_keys_a_file_holds_line_by_line(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    _write(
        out,
        _line({"path": "/w/a.whl", "size": 10, "mtime_ns": 5}, A),  # a local file, read whole
        _line({"url": "https://h/b.whl", "sha256": B}, B),  # the index gave its digest
        _line({"url": "https://h/c.whl"}, C),  # no digest on its page: downloaded and hashed
        _line({"url": "https://h/simple/gone/"}, code="unlisted"),  # a page that could not be listed
        _line({"url": "https://h/d.whl"}, code="not-found"),  # the wheel's own answer: trusted
    )
    assert jsonl.done(out).keys == {
        "path:/w/a.whl:10:5",
        f"sha256:{A}",
        f"sha256:{B}",
        "url:https://h/b.whl",
        "url:https://h/c.whl",
        f"sha256:{C}",
        "unlisted:https://h/simple/gone/",
        "url:https://h/d.whl",
    }


@pytest.mark.parametrize("code", ["network", "http", "budget"])
def test_a_line_whose_error_is_the_networks_is_counted_but_not_trusted(tmp_path: Path, code: str) -> None:
    out = tmp_path / "scan.jsonl"
    _write(out, _line({"url": "https://h/b.whl", "sha256": B}, code=code), _line({"url": "https://h/c.whl"}))
    found = jsonl.done(out)
    assert found.keys == {"url:https://h/c.whl"}  # b is asked again
    assert found.lines == 2


@pytest.mark.parametrize("code", ["digest", "limit", "unreadable", "memory", "internal"])
def test_a_line_whose_error_is_the_wheels_is_trusted(tmp_path: Path, code: str) -> None:
    out = tmp_path / "scan.jsonl"
    _write(out, _line({"url": "https://h/b.whl", "sha256": B}, code=code))
    assert jsonl.done(out).keys == {f"sha256:{B}", "url:https://h/b.whl"}


def test_a_torn_tail_is_not_a_line_and_ends_before_the_cut(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    first = b'{"schema_version":1,"source":{"url":"https://h/a.whl"},"error":null}\n'
    second = b'{"schema_version":1,"source":{"url":"https://h/b.whl"},"error":null}\n'
    out.write_bytes(first + second + b'{"schema_version":1,"source":{"url":"https://h/c.w')
    found = jsonl.done(out)
    assert (found.lines, found.end) == (2, len(first) + len(second))
    assert found.keys == {"url:https://h/a.whl", "url:https://h/b.whl"}
    assert [line["source"]["url"] for line in jsonl.lines(out)] == ["https://h/a.whl", "https://h/b.whl"]


def test_a_tail_that_parses_but_lacks_its_newline_is_not_trusted(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    whole = b'{"schema_version":1,"source":{"url":"https://h/a.whl"},"error":null}'
    out.write_bytes(whole)  # killed just before the newline
    found = jsonl.done(out)
    assert (found.keys, found.lines, found.end) == (set(), 0, 0)
    assert list(jsonl.lines(out)) == []


def test_what_is_not_a_scan_line_is_passed_over_and_counted_in_the_end(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    good = b'{"schema_version":1,"source":{"url":"https://h/a.whl"},"error":null}\n'
    others = [
        b"not json at all\n",
        b'{"schema_version":2,"source":{"url":"https://h/b.whl"}}\n',  # another schema
        b'{"schema_version":1}\n',  # no source
        b"[1, 2]\n",
        b'{"schema_version":1,"source":{"url":"https://h/\xff.whl"}}\n',  # not UTF-8
        b"\n",
    ]
    out.write_bytes(b"".join(others[:3]) + good + b"".join(others[3:]))
    found = jsonl.done(out)
    assert found.keys == {"url:https://h/a.whl"}
    assert (found.lines, found.end) == (1, len(good) + sum(len(o) for o in others))
    assert [line["source"] for line in jsonl.lines(out)] == [{"url": "https://h/a.whl"}]


def test_is_line_and_identity() -> None:
    assert jsonl.is_line({"schema_version": 1, "source": {}})
    assert not jsonl.is_line({"schema_version": 1, "source": None})  # names no source: no scan line
    assert not jsonl.is_line({"schema_version": 1, "source": "/w/a.whl"})
    assert not jsonl.is_line({"schema_version": 2, "source": {}})
    assert not jsonl.is_line({"schema_version": 1})
    assert not jsonl.is_line([1])
    assert jsonl.identity({"source": {"url": "https://h/a.whl", "path": "/x"}}) == "https://h/a.whl"
    assert jsonl.identity({"source": {"path": "/w/a.whl"}}) == "/w/a.whl"
    assert jsonl.identity({"source": None}) == ""


def test_done_of_a_folder_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "scan.jsonl").mkdir()
    with pytest.raises(InputError, match=r"scan\.jsonl: Is a directory"):
        jsonl.done(tmp_path / "scan.jsonl")


# Appender: one write per whole line, after the last whole line


def test_the_appender_cuts_a_torn_tail_and_keeps_every_whole_line(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    kept = b'{"schema_version":1,"source":{"path":"/w/a.whl"}}\n{"schema_version":1,"source":{"path":"/w/b.whl"}}\n'
    out.write_bytes(kept + b'{"schema_version":1,"sou')
    appender = jsonl.Appender(out, jsonl.done(out).end)
    appender.write({"schema_version": 1, "source": {"path": "/w/ü.whl"}, "error": None})
    appender.close()
    assert (
        out.read_bytes() == kept + '{"schema_version":1,"source":{"path":"/w/ü.whl"},"error":null}\n'.encode()
    )


def test_a_second_appender_appends(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    for name in ("a", "b"):
        appender = jsonl.Appender(out, jsonl.done(out).end)
        appender.write({"n": name})
        appender.close()
    assert out.read_bytes() == b'{"n":"a"}\n{"n":"b"}\n'


def test_the_appender_refuses_a_folder_that_is_not_there(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing/scan\.jsonl: No such file or directory"):
        jsonl.Appender(tmp_path / "missing" / "scan.jsonl", 0)


# a real line: what a resume skips without reading


def test_a_local_wheel_is_skipped_until_it_changes(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    wheel = Path(shutil.copy(DEMO, folder))
    os.utime(wheel, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    (source,) = list_sources([str(folder)]).wheels
    out = tmp_path / "scan.jsonl"
    appender = jsonl.Appender(out, 0)
    appender.write(api.scan_one(source))
    appender.close()
    size = DEMO.stat().st_size
    fingerprint = f"path:{wheel}:{size}:1700000000000000000"
    assert fingerprint in jsonl.done(out).keys
    assert jsonl.keys_of(source) == {fingerprint}

    os.utime(wheel, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_001))  # touched
    (again,) = list_sources([str(folder)]).wheels
    assert jsonl.keys_of(again) == {f"path:{wheel}:{size}:1700000000000000001"}
    assert not jsonl.keys_of(again) & jsonl.done(out).keys
