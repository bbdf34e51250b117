#!/usr/bin/env python3
"""``scan --partial`` on real wheels against the floor (issue 37): bytes and requests fetched
per wheel, against the wheel's size and against the least compressed bytes that hold what
the reader needs, with the whole read's answer beside it on every axis the partial line
reports.

Usage: ``python benchmarks/partial_bench.py [--wheels DIR] [--out FILE]``, or
``python benchmarks/scan_bench.py --real``; ``python benchmarks/partial_bench.py --download``
reproduces ``docs/scan.md`` ("Real wheels against the floor",
``benchmarks/results/scan_partial_real.json``). The wheels are every ``*.whl`` in
``.cache/bench/real`` (gitignored; ``--download`` fetches the set below with pip, by name,
exact version and platform), and ``torchwheel tag``'s copy of each untagged Linux wheel of
``TAGGED`` (made once into ``.cache/bench/tagged``). They are served from 127.0.0.1 with
``Range`` (``tests/lib/index_server.py``); each is read once partially and once whole
(``scan_one``: download, check, need), in this process, one after the other.

The floor of a wheel (``floor``): the end record and central directory, the local header and
compressed bytes of ``WHEEL``, ``METADATA`` and ``RECORD``; of an untagged wheel also each
compiled member's local header and compressed prefix up to the last byte its reader named
(``needed_to`` in the partial line: the ELF structures the loader reads), or all of it
where the member is read whole (Mach-O, PE).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
REAL = REPO / ".cache" / "bench" / "real"
TAGGED = REPO / ".cache" / "bench" / "tagged"
# (project==version, platform, python): at least 15 wheels of 4 projects, CUDA (torchao,
# xformers, vLLM), pure Python, Windows and macOS among them
WHEELS = [
    ("torchao==0.18.0", "manylinux_2_28_x86_64", "3.11"),
    ("torchao==0.18.0", "any", "3.11"),
    ("torchao==0.17.0", "manylinux_2_28_x86_64", "3.11"),
    ("torchao==0.17.0", "any", "3.11"),
    ("torchao==0.9.0", "manylinux_2_28_x86_64", "3.11"),
    ("torchao==0.9.0", "any", "3.11"),
    ("torchcodec==0.17.0", "manylinux_2_28_x86_64", "3.11"),
    ("torchcodec==0.17.0", "win_amd64", "3.11"),
    ("torchcodec==0.17.0", "macosx_14_0_arm64", "3.11"),
    ("torchcodec==0.9.1", "manylinux_2_28_x86_64", "3.11"),
    ("torchcodec==0.9.1", "win_amd64", "3.11"),
    ("xformers==0.0.35", "manylinux_2_28_x86_64", "3.11"),
    ("xformers==0.0.35", "win_amd64", "3.11"),
    ("xformers==0.0.34", "manylinux_2_28_x86_64", "3.11"),
    ("xformers==0.0.34", "win_amd64", "3.11"),
    ("vllm==0.33.0", "manylinux_2_28_x86_64", "3.12"),
]
TAG = ("vllm-0.33.0-", "xformers-0.0.34-", "torchao-0.18.0-cp310")  # also read after `torchwheel tag`


def download() -> None:
    REAL.mkdir(parents=True, exist_ok=True)
    for spec, platform, python in WHEELS:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        pip += ["--platform", platform, "--python-version", python, "-d", str(REAL), spec]
        subprocess.run(pip, check=True)


def tagged(wheels: list[Path]) -> list[Path]:
    out = []
    for wheel in wheels:
        if not wheel.name.startswith(TAG) or "linux" not in wheel.name:
            continue
        TAGGED.mkdir(parents=True, exist_ok=True)
        found = sorted(TAGGED.glob(wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + "-*.whl"))
        if not found:
            subprocess.run(
                [sys.executable, "-m", "torchwheel", "tag", "-w", str(TAGGED), str(wheel)], check=True
            )
            found = sorted(TAGGED.glob(wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + "-*.whl"))
        out += found
    return out


def _prefix(path: Path, info: Any, upto: int) -> int:
    """The compressed bytes of a member that must be inflated for its first ``upto`` bytes."""
    from torchwheel.wheel import inflate

    with path.open("rb") as fh:
        fh.seek(info.data_offset)
        decompressor = inflate.decompressor(info, 1 << 16)
        used = produced = 0
        while produced < upto and used < info.compress_size:
            raw = fh.read(min(4096, info.compress_size - used))
            used += len(raw)
            for out in decompressor.push(raw):
                produced += len(out)
    return used


def floor(path: Path, line: dict[str, Any]) -> int:
    """The floor of one wheel (module docstring), from the local file and the partial line."""
    from torchwheel.wheel.archive import WheelArchive

    with WheelArchive(path, lenient_name=True) as archive:
        infos = archive.infos
        size = path.stat().st_size
        cd_start = min(i.header_offset for i in infos.values()) if not infos else archive._cd_start
        spans = [(cd_start, size)]
        dist = archive.contents.dist_info
        for name in (f"{dist}/WHEEL", f"{dist}/METADATA", f"{dist}/RECORD"):
            if name in infos:
                i = archive.member(name)
                spans.append((i.header_offset, i.data_offset + i.compress_size))
        for name, how in (line.get("partial") or {}).get("members", {}).items():
            i = archive.member(name)
            first = how.get("partial_pass") or how
            need = first.get("needed_to") if how["read"] == "partial" else None
            end = i.data_offset + (_prefix(path, i, need) if need else i.compress_size)
            spans.append((i.header_offset, end))
    spans.sort()
    total, at = 0, 0
    for lo, hi in spans:
        lo = max(lo, at)
        if hi > lo:
            total += hi - lo
            at = hi
    return total


def _axes(need: dict[str, Any], axes: list[str]) -> dict[str, Any]:
    return {a: need.get(a) for a in axes if a in need}


def _forced(source: Any) -> dict[str, Any]:
    """The partial line as if no wheel were read whole (small, or nearly all compiled): what
    each member's reader named, for the floor, and what a partial read would have cost."""
    from torchwheel import api
    from torchwheel.net import ranged
    from torchwheel.scan import partial

    saved = ranged._TAIL, partial._NEAR, partial.REQUEST_BYTES
    ranged._TAIL, partial._NEAR, partial.REQUEST_BYTES = 4096, 2.0, 0
    try:
        return partial.partial_line(source, api.check, api.need)
    finally:
        ranged._TAIL, partial._NEAR, partial.REQUEST_BYTES = saved


