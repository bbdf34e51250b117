#!/usr/bin/env python3
"""``check`` of vLLM's wheel against its floors and its peers, side by side in one run (issue 49).

    python benchmarks/check_speed.py [--reps 7] [--baseline REV] [--no-peers] [WHEEL]

Reproduces ``docs/evidence/performance.md`` ("Two cores from the first byte, and a scan against its download"): the wheel is vLLM 0.33.0 (336 MB,
5,802 members; fetched by pip into ``.cache/bench`` the first time), each tool a whole
process under GNU ``time -v``, all of them in turn in every round (A B C ... A B C ...), so
that whatever else the machine does falls on all of them alike; medians over the rounds.

* ``torchwheel check --format json``: the working tree (``--baseline REV``: also as
  committed at REV, in the same rounds);
* the single-core floor: ISA-L inflate + SHA-256 of every member on one thread
  (``floor.py isal-inflate-sha256``), what no full check can go below on one core;
* the 2-worker floor: the same on two threads, each taking the biggest member left
  (``floor.py isal-inflate-sha256-2``), what no full check can go below on two;
* the peers (``benchmarks/setup_peers.sh``): ``abi3audit``, ``auditwheel show`` and
  ``torch-abi-audit`` (after ``unzip -q``: it reads files on disk).

The load average is read before and after every round and printed beside the figures:
the machine may be shared, and a figure from a loaded machine says so. The done-when of
issue 49 is printed at the end: check <= 1.15x the 2-worker floor and <= 0.7x the
single-core floor, >= 4x faster than the fastest peer, peak RSS <= 100 MB.
``--json`` (default ``benchmarks/results/check_speed.json``) keeps every sample;
``--write-docs`` puts the table into docs/evidence/performance.md between its markers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402  (benchmarks/ is no package: see harness.py)
import run  # noqa: E402

REPO = HERE.parent
BENCH = REPO / ".cache" / "bench"
VLLM = "vllm==0.33.0"
TOOLS = ("tw-check", "floor-isal", "floor-isal-2", "abi3audit", "auditwheel", "unzip-taa")
PEERS = ("abi3audit", "auditwheel", "unzip-taa")
TARGETS = {"two_worker_floor": 1.15, "single_core_floor": 0.7, "fastest_peer": 4.0, "rss_mb": 100.0}


def vllm_wheel() -> Path:
    """vLLM 0.33.0's Linux wheel in ``.cache/bench``, downloaded by pip the first time."""
    found = sorted(BENCH.glob("vllm-0.33.0-*manylinux*x86_64.whl"))
    if not found:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        pip += ["--platform", "manylinux_2_28_x86_64", "--python-version", "3.12", "-d", str(BENCH), VLLM]
        subprocess.run(pip, check=True)
        found = sorted(BENCH.glob("vllm-0.33.0-*manylinux*x86_64.whl"))
    return found[0]


