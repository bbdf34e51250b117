"""What an installed torch exports, and the rows of its RECORD that ``doctor`` reads, kept
between runs in the user's data folder, keyed by the file's path, size, modification time
and inode.

``doctor`` judges an environment against its own torch, and read that torch's RECORD (15,000
rows) and the exports of its libraries (100,000 names in libtorch_cpu.so) on every run: 0.35 s
of its 3.1 s on a 300-distribution environment (issue 49), for files that change only when
torch is installed again. Here the answer of a reader is written once, next to the user tables
file (``tablechoice.user_tables_path``: ``$XDG_DATA_HOME/torchwheel/cache``, ``%LOCALAPPDATA%``
on Windows), and read back while the file it was made from has the same path, size, mtime and
inode, and the run the same limits (a lower limit must refuse what a higher one kept).

One entry per file and kind, overwritten when the file changes; the folder is held to
``MAX_ENTRIES`` entries and ``MAX_FOLDER_BYTES``, the oldest going first. An entry is a header
line (the key, the payload's length and SHA-256) and the payload; one that does not match its
key or its digest, that is cut short, not a regular file, or says anything else unexpected is
made again: the cache is input from outside like any other file, and never an error. Written
to a temporary file and renamed, so a reader never sees half an entry; a folder that cannot
be written (a read-only home) costs the making, every run, and nothing else. The folder is
always the caller's (``doctor`` is given it at its edge): nothing here decides where.

One more entry keeps which compiled files of the environments read were found not to name
torch (``environment``'s dynamic-section test), each by its path, size, mtime and inode: on a
warm run of a 300-distribution environment the 300 files of mypy, pillow and the rest need a
stat each, not a read (issue 49). A file that changed has another key and is read again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from torchwheel import __version__, limits
from torchwheel.safeopen import open_regular
from torchwheel.tables.tablechoice import user_tables_path
from torchwheel.torchabi.torchlibs import LibraryExports
from torchwheel.wheel.record import RecordEntry

FORMAT = 2  # part of every key: raise it when a reader's answer changes meaning
MAX_PAYLOAD = 64 << 20  # an answer larger than this is made every time, never kept
MAX_ENTRIES = 256  # a torch's libraries and RECORD are ~10 entries: some twenty torches
MAX_FOLDER_BYTES = 1 << 30  # a CUDA torch's exports are ~30 MB
_HEADER_MAX = 4096
_STALE_TEMP_SECONDS = 3600  # a temporary file a killed run left behind
_SEP = b"\0"  # no exported name holds a NUL (the tables end names with one)

MAX_CLEAN_FILES = 100_000  # files kept as not naming torch, the newest learned first

Key = dict[str, object]
FileKey = tuple[str, int, int, int]  # path, size, mtime_ns, inode


def cache_folder() -> Path:
    """The folder the entries live in: ``cache`` beside the user tables file (read from the
    environment by the caller at its edge, once)."""
    return user_tables_path().parent / "cache"


def _key(kind: str, path: Path) -> Key | None:
    try:
        real = path.resolve()
        st = real.stat()
    except (OSError, ValueError, RuntimeError):  # gone, a NUL byte, a loop of links
        return None
    return {
        "kind": kind,
        "path": str(real),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
        "version": __version__,
        "format": FORMAT,
        "limits": repr(limits.current()),
    }


def _entry(folder: Path, key: Key) -> Path:
    name = hashlib.sha256(f"{key['kind']}\0{key['path']}".encode()).hexdigest()[:32]
    return folder / f"{key['kind']}-{name}.bin"


def _load(folder: Path, key: Key) -> bytes | None:
    """The payload kept for ``key``; None for anything else (absent, a link, a FIFO, damaged,
    another key, too large)."""
    try:
        fd = open_regular(_entry(folder, key), follow_symlinks=False)
    except (OSError, ValueError):
        return None
    try:
        with open(fd, "rb", closefd=False) as fh:
            header = json.loads(fh.readline(_HEADER_MAX))
            if not isinstance(header, dict) or header.get("key") != key:
                return None
            length = header.get("length")
            if not isinstance(length, int) or not 0 <= length <= MAX_PAYLOAD:
                return None
            payload = fh.read(length + 1)
    except (OSError, ValueError, RecursionError):  # RecursionError: a header of 4,000 brackets
        return None
    finally:
        os.close(fd)
    if len(payload) != length or hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        return None
    return payload


def _store(folder: Path, key: Key, payload: bytes) -> None:
    if len(payload) > MAX_PAYLOAD:
        return
    header = {"key": key, "length": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
    entry = _entry(folder, key)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".entry-", dir=folder)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(json.dumps(header).encode() + b"\n")
            out.write(payload)
        os.replace(tmp, entry)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        return
    _prune(folder, keep=entry)


def _prune(folder: Path, keep: Path) -> None:
    """The oldest entries removed past ``MAX_ENTRIES`` or ``MAX_FOLDER_BYTES``, and temporary
    files a killed run left; what cannot be listed or removed is left (never an error)."""
    try:
        found = []
        for item in os.scandir(folder):
            st = item.stat(follow_symlinks=False)
            if item.name.startswith(".entry-"):
                if time.time() - st.st_mtime > _STALE_TEMP_SECONDS:
                    os.unlink(item.path)
            elif item.name.endswith(".bin") and item.path != str(keep):
                found.append((st.st_mtime_ns, st.st_size, item.path))
        kept = os.stat(keep).st_size
    except OSError:
        return
    found.sort(reverse=True)  # newest first
    total, count = kept, 1
    for _, size, path in found:
        total, count = total + size, count + 1
        if count > MAX_ENTRIES or total > MAX_FOLDER_BYTES:
            try:
                os.unlink(path)
            except OSError:
                continue


def exports(
    library: Path,
    read: Callable[[Path], LibraryExports],
    wanted: frozenset[str] | None,
    folder: Path,
) -> LibraryExports:
    """A torch library's exports as ``read`` reads them all (``torchlibs.library_exports``),
    kept, then those in ``wanted`` (all when None): libtorch_cpu.so's 75,000 C++ names as
    Python strings are what ``compat`` learned to avoid holding (``torchlibs.read_torch``), so
    only the wanted ones are made into strings when read back."""
    key = _key("exports", library)
    blob = _load(folder, key) if key is not None else None
    found = _decode_exports(blob, wanted) if blob is not None else None
    if found is not None:
        return found
    made = read(library)
    payload = _encode_exports(made)
    if key is not None and payload is not None and _key("exports", library) == key:  # unchanged meanwhile
        _store(folder, key, payload)
    return made if wanted is None else LibraryExports(made.platforms, made.names & wanted, made.count)


def _encode_exports(made: LibraryExports) -> bytes | None:
    head = {"platforms": sorted(made.platforms), "count": made.count}
    names = sorted(made.names)
    if any("\0" in n for n in names):
        return None  # never made by the tables' readers; kept out rather than split wrong
    return json.dumps(head).encode() + b"\n" + _SEP.join(n.encode("utf-8", "surrogatepass") for n in names)


def _decode_exports(blob: bytes, wanted: frozenset[str] | None) -> LibraryExports | None:
    line, _, body = blob.partition(b"\n")
    try:
        head = json.loads(line)
        platforms = frozenset((str(f), str(a)) for f, a in head["platforms"])
        count = head["count"]
        raw = body.split(_SEP) if body else []
        if wanted is None:
            names = frozenset(n.decode("utf-8", "surrogatepass") for n in raw)
        else:
            keep = {w.encode("utf-8", "surrogatepass") for w in wanted}
            names = frozenset(n.decode("utf-8", "surrogatepass") for n in raw if n in keep)
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return None
    return LibraryExports(platforms, names, count)


def record(
    path: Path,
    read: Callable[[], dict[str, RecordEntry]],
    only: Callable[[str], bool],
    selection: str,
    folder: Path,
) -> dict[str, RecordEntry]:
    """The rows of the RECORD at ``path`` that ``only`` accepts, as ``read`` reads and parses
    the whole file (``wheel.record.parse_record``, with its checks) when the cache has none:
    torch's 15,000 rows, of which ``doctor`` asks about the ~40 of ``torch/lib``. ``selection``
    names ``only`` in the key (another selection is another entry)."""
    key = _key(f"record-{selection}", path)
    blob = _load(folder, key) if key is not None else None
    found = _decode_rows(blob) if blob is not None else None
    if found is not None:
        return found
    rows = {p: e for p, e in read().items() if only(p)}
    if key is not None and _key(f"record-{selection}", path) == key:
        _store(folder, key, json.dumps([[e.path, e.hash, e.size] for e in rows.values()]).encode())
    return rows


def _decode_rows(blob: bytes) -> dict[str, RecordEntry] | None:
    try:
        rows = json.loads(blob)
    except (ValueError, RecursionError):
        return None
    if not isinstance(rows, list) or not all(_is_row(r) for r in rows):
        return None
    return {r[0]: RecordEntry(r[0], r[1], r[2]) for r in rows}


def _is_row(row: object) -> bool:
    return (
        isinstance(row, list)
        and len(row) == 3
        and isinstance(row[0], str)
        and (row[1] is None or isinstance(row[1], str))
        and (row[2] is None or (isinstance(row[2], int) and not isinstance(row[2], bool)))
    )


class CleanFiles:
    """The compiled files known not to name torch (``known``, read from the cache) and those
    learned so by this run (``learned``, added by the reader), for ``keep_clean``."""

    def __init__(self, known: frozenset[FileKey] = frozenset()) -> None:
        self.known = known
        self.learned: set[FileKey] = set()


def file_key(path: Path) -> FileKey | None:
    """What a file is known by: its path as named, and the size, mtime and inode of what it
    names now; None when it cannot be stat'ed (then it is read, and not kept)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (os.fspath(path), st.st_size, st.st_mtime_ns, st.st_ino)


