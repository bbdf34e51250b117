"""Every case of issue 39's families (fixtures/hostile_own.py, fixtures/hostile_surfaces.py)
and issue 47's (fixtures/hostile_round5.py)
in a fresh process of its own: exit code, wall time, peak RSS (``os.wait4``), the one stderr
line, and what the folder looked like afterwards. ``docs/evidence/reliability.md`` prints the result
(``benchmarks/reliability_doc.py``, section ``round4``).

    python benchmarks/hostile_own_bench.py --long --json benchmarks/results/hostile_round4.json

``tests/test_hostile_own.py`` holds the same cases to the same invariant on every run (most of
them in its own process, which is faster); this script is the figure for the docs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "fixtures"))
sys.path.insert(0, str(REPO))

import hostile_own  # noqa: E402
import hostile_round5  # noqa: E402
import hostile_surfaces  # noqa: E402
from tests.lib.helpers import measured_run  # noqa: E402
from tests.lib.own_runner import changed, in_a_process, snapshot  # noqa: E402

# an API case in a process of its own: set up again there, then the call
_CALL = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import hostile_own, hostile_surfaces
from torchwheel.errors import InputError
case = next(c for c in hostile_surfaces.cases() if c.name == sys.argv[2])
root = Path(tempfile.mkdtemp())
(root / "run").mkdir()
spec = case.setup(root / "run", root)
try:
    spec.call()
except InputError as exc:
    print(f"torchwheel: error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


def _sizes(root: Path, outputs: tuple[str, ...]) -> dict[str, int]:
    return {rel: (root / rel).stat().st_size for rel in outputs if (root / rel).is_file()}


def _afterwards(
    before: dict[str, str], after: dict[str, str], outputs: tuple[str, ...], root: Path, sizes: dict[str, int]
) -> str:
    others = changed(before, after, outputs)
    if others:
        return f"CHANGED {', '.join(others[:3])}"
    written = [rel for rel in sorted(set(before) | set(after)) if before.get(rel) != after.get(rel)]
    files = [rel for rel in written if after.get(rel, "dir") != "dir"]
    if not files:
        return "unchanged" if not written else "unchanged (a folder made for the output)"
    words = []
    for rel in files[:2]:
        size = (root / rel).stat().st_size
        words.append(
            f"`{rel}` {sizes[rel]:,} -> {size:,} bytes"
            if rel in sizes
            else f"`{rel}` written ({size:,} bytes)"
        )
    return ", ".join(words) + "; the rest unchanged"


def measure(case: hostile_own.Own) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="tw-own-") as scratch:
        root, outside = Path(scratch) / "run", Path(scratch) / "outside"
        root.mkdir()
        outside.mkdir()
        spec = case.setup(root, outside)
        before, before_outside, sizes = snapshot(root), snapshot(outside), _sizes(root, spec.outputs)
        start = time.monotonic()
        if spec.call is not None:
            m = measured_run(
                [sys.executable, "-c", _CALL, str(REPO / "fixtures"), case.name], cwd=root, timeout=120
            )
            code, err, peak, timed_out = m.code, m.stderr, m.peak_mb, m.timed_out
        else:
            code, _, err, peak, timed_out = in_a_process(spec, root, 120)
        seconds = time.monotonic() - start
        after = _afterwards(before, snapshot(root), spec.outputs, root, sizes)
        if snapshot(outside) != before_outside:
            after += "; CHANGED the folder outside"
    last = (err.strip().splitlines() or [""])[-1]
    return {
        "name": case.name, "klass": case.klass, "summary": case.summary, "exit": code,
        "expected": sorted(case.codes), "seconds": round(seconds, 2), "peak_mb": round(peak), "timed_out": timed_out,
        "said": last[:160], "after": after,
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--long", action="store_true", help="also the long cases (400 MB lines, a 1 GB header)"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    cases = [
        c
        for c in [*hostile_own.cases(), *hostile_surfaces.cases(), *hostile_round5.cases()]
        if args.long or not c.long
    ]
    rows = []
    for case in cases:
        row = measure(case)
        rows.append(row)
        print(
            f"{row['name']:45} exit {row['exit']} {row['seconds']:6.2f} s {row['peak_mb']:5} MB  {row['after']}"
        )
    doc = {"date": time.strftime("%Y-%m-%d"), "machine": "shared 2-core VM", "cases": rows}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    bad = [r["name"] for r in rows if r["exit"] not in r["expected"] or "CHANGED" in str(r["after"])]  # type: ignore[operator]
    print(f"{len(rows)} cases, {len(bad)} not as expected: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
