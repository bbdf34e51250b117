"""Every member of one source read once on a thread pool, biggest first: compiled members
scanned (``binary.memberscan``: hash and facts in one pass), the others hashed in batches.

Inflate, SHA-256 and the marker search let the GIL go, so the threads share the cores;
what holds the GIL (each step's Python, the analysis of each binary) is kept short, and the
analysis is left to the caller (``collect``), which does it as each scan finishes while the
threads go on inflating. The pool is started apart from its collection so that a command
can start it the moment the wheel is open, before it imports the rules (``cli.read``:
``check`` and ``show`` of one wheel), and the cores are busy from the first byte.

This module imports the readers and nothing that judges: starting it costs what the bytes
need, not what the rules need.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from torchwheel import limits
from torchwheel.binary.memberscan import Result, scan_member
from torchwheel.errors import InputError
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.contents import is_compiled_name
from torchwheel.wheel.record import hash_chunks
from torchwheel.wheel.sources import DirectorySource, Source

if TYPE_CHECKING:
    from concurrent.futures import Future

BATCH_BYTES = 32 << 20  # small members are hashed in batches: one future per file costs more
BATCH_COUNT = 512  # than hashing it (torch's wheel has 12,000 members)
INLINE_BYTES = 4 << 20  # below this in all, threads (started and imported) cost more than they save
ALONE = 8 << 20  # a non-compiled member this big is hashed as a task of its own

Hashed = tuple[str | None, int]


def workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def batches(members: list[str], size: Callable[[str], int]) -> Iterator[list[str]]:
    batch: list[str] = []
    total = 0
    for m in members:
        batch.append(m)
        total += size(m)
        if total >= BATCH_BYTES or len(batch) >= BATCH_COUNT:
            yield batch
            batch, total = [], 0
    if batch:
        yield batch


def one_name_per_file(source: Source, compiled: list[str]) -> tuple[list[str], dict[str, str]]:
    """The compiled members to read, one per file, and each other name -> the one read: in
    an installed distribution or a folder, hard links (and symlinks) give one file many
    names (5,000 names of one 64 MB library were 5,000 reads, 20 minutes). A wheel's
    members are distinct by construction."""
    if not isinstance(source, DirectorySource):
        return compiled, {}
    first: dict[tuple[int, int], str] = {}
    keep: list[str] = []
    same: dict[str, str] = {}
    for m in compiled:
        key = source.identity(m)
        if key is None:
            keep.append(m)
        elif key in first:
            same[m] = first[key]
        else:
            first[key] = m
            keep.append(m)
    return keep, same


class Abandoned(InputError):
    """The pool was closed before this member was read (the command ended first)."""

    fixed_reference = "interrupted"


class _Stoppable:
    """The source as the pool's threads read it: each chunk first asks whether the pool was
    closed, so a command that ends early (a usage error after the early start) does not wait
    for a 300 MB member to finish inflating."""

    def __init__(self, source: Source, stop: threading.Event) -> None:
        self.source, self.stop = source, stop

    def member_size(self, name: str) -> int:
        return self.source.member_size(name)

    def stream(self, name: str, stop: int | None = None) -> Iterator[bytes]:
        for chunk in self.source.stream(name, stop):
            if self.stop.is_set():
                raise Abandoned(f"{name}: not read (the command ended)")
            yield chunk

    def hash_member(self, name: str) -> Hashed:
        if self.stop.is_set():
            raise Abandoned(f"{name}: not read (the command ended)")
        if self.source.member_size(name) >= ALONE:  # streamed here, so that it stops too
            return hash_chunks(self.stream(name))
        return self.source.hash_member(name)


T = TypeVar("T")


def _within(budget: limits.Limits, task: Callable[..., T], *args: Any) -> T:
    """``task(*args)`` with ``budget`` in force (``limits.applied``), on a pool's thread."""
    with limits.applied(budget):
        return task(*args)


