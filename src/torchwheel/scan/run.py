"""``torchwheel scan``: list the sources, leave out what the file already holds, and map
``scanline.scan_line`` (what ``api.scan_one`` is) over the rest on a process pool, each line
appended as it comes. The API's ``check`` and ``need`` that make a line are handed down by
the command (``Judges``): this package lies below ``api``, whose ``scan_one`` it serves.

``--jobs N`` is ``concurrent.futures.ProcessPoolExecutor`` and nothing more: past one
machine, the same ``scan_one`` runs on Dask (``docs/scan.md``). Each worker holds the
command's input budget (``limits``: set again in the worker, so a ``spawn`` start keeps the
command line's limits too) and shares the per-host caps of ``net.fairness`` with the
others, so N workers make one client to a server, not N. At most ``2 N`` wheels are in
flight: a listing of 100,000 wheels is not turned into 100,000 futures.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from torchwheel import limits
from torchwheel.frozen import frozen
from torchwheel.net import fairness, urls
from torchwheel.scan import jsonl
from torchwheel.scan.listing import Listed, list_sources
from torchwheel.scan.partial import partial_line
from torchwheel.scan.progress import Progress
from torchwheel.scan.scanline import WheelSource, empty_line, scan_line
from torchwheel.tables.tablechoice import ChosenTable, activate

_worker: dict[str, Any] = {}


@frozen
class Judges:
    """``api.check`` and ``api.need``, as ``api.scan_one`` passes them to ``scan_line``."""

    check: Callable[..., Any]
    need: Callable[..., Any]


def _init(
    budget: limits.Limits,
    table: ChosenTable,
    policy: fairness.FairnessPolicy,
    shared: Any,
    read: str = "whole",
    credentials: dict[str, str] | None = None,
) -> None:
    """A worker's start: the command's limits, its shim table, the shared per-host caps, how
    hosted wheels are read (``whole``, ``partial``, ``partial+gpu``), and the credentials of
    the index URLs the wheels were listed from (a scan line's URL has none)."""
    urls.carry_credentials(credentials or {})
    limits.set_max_member_size(str(budget.max_member_size.value))
    limits.set_network_budget("http_timeout", "--http-timeout", budget.http_timeout.value)
    limits.set_network_budget("max_http_seconds", "--max-http-seconds", budget.max_http_seconds.value)
    fairness.configure(policy, shared)
    _worker["table"], _worker["read"] = activate(table), read


def scan_item(source: WheelSource, judges: Judges) -> dict[str, Any]:
    """One line, whatever happened: ``scan_line`` answers every input error with a line, and
    what is left (a claim no limit caught, a bug) is a line too, never a stopped scan."""
    try:
        read, table = _worker.get("read", "whole"), _worker.get("table")
        if read != "whole":  # --partial: ranges of hosted wheels (scan.partial)
            return partial_line(source, judges.check, judges.need, table, gpu=read == "partial+gpu")
        return scan_line(source, judges.check, judges.need, table)
    except MemoryError:
        return empty_line(source, {"code": "memory", "message": f"out of memory: {limits.describe()}"})
    except Exception as exc:
        message = f"internal error: {type(exc).__name__}: {exc}"
        return empty_line(source, {"code": "internal", "message": message})


@frozen
class ScanPlan:
    """What a run does: the wheels still to scan, the unlisted entries to record, how many
    the file already holds."""

    todo: list[WheelSource]
    unlisted: list[tuple[str, str]]
    skipped: int
    yanked: int


def plan_scan(listed: Listed, previous: jsonl.Done) -> ScanPlan:
    todo: list[WheelSource] = []
    skipped = 0
    for w in listed.wheels:
        if jsonl.keys_of(w) & previous.keys:
            skipped += 1
        else:
            todo.append(w)
    unlisted = [(where, why) for where, why in listed.unlisted if f"unlisted:{where}" not in previous.keys]
    return ScanPlan(todo, unlisted, skipped + len(listed.unlisted) - len(unlisted), listed.yanked)


def _pooled(
    todo: list[WheelSource],
    jobs: int,
    table: ChosenTable,
    policy: fairness.FairnessPolicy,
    read: str,
    judges: Judges,
) -> Iterator[dict[str, Any]]:
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    hosts = {urlsplit(w.location).netloc.lower() for w in todo if w.hosted}
    shared = fairness.shared_hosts(hosts, policy, context)
    args = (limits.current(), table, policy, shared, read, urls.carried_credentials())
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_init, initargs=args)
    pending: set[Future[dict[str, Any]]] = set()
    items = iter(todo)
    try:
        while True:
            for w in items:
                pending.add(pool.submit(scan_item, w, judges))
                if len(pending) >= 2 * jobs:
                    break
            if not pending:
                return
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                yield future.result()
    finally:
        pool.shutdown(wait=not pending, cancel_futures=True)


def results(
    todo: list[WheelSource],
    jobs: int,
    table: ChosenTable,
    policy: fairness.FairnessPolicy,
    read: str,
    judges: Judges,
) -> Iterator[dict[str, Any]]:
    """The lines of ``todo`` as they are done (in this process for one job)."""
    if jobs == 1 or len(todo) <= 1:
        _worker["table"], _worker["read"] = table, read
        yield from (scan_item(w, judges) for w in todo)
        return
    yield from _pooled(todo, jobs, table, policy, read, judges)


def run_scan(
    sources: Iterable[str],
    out: Path,
    jobs: int,
    table: ChosenTable,
    policy: fairness.FairnessPolicy,
    stream: TextIO,
    tty: bool,
    read: str = "whole",
    indexes: Iterable[str] = (),
    names: Iterable[str] = (),
    *,
    judges: Judges,
) -> ScanPlan:
    """Scan ``sources`` and ``indexes`` (of the projects ``names``, all when empty) into
    ``out``, appending to what a previous run left there; ``read``: ``whole``, or
    ``partial`` / ``partial+gpu`` for hosted wheels (``--partial [--gpu]``)."""
    fairness.configure(policy)
    previous = jsonl.check_output(out)  # before the network: a file that is no scan file is refused at once
    listed = list_sources(sources, indexes, names)
    urls.carry_credentials(listed.credentials)  # for the sessions that fetch the wheels
    work = plan_scan(listed, previous)
    progress = Progress(len(work.todo) + len(work.unlisted), work.skipped, stream, tty)
    appender = jsonl.Appender(out, previous)
    try:
        for where, why in work.unlisted:
            line = empty_line(WheelSource(where), {"code": "unlisted", "message": why})
            appender.write(line)
            progress.add(line)
        for line in results(work.todo, jobs, table, policy, read, judges):
            appender.write(line)
            progress.add(line)
    finally:
        appender.close()
    progress.finish()
    return work
