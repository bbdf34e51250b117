"""A short coverage-guided fuzz session of every reader (benchmarks/fuzz.py, atheris).

It must find nothing: an input may only end in BinaryError, InputError (LimitExceeded) or
MarkerError, within 10 s and 2 GB. ``json`` and ``page`` are issue 16's readers: every JSON
document schema, and local index pages (HTML and PEP 691 JSON). The long run (200,000 executions per reader) is the
documented command in docs/evidence/reliability.md; this one keeps the harness and the readers honest
on every change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .lib.helpers import REPO

RUNS = {
    "zip": 300,
    "elf": 1500,
    "macho": 600,
    "pe": 1500,
    "marker": 3000,
    "record": 3000,
    "metadata": 3000,
    "wheel": 3000,
    "json": 3000,
    "page": 1500,
}


@pytest.mark.parametrize("target", list(RUNS))
def test_short_fuzz_run_finds_nothing(target: str, built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "fuzz.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "fuzz.py"), "--target", target, "--runs", str(RUNS[target]),
         "--artifacts", str(tmp_path / "findings"), "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    result = json.loads(out.read_text())[0]
    assert proc.returncode == 0 and not result["findings"], (result, proc.stdout[-2000:])
    assert result["executions"] >= RUNS[target]
