#!/usr/bin/env python3
"""``torchwheel doctor`` timed on real environments, beside ``pip check`` and the whole read.

    .venv/bin/python benchmarks/doctor_bench.py [--runs 3] [[LABEL=]ENV_PYTHON ...]

For each environment (default: ``.venv`` and ``.venv-cu130`` of ``scripts/dev-setup``): the
wall time of ``doctor --python ENV`` (a fresh process, as users run it), of ``pip check``
for the same interpreter (the check users run today, which reads requirements only), and of
reading every installed distribution whole (``collect`` on each, what ``doctor`` would cost
without reading the tables first), medians of ``--runs``, as ratios in one run. Writes
``benchmarks/results/doctor.json``, the table of ``docs/evidence/performance.md`` ("``doctor``"):
``.venv/bin/python benchmarks/doctor_bench.py`` with the two default environments, set a of
``loadtruth_doctor.py`` and the hostile corpus's ``env_2000_distributions`` named as ENV_PYTHON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results" / "doctor.json"
_WHOLE = r"""
import sys, time
from torchwheel.selection.target import probe
from torchwheel.wheel.installed import installed, Installed
from torchwheel.analysis.collect import collect
from torchwheel.tables.tableset import shipped_tables
target = probe(sys.argv[1])
table = shipped_tables()
start = time.monotonic()
n = 0
for item in installed(target.search_path, target.prefixes):
    if isinstance(item, Installed) and item.key != "torch":
        try:
            collect(item.source(), table, verify_hashes=False)
            n += 1
        except Exception:
            pass
print(time.monotonic() - start, n)
"""


def timed(cmd: list[str]) -> float:
    start = time.monotonic()
    subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=3600)
    return time.monotonic() - start


def bench(label: str, python: Path, runs: int) -> dict[str, object]:
    tw = [str(REPO / ".venv" / "bin" / "torchwheel")]
    doctor = [timed([*tw, "doctor", "--python", str(python)]) for _ in range(runs)]
    pip = [timed([sys.executable, "-m", "pip", "--python", str(python), "check"]) for _ in range(runs)]
    whole = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _WHOLE, str(python)], capture_output=True, text=True, check=True
        )
        whole.append(float(out.stdout.split()[0]))
    row = {
        "env": label,
        "doctor_s": round(statistics.median(doctor), 2),
        "pip_check_s": round(statistics.median(pip), 2),
        "whole_read_s": round(statistics.median(whole), 2),
    }
    row["doctor_per_pip_check"] = round(row["doctor_s"] / row["pip_check_s"], 1)  # type: ignore[operator]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("envs", nargs="*", help="LABEL=PYTHON, or PYTHON (labelled by its path)")
    args = parser.parse_args(argv)
    given = args.envs or [".venv=.venv/bin/python", ".venv-cu130=.venv-cu130/bin/python"]
    envs = [(e.partition("=")[0], Path(e.partition("=")[2])) if "=" in e else (e, Path(e)) for e in given]
    rows = [bench(label, REPO / path, args.runs) for label, path in envs]
    for row in rows:
        print(json.dumps(row))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": args.runs, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
