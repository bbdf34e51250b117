#!/usr/bin/env python3
"""``check`` on the largest CUDA wheel of the corpus against the inflate+sha256 floor.

    python benchmarks/cuda_speed.py [--reps N] [--torchwheel CMD] [--baseline REV] [WHEEL]

Reproduces ``docs/evidence/performance.md`` ("GPU code"): ``python benchmarks/cuda_speed.py --reps 7
--baseline 7407a4c`` and ``python benchmarks/cuda_speed.py --scan-cost [WHEEL]``.

Reading GPU code (fatbin entry headers, offload bundles) happens while every member
inflates anyway; this measures what it costs on the wheel where it costs most (vllm's,
336 MB: a 500 MB ``_C.abi3.so`` full of fatbins). Each command runs as a whole process
under GNU ``time -v`` (wall time and peak RSS), ``--reps`` times, interleaved so that the
machine's other load falls on both alike; the medians are compared. The floor is
``floor.py isal-inflate-sha256``: ISA-L inflate plus SHA-256 of every member, nothing kept.
Targets (docs/evidence/performance.md): check <= 1.15x the floor, peak RSS <= the 300 MB budget.
``--baseline REV`` also runs torchwheel as committed at REV (``run.torchwheel_at``) in the
same rounds: on a shared machine the floor moves with the load, the baseline moves with it.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_WHEEL = REPO / ".cache" / "corpus" / "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
RATIO_TARGET = 1.15
RSS_TARGET_MB = 300.0


def measure(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one run."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-v", "-o", report.name, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - start
        text = Path(report.name).read_text()
    rss = next(
        int(line.split(":")[1]) / 1024 for line in text.splitlines() if "Maximum resident set size" in line
    )
    return wall, rss, proc.returncode


def scan_cost(wheel: Path) -> int:
    """CPU time the GPU scanner spends on each compiled member, against the CPU time of
    inflating it: a figure the machine's other load barely moves (``time.thread_time``)."""
    from torchwheel.binary import sniff
    from torchwheel.binary.gpucode import GpuScanner
    from torchwheel.binary.sparse import SparseBuffer
    from torchwheel.wheel.archive import WheelArchive
    from torchwheel.wheel.contents import is_compiled_name

    total_inflate = total_scan = 0.0
    with WheelArchive(wheel) as archive:
        members = [m for m in archive.contents.members if is_compiled_name(m)]
        for member in sorted(members, key=archive.member_size, reverse=True):
            size = archive.member_size(member)
            scanner: GpuScanner | None = None
            inflate = scanning = 0.0
            pos = 0
            start = time.thread_time()
            for chunk in archive.stream(member):
                t0 = time.thread_time()
                inflate += t0 - start
                if scanner is None:
                    fmt = sniff(chunk[:4])  # the format's row says where GPU code may lie
                    scanner = GpuScanner(
                        size, fmt.gpu_zones(SparseBuffer.from_ranges(size, {0: chunk})) if fmt else []
                    )
                scanner.feed(pos, chunk)
                pos += len(chunk)
                start = time.thread_time()
                scanning += start - t0
            if scanner is not None:
                runs = scanner.result().runs
                images = sum(sum(r.raw.values()) for r in runs)
                if size > 4 << 20:
                    print(f"  {member:56s} {size / 1e6:7.1f} MB  inflate {inflate:6.3f} s  "
                          f"GPU scan {scanning:6.3f} s  ({images} images)")  # fmt: skip
            total_inflate += inflate
            total_scan += scanning
    print(f"all compiled members: inflate {total_inflate:.3f} s CPU, GPU scan {total_scan:.3f} s CPU "
          f"({100 * total_scan / total_inflate:.1f} % of inflating)")  # fmt: skip
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", nargs="?", type=Path, default=DEFAULT_WHEEL)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--torchwheel", default=str(REPO / ".venv" / "bin" / "torchwheel"))
    ap.add_argument("--baseline", help="a git revision to time beside the working tree")
    ap.add_argument("--scan-cost", action="store_true", help="CPU seconds of the GPU scan alone, per member")
    ap.add_argument(
        "--select",
        action="store_true",
        help="also time `select` (a plan for torch 2.14, cu130) on the wheel, beside the baseline's",
    )
    args = ap.parse_args(argv)
    if args.scan_cost:
        return scan_cost(args.wheel)
    if not args.wheel.is_file():
        print(f"{args.wheel}: not found (python benchmarks/corpus.py --download)", file=sys.stderr)
        return 2
    commands = {
        "floor (isal inflate + sha256)": [
            sys.executable,
            str(HERE / "floor.py"),
            "isal-inflate-sha256",
            str(args.wheel),
        ],
        "torchwheel check": [*shlex.split(args.torchwheel), "check", "--format", "json", str(args.wheel)],
    }
    if args.baseline:
        sys.path.insert(0, str(HERE))
        import run  # benchmarks/run.py

        cmd, sha = run.torchwheel_at(args.baseline)
        commands[f"check at {sha[:10]}"] = [*cmd, "check", "--format", "json", str(args.wheel)]
    if args.select:
        plan = ["select", "--torch", "2.14", "--torch-backend", "cu130", "--python-version", "3.11",
                "--platform", "manylinux_2_28_x86_64", str(args.wheel)]  # fmt: skip
        commands["torchwheel select"] = [*shlex.split(args.torchwheel), *plan]
        if args.baseline:
            # the baseline may predate --torch-backend: the plan without it reads the same binaries
            commands[f"select at {sha[:10]}"] = [
                *cmd,
                *[a for a in plan if a not in ("--torch-backend", "cu130")],
            ]
    runs: dict[str, list[tuple[float, float, int]]] = {k: [] for k in commands}
    for _ in range(args.reps):
        for name, cmd in commands.items():
            runs[name].append(measure(cmd))
    print(f"{args.wheel.name}: {args.wheel.stat().st_size / 1e6:.0f} MB, {args.reps} runs each (median)")
    medians = {}
    for name, samples in runs.items():
        wall = statistics.median(s[0] for s in samples)
        rss = max(s[1] for s in samples)
        codes = sorted({s[2] for s in samples})
        medians[name] = wall
        spread = f"{min(s[0] for s in samples):.2f}-{max(s[0] for s in samples):.2f}"
        print(f"  {name:32s} {wall:6.2f} s  (range {spread})  peak RSS {rss:5.0f} MB  exit {codes}")
    floor, check = medians["floor (isal inflate + sha256)"], medians["torchwheel check"]
    ratio = check / floor
    for name, wall in medians.items():
        if name.startswith("check at "):
            print(f"  {name} / floor = {wall / floor:.2f}x; working tree / {name} = {check / wall:.2f}x")
    rss = max(s[1] for s in runs["torchwheel check"])
    ok = ratio <= RATIO_TARGET and rss <= RSS_TARGET_MB
    print(
        f"  check / floor = {ratio:.2f}x (target <= {RATIO_TARGET}x); peak RSS {rss:.0f} MB "
        f"(budget {RSS_TARGET_MB:.0f} MB): {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
