#!/usr/bin/env python3
"""``torchwheel scan`` on a synthetic index of many small wheels (issue 26, "Measure", the
parts that do not need HTTP ranges): wheels per second and peak memory with ``--jobs 1`` and
``--jobs 2``; a resume that re-reads nothing; a scan killed halfway and resumed that loses
and repeats no line; the Dask recipe of docs/scan.md next to ``--jobs 2``.

Usage: ``python benchmarks/scan_bench.py [--wheels 2000] [--out benchmarks/results/scan.json]``,
which reproduces ``docs/scan.md`` ("A synthetic index of 2,000 wheels");
``python benchmarks/scan_bench.py --vllm`` is the first "Measure" bullet instead (``vllm_case``:
partial reads over HTTP ranges, ``benchmarks/results/scan_partial.json``); ``--real`` runs
``partial_bench.py`` (partial reads of 16 real wheels of four projects against the floor).

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


BENCH = HERE.parent / ".cache" / "bench"
VLLM = "vllm==0.33.0"
_GOAL = 0.15  # issue 26: the need from at most 15% of the wheel's bytes
_PIP_DOWNLOAD = [
    "--no-deps",
    "--only-binary=:all:",
    "--platform",
    "manylinux_2_28_x86_64",
    "--python-version",
    "3.12",
]


def _vllm_wheel() -> Path:
    """vLLM 0.33.0 (336 MB) in ``.cache/bench``, fetched from PyPI by pip the first time."""
    found = sorted(BENCH.glob("vllm-0.33.0-*.whl"))
    if not found:
        pip = [sys.executable, "-m", "pip", "download", *_PIP_DOWNLOAD, "-d", str(BENCH), VLLM]
        subprocess.run(pip, check=True)
        found = sorted(BENCH.glob("vllm-0.33.0-*.whl"))
    return found[0]


def _index_of(wheel: Path, root: Path) -> Path:
    """A PEP 503 index of one wheel: ``files/`` (a hard link, else a copy) and ``simple/``."""
    (root / "files").mkdir(parents=True)
    try:
        os.link(wheel, root / "files" / wheel.name)
    except OSError:
        shutil.copy(wheel, root / "files" / wheel.name)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    page = root / "simple" / "vllm"
    page.mkdir(parents=True)
    (page / "index.html").write_text(f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a>')
    return root


def _need_axes(line: dict[str, Any], axes: list[str]) -> dict[str, Any]:
    need = (line.get("need") or {}).get("need") or {}
    return {axis: need.get(axis) for axis in axes}


def _layout(wheel: Path, name: str) -> dict[str, Any]:
    """Where the loader's tables lie in one ELF member: the first segment (.dynsym, .dynstr,
    the hash table) and PT_DYNAMIC, which names them and lies behind the code."""
    from torchwheel.binary.elflayout import Reader

    with zipfile.ZipFile(wheel) as z:
        data = z.read(name)
    r = Reader(data, name)
    loads, dynamic = r.segments()
    out: dict[str, Any] = {"first_segment_end": loads[0].offset + loads[0].filesz if loads else None}
    if dynamic is not None:
        out["pt_dynamic"] = [dynamic.offset, dynamic.offset + dynamic.filesz]
        out["pt_dynamic_at"] = round(dynamic.offset / len(data), 4)
    out["section_table"] = [r.shoff, r.shoff + r.shentsize * r.shnum]
    return out


def _stops(wheel: Path, line: dict[str, Any]) -> list[dict[str, Any]]:
    """Per compiled member, biggest first: the compressed bytes its read took, why, and
    where the bytes it needed lie."""
    with zipfile.ZipFile(wheel) as z:
        compressed = {i.filename: i.compress_size for i in z.infolist()}
    rows = []
    for name, how in line["partial"]["members"].items():
        first = how.get("partial_pass") or how
        row = {"member": name, "read": how["read"], "why": how["why"], "size": how["size"]}
        row |= {"compressed": compressed[name], "partial_pass_compressed": first.get("compressed_bytes")}
        row |= {"needed_to": first.get("needed_to"), "needed_to_at": None}
        if first.get("needed_to"):
            row["needed_to_at"] = round(first["needed_to"] / how["size"], 4)
        rows.append(row | _layout(wheel, name))
    return sorted(rows, key=lambda r: -r["compressed"])


def _tagged_case(wheel: Path, work: Path, base: str) -> dict[str, Any]:
    """The same wheel after ``torchwheel tag`` (its need in WHEEL's Torch-ABI fields): a
    partial read then reads no compiled member at all."""
    out = work / "index" / "files" / "tagged"
    out.mkdir()
    run = _torchwheel("tag", "-w", str(out), str(wheel))
    assert run["code"] == 0, run["stderr"]
    (tagged,) = out.glob("*.whl")
    scanned = _torchwheel(
        "scan", f"{base}/files/tagged/{tagged.name}", "--partial", "-o", str(work / "t.jsonl")
    )
    assert scanned["code"] == 0, scanned["stderr"]
    (line,) = _lines(work / "t.jsonl")
    size = tagged.stat().st_size
    return {
        "wheel_bytes": size,
        "fetched_bytes": line["fetched_bytes"],
        "fraction": round(line["fetched_bytes"] / size, 4),
        "seconds": round(scanned["seconds"], 2),
        "requests": line["partial"]["requests"],
        "members_read": len(line["partial"]["members"]),
        "answer": _need_axes(line, line["partial"]["axes"]),
        "tag_seconds": round(run["seconds"], 2),
    }


def _measured(wheel: Path) -> dict[str, Any]:
    """The three reads of ``wheel`` (and the tagged case) against one local index."""
    sys.path.insert(0, str(HERE.parent))
    from tests.lib.index_server import serve

    with (
        tempfile.TemporaryDirectory(prefix="scan-partial-") as tmp,
        serve(_index_of(wheel, Path(tmp) / "index")) as (base, _),
    ):
        work, url = Path(tmp), f"{base}/files/{wheel.name}"
        runs: dict[str, Any] = {}
        for mode, extra in (("partial", ["--partial"]), ("whole", [])):
            run = _torchwheel("scan", url, "-o", str(work / f"{mode}.jsonl"), *extra)
            assert run["code"] == 0, run["stderr"]
            (line,) = _lines(work / f"{mode}.jsonl")
            runs[mode] = {
                "line": line,
                "seconds": round(run["seconds"], 2),
                "peak_mb": round(run["peak_mb"], 1),
            }
        runs["tagged"] = _tagged_case(wheel, work, base)
        started = time.perf_counter()
        pip = [sys.executable, "-m", "pip", "download", *_PIP_DOWNLOAD, "--index-url", f"{base}/simple"]
        subprocess.run([*pip, "-q", "-d", str(work / "pip"), VLLM], check=True)
        pip_seconds = time.perf_counter() - started
        check = _torchwheel("check", "--format", "json", str(work / "pip" / wheel.name))
    runs["pip"] = {
        "fetched_bytes": wheel.stat().st_size,  # pip asks for the whole file, and the one page
        "seconds": round(pip_seconds + check["seconds"], 2),
        "pip_seconds": round(pip_seconds, 2),
        "check_exit": check["code"],
    }
    return runs


def vllm_case() -> dict[str, Any]:
    """Bytes fetched and wall time for vLLM's need, served from 127.0.0.1 with Range: a
    partial read, a full download plus check, and ``pip download`` plus check."""
    wheel = _vllm_wheel()
    size = wheel.stat().st_size
    result: dict[str, Any] = {"wheel": wheel.name, "wheel_bytes": size, "machine_cpus": os.cpu_count()}
    runs = _measured(wheel)
    partial, whole = runs["partial"]["line"], runs["whole"]["line"]
    axes, fetched = partial["partial"]["axes"], partial["fetched_bytes"]
    result["runs"] = {
        "partial": {"fetched_bytes": fetched} | {k: runs["partial"][k] for k in ("seconds", "peak_mb")},
        "whole_download_and_check": {"fetched_bytes": whole["fetched_bytes"]}
        | {k: runs["whole"][k] for k in ("seconds", "peak_mb")},
        "pip_download_and_check": runs["pip"],
    }
    seconds = runs["partial"]["seconds"]
    result["ratios"] = {
        "partial_bytes_over_wheel": round(fetched / size, 4),
        "partial_seconds_over_whole": round(seconds / runs["whole"]["seconds"], 3),
        "partial_seconds_over_pip": round(seconds / runs["pip"]["seconds"], 3),
    }
    result["axes"], result["answer"] = axes, _need_axes(partial, axes)
    result["same_answer"] = _need_axes(partial, axes) == _need_axes(whole, axes)
    result["goal"] = {"at_most": _GOAL, "met": fetched <= _GOAL * size and result["same_answer"]}
    stops = _stops(wheel, partial)
    finishing = sum(
        r["compressed"] - (r["partial_pass_compressed"] or 0) for r in stops if r["why"] == "marker"
    )
    members = sum(
        r["compressed"] if r["read"] == "whole" else r["partial_pass_compressed"] or 0 for r in stops
    )
    result["bytes"] = {
        "compiled_members": members,
        "finishing_for_hidden_markers": finishing,
        "without_the_hidden_marker_scan": fetched - finishing,
        "archive_index_metadata_and_local_headers": fetched - members,
        "requests": partial["partial"]["requests"],
    }
    result["tagged"], result["stopped_by"] = runs["tagged"], stops
    print(json.dumps({k: v for k, v in result.items() if k != "stopped_by"}, indent=1), flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--vllm", action="store_true", help="the partial-read case (vllm_case)")
    parser.add_argument("--real", action="store_true", help="partial reads of real wheels (partial_bench.py)")
    args = parser.parse_args()
    if args.real:
        return subprocess.run([sys.executable, str(HERE / "partial_bench.py")], check=False).returncode
    if args.vllm:
        result = vllm_case()
        out = args.out or HERE / "results" / "scan_partial.json"
        out.write_text(json.dumps(result, indent=1) + "\n")
        return 0
    args.out = args.out or HERE / "results" / "scan.json"
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
