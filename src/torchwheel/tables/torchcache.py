"""What an installed torch exports, and its RECORD, kept between runs in the user's data folder,
keyed by the file's path, size and modification time.

``doctor`` judges an environment against its own torch, and read that torch's RECORD (15,000
rows) and the exports of its libraries (100,000 names in libtorch_cpu.so) on every run: 0.35 s
of its 3.1 s on a 300-distribution environment (issue 49), for files that change only when
torch is installed again. Here the answer of a reader is written once, next to the user tables
file (``tablechoice.user_tables_path``: ``$XDG_DATA_HOME/torchwheel/cache``, ``%LOCALAPPDATA%``
on Windows), and read back while the file it was made from has the same path, size and mtime.

One entry per file and kind, overwritten when the file changes (the folder holds one entry
per torch library, not one per version ever seen). An entry is a header line (the key, the
payload's length and SHA-256, torchwheel's version) and the payload; one that does not match
its key or its digest, or that is cut short, is made again. Written to a temporary file and
renamed, so a reader never sees half an entry; a folder that cannot be written (a read-only
home) costs the making, every run, and nothing else: the cache is never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from torchwheel import __version__
from torchwheel.tables.tablechoice import user_tables_path

MAX_PAYLOAD = 64 << 20  # an answer larger than this is made every time, never kept
FORMAT = 1  # part of every key: raise it when a reader's answer changes meaning
_HEADER_MAX = 4096


def cache_folder() -> Path:
    """The folder the entries live in: ``cache`` beside the user tables file."""
    return user_tables_path().parent / "cache"


def _key(kind: str, path: Path) -> dict[str, object] | None:
    try:
        real = path.resolve()
        st = real.stat()
    except OSError:
        return None
    return {
        "kind": kind,
        "path": str(real),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "version": __version__,
    }


def _entry(folder: Path, key: dict[str, object]) -> Path:
    name = hashlib.sha256(f"{key['kind']}\0{key['path']}".encode()).hexdigest()[:32]
    return folder / f"{key['kind']}-{name}.bin"


def _load(entry: Path, key: dict[str, object]) -> bytes | None:
    try:
        with entry.open("rb") as fh:
            header = json.loads(fh.readline(_HEADER_MAX))
            if not isinstance(header, dict) or header.get("key") != key:
                return None
            length = header.get("length")
            if not isinstance(length, int) or not 0 <= length <= MAX_PAYLOAD:
                return None
            payload = fh.read(length + 1)
    except (OSError, ValueError):
        return None
    if len(payload) != length or hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        return None
    return payload


def _store(entry: Path, key: dict[str, object], payload: bytes) -> None:
    header = {"key": key, "length": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".entry-", dir=entry.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(json.dumps(header).encode() + b"\n")
            out.write(payload)
        os.replace(tmp, entry)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def cached(kind: str, path: Path, make: Callable[[], bytes], folder: Path | None = None) -> bytes:
    """``make()``'s answer for ``path`` as the file is now: read back when the cache holds one
    for this kind, path, size and mtime (and torchwheel's version), else made and kept.
    ``folder``: where the entries are (``cache_folder()`` when None)."""
    key = _key(kind, path)
    if key is None:
        return make()  # the file is gone or unreadable: the reader says why
    entry = _entry(folder or cache_folder(), key)
    found = _load(entry, key)
    if found is not None:
        return found
    payload = make()
    if len(payload) <= MAX_PAYLOAD:
        _store(entry, key, payload)
    return payload


def exports(
    library: Path,
    read: Callable[[Path], Iterable[str]],
    wanted: frozenset[str] | None = None,
    folder: Path | None = None,
) -> frozenset[str]:
    """A torch library's exported names (``read`` reads them when the cache has none), all of
    them or those in ``wanted``: libtorch_cpu.so's 75,000 C++ names as Python strings are what
    ``compat`` learned to avoid holding (``torchlibs.read_torch``), so only the wanted ones are
    made into strings."""
    blob = cached("exports", library, lambda: "\n".join(sorted(set(read(library)))).encode(), folder)
    if not blob:
        return frozenset()
    if wanted is None:
        return frozenset(blob.decode().split("\n"))
    keep = {w.encode() for w in wanted}
    return frozenset(n.decode() for n in blob.split(b"\n") if n in keep)


def record_rows(
    record: Path, parse: Callable[[str], list[list[str]]], folder: Path | None = None
) -> list[list[str]]:
    """A RECORD's rows as ``parse`` reads its text (``wheel.record``'s reader, or the
    environment's): kept as JSON, which reads back in a fraction of a CSV parse with checks."""

    def make() -> bytes:
        return json.dumps(parse(record.read_text(encoding="utf-8"))).encode()

    rows = json.loads(cached("record", record, make, folder))
    return [list(map(str, row)) for row in rows]
