"""scan/jsonl.py: the scan file is only ever appended to, a resume trusts a line only
once its newline is there, and a file that is not a scan file is never changed. These tests hold the promises a four-hour scan rests on: a torn
tail left by a kill is cut off before the next line and every whole line is kept, the resume
keys name a wheel before a byte of it is read (sha256, URL, path + size + mtime), and a
line whose error is the network's is not trusted, so the wheel is asked again."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from torchwheel import api
from torchwheel.errors import InputError
from torchwheel.scan import jsonl
from torchwheel.scan.listing import list_sources
from torchwheel.scan.scanline import WheelSource, empty_line

from ..lib.helpers import REPO

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
A, B, C = "aa" * 32, "bb" * 32, "cc" * 32


def _line(source: dict[str, Any], sha256: str | None = None, code: str | None = None) -> dict[str, Any]:
    """A scan line as ``api.scan_one`` shapes it (``empty_line``), with what the resume reads."""
    error = {"code": code, "message": f"{code} happened"} if code else None
    return empty_line(None, error) | {"source": source, "sha256": sha256}


def _bytes(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


def _write(path: Path, *lines: dict[str, Any], tail: bytes = b"") -> None:
    path.write_bytes(_bytes(*lines) + tail)


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


# check_output: what a file already holds, once it is a scan file


def test_a_missing_file_holds_nothing_and_is_not_created(tmp_path: Path) -> None:
    found = jsonl.check_output(tmp_path / "none.jsonl")
    assert (found.keys, found.lines, found.end, found.checked) == (set(), 0, 0, None)
    assert not (tmp_path / "none.jsonl").exists()
    with pytest.raises(InputError, match="no such folder to write the scan file in"):
        jsonl.check_output(tmp_path / "missing" / "none.jsonl")


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
    assert jsonl.check_output(out).keys == {
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
    found = jsonl.check_output(out)
    assert found.keys == {"url:https://h/c.whl"}  # b is asked again
    assert found.lines == 2


@pytest.mark.parametrize("code", ["digest", "limit", "unreadable", "memory", "internal"])
def test_a_line_whose_error_is_the_wheels_is_trusted(tmp_path: Path, code: str) -> None:
    out = tmp_path / "scan.jsonl"
    _write(out, _line({"url": "https://h/b.whl", "sha256": B}, code=code))
    assert jsonl.check_output(out).keys == {f"sha256:{B}", "url:https://h/b.whl"}


@pytest.mark.parametrize(
    "tail",
    [
        b"{",
        b'{"schema_version":1,"sou',
        b'{"schema_version":1,"source":{"url":"https://h/c.w',
        b'{"schema_version": 1, "so',
    ],
    ids=["one-byte", "in-a-key", "in-the-source", "spaced-by-json.dumps"],
)
def test_a_torn_tail_is_not_a_line_and_ends_before_the_cut(tmp_path: Path, tail: bytes) -> None:
    out = tmp_path / "scan.jsonl"
    whole = _bytes(_line({"url": "https://h/a.whl"}), _line({"url": "https://h/b.whl"}))
    out.write_bytes(whole + tail)
    found = jsonl.check_output(out)
    assert (found.lines, found.end) == (2, len(whole))
    assert found.keys == {"url:https://h/a.whl", "url:https://h/b.whl"}


def test_a_tail_that_parses_but_lacks_its_newline_is_not_trusted(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    out.write_bytes(_bytes(_line({"url": "https://h/a.whl"}))[:-1])  # killed just before the newline
    found = jsonl.check_output(out)
    assert (found.keys, found.lines, found.end) == (set(), 0, 0)


_GOOD = _line({"url": "https://h/a.whl"})


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"line one\nmy precious last line", "line 1 is no scan line (not JSON"),
        (_bytes(_GOOD) + b"my precious last line", "ends in 21 bytes that are not the start of a scan line"),
        (_bytes(_GOOD) + b"\n", "line 2 is no scan line (not JSON"),
        (DEMO.read_bytes(), "line 1 is no scan line (not"),
        (
            _bytes(_GOOD | {"schema_version": 2}),
            "line 1 is no scan line ($.schema_version: 2 is outside 1..1",
        ),
        (_bytes(_GOOD | {"schema_version": True}), "$.schema_version: expected an integer, found true"),
        (_bytes(_GOOD | {"source": {"path": 5}}), "$.source"),
        (_bytes(_GOOD | {"source": {"path": "/w/a.whl", "size": "x"}}), "$.source"),
        (_bytes(_GOOD | {"fetched_bytes": 1e300}), "$.fetched_bytes: expected an integer, found a number"),
        (_bytes(_GOOD)[:-1].replace(b'"fetched_bytes":0', b'"fetched_bytes":NaN') + b"\n", "NaN is not JSON"),
        (
            _bytes(_GOOD)[:-1].replace(b'"fetched_bytes":0', b'"fetched_bytes":1e999999') + b"\n",
            "found a number",
        ),
        (_bytes(_GOOD | {"error": {"code": 5, "message": "x"}}), "$.error"),
        (b"[" * 200_000 + b"]" * 200_000 + b"\n", "the JSON nesting depth"),
    ],
    ids=[
        "notes",
        "notes-after-a-line",
        "empty-line",
        "a-wheel",
        "schema-2",
        "version-true",
        "path-a-number",
        "size-a-string",
        "bytes-a-float",
        "bytes-nan",
        "bytes-inf",
        "error-code-a-number",
        "nested",
    ],
)
def test_a_file_that_is_not_a_scan_file_is_refused_and_left_as_it_is(
    tmp_path: Path, content: bytes, why: str
) -> None:
    out = tmp_path / "notes.txt"
    out.write_bytes(content)
    with pytest.raises(InputError, match=re.escape(why)) as info:
        jsonl.check_output(out)
    assert "not a scan file; left as it is" in str(info.value)
    assert out.read_bytes() == content


def test_a_line_past_the_limit_is_refused_in_bounded_memory(
    tmp_path: Path, set_limits: Callable[..., None]
) -> None:
    set_limits(MAX_SCAN_LINE_BYTES="1K")
    out = tmp_path / "scan.jsonl"
    out.write_bytes(_bytes(_GOOD) + b"x" * 5000 + b"\n")
    with pytest.raises(InputError, match="line 2 is longer than max-scan-line-bytes = 1,024 bytes"):
        jsonl.check_output(out)
    with out.open("rb") as fh:  # the long line skipped in steps, its bytes never returned
        assert [(r.data is None, r.size, r.whole) for r in jsonl.raw_lines(fh)] == [
            (False, len(_bytes(_GOOD)), True),
            (True, 5001, True),
        ]


@pytest.mark.parametrize("what", ["folder", "fifo", "link", "dangling-link", "device"])
def test_what_is_not_a_regular_file_is_refused_before_it_is_opened(tmp_path: Path, what: str) -> None:
    out = tmp_path / "scan.jsonl"
    target = tmp_path / "elsewhere.jsonl"
    target.write_bytes(_bytes(_GOOD))
    if what == "folder":
        out.mkdir()
    elif what == "fifo":
        os.mkfifo(out)  # opening it to read would wait for a writer forever
    elif what == "link":
        out.symlink_to(target)
    elif what == "dangling-link":
        out.symlink_to(tmp_path / "nowhere.jsonl")
    else:
        out = Path("/dev/full")
    with pytest.raises(InputError, match="symbolic link" if "link" in what else "not a regular file"):
        jsonl.check_output(out)
    assert target.read_bytes() == _bytes(_GOOD)
    assert not (tmp_path / "nowhere.jsonl").exists()


def test_a_proc_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="/proc/version: line 1 is no scan line"):
        jsonl.check_output(Path("/proc/version"))
    with pytest.raises(InputError, match="a /proc or /sys entry"):  # reads as an empty file would
        jsonl.check_output(Path("/proc/self/timers"))


def test_identity() -> None:
    assert jsonl.identity({"source": {"url": "https://h/a.whl", "path": "/x"}}) == "https://h/a.whl"
    assert jsonl.identity({"source": {"path": "/w/a.whl"}}) == "/w/a.whl"


# Appender: one write per whole line, after the last whole line


def test_the_appender_cuts_a_torn_tail_and_keeps_every_whole_line(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    kept = _bytes(_line({"path": "/w/a.whl"}), _line({"path": "/w/b.whl"}))
    out.write_bytes(kept + b'{"schema_version":1,"sou')
    appender = jsonl.Appender(out, jsonl.check_output(out))
    appender.write(_line({"path": "/w/ü.whl"}))
    appender.close()
    assert out.read_bytes() == kept + _bytes(_line({"path": "/w/ü.whl"})).decode("unicode_escape").encode()
    assert jsonl.check_output(out).lines == 3


def test_a_second_appender_appends(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    for name in ("a", "b"):
        appender = jsonl.Appender(out, jsonl.check_output(out))
        appender.write(_line({"path": f"/w/{name}.whl"}))
        appender.close()
    assert out.read_bytes() == _bytes(_line({"path": "/w/a.whl"}), _line({"path": "/w/b.whl"}))


def test_the_appender_refuses_a_folder_that_is_not_there(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing/scan\.jsonl: No such file or directory"):
        jsonl.Appender(tmp_path / "missing" / "scan.jsonl", jsonl.Done())


def test_the_appender_refuses_a_file_changed_since_it_was_checked(tmp_path: Path) -> None:
    out = tmp_path / "scan.jsonl"
    _write(out, _GOOD)
    checked = jsonl.check_output(out)
    with out.open("ab") as fh:
        fh.write(b"written by someone else\n")
    with pytest.raises(InputError, match="changed since it was checked"):
        jsonl.Appender(out, checked)
    new = tmp_path / "new.jsonl"
    nothing = jsonl.check_output(new)
    new.write_bytes(b"appeared meanwhile\n")
    with pytest.raises(InputError, match="File exists"):
        jsonl.Appender(new, nothing)
    assert new.read_bytes() == b"appeared meanwhile\n"


def test_a_line_past_the_limit_is_written_without_its_documents(
    tmp_path: Path, set_limits: Callable[..., None]
) -> None:
    set_limits(MAX_SCAN_LINE_BYTES="2K")
    out = tmp_path / "scan.jsonl"
    appender = jsonl.Appender(out, jsonl.check_output(out))
    appender.write(_GOOD | {"check": {"findings": [{"code": "TW403", "severity": "error", "x": "y" * 4000}]}})
    appender.close()
    (line,) = out.read_bytes().splitlines()
    doc = json.loads(line)
    assert len(line) <= 2048 and doc["check"] is None and doc["error"]["code"] == "limit"
    assert "exceeds the limit max-scan-line-bytes = 2,048" in doc["error"]["message"]
    assert jsonl.check_output(out).lines == 1  # what scan writes, it reads back


def test_a_write_that_fails_names_the_file_and_leaves_no_half_line(tmp_path: Path) -> None:
    """A full disk, for real: RLIMIT_FSIZE makes the kernel refuse the bytes past it (EFBIG),
    in a child so the limit stays there."""
    out = tmp_path / "scan.jsonl"
    _write(out, _GOOD)
    size = out.stat().st_size
    code = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from torchwheel.scan import jsonl\n"
        "from torchwheel.scan.scanline import empty_line\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({size + 100}, {size + 100}))\n"
        "out = Path(sys.argv[1])\n"
        "a = jsonl.Appender(out, jsonl.check_output(out))\n"
        "try:\n"
        "    a.write(empty_line() | {'source': {'path': '/w/' + 'x' * 500 + '.whl'}})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "a.close()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"InputError {out}: File too large (appending scan line 2); the 1 whole")
    assert out.read_bytes() == _bytes(_GOOD)


# a real line: what a resume skips without reading


def test_a_local_wheel_is_skipped_until_it_changes(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()
    wheel = Path(shutil.copy(DEMO, folder))
    os.utime(wheel, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    (source,) = list_sources([str(folder)]).wheels
    out = tmp_path / "scan.jsonl"
    appender = jsonl.Appender(out, jsonl.check_output(out))
    appender.write(api.scan_one(source))
    appender.close()
    size = DEMO.stat().st_size
    fingerprint = f"path:{wheel}:{size}:1700000000000000000"
    assert fingerprint in jsonl.check_output(out).keys
    assert jsonl.keys_of(source) == {fingerprint}

    os.utime(wheel, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_001))  # touched
    (again,) = list_sources([str(folder)]).wheels
    assert jsonl.keys_of(again) == {f"path:{wheel}:{size}:1700000000000000001"}
    assert not jsonl.keys_of(again) & jsonl.check_output(out).keys
