"""scan/report.py: ``torchwheel scan --report`` counts a scan from its lines alone. These
tests pin what is counted (stable or unstable, the stable floors, the torch builds, the
error codes of ``check`` per wheel, why a wheel could not be read), that only the newest
line of each source counts (a resume asks a wheel again after a network error), and the
text and markdown tables exactly, escapes included: the keys come from wheels."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from torchwheel import api
from torchwheel.errors import InputError
from torchwheel.scan.report import Summary, render_summary, summarize
from torchwheel.scan.scanline import empty_line


def _need(kind: str, floor: str | None = None, builds: list[str] | str | None = None) -> dict[str, Any]:
    return {"kind": kind, "floor": floor, "torch_build": builds}


def _line(
    where: str,
    need: dict[str, Any] | None = None,
    *,
    error: str | None = None,
    findings: tuple[tuple[str, str], ...] = (),
    show_need: dict[str, Any] | None = None,
    refused: bool = False,
) -> dict[str, Any]:
    """A line shaped as ``api.scan_one``'s, with what the report reads."""
    key = "url" if "://" in where else "path"
    line: dict[str, Any] = empty_line() | {"source": {key: where}}
    line["need"] = {"schema_version": 1, "need": need} if need is not None else None
    if refused:  # a wheel `check` calls broken: api.need refused it
        line["need"] = {"schema_version": 1, "error": {"code": "unreadable", "message": "TW401"}}
    if show_need is not None:
        line["show"] = {"wheels": [{"need": show_need}]}
    if findings:
        line["check"] = {"findings": [{"code": c, "severity": s} for c, s in findings]}
    line["error"] = {"code": error, "message": "..."} if error else None
    return line


def _file(path: Path, *lines: dict[str, Any], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + tail)
    return path


def test_what_is_counted(tmp_path: Path) -> None:
    scan = _file(
        tmp_path / "scan.jsonl",
        _line(
            "/w/a.whl",
            _need("stable", "2.10.0", ["any"]),
            findings=(("TW201", "error"), ("TW201", "error"), ("TW101", "warning"), ("TW503", "error")),
        ),
        _line("/w/b.whl", _need("stable", "2.13.0", ["cuda-12", "cuda-13"]), findings=(("TW201", "error"),)),
        _line("/w/c.whl", _need("unstable", None, [])),  # no build named: "none"
        _line("/w/d.whl", refused=True, show_need=_need("stable", "2.10.0", ["any"])),  # from `show`
        _line("/w/e.whl"),  # no need anywhere: unknown, never guessed
        _line("https://h/f.whl", _need("stable", "2.12.0", "not read")),  # a partial line without --gpu
        _line("https://h/g.whl", _need("stable", None, ["any"])),  # stable without a floor
        _line("/w/h.whl", error="unreadable"),
        _line("https://h/i.whl", error="not-found"),
        _line("https://h/j.whl", error="digest"),
        _line("https://h/k.whl", error="unreadable"),
        empty_line() | {"schema_version": 2, "source": {"path": "/w/z.whl"}},  # not a scan line
        tail='{"schema_version":1,"source":{"path":"/w/torn.whl"}',  # a kill's torn tail
    )
    assert summarize(scan).to_json() == {
        "schema_version": 1,
        "wheels": 11,
        "read": 7,
        "kind": {"stable": 5, "unstable": 1, "unknown": 1},
        "stable_floor": {"2.10.0": 2, "2.12.0": 1, "2.13.0": 1},
        "torch_build": {"any": 3, "cuda-12, cuda-13": 1, "none": 1, "not read": 1},
        "error_findings": {"TW201": 2, "TW503": 1},  # wheels with each code, warnings left out
        "input_errors": {"digest": 1, "not-found": 1, "unreadable": 2},
        "not_scan_lines": 1,  # the schema_version 2 line; the torn tail is no whole line
    }


