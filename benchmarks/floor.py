#!/usr/bin/env python3
"""Lower bounds for reading a wheel: what any full check must at least spend.

    python benchmarks/floor.py MODE WHEEL [WHEEL ...]

Modes (every member of every wheel, streamed in 1 MiB pieces, nothing kept):

* ``inflate``: zipfile's own inflate (zlib), the CRC check included;
* ``inflate-sha256``: the same plus a SHA-256 of every member (what RECORD needs);
* ``inflate-sha256-2proc``: the same with members as tasks for two processes, the
  biggest first: what both cores can do with zlib; the biggest member still bounds it;
* ``isal-inflate-sha256``: inflate with ISA-L (PyPI ``isal``, when installed) plus
  SHA-256, no CRC check: what a faster inflater could reach;
* ``isal-inflate-sha256-2``: the same on two threads (ISA-L and SHA-256 let the GIL go),
  each taking the biggest member left (by inflated size) from one shared list: the least a
  full check spends on two cores, the "2-worker floor" of ``check_speed.py``.

run.py times these as whole processes, interpreter start-up included, like the tools: the
floors of ``docs/evidence/performance.md`` ("The floors") come from its run (``benchmarks/run.py``).
"""

from __future__ import annotations

import hashlib
import struct
import sys
import zipfile
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

CHUNK = 1 << 20


def _inflate_members(path: str, names: set[str] | None, sha: bool) -> int:
    total = 0
    with zipfile.ZipFile(path) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir() and (names is None or i.filename in names)]
        for info in infos:
            digest = hashlib.sha256() if sha else None
            with zf.open(info) as fh:
                while chunk := fh.read(CHUNK):
                    total += len(chunk)
                    if digest is not None:
                        digest.update(chunk)
    return total


def _raw_chunks(fh: Any, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member's stored (compressed) bytes, in pieces."""
    fh.seek(info.header_offset)
    header = fh.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fh.seek(info.header_offset + 30 + name_len + extra_len)
    left = info.compress_size
    while left > 0:
        piece: bytes = fh.read(min(CHUNK, left))
        if not piece:
            raise EOFError(f"{info.filename}: truncated")
        left -= len(piece)
        yield piece


def _isal(path: str) -> int:
    from isal import isal_zlib  # type: ignore[import-not-found, import-untyped, unused-ignore]

    total = 0
    with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
        for info in zf.infolist():
            if info.is_dir():
                continue
            digest = hashlib.sha256()
            stored = info.compress_type == zipfile.ZIP_STORED
            inflater = None if stored else isal_zlib.decompressobj(-15)
            for piece in _raw_chunks(fh, info):
                out = piece if inflater is None else inflater.decompress(piece)
                digest.update(out)
                total += len(out)
            if inflater is not None:
                out = inflater.flush()
                digest.update(out)
                total += len(out)
    return total


def _isal_member(fh: Any, info: zipfile.ZipInfo) -> int:
    """One member: its stored bytes read in pieces, inflated by ISA-L, hashed."""
    from isal import isal_zlib  # type: ignore[import-not-found, import-untyped, unused-ignore]

    total = 0
    digest = hashlib.sha256()
    inflater = None if info.compress_type == zipfile.ZIP_STORED else isal_zlib.decompressobj(-15)
    for piece in _raw_chunks(fh, info):
        out = piece if inflater is None else inflater.decompress(piece)
        digest.update(out)
        total += len(out)
    if inflater is not None:
        out = inflater.flush()
        digest.update(out)
        total += len(out)
    return total


def _isal_two_threads(path: str) -> int:
    """Two threads, each taking the biggest member left: members balanced by inflated size."""
    import threading

    with zipfile.ZipFile(path) as zf:
        left = sorted((i for i in zf.infolist() if not i.is_dir()), key=lambda i: i.file_size)
    lock = threading.Lock()
    totals = [0, 0]

    def work(slot: int) -> None:
        with open(path, "rb") as fh:
            while True:
                with lock:
                    if not left:
                        return
                    info = left.pop()  # the biggest left
                totals[slot] += _isal_member(fh, info)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(totals)


def _two_processes(path: str) -> int:
    """Members as tasks for a pool of two, biggest first; small members batched to ~8 MiB."""
    with zipfile.ZipFile(path) as zf:
        infos = sorted((i for i in zf.infolist() if not i.is_dir()), key=lambda i: i.file_size, reverse=True)
    tasks: list[set[str]] = []
    batch: set[str] = set()
    batch_size = 0
    for info in infos:
        if info.file_size >= 8 * CHUNK:
            tasks.append({info.filename})
            continue
        batch.add(info.filename)
        batch_size += info.file_size
        if batch_size >= 8 * CHUNK:
            tasks.append(batch)
            batch, batch_size = set(), 0
    if batch:
        tasks.append(batch)
    with ProcessPoolExecutor(2) as pool:
        return sum(pool.map(_inflate_members, [path] * len(tasks), tasks, [True] * len(tasks)))


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    mode, paths = argv[0], argv[1:]
    total = 0
    for path in paths:
        if mode == "inflate":
            total += _inflate_members(path, None, sha=False)
        elif mode == "inflate-sha256":
            total += _inflate_members(path, None, sha=True)
        elif mode == "inflate-sha256-2proc":
            total += _two_processes(path)
        elif mode == "isal-inflate-sha256":
            total += _isal(path)
        elif mode == "isal-inflate-sha256-2":
            total += _isal_two_threads(path)
        else:
            print(f"floor.py: unknown mode {mode!r}", file=sys.stderr)
            return 2
    print(f"{mode}: {total} bytes inflated (zlib {zlib.ZLIB_RUNTIME_VERSION})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
