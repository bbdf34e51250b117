#!/usr/bin/env python3
"""Time and memory against the number of findings: 1,000, 10,000 and 100,000 of them.

    python benchmarks/findings_scaling.py --json benchmarks/results/findings_scaling.json
    python benchmarks/findings_scaling.py --src OTHER/src --sizes 1000,10000 --timeout 120 \
        --label "a tree without the bounds" --json benchmarks/results/findings_scaling_before.json

Unbounded, members missing from RECORD cost text ``check`` 6 s at 5,000 and 105 s at 20,000
(the square of their number), and 200,000 RECORD rows naming absent files took 494 MB. Each
shape below is written at three sizes and every command that renders findings runs on it in a
fresh process (``tests.lib.helpers.measured_run``: wall time, peak RSS of the child); the ratio of
two sizes' times is near 10 when time is linear (less, while start-up dominates). The wheels
are made by the hostile corpus's own makers (``fixtures/hostile_budget.py``) from the compiled
fixture module. ``benchmarks/reliability_doc.py`` renders the JSON into docs/evidence/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "fixtures"))
sys.path.insert(0, str(REPO))

import build  # noqa: E402
import hostile_budget as hbu  # noqa: E402
import hostile_zip as hz  # noqa: E402
from tests.lib.helpers import measured_run  # noqa: E402

from torchwheel.limits import Limits  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
# shape -> (what, maker, whether each finding is a member: then the largest size stays under
# max-members, 100,000 with the module and the metadata files)
SHAPES: dict[str, tuple[str, Callable[[int], Callable[[dict[str, Path]], bytes]], bool]] = {
    "unlisted": ("members missing from RECORD (TW403)", hbu.unlisted, True),
    "phantom": (
        "RECORD rows naming absent files (TW403)",
        lambda n: hbu.record_rows(n, lambda i: b"hostile/p%07d.py,,\n" % i),
        False,
    ),
    "hash-mismatch": (
        "members whose RECORD hashes are wrong (TW402)",
        lambda n: hbu.record_rows(n, lambda i: b"hostile/m%07d.py,sha256=AAAA,0\n" % i, members=n),
        True,
    ),
}
MEMBERS_CAP = Limits().max_members.value - 10
COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "check": lambda w, o: ["check", str(w)],
    "check --format json": lambda w, o: ["check", "--format", "json", str(w)],
    "check --format github": lambda w, o: ["check", "--format", "github", str(w)],
    "show --format json": lambda w, o: ["show", "--format", "json", str(w)],
    "tag -w": lambda w, o: ["tag", "-w", str(o), str(w)],  # refuses, after rendering the findings
}


def measure(src: Path, timeout: float, sizes: tuple[int, ...]) -> list[dict[str, object]]:
    built = build.build_all(REPO / ".cache" / "fixtures")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHWHEEL_")}
    env["PYTHONPATH"] = str(src)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape, (what, maker, members) in SHAPES.items():
            for n in sizes:
                actual = min(n, MEMBERS_CAP) if members else n
                folder = Path(tmp) / f"{shape}-{n}"
                folder.mkdir()
                wheel = folder / hz.FILENAME
                wheel.write_bytes(maker(actual)(built))
                for command, args in COMMANDS.items():
                    m = measured_run(
                        [sys.executable, "-m", "torchwheel", *args(wheel, folder / "out")],
                        cwd=folder,
                        env=env,
                        timeout=timeout,
                    )
                    row = {
                        "shape": shape,
                        "what": what,
                        "findings": n,  # the column it belongs to
                        "actual": actual,  # under max-members for the member shapes
                        "command": command,
                        "exit": m.code,
                        "seconds": round(m.seconds, 2),
                        "peak_mb": round(m.peak_mb),
                        "timed_out": m.timed_out,
                        "wheel_kb": round(wheel.stat().st_size / 1024),
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, help="write the rows here")
    p.add_argument("--src", type=Path, default=REPO / "src", help="the torchwheel tree to measure")
    p.add_argument("--timeout", type=float, default=300, help="seconds before a run is killed")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="numbers of findings, comma-separated")
    p.add_argument("--label", default="this tree", help="what was measured, for the docs")
    a = p.parse_args()
    sizes = tuple(int(n) for n in a.sizes.split(","))
    rows = measure(a.src.resolve(), a.timeout, sizes)
    if a.json:
        doc = {"label": a.label, "timeout": a.timeout, "rows": rows}
        a.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