def test_the_newest_line_of_each_source_counts(tmp_path: Path) -> None:
    scan = _file(
        tmp_path / "scan.jsonl",
        _line("https://h/a.whl", error="network"),  # asked again by the resume...
        _line("/w/b.whl", _need("stable", "2.10.0", ["any"])),
        _line("https://h/a.whl", _need("unstable", None, ["any"])),  # ...and read this time
        _line("/w/c.whl", _need("stable", "2.10.0", ["any"])),
        _line("/w/c.whl", error="unreadable"),  # the same path, changed since, now broken
    )
    summary = summarize(scan)
    assert (summary.wheels, summary.read) == (3, 2)
    assert summary.kinds == Counter({"stable": 1, "unstable": 1})
    assert summary.errors == Counter({"unreadable": 1})


def test_a_url_and_a_path_are_different_sources(tmp_path: Path) -> None:
    scan = _file(
        tmp_path / "scan.jsonl",
        _line("/w/a.whl", _need("stable", "2.10.0", ["any"])),
        _line("https://h/w/a.whl", _need("stable", "2.10.0", ["any"])),
    )
    assert summarize(scan).wheels == 2


def test_a_file_without_lines_counts_nothing(tmp_path: Path) -> None:
    empty = _file(tmp_path / "scan.jsonl")
    assert summarize(empty).to_json() == {
        "schema_version": 1,
        "wheels": 0,
        "read": 0,
        "kind": {},
        "stable_floor": {},
        "torch_build": {},
        "error_findings": {},
        "input_errors": {},
        "not_scan_lines": 0,
    }
    assert render_summary(summarize(empty), "text") == "0 wheels, 0 read, 0 unreadable"


def test_no_scan_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"scan\.jsonl: no such scan file$"):
        summarize(tmp_path / "scan.jsonl")


@pytest.mark.parametrize("what", ["folder", "fifo", "device"])
def test_what_is_no_regular_file_is_refused_before_it_is_read(tmp_path: Path, what: str) -> None:
    path = tmp_path / "scan.jsonl"
    if what == "folder":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)  # reading it would wait for a writer forever
    else:
        path = Path("/dev/zero")  # reading it would never end
    with pytest.raises(InputError, match=r"not a regular file: not opened \(reading the scan file\)$"):
        summarize(path)


