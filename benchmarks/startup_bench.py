#!/usr/bin/env python3
"""Time to first answer on small wheels: ``torchwheel check`` beside the tools people run.

    .venv/bin/python benchmarks/startup_bench.py                   # the demo wheel, 21 repetitions
    .venv/bin/python benchmarks/startup_bench.py --rev HEAD        # also torchwheel as committed
    .venv/bin/python benchmarks/startup_bench.py --instructions    # also callgrind's counts (valgrind)
    .venv/bin/python benchmarks/startup_bench.py --reps 41 --json benchmarks/results/startup.json \\
        --label "after the start-up work"  WHEEL...

On a wheel of a few kB almost nothing is read: what a user waits for is the interpreter,
the imports and what runs once per process (tables loaded, schemas checked). Every tool
runs as a fresh process, N repetitions interleaved in this one process tree (each
repetition runs every tool once, in the same order, so drift of a shared machine hits all
alike), after one untimed warm-up run each (page cache, and the ``.pyc`` files: torchwheel's
are compiled first, ``compileall``, as an installation has them). Wall time is taken from
here, CPU time and peak RSS from ``os.wait4``.

The tools, from beside this interpreter (the test extras install them) or else from
``benchmarks/.venv-peers`` (``setup_peers.sh``):

* ``torchwheel check WHEEL`` (the console script) and, with ``--rev``/``--src``, the same
  command of another torchwheel (``git archive`` of ``src/torchwheel`` at REV, as ``run.py``);
* ``auditwheel show WHEEL`` (manylinux policy: symbol versions, external libraries);
* ``abi3audit WHEEL`` (abi3 violations of the extensions in it);
* ``check-wheel-contents WHEEL`` (layout checks of the archive);
* the floor ``python -c pass``: the interpreter alone, with this venv's site-packages.

Reported per wheel: median and min wall, median CPU, the largest peak RSS, and each tool's
ratio to ``torchwheel check`` (median / median and min / min; above 1: slower than
torchwheel). The JSON result (``--json``, default ``benchmarks/results/startup.json``) keeps
every sample; paths in it are relative to the repository, the interpreter is ``<venv>``.
The goals (docs/evidence/performance.md, "Start-up"): ``check`` at most 0.25 s (best run) and faster
than ``auditwheel show``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402  (torchwheel_at: the --rev subject, as run.py measures it)
from harness import first_line  # noqa: E402

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
BIN = Path(sys.executable).parent
PEERS_BIN = HERE / ".venv-peers" / "bin"
TARGET_CHECK_S = 0.25


@dataclass
class Tool:
    name: str
    argv: list[str]  # the wheel is appended
    env: dict[str, str] = field(default_factory=dict)
    version: str = "?"


@dataclass
class Result:
    tool: str
    command: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    exits: list[int] = field(default_factory=list)

    @property
    def wall_median(self) -> float:
        return statistics.median(self.wall)

    @property
    def wall_min(self) -> float:
        return min(self.wall)


def _executable(name: str) -> str | None:
    for directory in (BIN, PEERS_BIN):
        if (directory / name).is_file():
            return str(directory / name)
    return shutil.which(name)


def _compiled(package_dir: Path) -> None:
    """``.pyc`` files beside the sources, whatever PYTHONDONTWRITEBYTECODE says: an installed
    torchwheel has them, and without them every run would compile 80 modules."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package_dir)], check=True)


def _package_dir(pythonpath: str | None = None) -> Path:
    code = (
        "import importlib.util; print(importlib.util.find_spec('torchwheel').submodule_search_locations[0])"
    )
    env = {**os.environ, **({"PYTHONPATH": pythonpath} if pythonpath else {})}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return Path(out.stdout.strip())


