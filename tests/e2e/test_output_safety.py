"""Output a wheel cannot forge (issue 23, parts 6 and 7).

A wheel whose member names, metadata and folder carry ESC, BEL and a right-to-left override
goes through every command and every format: no raw control or bidi character reaches
stdout, stderr or a written index page, GitHub annotations stay one well-formed command
each, and JSON documents are ASCII yet give the exact names back. Every ``--format json``
prints a document carrying the error on an exit 2, its message the stderr line's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchwheel.errors import REFERENCES
from torchwheel.report.github import escape_data, escape_property
from torchwheel.report.textsafe import defuse, html_text, json_text, markdown_cell, markdown_code, safe

from ..lib.helpers import fresh_venv, torchwheel, zipped_wheel

ESC, BEL, RLO = "\x1b", "\x07", "\u202e"
HOSTILE = f"{ESC}[31m{BEL}{RLO}"  # a colour, a bell, a right-to-left override
# what must never appear raw: C0 but TAB and LF, DEL, C1, the line separators, bidi controls
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
TAG = "cp39-abi3-manylinux_2_28_x86_64"
PLAN = ["--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64"]
MODULE = f"evil/{ESC}]0;pwned{BEL}{RLO}_C.abi3.so"  # an OSC title escape in a compiled member's name
DATA = f"evil/{HOSTILE}data{ESC}[2J.py"


def _wheel(folder: Path, module: bytes, metadata: str, name: str = "evil") -> Path:
    members = {
        f"{name}/__init__.py": b"",
        MODULE.replace("evil/", f"{name}/"): module,
        DATA.replace("evil/", f"{name}/"): b"x = 1\n",
        f"{name}-1.0.0.dist-info/METADATA": metadata.encode(),
        f"{name}-1.0.0.dist-info/WHEEL": (
            f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {TAG}\n"
        ).encode(),
    }
    return zipped_wheel(folder / f"{name}-1.0.0-{TAG}.whl", members, f"{name}-1.0.0.dist-info/RECORD")


@pytest.fixture(scope="module")
def hostile(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hostile-output")
    module = built_fixtures["elf_marker_2_10"].read_bytes()
    dist = root / f"dist{ESC}[2J{RLO}"  # every path printed carries them too
    good = _wheel(
        dist,
        module,
        "Metadata-Version: 2.1\nName: evil\nVersion: 1.0.0\n"
        f"Summary: {HOSTILE} summary\nProject-URL: Home, https://example.com/{ESC}[2J\n"
        "Requires-Python: >=3.9\nRequires-Dist: torch>=2.10\n",
    )
    broken = _wheel(  # a requirement that does not parse: its text is quoted in the findings
        root / f"broken{BEL}",
        module,
        f"Metadata-Version: 2.1\nName: evil\nVersion: 1.0.0\nRequires-Dist: torch>=2.10{ESC}[31m{RLO}\n",
    )
    binary = root / f"lib{HOSTILE}.so"
    binary.write_bytes(module)
    return {"root": root, "dist": dist, "good": good, "broken": broken, "binary": binary}


def _runs(h: dict[str, Path]) -> dict[str, list[str]]:
    out = h["root"] / "out"
    good, broken, dist = str(h["good"]), str(h["broken"]), str(h["dist"])
    runs: dict[str, list[str]] = {}
    for fmt in ("text", "json"):
        runs[f"inspect-{fmt}"] = ["inspect", "--format", fmt, str(h["binary"])]
        runs[f"show-{fmt}"] = ["show", "--format", fmt, good, broken]
        runs[f"compat-{fmt}"] = ["compat", "--format", fmt, "--against", "installed", good]
        runs[f"select-{fmt}"] = ["select", "--format", fmt, *PLAN, dist]
        runs[f"select-f-{fmt}"] = ["select", "--format", fmt, *PLAN, "-f", dist, "--name", "evil"]
    for fmt in ("text", "json", "github"):
        runs[f"check-{fmt}"] = ["check", "--format", fmt, good, broken]
    for fmt in ("text", "markdown", "json"):
        runs[f"matrix-{fmt}"] = ["matrix", "--format", fmt, "--why", dist]
        runs[f"matrix-broken-{fmt}"] = ["matrix", "--format", fmt, "--why", dist, broken]
    runs["tag-dry-run"] = ["tag", "--dry-run", "-v", good]
    runs["tag-w"] = ["tag", "-w", str(out / "tag"), good]
    runs["tag-broken"] = ["tag", "-w", str(out / "tag-broken"), broken]
    runs["repair"] = ["repair", "-w", str(out / "repair"), good]
    runs["repair-broken"] = ["repair", "-w", str(out / "repair-broken"), broken]
    runs["index"] = ["index", dist, "-o", str(out / "index")]
    runs["index-broken"] = ["index", dist, broken, "-o", str(out / "index-broken")]
    return runs


# each run's exit code (docs/reference/exit-codes.md): the good wheel has errors (check 1; repair refuses
# what the rewrite cannot fix), the broken one an archive that cannot be trusted (tag and
# repair refuse: 1; matrix and index cannot use it: 2); install refuses without torch (1)
CODES = {
    "inspect-text": 0,
    "show-text": 0,
    "compat-text": 0,
    "select-text": 0,
    "select-f-text": 0,
    "inspect-json": 0,
    "show-json": 0,
    "compat-json": 0,
    "select-json": 0,
    "select-f-json": 0,
    "check-text": 1,
    "check-json": 1,
    "check-github": 1,
    "matrix-text": 0,
    "matrix-broken-text": 2,
    "matrix-markdown": 0,
    "matrix-broken-markdown": 2,
    "matrix-json": 0,
    "matrix-broken-json": 2,
    "tag-dry-run": 0,
    "tag-w": 0,
    "tag-broken": 1,
    "repair": 1,
    "repair-broken": 1,
    "index": 0,
    "index-broken": 2,
    "install": 1,
}


@pytest.fixture(scope="module")
def outputs(hostile: dict[str, Path]) -> dict[str, tuple[int, str, str]]:
    done: dict[str, tuple[int, str, str]] = {}
    for key, args in _runs(hostile).items():
        result = torchwheel(*args)
        done[key] = (result.returncode, result.stdout, result.stderr)
    venv = fresh_venv(hostile["root"] / "venv")  # no torch there: install refuses, and says why
    result = torchwheel("install", "--python", str(venv), str(hostile["dist"]))
    done["install"] = (result.returncode, result.stdout, result.stderr)
    return done


def test_every_run_exits_as_pinned(outputs: dict[str, tuple[int, str, str]]) -> None:
    got = {key: code for key, (code, _, _) in outputs.items()}
    assert got == CODES, {key: outputs[key][2][-300:] for key in got if got[key] != CODES.get(key)}


def test_no_raw_control_in_any_output(outputs: dict[str, tuple[int, str, str]]) -> None:
    bad = {}
    for key, (code, stdout, stderr) in outputs.items():
        assert "Traceback" not in stderr and "internal error" not in stderr, (key, stderr)
        for stream, text in (("stdout", stdout), ("stderr", stderr)):
            found = RAW.search(text)
            if found:
                at = found.start()
                bad[f"{key} {stream} (exit {code})"] = text[max(0, at - 60) : at + 20]
    assert not bad, bad


def test_the_runs_reached_the_hostile_text(outputs: dict[str, tuple[int, str, str]]) -> None:
    """The outputs show the names, escaped: the test above proves something only if the
    hostile text was printed at all."""
    shown = defuse(MODULE).split("/", 1)[1]
    for key in ("show-text", "check-text", "check-github", "inspect-text", "select-text"):
        code, stdout, stderr = outputs[key]
        assert "\\x1b" in stdout + stderr, (key, code, stdout[:500], stderr)
    assert shown in outputs["show-text"][1]
    assert "\\u202e" in outputs["check-github"][1]
    assert outputs["tag-w"][0] == 0, outputs["tag-w"]
    assert outputs["index"][0] == 0, outputs["index"]


def test_github_annotations_stay_commands(outputs: dict[str, tuple[int, str, str]]) -> None:
    code, stdout, _ = outputs["check-github"]
    assert code == 1
    command = re.compile(r"^::(error|warning|notice) file=([^:,]*),title=([^:,]*)::(.*)$")
    annotations = [line for line in stdout.splitlines() if line.startswith("::")]
    assert annotations
    for line in annotations:
        assert command.match(line), line
    for line in stdout.splitlines():
        assert line.startswith("::") or "input" in line, line  # the summary line is the only other


def test_json_documents_are_ascii_and_exact(
    hostile: dict[str, Path], outputs: dict[str, tuple[int, str, str]]
) -> None:
    for key, (_, stdout, _) in outputs.items():
        if key.endswith("-json"):
            assert stdout.isascii(), key
            json.loads(stdout)
    doc = json.loads(outputs["show-json"][1])
    members = {f["member"] for w in doc["wheels"] for f in w["files"]}
    assert MODULE in members  # the exact name back, from an ASCII document
    assert doc["wheels"][0]["path"] == str(hostile["good"])


def test_index_pages_are_defused(hostile: dict[str, Path], outputs: dict[str, tuple[int, str, str]]) -> None:
    index = hostile["root"] / "out" / "index"
    assert outputs["index"][0] == 0
    pages = [p for p in index.rglob("*") if p.is_file() and p.suffix in (".html", ".txt", ".json")]
    assert any(p.suffix == ".html" for p in pages)
    for page in pages:
        text = page.read_text("utf-8")
        assert not RAW.search(text), page


def test_the_escapes_per_renderer() -> None:
    text = f"a|b`c:d,e%{ESC}{BEL}{RLO}\u2066\x85\x7f\nz"
    assert safe(text) == "a|b`c:d,e%\\x1b\\x07\\u202e\\u2066\\x85\\x7f\\nz"
    assert markdown_cell(text) == "a\\|b'c:d,e%\\x1b\\x07\\u202e\\u2066\\x85\\x7f\\nz"
    assert markdown_code("```") == "'''"
    assert html_text(f'<a href="x">{ESC}</a>') == "&lt;a href=&quot;x&quot;&gt;\\x1b&lt;/a&gt;"
    assert escape_data(text) == "a|b`c:d,e%25\\x1b\\x07\\u202e\\u2066\\x85\\x7f\\nz"
    assert escape_property(text) == "a|b`c%3Ad%2Ce%25\\x1b\\x07\\u202e\\u2066\\x85\\x7f\\nz"
    assert escape_data("\r\n") == "\\r\\n"
    rendered = json_text({"name": text})
    assert rendered.isascii() and not RAW.search(rendered)
    assert json.loads(rendered)["name"] == text
    assert safe("::error::x") == "\\x3a:error::x"


# -- JSON documents on an exit 2 ----------------------------------------------------------------


@pytest.fixture(scope="module")
def unreadable(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("unreadable")
    wheel = root / "only" / f"evil-1.0.0-{TAG}.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"PK\x03\x04 not a zip archive")
    text = root / "notes.so"
    text.write_bytes(b"not a binary at all")
    return {"root": root, "wheel": wheel, "folder": wheel.parent, "text": text}


def _failure_cases(u: dict[str, Path], h: dict[str, Path]) -> dict[str, list[str]]:
    return {
        "inspect": ["inspect", "--format", "json", str(u["text"])],
        "show": ["show", "--format", "json", str(u["wheel"])],
        "check": ["check", "--format", "json", str(u["wheel"])],
        "check-usage": ["check", "--format", "json"],
        "check-json-alias": ["check", "--json", str(u["wheel"])],
        "compat": ["compat", "--format", "json", "--against", "installed", str(u["wheel"])],
        "compat-torch": ["compat", "--format", "json", "--against", str(u["text"]), str(h["good"])],
        "select": ["select", "--format", "json", *PLAN, str(u["folder"])],
        "select-mixed": ["select", "--format", "json", *PLAN, str(h["dist"]), str(u["wheel"])],
        "select-bad-plan": ["select", "--format", "json", "--torch", "two", str(h["dist"])],
        "matrix": ["matrix", "--format", "json", str(u["folder"])],
        "matrix-mixed": ["matrix", "--format", "json", str(h["dist"]), str(u["wheel"])],
        "matrix-empty": ["matrix", "--format", "json", str(u["root"] / "missing")],
        "matrix-bad-torch": ["matrix", "--format", "json", "--torch", "two", str(h["dist"])],
    }


@pytest.mark.parametrize(
    "case",
    [
        "inspect", "show", "check", "check-usage", "check-json-alias", "compat", "compat-torch",
        "select", "select-mixed", "select-bad-plan", "matrix", "matrix-mixed", "matrix-empty",
        "matrix-bad-torch",
    ],
)  # fmt: skip
def test_json_on_exit_2_carries_the_error(
    case: str, unreadable: dict[str, Path], hostile: dict[str, Path]
) -> None:
    result = torchwheel(*_failure_cases(unreadable, hostile)[case])
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchwheel: error: "), result.stderr
    doc = json.loads(result.stdout)  # one document, whatever failed
    assert doc["schema_version"] == 1
    assert doc["error"]["exit"] == 2
    assert safe(doc["error"]["message"]) == lines[0].removeprefix("torchwheel: error: ")
    assert doc["error"]["reference"] in REFERENCES  # what it is, for a program: not the text
    said = {
        "select-bad-plan": "bad-option-value",
        "matrix-bad-torch": "bad-option-value",
        "check-usage": "misuse",
    }
    assert doc["error"]["reference"] == said.get(case, doc["error"]["reference"])
    if case in ("matrix", "matrix-mixed"):
        assert doc["skipped"] and doc["skipped"][0]["location"].endswith(".whl")
    if case == "matrix-mixed":
        assert [w["file"] for w in doc["wheels"]] == [hostile["good"].name]
    if case == "select-mixed":
        assert doc["projects"] and doc["skipped"]


def test_json_on_success_has_no_error(outputs: dict[str, tuple[int, str, str]]) -> None:
    for key in ("show-json", "check-json", "matrix-json", "select-json", "compat-json"):
        code, stdout, stderr = outputs[key]
        assert code == CODES[key], (key, stderr)
        assert "error" not in json.loads(stdout), key