def test_real_lines_of_fixture_wheels(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """The lines ``scan_one`` writes, not hand-made ones: the report reads their real shape
    (facts of each wheel from fixtures/README.md)."""
    kinds = ("clean", "per_minor", "cuda12", "tw201", "tw401", "bad_not_a_zip")
    scan = _file(tmp_path / "scan.jsonl", *(api.scan_one(fixture_wheels[k]) for k in kinds))
    assert summarize(scan).to_json() == {
        "schema_version": 1,
        "wheels": 6,
        "read": 5,
        "kind": {"stable": 3, "unstable": 1, "none": 1},  # tw401: its need from `show`
        "stable_floor": {"2.10.0": 2, "2.13.0": 1},
        "torch_build": {"any": 4, "cuda-12": 1},
        "error_findings": {"TW201": 1, "TW401": 1},  # per_minor's findings are warnings
        "input_errors": {"unreadable": 1},
        "not_scan_lines": 0,
    }


def _summary() -> Summary:
    return Summary(
        wheels=1234,
        read=1229,
        kinds=Counter({"unstable": 230, "stable": 999}),
        floors=Counter({"2.13.0": 400, "2.10.0": 599}),
        builds=Counter({"any": 1199, "cuda-12": 30}),
        findings=Counter(),
        errors=Counter({"unreadable": 1, "network": 4}),
    )


def test_the_text_tables() -> None:
    assert render_summary(_summary(), "text").splitlines() == [
        "1,234 wheels, 1,229 read, 5 unreadable",
        "",
        "need      wheels",
        "stable       999",
        "unstable     230",
        "",
        "stable floor (torch >=)  wheels",
        "2.10.0                      599",
        "2.13.0                      400",
        "",
        "torch build  wheels",
        "any           1,199",
        "cuda-12          30",
        "",  # no error found: no table
        "unreadable (code)  wheels",
        "network                 4",
        "unreadable              1",
    ]


def test_the_markdown_tables() -> None:
    assert render_summary(_summary(), "markdown").splitlines() == [
        "**1,234 wheels, 1,229 read, 5 unreadable**",
        "",
        "| need | wheels |",
        "|---|---:|",
        "| `stable` | 999 |",
        "| `unstable` | 230 |",
        "",
        "| stable floor (torch >=) | wheels |",
        "|---|---:|",
        "| `2.10.0` | 599 |",
        "| `2.13.0` | 400 |",
        "",
        "| torch build | wheels |",
        "|---|---:|",
        "| `any` | 1,199 |",
        "| `cuda-12` | 30 |",
        "",
        "| unreadable (code) | wheels |",
        "|---|---:|",
        "| `network` | 4 |",
        "| `unreadable` | 1 |",
    ]


def test_the_json_document_orders_counts_and_names() -> None:
    doc = _summary().to_json()
    assert list(doc["kind"]) == ["stable", "unstable"]  # most wheels first
    assert list(doc["stable_floor"]) == ["2.10.0", "2.13.0"]  # by name
    assert list(doc["input_errors"]) == ["network", "unreadable"]


def test_keys_a_wheel_chose_are_escaped(tmp_path: Path) -> None:
    """A torch build or an error code is text from the input: it cannot draw on a terminal,
    start a workflow command or break a markdown table."""
    scan = _file(
        tmp_path / "scan.jsonl",
        _line("/w/a.whl", _need("stable", "2.10.0", ["cu\x1b[31m|`x`"])),
        _line("/w/b.whl", error="::error::x\n"),
    )
    text = render_summary(summarize(scan), "text").splitlines()
    assert "cu\\x1b[31m|`x`       1" in text  # the escaped key is what sets the width
    assert "\\x3a:error::x\\n         1" in text
    markdown = render_summary(summarize(scan), "markdown").splitlines()
    assert "| `cu\\x1b[31m\\|'x'` | 1 |" in markdown
    assert "| `::error::x\\n` | 1 |" in markdown


# what does not parse: counted as such, never guessed at (the module's docstring)


def test_a_line_that_does_not_parse_is_counted(tmp_path: Path) -> None:
    good = _line("/w/a.whl", _need("stable", "2.10.0", ["any"]))
    clean = summarize(_file(tmp_path / "clean.jsonl", good)).to_json()
    garbled = summarize(_file(tmp_path / "garbled.jsonl", good, tail="not a line\n")).to_json()
    assert garbled != clean, "a whole line that does not parse left no trace in the report"


@pytest.mark.parametrize(
    "bad",
    [
        {"need": "stable"},  # report.py _need: (line.get("need") or {}).get
        {"show": {"wheels": [7]}},  # report.py _need: wheels[0].get
        {"check": {"findings": ["TW201"]}},  # report.py _count: f.get
        {"need": {"need": {"kind": "unstable", "torch_build": [12]}}},  # report.py _count: join
        {"source": "/w/b.whl"},  # jsonl.identity: source.get
        {"source": {"path": 5}},
        {"source": {"path": "/w/b.whl", "size": "x"}},
        {"schema_version": True},
        {"fetched_bytes": 1e300},
        {"fetched_bytes": -1},
        {"sha256": "not hex"},
        {"error": {"code": "x"}},
        {"read": "guessed"},
        {"hashes_verified": "yes"},
        {"surprise": 1},
    ],
    ids=[
        "need-a-string",
        "show-wheel-a-number",
        "finding-a-string",
        "build-a-number",
        "source-a-string",
        "path-a-number",
        "size-a-string",
        "version-true",
        "bytes-a-float",
        "bytes-negative",
        "sha256-not-hex",
        "error-without-message",
        "read-unknown",
        "verified-a-string",
        "unknown-key",
    ],
)
def test_a_scan_line_of_the_wrong_shape_is_no_scan_line(tmp_path: Path, bad: dict[str, Any]) -> None:
    """docs/scan.md: a field of another shape than the line's makes it no scan line."""
    line = empty_line() | {"source": {"path": "/w/b.whl"}} | bad
    scan = _file(tmp_path / "scan.jsonl", _line("/w/a.whl", _need("stable", "2.10.0", ["any"])), line)
    doc = summarize(scan).to_json()
    assert doc["kind"] == {"stable": 1} and doc["stable_floor"] == {"2.10.0": 1}
    assert (doc["wheels"], doc["not_scan_lines"]) == (1, 1)


def test_nan_and_infinity_are_no_scan_line(tmp_path: Path) -> None:
    good = json.dumps(_line("/w/a.whl"), separators=(",", ":"))
    scan = tmp_path / "scan.jsonl"
    scan.write_text(
        good.replace('"fetched_bytes":0', '"fetched_bytes":NaN')
        + "\n"
        + good.replace('"fetched_bytes":0', '"fetched_bytes":1e999999')
        + "\n"
    )
    doc = summarize(scan).to_json()
    assert (doc["wheels"], doc["not_scan_lines"]) == (0, 2)


def test_a_line_past_the_limit_is_counted_and_never_held(
    tmp_path: Path, set_limits: Callable[..., None]
) -> None:
    set_limits(MAX_SCAN_LINE_BYTES="4K")
    big = _line("/w/b.whl", _need("stable", "2.10.0", ["any"]), findings=(("TW201", "error"),) * 200)
    scan = _file(tmp_path / "scan.jsonl", _line("/w/a.whl", _need("unstable")), big)
    doc = summarize(scan).to_json()
    assert (doc["wheels"], doc["not_scan_lines"], doc["kind"]) == (1, 1, {"unstable": 1})


def test_a_line_nested_past_the_decoders_depth_is_no_scan_line(tmp_path: Path) -> None:
    """json's decoder raises RecursionError, not ValueError, for 200,000 nested lists: the line
    is counted, and the lines around it still are (it was an internal error)."""
    good = _line("/w/a.whl", _need("stable", "2.10.0", ["any"]))
    scan = _file(tmp_path / "scan.jsonl", good, tail="[" * 200_000 + "]" * 200_000 + "\n")
    doc = summarize(scan).to_json()
    assert (doc["wheels"], doc["not_scan_lines"]) == (1, 1)


def _partial_line(
    where: str, fetched: int, requests: int, size: int, not_read: tuple[str, ...]
) -> dict[str, Any]:
    line = _line(where, _need("stable", "2.10.0", "not read" if "torch_build" in not_read else ["any"]))
    axes = ("kind", "floor", "releases", "releases_from", "requirements", "torch_build", "gpu_code", "marker")
    line["fetched_bytes"] = fetched
    line["partial"] = {
        "axes": {a: "not read" if a in not_read else "decided" for a in axes},
        "requests": requests,
        "wheel_bytes": size,
    }
    return line


def test_a_partial_scan_counts_each_axis_and_the_bytes(tmp_path: Path) -> None:
    """Per axis, the wheels whose bytes decided it and those that did not; the bytes and
    requests fetched against the wheels' sizes. A plain scan's lines add nothing to it, and
    an older partial line (``axes``: the list of those decided) is read too."""
    old = _partial_line("https://h/c.whl", 1_000, 3, 50_000, ())
    old["partial"]["axes"] = ["kind", "floor", "releases", "releases_from", "requirements"]
    scan = _file(
        tmp_path / "scan.jsonl",
        _partial_line("https://h/a.whl", 2_000, 4, 100_000, ("gpu_code", "marker")),
        _partial_line("https://h/b.whl", 30_000, 1, 30_000, ()),  # small: read whole
        old,
        _line("https://h/d.whl", _need("stable", "2.10.0", ["any"])),  # a plain scan's line
    )
    summary = summarize(scan)
    doc = summary.to_json()["partial"]
    assert (doc["wheels"], doc["fetched_bytes"], doc["requests"], doc["wheel_bytes"]) == (
        3,
        33_000,
        8,
        180_000,
    )
    assert doc["axes"]["kind"] == {"decided": 3, "not read": 0}
    assert doc["axes"]["gpu_code"] == {"decided": 1, "not read": 2}
    assert doc["axes"]["marker"] == {"decided": 1, "not read": 2}
    text = render_summary(summary, "text").splitlines()
    assert text[:6] == [
        "4 wheels, 4 read, 0 unreadable",
        "",
        "partial reads: 3 wheels, 33,000 bytes fetched in 8 requests, of 180,000 bytes of wheels (18.3%)",
        "",
        "axis (partial reads)  decided  not read",
        "kind                        3         0",
    ]
    assert "| `marker` | 1 | 2 |" in render_summary(summary, "markdown").splitlines()
    assert "partial" not in summarize(_file(tmp_path / "plain.jsonl", _line("/w/a.whl"))).to_json()
