#!/usr/bin/env python3
"""``select`` and ``index`` over 1,000 tagged candidates, against pip choosing from the folder.

Usage (the project's venv; builds the fixture binaries once)::

    python benchmarks/publish_bench.py [--count 1000] [--repeat 3]

Reproduces ``docs/installers.md`` ("Speed"): ``python benchmarks/publish_bench.py``.

The candidates are one release built for three torch targets (stable 2.10, stable 2.12,
unstable 2.13: the fixture binaries, tagged with ``torchwheel tag --local-label``), copied
under build tags 1..N/3 each: small tagged wheels, as a project's download folder or a
mirror would hold them. Every tool runs as a whole process on a warm page cache:

- ``torchwheel select --find-links DIR --torch 2.12 ...`` (plan target: no interpreter probe);
- ``torchwheel index DIR -o OUT`` (the whole tree: root + 7 per-torch indexes, PEP 658 files);
- ``pip download --no-deps --no-index --find-links DIR twidx`` (pip's own choice among the
  same files by tags and build number; ``--no-deps`` so only choosing and copying count).

Both torchwheel commands read the central directory, WHEEL and METADATA, judge them (the
TW4xx rules) and hash each file (PEP 503 ``#sha256=`` / duplicate detection); ``index`` also
hashes every member against RECORD. Nothing parses a binary.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.lib.helpers import fixture_build  # noqa: E402
from tests.lib.publish_helpers import BUILDS, TAGS, labelled, labelled_release  # noqa: E402


def make_candidates(work: Path, count: int) -> Path:
    built = fixture_build().build_all(REPO / ".cache" / "fixtures")
    release = labelled_release(built, work / "release")
    out = work / "candidates"
    out.mkdir()
    per = count // len(BUILDS)
    for build in BUILDS:
        src = release / labelled(build)
        stem = src.name.removesuffix(f"-{TAGS}.whl")
        for n in range(1, per + 1):  # the build tag lives only in the file name
            shutil.copyfile(src, out / f"{stem}-{n}-{TAGS}.whl")
    return out


def timed(cmd: list[str], repeat: int, env: dict[str, str], cleanup: Path | None = None) -> float:
    runs = []
    for _ in range(repeat + 1):  # one warm-up
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True, text=True, env=env)
        runs.append(time.perf_counter() - start)
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{result.stderr}")
    return statistics.median(runs[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    tw = [sys.executable, "-m", "torchwheel"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = make_candidates(work, args.count)
        n = len(list(folder.glob("*.whl")))
        plan = ["--torch", "2.12", "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64"]
        pip_download = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-index"]
        pip_download += ["--find-links", str(folder), "-d", str(work / "dl"), "twidx"]
        rows = {
            "torchwheel select": timed([*tw, "select", "--find-links", str(folder), *plan], args.repeat, env),
            "torchwheel index": timed(
                [*tw, "index", str(folder), "-o", str(work / "idx")], args.repeat, env, work / "idx"
            ),
            "pip download": timed(pip_download, args.repeat, env, work / "dl"),
            "torchwheel --version": timed([*tw, "--version"], args.repeat, env),
        }
    print(f"{n} candidate wheels, median of {args.repeat} runs (whole processes)")
    print(f"{'command':24} {'total s':>8} {'ms/wheel':>9}")
    for name, secs in rows.items():
        print(f"{name:24} {secs:8.2f} {1000 * secs / n:9.2f}")


if __name__ == "__main__":
    main()
