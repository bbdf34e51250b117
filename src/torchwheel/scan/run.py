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
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from torchwheel import limits
from torchwheel.frozen import frozen
from torchwheel.net import fairness, urls
from torchwheel.scan import jsonl
from torchwheel.scan.listing import Listed, list_sources
from torchwheel.scan.partial import partial_line, whole_at_once, whole_line
from torchwheel.scan.progress import Progress
from torchwheel.scan.scanline import Read, WheelSource, empty_line, read_whole, scan_line
from torchwheel.tables.tableset import Tables

_worker: dict[str, Any] = {}


@frozen
class Judges:
    """``api.check`` and ``api.need``, as ``api.scan_one`` passes them to ``scan_line``."""

    check: Callable[..., Any]
    need: Callable[..., Any]


def _init(
    budget: limits.Limits,
    table: Tables,
    policy: fairness.FairnessPolicy,
    shared: Any,
    read: str = "whole",
    credentials: dict[str, str] | None = None,
) -> None:
    """A worker's start: the command's limits, its shim table, the shared per-host caps, how
    hosted wheels are read (``whole``, ``partial``, ``partial+gpu``), and the credentials of
    the index URLs the wheels were listed from (a scan line's URL has none)."""
    urls.carry_credentials(credentials or {})
    fairness.configure(policy, shared)
    _worker["table"], _worker["read"], _worker["limits"] = table, read, budget


def scan_item(source: WheelSource, judges: Judges) -> dict[str, Any]:
    """One line, whatever happened: ``scan_line`` answers every input error with a line, and
    what is left (a claim no limit caught, a bug) is a line too, never a stopped scan."""
    try:
        read, table = _worker.get("read", "whole"), _worker.get("table")
        with limits.applied(_worker.get("limits") or limits.current()):  # the command's, handed over
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
    table: Tables,
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
    table: Tables,
    policy: fairness.FairnessPolicy,
    read: str,
    judges: Judges,
) -> Iterator[dict[str, Any]]:
    """The lines of ``todo`` as they are done: in this process for one job and local wheels;
    with hosted wheels, those read whole are downloaded here while worker processes check
    them (``_pipelined``)."""
    if any(w.hosted for w in todo):
        yield from _pipelined(todo, jobs, table, policy, read, judges)
        return
    if jobs == 1 or len(todo) <= 1:
        _worker["table"], _worker["read"], _worker["limits"] = table, read, limits.current()
        yield from (scan_item(w, judges) for w in todo)
        return
    yield from _pooled(todo, jobs, table, policy, read, judges)


def check_item(source: WheelSource, judges: Judges, got: Read) -> dict[str, Any]:
    """The line of a wheel this process did not fetch: the bytes ``got`` (the scan's own
    process downloaded and checked them against the index's digest) are checked here; with
    ``--partial``, the line of a wheel read whole at once (``partial.whole_line``)."""
    table = _worker.get("table")
    try:
        with limits.applied(_worker.get("limits") or limits.current()):  # the command's, handed over
            if _worker.get("read", "whole") != "whole":
                return whole_line(source, got, (judges.check, judges.need, table))
            return scan_line(source, judges.check, judges.need, table, reader=lambda _, __: got)
    except MemoryError:
        return empty_line(source, {"code": "memory", "message": f"out of memory: {limits.describe()}"})
    except Exception as exc:
        return empty_line(
            source, {"code": "internal", "message": f"internal error: {type(exc).__name__}: {exc}"}
        )


def fair_order(todo: list[WheelSource]) -> list[WheelSource]:
    """The wheels taken from each host in turn (each host's in the listing's order): a scan
    of several indexes keeps every host busy and none for long, and one index keeps its order."""
    by_host: dict[str, list[WheelSource]] = {}
    for w in todo:
        by_host.setdefault(urlsplit(w.location).netloc.lower() if w.hosted else "", []).append(w)
    queues = list(by_host.values())
    out: list[WheelSource] = []
    for turn in range(max(map(len, queues), default=0)):
        out += [q[turn] for q in queues if turn < len(q)]
    return out


_AHEAD_BYTES = 1 << 30  # downloaded and not yet checked: at most this much on disk (or one wheel)


@frozen
class _Fetched:
    """A wheel's download as the downloading thread left it: the bytes read and where they
    are, or why there are none (handed to the line as the reading's error)."""

    got: Read | None
    failure: BaseException | None
    scratch: Path | None


def _download(source: WheelSource, read: str, budget: limits.Limits) -> _Fetched:
    """``_fetch`` within the command's ``budget``: a thread of the download pool is handed it."""
    with limits.applied(budget):
        return _fetch(source, read)