def measure(wheel: Path, base: str) -> dict[str, Any]:
    from torchwheel import api
    from torchwheel.scan.partial import partial_line
    from torchwheel.scan.scanline import WheelSource

    source = WheelSource(f"{base}/{wheel.name}", size=wheel.stat().st_size)
    started = time.perf_counter()
    part = partial_line(source, api.check, api.need)
    partial_seconds = time.perf_counter() - started
    started = time.perf_counter()
    whole = api.scan_one(source)
    whole_seconds = time.perf_counter() - started
    forced = _forced(source)
    size = wheel.stat().st_size
    row: dict[str, Any] = {"wheel": wheel.name, "size": size, "read": part["read"]}
    row["why_whole"] = part["partial"].get("whole") if part.get("partial") else None
    row["fetched"] = part["fetched_bytes"]
    row["requests"] = (part.get("partial") or {}).get("requests", 1)
    row["floor"] = floor(wheel, forced) if forced["read"] == "partial" else size
    row["forced_partial"] = {
        "fetched": forced["fetched_bytes"],
        "requests": (forced.get("partial") or {}).get("requests"),
    }
    row["seconds"] = round(partial_seconds, 2)
    row["whole_seconds"] = round(whole_seconds, 2)
    if part["error"] or whole["error"] or "error" in (part["need"] or {}):
        row["error"] = part["error"] or whole["error"] or part["need"]["error"]
        return row
    whole_need = whole["need"]["need"]
    axes = part["partial"]["axes"]
    decided = [a for a, state in axes.items() if state == "decided" and a in whole_need]
    row["not_read"] = [a for a, state in axes.items() if state != "decided"]
    row["same_answer"] = _axes(part["need"]["need"], decided) == _axes(whole_need, decided)
    row["answer"] = _axes(part["need"]["need"], ["kind", "floor", "torch_build", "gpu_code"])
    return row


def run(wheels: list[Path]) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from tests.lib.index_server import serve

    folder = REPO / ".cache" / "bench" / "served"
    rows = []
    with serve(folder) as (base, _):
        for wheel in wheels:
            where = folder / wheel.parent.name  # real/ and tagged/: a tagged copy keeps its name
            where.mkdir(parents=True, exist_ok=True)
            if not (where / wheel.name).exists():
                os.link(wheel, where / wheel.name)
            rows.append(measure(wheel, f"{base}/{wheel.parent.name}"))
            rows[-1]["tagged"] = wheel.parent.name == "tagged"
            print(json.dumps(rows[-1]), flush=True)
    total = {k: sum(r[k] for r in rows if r.get(k)) for k in ("size", "fetched", "requests")}
    total["floor"] = sum(r["floor"] for r in rows)
    total["fetched_over_floor"] = round(total["fetched"] / total["floor"], 4)
    total["fetched_over_size"] = round(total["fetched"] / total["size"], 4)
    total["wheels"], total["projects"] = len(rows), len({r["wheel"].split("-")[0] for r in rows})
    total["over_a_download"] = [r["wheel"] for r in rows if r["fetched"] > r["size"]]
    total["different_answer"] = [r["wheel"] for r in rows if not r.get("same_answer")]
    return {"machine_cpus": os.cpu_count(), "total": total, "wheels": rows}


def markdown(result: dict[str, Any]) -> str:
    """The table of docs/scan.md."""
    mb = lambda n: f"{n / 1e6:,.2f}"  # noqa: E731
    out = [
        "| wheel | size MB | read | fetched MB | requests | floor MB | of floor | of size | s (whole read) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["wheels"]:
        how = (
            r["read"]
            + (f" ({r['why_whole']})" if r["why_whole"] else "")
            + (", tagged" if r.get("tagged") else "")
        )
        out.append(
            f"| `{r['wheel']}` | {mb(r['size'])} | {how} | {mb(r['fetched'])} | {r['requests']} | {mb(r['floor'])} "
            f"| {r['fetched'] / r['floor']:.2f}x | {r['fetched'] / r['size']:.1%} | {r['seconds']} ({r['whole_seconds']}) |"
        )
    t = result["total"]
    out.append(
        f"| **{t['wheels']} wheels, {t['projects']} projects** | {mb(t['size'])} | | {mb(t['fetched'])} | {t['requests']} "
        f"| {mb(t['floor'])} | **{t['fetched_over_floor']:.3f}x** | {t['fetched_over_size']:.1%} | |"
    )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", type=Path, default=REAL)
    parser.add_argument("--download", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "scan_partial_real.json")
    args = parser.parse_args()
    if args.download:
        download()
    wheels = sorted(args.wheels.glob("*.whl"))
    wheels += tagged(wheels)
    result = run(wheels)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["total"], indent=1))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
