#!/usr/bin/env python3
"""``torchwheel scan`` on a synthetic index of many small wheels (issue 26, "Measure", the
parts that do not need HTTP ranges): wheels per second and peak memory with ``--jobs 1`` and
``--jobs 2``; a resume that re-reads nothing; a scan killed halfway and resumed that loses
and repeats no line; the Dask recipe of docs/scan.md next to ``--jobs 2``.

Usage: ``python benchmarks/scan_bench.py [--wheels 2000] [--out benchmarks/results/scan.json]``

The index: ``--wheels`` distinct wheels (their own version, dist-info, RECORD and bytes)
made from ``fixtures/demo``'s stable wheel, a real ELF extension. ``make_synthetic.py``'s
CUDA-like wheels are 10 MB to 700 MB each: 2,000 of them would be 20 GB and measure the
disk, not the scan's per-wheel cost, which is what a 2,000-wheel index is for.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEMO = HERE.parent / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
_LAUNCH = (
    "import resource, subprocess, sys, json, time; t = time.perf_counter();"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "print(json.dumps({'code': p.returncode, 'seconds': time.perf_counter() - t, 'stderr': p.stderr[-400:],"
    "'peak_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_index(out: Path, count: int) -> Path:
    """``count`` versions of the demo wheel, each a wheel of its own (bytes, RECORD, name)."""
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(DEMO) as src:
        members = {i.filename: src.read(i) for i in src.infolist()}
    for n in range(count):
        version = f"1.0.{n}"
        rows, zname = [], out / DEMO.name.replace("1.0.0", version)
        with zipfile.ZipFile(zname, "w", zipfile.ZIP_DEFLATED) as dst:
            for name, data in members.items():
                name = name.replace("demo_stable-1.0.0.dist-info", f"demo_stable-{version}.dist-info")
                if name.endswith("/RECORD"):
                    record = name
                    continue
                if name.endswith("/METADATA"):
                    data = data.replace(b"Version: 1.0.0", f"Version: {version}".encode())
                dst.writestr(name, data)
                rows.append(f"{name},{_record_hash(data)},{len(data)}")
            dst.writestr(record, "\n".join([*rows, f"{record},,"]) + "\n")
    return out


def _torchwheel(*args: str) -> dict[str, Any]:
    cmd = [sys.executable, "-c", _LAUNCH, sys.executable, "-m", "torchwheel", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def scan_run(index: Path, out: Path, jobs: int, count: int) -> dict[str, Any]:
    run = _torchwheel("scan", str(index), "-o", str(out), "--jobs", str(jobs))
    assert run["code"] == 0, run["stderr"]
    lines = _lines(out)
    return {
        "jobs": jobs,
        "seconds": round(run["seconds"], 2),
        "wheels_per_second": round(count / run["seconds"], 1),
        "peak_mb_any_process": round(run["peak_mb"], 1),
        "lines": len(lines),
        "errors": sum(line["error"] is not None for line in lines),
    }


def resume_run(index: Path, out: Path) -> dict[str, Any]:
    before = out.read_bytes()
    run = _torchwheel("scan", str(index), "-o", str(out), "--jobs", "2")
    return {
        "seconds": round(run["seconds"], 2),
        "file_unchanged": out.read_bytes() == before,
        "said": run["stderr"].strip().splitlines()[-1],
    }


def kill_and_resume(index: Path, out: Path, count: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "torchwheel", "scan", str(index), "-o", str(out), "--jobs", "2"]
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.DEVNULL)
    while not out.exists() or out.read_bytes().count(b"\n") < count // 2:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    raw = out.read_bytes()
    killed_at, half_line = raw.count(b"\n"), not raw.endswith(b"\n")
    run = _torchwheel("scan", str(index), "-o", str(out), "--jobs", "2")
    where = [line["source"]["path"] for line in _lines(out)]
    return {
        "lines_when_killed": killed_at,
        "half_line_left_by_the_kill": half_line,
        "lines_after_resume": len(where),
        "distinct_wheels": len(set(where)),
        "lost": count - len(set(where)),
        "duplicated": len(where) - len(set(where)),
        "resume_seconds": round(run["seconds"], 2),
    }


def dask_run(index: Path, count: int) -> dict[str, Any]:
    """The recipe of docs/scan.md, as written, with INDEX the folder."""
    text = (HERE.parent / "docs" / "scan.md").read_text().split("## Past one machine: Dask", 1)[1]
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {"INDEX": str(index)}
    started = time.perf_counter()
    exec(compile(code, "docs/scan.md", "exec"), namespace)
    seconds = time.perf_counter() - started
    lines = namespace["lines"]
    return {
        "workers": 2,
        "seconds": round(seconds, 2),
        "wheels_per_second": round(count / seconds, 1),
        "lines": len(lines),
        "errors": sum(line["error"] is not None for line in lines),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "scan.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        work = Path(tmp)
        index = make_index(work / "index", args.wheels)
        size = sum(p.stat().st_size for p in index.glob("*.whl"))
        result: dict[str, Any] = {"wheels": args.wheels, "index_bytes": size, "machine_cpus": os.cpu_count()}
        result["jobs_1"] = scan_run(index, work / "j1.jsonl", 1, args.wheels)
        print("jobs 1:", result["jobs_1"], flush=True)
        result["jobs_2"] = scan_run(index, work / "j2.jsonl", 2, args.wheels)
        print("jobs 2:", result["jobs_2"], flush=True)
        result["resume"] = resume_run(index, work / "j2.jsonl")
        print("resume:", result["resume"], flush=True)
        result["kill_halfway"] = kill_and_resume(index, work / "killed.jsonl", args.wheels)
        print("kill:", result["kill_halfway"], flush=True)
        result["dask"] = dask_run(index, args.wheels)
        print("dask:", result["dask"], flush=True)
        shutil.rmtree(index)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
