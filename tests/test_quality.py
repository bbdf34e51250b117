"""ruff and mypy --strict are part of the suite, so CI fails when either is unhappy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_clean() -> None:
    result = _run("ruff", "check", "src", "tests", "fixtures", "scripts", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    result = _run("mypy", "--strict", "src/torchwheel")
    assert result.returncode == 0, result.stdout + result.stderr