class MemberPool:
    """The reads of one source in flight: ``scans`` (compiled member -> its scan) and
    ``hashed`` (one future per batch of other members), every task submitted biggest first
    (longest processing time first: the last to start is a small one, so the threads end
    together). ``close`` stops what has not run and ends the threads."""

    def __init__(self, source: Source, verify_hashes: bool) -> None:
        self.source, self.verify_hashes = source, verify_hashes
        size = source.member_size
        members = source.contents.members
        self.compiled, self.same = one_name_per_file(
            source, sorted((m for m in members if is_compiled_name(m)), key=size, reverse=True)
        )
        others = [m for m in members if not is_compiled_name(m)]
        # a non-compiled member worth a task of its own is one (vLLM's 60 MB ``vllm-rs`` once
        # ended a batch that started last, and the whole run with it)
        alone = [[m] for m in others if verify_hashes and size(m) >= ALONE]
        rest = [m for m in others if not (verify_hashes and size(m) >= ALONE)]
        self.batches = alone + list(batches(rest, size))
        weights = [sum(map(size, b)) for b in self.batches]
        order = sorted(
            [(size(m), 0, i) for i, m in enumerate(self.compiled)]
            + [(w, 1, i) for i, w in enumerate(weights)],
            reverse=True,
        )
        from concurrent.futures import ThreadPoolExecutor  # only a wheel worth threads pays for them

        self._stop = threading.Event()
        reader = _Stoppable(source, self._stop)
        self._pool = ThreadPoolExecutor(max_workers=workers(), thread_name_prefix="torchwheel-member")
        budget = limits.current()  # the command's, handed to each task: a thread starts with none
        self.scans: dict[str, Future[Result]] = {}
        hashed: dict[int, Future[list[tuple[str, Hashed]]]] = {}
        for _, kind, i in order:
            if kind == 0:
                m = self.compiled[i]
                self.scans[m] = self._pool.submit(_within, budget, scan_member, reader, m, verify_hashes)
            else:
                hashed[i] = self._pool.submit(_within, budget, self._hash_batch, reader, self.batches[i])
        self.hashed = [hashed[i] for i in range(len(self.batches))]

    def _hash_batch(self, reader: _Stoppable, batch: list[str]) -> list[tuple[str, Hashed]]:
        if not self.verify_hashes:
            return [(m, (None, reader.member_size(m))) for m in batch]
        return [(m, reader.hash_member(m)) for m in batch]

    def close(self) -> None:
        """Stop the reads that have not finished, and wait for the threads (each stops at
        its next chunk)."""
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)


class EarlyRead:
    """A wheel opened and its pool started by the command line before the rest of the
    command is even imported (``start``), handed down to ``analysis.load``, which reads it
    instead of opening ``path`` again. A context manager: leaving it closes whatever the
    command did not take over."""

    def __init__(self, path: Path, source: WheelArchive, pool: MemberPool | None) -> None:
        self.path, self.source, self.pool = path, source, pool
        self.taken = False

    def take(self, path: Path, verify_hashes: bool) -> tuple[WheelArchive, MemberPool | None] | None:
        """The source and its pool when ``path`` is the wheel started (read with the same
        ``verify_hashes``), once; the caller owns both from then on."""
        if self.taken or path != self.path:
            return None
        self.taken = True
        if self.pool is not None and self.pool.verify_hashes != verify_hashes:
            self.pool.close()
            self.pool = None
        return self.source, self.pool

    def __enter__(self) -> EarlyRead:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.taken:
            if self.pool is not None:
                self.pool.close()
            self.source.close()


def start(paths: tuple[Path, ...], verify_hashes: bool) -> EarlyRead | None:
    """The first input opened and its members' reads started, when it is a wheel file big
    enough for threads; None otherwise (then everything is read as before, in ``load``).
    Nothing is raised: an input that cannot be opened is left to ``load``, which says why."""
    if not paths or paths[0].suffix != ".whl":
        return None
    try:
        if not paths[0].is_file():
            return None
        source = WheelArchive(paths[0], lenient_name=True)
    except Exception:  # ``load`` opens it again and says what is wrong
        return None
    if sum(map(source.member_size, source.contents.members)) < INLINE_BYTES:
        return EarlyRead(paths[0], source, None)
    return EarlyRead(paths[0], source, MemberPool(source, verify_hashes))