def tools(args: argparse.Namespace) -> list[Tool]:
    found: list[Tool] = []
    script = BIN / "torchwheel"  # the console script, as users run it; every subject runs it
    here = [sys.executable, str(script)] if script.is_file() else [sys.executable, "-m", "torchwheel"]
    _compiled(_package_dir())
    found.append(Tool("torchwheel check", [*here, "check"], version=first_line([*here, "--version"])))
    others: list[tuple[str, Path]] = []
    for rev in args.rev:
        command, sha = run.torchwheel_at(rev)  # compiled by run.py
        others.append((sha[:12], Path(command[1].removeprefix("PYTHONPATH="))))
    for src in args.src:
        others.append(("src " + src.name, src.resolve()))
        _compiled(_package_dir(str(src.resolve())))
    for label, path in others:
        found.append(
            Tool(
                f"torchwheel check ({label})",
                [*here, "check"],
                env={"PYTHONPATH": str(path)},
                version=label,
            )
        )
    for name, argv, version in (
        ("auditwheel show", ["auditwheel", "show"], ["auditwheel", "--version"]),
        ("abi3audit", ["abi3audit"], ["abi3audit", "--version"]),
        ("check-wheel-contents", ["check-wheel-contents"], ["check-wheel-contents", "--version"]),
    ):
        exe = _executable(argv[0])
        if exe is None:
            print(f"startup_bench: {argv[0]} not found (pip install -e '.[test]'), skipped", file=sys.stderr)
            continue
        shown = first_line([exe, *version[1:]])
        found.append(Tool(name, [exe, *argv[1:]], version=re.sub(r" installed at .*", "", shown)))
    found.append(
        Tool("floor: python -c pass", [sys.executable, "-c", "pass"], version=platform.python_version())
    )
    return found


def _shown(argv: list[str]) -> str:
    """A command as the JSON keeps it: no path of this machine."""
    venv = str(Path(sys.executable).parent.parent)
    out = []
    for a in argv:
        if a.startswith(venv):
            a = "<venv>" + a[len(venv) :]
        elif a.startswith(str(REPO)):
            a = os.path.relpath(a, REPO)
        out.append(a)
    return " ".join(out)


def _once(tool: Tool, wheel: Path, cwd: Path) -> tuple[float, float, float, int]:
    argv = [*tool.argv, str(wheel)] if not tool.name.startswith("floor") else tool.argv
    env = {**os.environ, **tool.env}
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def measure(wheel: Path, subjects: list[Tool], reps: int, cwd: Path) -> list[Result]:
    results = [Result(t.name, _shown([*t.argv, str(wheel)])) for t in subjects]
    for t in subjects:
        _once(t, wheel, cwd)  # warm-up: page cache, imports' files
    for _ in range(reps):
        for t, r in zip(subjects, results, strict=True):
            wall, cpu, rss, code = _once(t, wheel, cwd)
            r.wall.append(wall)
            r.cpu.append(cpu)
            r.rss_mb.append(rss)
            r.exits.append(code)
    return results


def _ratio(a: float, b: float) -> float:
    return round(a / b, 2) if b else float("nan")


def table(wheel: Path, results: list[Result]) -> str:
    base = results[0]
    lines = [
        f"{_shown([str(wheel)])} ({wheel.stat().st_size:,} bytes)",
        "| tool | wall s (median) | wall s (min) | CPU s (median) | peak RSS MB | vs torchwheel check (median / min) | exit |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        exits = ",".join(str(c) for c in sorted(set(r.exits)))
        lines.append(
            f"| {r.tool} | {r.wall_median:.3f} | {r.wall_min:.3f} | {statistics.median(r.cpu):.3f} | "
            f"{max(r.rss_mb):.0f} | {_ratio(r.wall_median, base.wall_median):.2f}x / "
            f"{_ratio(r.wall_min, base.wall_min):.2f}x | {exits} |"
        )
    return "\n".join(lines)


def verdicts(results: list[Result]) -> list[str]:
    base = results[0]
    out = [
        f"check, best run: {base.wall_min:.3f} s (median {base.wall_median:.3f} s); goal <= {TARGET_CHECK_S} s: "
        + ("met" if base.wall_min <= TARGET_CHECK_S else "not met")
    ]
    audit = next((r for r in results if r.tool == "auditwheel show"), None)
    if audit is not None:
        faster = audit.wall_median > base.wall_median and audit.wall_min > base.wall_min
        out.append(
            f"auditwheel show / check: {_ratio(audit.wall_median, base.wall_median):.2f}x median, "
            f"{_ratio(audit.wall_min, base.wall_min):.2f}x min; goal: check faster: "
            + ("met" if faster else "not met")
        )
    return out


def _loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, object]:
    cpu = "?"
    try:
        m = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    return {
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "torchwheel_commit": first_line(["git", "-C", str(REPO), "describe", "--always", "--dirty"]),
    }