def _fetch(source: WheelSource, read: str) -> _Fetched:
    """One hosted wheel into a scratch folder of its own, checked against its index's digest
    (``scanline.read_whole``); a local one is read where it lies, and one read through ranges
    (``--partial``) is read by the worker that judges it."""
    if not source.hosted or not (read == "whole" or whole_at_once(source)):
        return _Fetched(None, None, None)
    scratch = Path(tempfile.mkdtemp(prefix="torchwheel-scan-"))
    try:
        return _Fetched(read_whole(source, scratch), None, scratch)
    except BaseException as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        if not isinstance(exc, Exception):
            raise
        return _Fetched(None, exc, None)


def _failed_line(source: WheelSource, judges: Judges, failure: BaseException) -> dict[str, Any]:
    """The line of a wheel whose download failed: made here, the way ``scan_line`` makes it
    when its reading raises (no check runs, so nothing is worth another process)."""

    def reader(_: WheelSource, __: Path) -> Read:
        raise failure

    try:
        return scan_line(source, judges.check, judges.need, None, reader=reader)
    except Exception as exc:  # what no limit caught: a line all the same
        return empty_line(
            source, {"code": "internal", "message": f"internal error: {type(exc).__name__}: {exc}"}
        )


def _pipelined(
    todo: list[WheelSource],
    jobs: int,
    table: Tables,
    policy: fairness.FairnessPolicy,
    read: str,
    judges: Judges,
) -> Iterator[dict[str, Any]]:
    """Downloads pipelined with the checks: threads of this process download the hosted
    wheels (each host held to its connection cap by ``fairness``, the hosts taken in turn),
    ahead of ``jobs`` worker processes that check them, so that the network never waits for a
    check and a check never waits for one request. What is downloaded and not yet checked
    is held to ``_AHEAD_BYTES`` on disk and a few wheels per worker; each file is removed
    once its line is written.

    The checks run in other processes even for one job: a check is Python holding the GIL,
    which would make the downloading threads wait for it. With ``--partial`` the workers
    make requests too (ranges): this process and they share one connection cap per host."""
    order = fair_order(todo)
    hosts = {urlsplit(w.location).netloc.lower() for w in order if w.hosted}
    threads = max(1, min(len(order), policy.host_connections * max(1, len(hosts)), 16))
    ahead = 2 * jobs + threads  # wheels downloaded or downloading, not yet checked
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    shared = fairness.shared_hosts(hosts, policy, context) if read != "whole" else None
    if shared is not None:
        fairness.configure(policy, shared)  # this process's downloads hold the same slots
    args = (limits.current(), table, policy, shared, read, urls.carried_credentials())
    checkers = ProcessPoolExecutor(jobs, mp_context=context, initializer=_init, initargs=args)
    downloads: ThreadPoolExecutor | None = None
    fetching: deque[tuple[WheelSource, Future[_Fetched]]] = deque()
    checking: dict[Future[dict[str, Any]], tuple[WheelSource, _Fetched]] = {}
    held = held_bytes = 0
    items = iter(order)
    try:
        checkers.submit(int).result()  # the workers start (fork) before any thread does
        downloads = ThreadPoolExecutor(threads, thread_name_prefix="torchwheel-download")
        while True:
            for w in items:
                fetching.append((w, downloads.submit(_download, w, read, args[0])))
                held += 1
                held_bytes += w.size or 0
                if held >= ahead or held_bytes >= _AHEAD_BYTES:
                    break
            while fetching and fetching[0][1].done() and len(checking) < 2 * jobs:
                source, future = fetching.popleft()
                fetched = future.result()
                if fetched.failure is not None:
                    held, held_bytes = held - 1, held_bytes - (source.size or 0)
                    yield _failed_line(source, judges, fetched.failure)
                    continue
                if fetched.got is None:  # a local file: the worker reads it where it lies
                    checking[checkers.submit(scan_item, source, judges)] = source, fetched
                else:
                    checking[checkers.submit(check_item, source, judges, fetched.got)] = source, fetched
            if not fetching and not checking:
                return
            waiting: set[Future[Any]] = set(checking)
            if fetching and len(checking) < 2 * jobs:
                waiting.add(fetching[0][1])
            finished, _ = wait(waiting, return_when=FIRST_COMPLETED)
            for ended in finished:
                if ended not in checking:
                    continue  # a download ended: handed on at the top of the loop
                source, fetched = checking.pop(ended)
                held, held_bytes = held - 1, held_bytes - (source.size or 0)
                if fetched.scratch is not None:
                    shutil.rmtree(fetched.scratch, ignore_errors=True)
                yield ended.result()
    finally:
        if downloads is not None:
            downloads.shutdown(wait=True, cancel_futures=True)
        checkers.shutdown(wait=not checking, cancel_futures=True)
        left = [f for _, f in checking.values()]
        left += [f.result() for _, f in fetching if f.done() and not f.cancelled()]
        for fetched in left:
            if fetched.scratch is not None:
                shutil.rmtree(fetched.scratch, ignore_errors=True)


def run_scan(
    sources: Iterable[str],
    out: Path,
    jobs: int,
    table: Tables,
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
    ``partial`` / ``partial+gpu`` for hosted wheels (``--partial [--gpu-code]``)."""
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