def _clean_key() -> Key:
    return {
        "kind": "clean",
        "path": "",
        "version": __version__,
        "format": FORMAT,
        "limits": repr(limits.current()),
    }


def clean_files(folder: Path) -> CleanFiles:
    """The files kept as not naming torch (none when the entry is absent or says anything
    unexpected: a row that is not a path and three integers voids the entry)."""
    blob = _load(folder, _clean_key())
    try:
        rows = json.loads(blob) if blob is not None else []
    except (ValueError, RecursionError):
        return CleanFiles()
    if not isinstance(rows, list) or not all(_is_file_row(r) for r in rows):
        return CleanFiles()
    return CleanFiles(frozenset((r[0], r[1], r[2], r[3]) for r in rows))


def _is_file_row(row: object) -> bool:
    return (
        isinstance(row, list)
        and len(row) == 4
        and isinstance(row[0], str)
        and all(isinstance(n, int) and not isinstance(n, bool) for n in row[1:])
    )


def keep_clean(folder: Path, clean: CleanFiles) -> None:
    """The files this run learned, kept with those known (at most ``MAX_CLEAN_FILES``, the
    newest first); nothing is written when it learned none (a warm run writes nothing)."""
    learned = clean.learned - clean.known
    if not learned:
        return
    rows = sorted(learned) + sorted(clean.known - learned)
    _store(folder, _clean_key(), json.dumps([list(r) for r in rows[:MAX_CLEAN_FILES]]).encode())
