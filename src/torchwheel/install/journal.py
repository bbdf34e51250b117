"""The install journal: what an install set aside and what it wrote, on disk before it
happens, so that a run killed at any instant (SIGKILL, a power cut, a second Ctrl-C) leaves
an environment the next run can finish or roll back (``install.recovery``).

A run keeps its journal in ``.torchwheel-txn-<project>/`` beside the ``.dist-info`` it
replaces (or in ``purelib``): ``journal`` there is JSON lines, each written, flushed and
``fsync``'d before the act it describes starts, and ``aside/`` holds the replaced version's
files. Records (format 3; paths relative to the environment's root, ``sysconfig``'s
``data``):

- ``begin``: the project, the wheel, the ``.dist-info`` it replaces, the folders never to
  remove;
- ``aside``: moves of the old version into ``aside/`` (records of at most 256 KiB, all
  written before the first move: a move that has happened is seen on disk, where its file is);
- ``write``: one file ``installer`` is about to create, the temporary name (in the same
  folder, ``TEMP_PREFIX``) its bytes go to first, and the folders it will create;
- ``wrote``: that file's sha256 and size once its bytes are whole, and which file holds them
  (its device, inode and modification time in nanoseconds: the temporary file's, which the
  file keeps, being that same file under a second name); only then is the file linked under
  its own name. A rollback deletes a file only while it is still that file with these bytes:
  a file another installer wrote over it, even with the same bytes (``pip install
  --ignore-installed`` of the same wheel), or one that was there before is never deleted,
  whatever a journal says (format 2 had no file identity: a reinstall by pip was deleted);
- ``commit``: the new version is whole and verified, its files ``fsync``'d;
- ``undone`` (written by a rollback): every recorded write is removed; what follows moves the
  old version back, often to the very paths the new one wrote, so a replay after this record
  must not remove them again.

An environment is locked (``flock`` on its ``purelib``) while a run repairs or installs, so
a second ``torchwheel install`` never replays a journal that a live run is still writing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwheel.errors import InputError

PREFIX = ".torchwheel-txn-"
TEMP_PREFIX = ".torchwheel-part-"  # then the writer's pid and the write's number
FORMAT = 3  # 3: a wrote record names its file (device, inode, mtime_ns), not only its bytes
ASIDE_RECORD_BYTES = 256 << 10  # a record of moves is cut here (max-journal-line-bytes is 1 MiB)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class RepairFailed(InputError):
    """A journal that is not replayed (unreadable, from another torchwheel, naming a path
    outside the environment or through a link, over a limit): left as it is, and nothing in
    the environment was touched (exit 2)."""

    fixed_reference = "journal-invalid"


def write_record(fd: int, record: dict[str, Any]) -> None:
    data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]
    os.fsync(fd)


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # some file systems cannot open a folder: nothing to do
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def locked(site: Path) -> Iterator[None]:
    """The environment to ourselves while repairing or installing; a one-line error when
    another torchwheel holds it."""
    if sys.platform == "win32":  # pragma: no cover - no flock; the journal still protects
        yield
        return
    import fcntl

    try:
        fd = os.open(site, os.O_RDONLY)
    except FileNotFoundError:  # installer creates it: nobody else can be installing there yet
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                f"another torchwheel install is running in {site}",
                reference="in-use",
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


def _aside_records(moves: list[list[str]]) -> Iterator[dict[str, Any]]:
    """The moves in records of at most ``ASIDE_RECORD_BYTES``: a journal line stays far
    within ``max-journal-line-bytes`` however many files an upgrade moves."""
    chunk: list[list[str]] = []
    size = 0
    for move in moves:
        cost = len(json.dumps(move)) + 1
        if chunk and size + cost > ASIDE_RECORD_BYTES:
            yield {"op": "aside", "moves": chunk}
            chunk, size = [], 0
        chunk.append(move)
        size += cost
    if chunk:
        yield {"op": "aside", "moves": chunk}


@dataclass
class Journal:
    """One install's journal. ``root`` is the environment's root; ``home`` the folder of the
    journal and of ``aside/``."""

    home: Path
    root: Path
    _fd: int | None = None
    created: list[Path] = field(default_factory=list)

    @property
    def aside(self) -> Path:
        return self.home / "aside"

    def _rel(self, path: Path) -> str:
        return os.path.relpath(path, self.root)

    def _append(self, record: dict[str, Any]) -> None:
        assert self._fd is not None
        write_record(self._fd, record)

    def begin(self, project: str, wheel: str, replaces: str | None, keep: Iterable[Path]) -> None:
        self.home.mkdir()
        fsync_dir(self.home.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _NOFOLLOW
        self._fd = os.open(self.home / "journal", flags, 0o644)
        fsync_dir(self.home)
        self._append(
            {
                "op": "begin",
                "format": FORMAT,
                "project": project,
                "wheel": wheel,
                "replaces": replaces,
                "keep": sorted({self._rel(k) for k in keep}),
            }
        )

    def set_aside(self, paths: list[Path]) -> None:
        """Move the old version out of the way, into ``aside/``, once the plan is durable."""
        if not paths:
            return
        moves = [(p, str(i)) for i, p in enumerate(paths)]
        for record in _aside_records([[self._rel(p), held] for p, held in moves]):
            self._append(record)
        self.aside.mkdir()
        for path, held in moves:
            move(path, self.aside / held)
        fsync_dir(self.aside)

    def will_write(self, path: Path, dirs: list[Path]) -> Path:
        """The temporary file ``path``'s bytes go to first (its name is in the record)."""
        temp = path.with_name(f"{TEMP_PREFIX}{os.getpid()}-{len(self.created)}")
        record = {
            "op": "write",
            "path": self._rel(path),
            "temp": temp.name,
            "dirs": [self._rel(d) for d in dirs],
        }
        self._append(record)
        self.created.append(path)
        return temp

    def wrote(self, path: Path, temp: Path, sha256: str, size: int) -> None:
        """``temp`` holds ``path``'s whole bytes: their digest and the file that holds them on
        disk, then ``path`` made (the same file: a hard link, or a rename, keeps the inode and
        the modification time; the time tells a file from a later one that reuses the inode)."""
        st = os.lstat(temp)
        self._append(
            {
                "op": "wrote",
                "path": self._rel(path),
                "sha256": sha256,
                "size": size,
                "dev": st.st_dev,
                "ino": st.st_ino,
                "mtime_ns": st.st_mtime_ns,
            }
        )
        _place(temp, path)

    def commit(self) -> None:
        """The point of no return: the new files are durable, then the record that says so."""
        for path in self.created:
            with contextlib.suppress(FileNotFoundError):
                fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        for folder in {p.parent for p in self.created}:
            fsync_dir(folder)
        self._append({"op": "commit"})

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _place(temp: Path, path: Path) -> None:
    """``temp`` under its own name ``path``, never over a file there: a hard link (refused
    when ``path`` exists), then the temporary name removed; a rename where the file system
    has no hard links."""
    try:
        os.link(temp, path, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK) or os.path.lexists(
            path
        ):
            raise
        os.rename(temp, path)
        return
    os.unlink(temp)


def move(src: Path, dst: Path) -> None:
    """A rename; across file systems a copy that appears under ``dst`` only when whole
    (``.partial`` first), then the original's removal. ``dst`` exists only complete, which is
    what lets replay put it back whenever it exists."""
    try:
        os.rename(src, dst)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    partial = dst.with_name(dst.name + ".partial")
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, partial, symlinks=True)
    else:
        shutil.copy2(src, partial, follow_symlinks=False)
    os.rename(partial, dst)
    if src.is_dir() and not src.is_symlink():
        shutil.rmtree(src)
    else:
        src.unlink()


def pending(sites: Iterable[Path]) -> list[Path]:
    """What killed runs left in these site folders: every ``.torchwheel-txn-*`` entry, a
    folder or not (``recovery`` refuses what is not a folder torchwheel made, rather than
    pass over it)."""
    found: list[Path] = []
    for site in dict.fromkeys(sites):
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            found += sorted(p for p in site.iterdir() if p.name.startswith(PREFIX))
    return found
