#!/usr/bin/env python3
"""cProfile of a torchwheel command, worker threads included.

    python benchmarks/profile_check.py [--top N] [--timer cpu|wall] -- check --format json WHEEL

Reproduces ``docs/evidence/performance.md`` ("Profile of ``torchwheel check``"): the line above on
``torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl``.

``python -m cProfile`` sees only the main thread; once ``collect`` hands members to a
thread pool it shows nothing but ``lock.acquire``. Here every work item of a
``concurrent.futures`` thread pool runs under its own profiler, and the worker profiles
are merged: the main thread and the workers are printed separately. With ``--timer cpu``
(default) each thread is charged its own CPU time (``time.thread_time``), so time spent
waiting for the GIL or for other threads does not count; ``--timer wall`` charges elapsed
time as ``python -m cProfile`` does. The CPU timer is a system call per event, so
Python-level rows are inflated (a 2.7 s check takes about 7 s); rows of C functions that
do real work (inflate, hashing, ``bytes.find``, ``pread``) stay accurate.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import thread as futures_thread
from typing import Any


def _install(timer: Callable[[], float], sink: list[cProfile.Profile]) -> None:
    lock = threading.Lock()
    original = futures_thread._WorkItem.run

    def run(self: Any) -> None:
        prof = cProfile.Profile(timer)
        prof.enable()
        try:
            original(self)
        finally:
            prof.disable()
            with lock:
                sink.append(prof)

    futures_thread._WorkItem.run = run  # type: ignore[method-assign]


def _report(title: str, stats: pstats.Stats, sort: str, top: int) -> str:
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats(sort).print_stats(top)
    return f"==== {title} (sorted by {sort}) ====\n{out.getvalue()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=25, help="entries per table")
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--out", help="also dump the merged worker stats here (pstats file)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="torchwheel arguments (after --)")
    args = parser.parse_args(argv)
    tw_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    if not tw_args:
        parser.error("give the torchwheel arguments after --, e.g. -- check WHEEL")
    timer = time.thread_time if args.timer == "cpu" else time.perf_counter

    workers: list[cProfile.Profile] = []
    _install(timer, workers)
    from torchwheel.cli import main as torchwheel_main

    main_prof = cProfile.Profile(timer)
    real_stdout = sys.stdout
    sys.argv = ["torchwheel", *tw_args]
    sys.stdout = io.StringIO()  # the command's own output is not the point here
    wall = time.perf_counter()
    cpu = time.process_time()
    code: object = 0
    main_prof.enable()
    try:
        torchwheel_main()
    except SystemExit as exc:
        code = exc.code
    finally:
        main_prof.disable()
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        sys.stdout = real_stdout

    print(f"torchwheel {' '.join(tw_args)}: exit {code}, {wall:.3f} s wall, {cpu:.3f} s CPU (all threads)")
    print(f"{len(workers)} work items ran in pool threads; timer: {args.timer}\n")
    print(_report("main thread", pstats.Stats(main_prof), "cumulative", args.top))
    if workers:
        merged = pstats.Stats(workers[0])
        for prof in workers[1:]:
            merged.add(prof)
        print(_report("pool threads, merged", merged, "cumulative", args.top))
        print(_report("pool threads, merged", merged, "tottime", args.top))
        if args.out:
            merged.dump_stats(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
