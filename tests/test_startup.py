"""Start-up structure: what a `check` of a small wheel imports, and what it must not.

Speed is measured by benchmarks (``benchmarks/startup_bench.py``, docs/evidence/performance.md
"Start-up"), never by timed tests. These tests guard the structure that speed rests on: the
imports made lazy because a check of a small stable-ABI wheel does not need them stay out of
such a check (``python -X importtime`` lists every module a process imported), and each
lazy path still gives what the eager one gave.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from installer.records import InvalidRecordEntry, parse_record_file

from torchwheel import safejson
from torchwheel.errors import InputError
from torchwheel.tables import symtable
from torchwheel.wheel.record import parse_record

from .helpers import REPO

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"

# module -> why a check of the demo wheel (an abi3 stable-ABI extension: C shim imports only,
# no Py* import, no GPU code, a clean RECORD) does without it
LAZY = {
    "installer": "RECORD is read by wheel/record.py itself (installer: 15 ms)",
    "demangle": "only names that are shown or that the prefix readers do not know",
    "pydemumble": "only names that are shown",
    "abi3info": "only a binary with Py* imports asks for the limited API",
    "backports.zstd": "only a zstd-compressed ROCm offload bundle",
    "compression.zstd": "the same on Python 3.14",
    "importlib.resources": "package data is read by path (it imports tempfile and shutil)",
    "html": "only `index` writes HTML",
    "torchwheel.tables.exports": "only an unstable wheel is dated by torch's exports",
    "torchwheel.tables.headergates": "only reading headers and merging tables",
    "torchwheel.safejson": "only a JSON document from outside (a facts file, --symbols, a page)",
    "email": "header blocks are read by wheel/headers.py (email.parser brings socket, random...)",
    "difflib": "only a code that is not one (the did-you-mean)",
}
# and in text: show/inspect's rendering (check's JSON takes its schema version from it)
LAZY_IN_TEXT = {**LAZY, "torchwheel.report.facts_document": "show and inspect's rendering"}
# what `--help` must not import: the library (cli/options.py: "--help must stay instant")
LIBRARY = (
    "torchwheel.analysis",
    "torchwheel.rules",
    "torchwheel.binary",
    "torchwheel.wheel",
    "torchwheel.torchabi",
)


def imported(*args: str, cwd: Path = REPO) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m torchwheel ARGS``: the result and every module it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "torchwheel", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return proc, names


def loaded(names: set[str], module: str) -> bool:
    return any(n == module or n.startswith(module + ".") for n in names)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_check_of_a_small_wheel_leaves_the_lazy_imports_out(fmt: str) -> None:
    proc, names = imported("check", "--format", fmt, str(DEMO))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "torchwheel.rules" in names and "torchwheel.analysis.collect" in names  # it did check
    eager = {m: why for m, why in (LAZY_IN_TEXT if fmt == "text" else LAZY).items() if loaded(names, m)}
    assert not eager, f"imported by `check --format {fmt}` of the demo wheel, though lazy: {eager}"


def test_help_imports_no_library() -> None:
    proc, names = imported("--help")
    assert proc.returncode == 0, proc.stderr
    assert not [n for n in names if n.startswith(LIBRARY)]


def test_lazy_paths_still_load_what_they_need() -> None:
    """The deferred imports happen where they are needed (in a fresh process: this one may
    have imported them already)."""
    code = (
        "import sys\n"
        "from torchwheel.torchabi import cxxnames\n"
        "assert 'demangle' not in sys.modules and 'pydemumble' not in sys.modules\n"
        "assert cxxnames.demangle('_ZN3c106detail14torchCheckFailEPKcS2_jRKSs')\n"
        "assert 'pydemumble' in sys.modules and 'demangle' not in sys.modules\n"
        "print(cxxnames.scope_key('_ZplRKN2at6TensorES2_'))\n"  # a global operator: the library's
        "assert 'demangle' in sys.modules\n"
        "from torchwheel.binary.offload import _Inflate\n"
        "assert 'backports.zstd' not in sys.modules\n"
        "assert _Inflate(0, 0, 1, 0).z is not None\n"  # method 1: zstd
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "::"


def test_shipped_table_fits_its_schema() -> None:
    """``load_shipped`` skips ``safejson``: the file is torchwheel's own, held to ``SHAPE`` here."""
    text = symtable._SHIPPED.read_bytes()
    checked = symtable.SymbolTable.from_document(
        safejson.load(text, "shipped", symtable.shape(), reference="tables-file-invalid"), "shipped"
    )
    assert symtable.load_shipped() == checked
    assert checked.to_json().encode() == text  # and it is what the generator writes


def _installer_rows(text: str) -> list[tuple[str, str, str]] | str:
    try:
        return list(parse_record_file(line for line in text.splitlines() if line.strip()))
    except InvalidRecordEntry as exc:
        return f"fields: {list(exc.elements)}"
    except csv.Error:
        return "csv"


def _our_rows(text: str) -> list[tuple[str, str, str]] | str:
    try:
        entries = parse_record(text)
    except InputError as exc:
        message = str(exc)
        return (
            "csv"
            if "not readable CSV" in message
            else f"fields: {message.split('row ', 1)[1].split(' does')[0]}"
        )
    return [(e.path, e.hash or "", "" if e.size is None else str(e.size)) for e in entries.values()]


@pytest.mark.parametrize(
    "text",
    [
        "a/b.py,sha256=AAA,3\nRECORD,,\n",
        'pkg\\win\\x.pyd,sha256=BBB,10\r\n"q,uo""ted.py",sha256=CCC,1\n\n  \nRECORD,,',
        "a.py,sha256=AAA\n",  # two fields
        "a.py,sha256=AAA,1,extra\n",
        'a.py,"unterminated,1\nb.py,,\n',
        '"multi\nline.py",sha256=DDD,2\nb.py,,\n',
    ],
)
def test_record_reading_is_installers(text: str) -> None:
    """wheel/record.py reads RECORD as installer's ``parse_record_file`` does (it no longer
    imports installer for it): the same rows, the same refusals."""
    ours, theirs = _our_rows(text), _installer_rows(text)
    if isinstance(theirs, list):  # later rows of one path win in both
        theirs = list({path: (path, h, s) for path, h, s in theirs}.values())
    assert ours == theirs
