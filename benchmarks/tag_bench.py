#!/usr/bin/env python3
"""Retag big wheels side by side with ``wheel tags`` and a plain file copy, as ratios.

Usage (the project's venv)::

    python benchmarks/tag_bench.py [--repeat 3] [--wheels large,torch]

Reproduces ``docs/evidence/performance.md`` ("``tag``"): ``python benchmarks/tag_bench.py``.

``torchwheel tag`` reads every member once (inflate, sha256 for RECORD, marker scan: the
facts it writes must be true), then writes the new wheel copying unchanged members as
compressed bytes. ``wheel tags`` (asked to add a platform tag, so it must rewrite) inflates
and deflates every member. ``copy`` is ``shutil.copyfile`` of the same file. Every tool runs
as a whole process; the wheels come from the page cache (one warm-up run each).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_synthetic  # noqa: E402
import run  # noqa: E402


def timed(action: Callable[[Path], None], wheel: Path, repeat: int) -> float:
    times = []
    for i in range(repeat + 1):  # the first run warms the page cache and is dropped
        with tempfile.TemporaryDirectory(dir=HERE / ".data") as tmp:
            start = time.perf_counter()
            action(Path(tmp))
            if i:
                times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--wheels", default="large,torch")
    args = parser.parse_args()
    wheels: dict[str, tuple[Path, list[str]]] = {}
    keys = args.wheels.split(",")
    if "large" in keys:
        wheels["synthetic large"] = (make_synthetic.build(["large"])["large"], ["--build-torch", "2.13"])
    if "torch" in keys:
        wheels["torch 2.14.1"] = (run.torch_wheel("2.14.1"), ["--build-torch", "2.14"])
    wheel_cli = Path(sys.executable).parent / "wheel"
    print(
        f"{'wheel':<18} {'MB':>6} {'copy s':>8} {'torchwheel tag s':>17} {'wheel tags s':>13} {'tag/copy':>9} {'wheel tags/tag':>15}"
    )
    for label, (wheel, extra) in wheels.items():
        size = wheel.stat().st_size >> 20

        def copy(tmp: Path, wheel: Path = wheel) -> None:
            shutil.copyfile(wheel, tmp / wheel.name)

        def tag(tmp: Path, wheel: Path = wheel, extra: list[str] = extra) -> None:
            cmd = [sys.executable, "-m", "torchwheel", "tag", "-w", str(tmp), str(wheel), *extra]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

        def wheel_tags(tmp: Path, wheel: Path = wheel) -> None:
            shutil.copyfile(wheel, tmp / wheel.name)  # wheel tags writes next to its input
            platform = wheel.stem.rsplit("-", 1)[1]
            cmd = [
                str(wheel_cli),
                "tags",
                "--platform-tag",
                f"{platform}.linux_x86_64",
                str(tmp / wheel.name),
            ]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

        t_copy = timed(copy, wheel, args.repeat)
        t_tag = timed(tag, wheel, args.repeat)
        t_wheel = timed(wheel_tags, wheel, args.repeat) - t_copy  # its own input copy excluded
        print(
            f"{label:<18} {size:>6} {t_copy:>8.2f} {t_tag:>17.2f} {t_wheel:>13.2f} {t_tag / t_copy:>8.1f}x {t_wheel / t_tag:>14.1f}x",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