def load_average() -> float:
    """The one-minute load average (0 where the system does not say)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def measure_all(wheel: Path, tools: list[run.Tool], ctx: run.Context, reps: int) -> dict[str, Any]:
    case = run.describe("vllm", [wheel])
    run.warm(case)
    samples: dict[str, list[run.Sample]] = {t.key: [] for t in tools}
    failed: dict[str, str] = {}
    loads: list[float] = []
    for rep in range(reps):
        loads.append(load_average())
        for tool in tools:
            if tool.key in failed:
                continue
            tmp = Path(tempfile.mkdtemp(prefix=f"twbench-{tool.key}-"))
            try:
                got = run.measure(tool.build(ctx, case.wheels, tmp), tmp)
                if got.rc not in tool.ok:
                    failed[tool.key] = f"exit {got.rc}: {run._tail(tmp / 'stderr')}"
                    continue
                samples[tool.key].append(got)
                print(
                    f"  round {rep + 1}/{reps} {tool.key:14s} {got.wall:7.3f} s wall "
                    f"{got.user + got.sys:7.3f} s CPU {got.rss_mb:6.0f} MB  (load {load_average():.2f})",
                    file=sys.stderr,
                    flush=True,
                )
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    loads.append(load_average())
    return {"case": case, "samples": samples, "failed": failed, "loads": loads}


def summarize(measured: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    rows = {}
    for key, got in measured["samples"].items():
        if not got:
            continue
        rows[key] = {
            "label": labels[key],
            "wall_s": round(statistics.median(s.wall for s in got), 3),
            "wall_range_s": [round(min(s.wall for s in got), 3), round(max(s.wall for s in got), 3)],
            "cpu_s": round(statistics.median(s.user + s.sys for s in got), 3),
            "peak_rss_mb": round(max(s.rss_mb for s in got), 1),
            "runs": len(got),
        }
    out: dict[str, Any] = {"rows": rows, "failed": measured["failed"]}
    loads = measured["loads"]
    out["load_average"] = {"min": round(min(loads), 2), "max": round(max(loads), 2), "each_round": loads}
    check = rows.get("tw-check")
    if check:
        wall = check["wall_s"]
        ratios: dict[str, Any] = {}
        if "floor-isal-2" in rows:
            ratios["check_over_two_worker_floor"] = round(wall / rows["floor-isal-2"]["wall_s"], 3)
        if "floor-isal" in rows:
            ratios["check_over_single_core_floor"] = round(wall / rows["floor-isal"]["wall_s"], 3)
        peers = [rows[p]["wall_s"] for p in PEERS if p in rows]
        if peers:
            ratios["fastest_peer_over_check"] = round(min(peers) / wall, 2)
        ratios["check_peak_rss_mb"] = check["peak_rss_mb"]
        out["ratios"] = ratios
        out["met"] = {
            "two_worker_floor": ratios.get("check_over_two_worker_floor", 99) <= TARGETS["two_worker_floor"],
            "single_core_floor": ratios.get("check_over_single_core_floor", 99)
            <= TARGETS["single_core_floor"],
            "fastest_peer": ratios.get("fastest_peer_over_check", 0) >= TARGETS["fastest_peer"],
            "rss_mb": check["peak_rss_mb"] <= TARGETS["rss_mb"],
        }
    return out


def markdown(result: dict[str, Any]) -> str:
    rows, check = result["rows"], result["rows"].get("tw-check", {}).get("wall_s")
    begin, end = harness.markers("check-speed")
    lines = [
        begin,
        f"Run of {result['when']} UTC (`benchmarks/check_speed.py --reps {result['reps']}`), "
        f"`{result['wheel']}`, load average {result['load_average']['min']}-{result['load_average']['max']} "
        f'on {os.cpu_count()} vCPUs during the run. Medians; "vs check" is *tool / check*.',
        "",
        "| tool | wall s (median) | range | CPU s | peak RSS MB | vs check |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for row in rows.values():
        ratio = f"{row['wall_s'] / check:.2f}x" if check else "-"
        lo, hi = row["wall_range_s"]
        lines.append(
            f"| {harness.md_cell(row['label'])} | {row['wall_s']:.3f} | {lo:.2f}-{hi:.2f} | {row['cpu_s']:.2f} "
            f"| {row['peak_rss_mb']:.0f} | {ratio} |"
        )
    if result.get("ratios"):
        r, met = result["ratios"], result["met"]
        lines += [
            "",
            "| target | measured | |",
            "|---|---:|---|",
            f"| check <= 1.15x the 2-worker floor | {r.get('check_over_two_worker_floor', '-')}x | {'met' if met['two_worker_floor'] else 'not met'} |",
            f"| check <= 0.7x the single-core floor | {r.get('check_over_single_core_floor', '-')}x | {'met' if met['single_core_floor'] else 'not met'} |",
            f"| the fastest peer >= 4x check | {r.get('fastest_peer_over_check', '-')}x | {'met' if met['fastest_peer'] else 'not met'} |",
            f"| peak RSS <= 100 MB | {r['check_peak_rss_mb']:.0f} MB | {'met' if met['rss_mb'] else 'not met'} |",
        ]
    lines.append(end)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", nargs="?", type=Path, help="default: vLLM 0.33.0 (downloaded by pip)")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--baseline", help="also torchwheel as committed at this git revision")
    parser.add_argument("--no-peers", action="store_true", help="torchwheel and the floors only")
    parser.add_argument(
        "--rev", help="measure torchwheel as committed at this git revision (default: the working tree)"
    )
    parser.add_argument("--json", type=Path, default=HERE / "results" / "check_speed.json")
    parser.add_argument(
        "--write-docs", action="store_true", help="the table into docs/evidence/performance.md"
    )
    args = parser.parse_args(argv)

    wheel = args.wheel or vllm_wheel()
    keys = [k for k in TOOLS if not (args.no_peers and k in PEERS)]
    if not args.no_peers:
        print(run.setup_peers(), flush=True)
    subject = run.torchwheel_at(args.rev)[0] if args.rev else run.default_torchwheel()
    ctx = run.Context(torchwheel=subject, python=sys.executable, peers=run.PEERS_BIN)
    tools = [run.BY_KEY[k] for k in keys]
    labels = {t.key: t.label for t in tools}
    if args.baseline:
        command, sha = run.torchwheel_at(args.baseline)
        key = f"tw-check@{sha[:10]}"
        tools.insert(
            1,
            run.Tool(key, f"torchwheel check at {sha[:10]}", "torchwheel", run.OK01,
                     lambda c, w, t: [*command, "check", "--format", "json", *map(str, w)]),
        )  # fmt: skip
        labels[key] = tools[1].label
    started = time.time()
    measured = measure_all(wheel, tools, ctx, args.reps)
    result = summarize(measured, labels)
    result |= {
        "wheel": wheel.name,
        "reps": args.reps,
        "when": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)),
        "cpus": os.cpu_count(),
        "git": harness.first_line(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result)
    print(text)
    if args.write_docs:
        harness.put_section(REPO / "docs" / "evidence" / "performance.md", text, "check-speed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