def instructions(tool: Tool, wheel: Path, cwd: Path) -> int | None:
    """Instructions one run executes, counted by valgrind's callgrind: unlike seconds, the
    same for the same binaries and inputs whatever else the machine is doing, so a ratio
    taken on a busy shared machine still holds (None when valgrind is not installed)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    argv = [*tool.argv, str(wheel)] if not tool.name.startswith("floor") else tool.argv
    proc = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **tool.env},
    )
    found = re.search(r"Collected : (\d+)", proc.stderr)
    return int(found.group(1)) if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheels", nargs="*", type=Path, help="small wheels (default: the demo wheel)")
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument(
        "--rev", action="append", default=[], help="also torchwheel as committed at this git revision"
    )
    parser.add_argument(
        "--src",
        action="append",
        default=[],
        type=Path,
        help="also the torchwheel package under this directory",
    )
    parser.add_argument(
        "--cwd", type=Path, default=REPO, help="where the tools run (default: the repository)"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each tool's instructions once under valgrind (load-independent)",
    )
    parser.add_argument("--label", default="", help="what this run measures, kept in the JSON")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "startup.json")
    args = parser.parse_args(argv)
    wheels = [w.resolve() for w in args.wheels] or [DEMO]
    subjects = tools(args)
    load_before = _loadavg()
    started = time.time()
    cases = []
    for wheel in wheels:
        results = measure(wheel, subjects, args.reps, args.cwd.resolve())
        print(table(wheel, results) + "\n")
        for line in verdicts(results):
            print(line)
        print()
        base = results[0]
        counted = (
            {t.name: instructions(t, wheel, args.cwd.resolve()) for t in subjects}
            if args.instructions
            else {}
        )
        for name, count in counted.items():
            first = counted[subjects[0].name]
            ratio = f" ({_ratio(count, first)}x torchwheel check)" if count and first else ""
            print(
                f"instructions {name:<28} {count:>14,}{ratio}"
                if count
                else f"instructions {name}: not counted"
            )
        cases.append(
            {
                "wheel": _shown([str(wheel)]),
                "bytes": wheel.stat().st_size,
                "tools": [
                    {
                        **asdict(r),
                        # samples rounded: microseconds say nothing here
                        **{key: [round(x, 4) for x in getattr(r, key)] for key in ("wall", "cpu", "rss_mb")},
                        "wall_median": round(r.wall_median, 4),
                        "wall_min": round(r.wall_min, 4),
                        "cpu_median": round(statistics.median(r.cpu), 4),
                        "rss_max_mb": round(max(r.rss_mb), 1),
                        "vs_check_median": _ratio(r.wall_median, base.wall_median),
                        "vs_check_min": _ratio(r.wall_min, base.wall_min),
                        **({"instructions": counted.get(r.tool)} if counted else {}),
                    }
                    for r in results
                ],
                "verdicts": verdicts(results),
            }
        )
    document = {
        "label": args.label,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "seconds": round(time.time() - started, 1),
        "reps": args.reps,
        "cwd": _shown([str(args.cwd.resolve())]),
        "load_average": {"before": load_before, "after": _loadavg()},
        "machine": machine(),
        "versions": {t.name: t.version for t in subjects},
        "cases": cases,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(
        f"load average {load_before} -> {document['load_average']['after']}; wrote {_shown([str(args.json)])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
