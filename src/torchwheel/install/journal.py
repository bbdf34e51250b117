"""The install journal: what an install set aside and what it wrote, on disk before it
happens, so that a run killed at any instant (SIGKILL, a power cut, a second Ctrl-C) leaves
an environment the next run can finish or roll back.

A run keeps its journal in ``.torchwheel-txn-<project>/`` beside the ``.dist-info`` it
replaces (or in ``purelib``): ``journal`` there is JSON lines, each written, flushed and
``fsync``'d before the act it describes starts, and ``aside/`` holds the replaced version's
files. Records (paths relative to the environment's root, ``sysconfig``'s ``data``):

- ``begin``: the project, the wheel, the ``.dist-info`` it replaces, the folders never to
  remove;
- ``aside``: every move of the old version into ``aside/`` (one record for all: a move that
  has happened is seen on disk, where its file is);
- ``write``: one file ``installer`` is about to create, and the folders it will create;
- ``commit``: the new version is whole and verified, its files ``fsync``'d;
- ``undone`` (written by a rollback): every recorded write is removed; what follows moves the
  old version back, often to the very paths the new one wrote, so a replay after this record
  must not remove them again.

The commit record is the only decision. Without it, replay rolls back: it removes every
recorded write that exists (unless ``undone`` says that is done), then moves back whatever
``aside/`` still holds. With it, replay
finishes: it deletes ``aside/``. Both are idempotent, judged by what is on disk rather than
what the journal says was done, so a replay killed half way is replayed again, and a move
recorded but never made (or made but not yet known to be) comes out right either way. A
rollback moves back every file it set aside before anything is deleted: it never loses one.
A last line without its newline was never ``fsync``'d whole, so its act never started: it is
ignored.

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
from torchwheel.frozen import frozen

PREFIX = ".torchwheel-txn-"
_FORMAT = 1


class RepairFailed(InputError):
    """A journal that cannot be replayed (unreadable, from a newer torchwheel, naming a path
    outside the environment, or a move back the file system refuses): left as it is."""


def _append_to(journal: Path, record: dict[str, Any]) -> None:
    """A record after the last whole one: a torn last line (never durable, ignored) is cut
    first, or the new record would join it into one unreadable line."""
    fd = os.open(journal, os.O_RDWR | os.O_APPEND)
    try:
        data = journal.read_bytes()
        if data and not data.endswith(b"\n"):
            os.ftruncate(fd, data.rfind(b"\n") + 1)
        _write_record(fd, record)
    finally:
        os.close(fd)


def _write_record(fd: int, record: dict[str, Any]) -> None:
    data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]
    os.fsync(fd)


def _fsync_dir(path: Path) -> None:
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
                f"another torchwheel install is running in {site}: try again when it has ended"
            ) from None
        yield
    finally:
        os.close(fd)  # releases the lock


@dataclass
class Journal:
    """One install's journal. ``root`` is the environment's root; ``home`` the folder of the
    journal and of ``aside/``."""

    home: Path
    root: Path
    _fd: int | None = None
    _aside: int = 0
    created: list[Path] = field(default_factory=list)

    @property
    def aside(self) -> Path:
        return self.home / "aside"

    def _rel(self, path: Path) -> str:
        return os.path.relpath(path, self.root)

    def _append(self, record: dict[str, Any]) -> None:
        assert self._fd is not None
        _write_record(self._fd, record)

    def begin(self, project: str, wheel: str, replaces: str | None, keep: Iterable[Path]) -> None:
        self.home.mkdir()
        _fsync_dir(self.home.parent)
        self._fd = os.open(self.home / "journal", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        _fsync_dir(self.home)
        self._append(
            {
                "op": "begin",
                "format": _FORMAT,
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
        self._append({"op": "aside", "moves": [[self._rel(p), held] for p, held in moves]})
        self.aside.mkdir()
        for path, held in moves:
            _move(path, self.aside / held)
        _fsync_dir(self.aside)

    def will_write(self, path: Path, dirs: list[Path]) -> None:
        self._append({"op": "write", "path": self._rel(path), "dirs": [self._rel(d) for d in dirs]})
        self.created.append(path)

    def commit(self) -> None:
        """The point of no return: the new files are durable, then the record that says so."""
        for path in self.created:
            with contextlib.suppress(FileNotFoundError):
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        for folder in {p.parent for p in self.created}:
            _fsync_dir(folder)
        self._append({"op": "commit"})

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _move(src: Path, dst: Path) -> None:
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


def _put_back(held: Path, original: Path) -> None:
    """``held`` back at ``original``: a folder merges into one that exists again, a file
    replaces what is there (only bytecode a concurrent import wrote can be: every file the
    new version wrote is gone before anything is put back)."""
    if held.is_dir() and not held.is_symlink():
        if not original.exists():
            original.parent.mkdir(parents=True, exist_ok=True)
            _move(held, original)
            return
        for child in sorted(held.iterdir()):
            _put_back(child, original / child.name)
        held.rmdir()
        return
    original.parent.mkdir(parents=True, exist_ok=True)
    if original.is_dir() and not original.is_symlink():
        raise OSError(errno.EISDIR, "a folder is where a file must go back", str(original))
    try:
        os.replace(held, original)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        _move(held, original)


@frozen
class _Pending:
    home: Path
    records: list[dict[str, Any]]

    @property
    def begin(self) -> dict[str, Any] | None:
        return self.records[0] if self.records and self.records[0].get("op") == "begin" else None


def _read(home: Path) -> _Pending:
    try:
        data = (home / "journal").read_bytes()
    except FileNotFoundError:
        return _Pending(home, [])
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a record never made durable whole (ignored)
    records = []
    for n, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            raise RepairFailed(
                f"{home}/journal line {n} is unreadable: not repairing; left as it is"
            ) from None
        if not isinstance(record, dict):
            raise RepairFailed(f"{home}/journal line {n} is no record: not repairing; left as it is")
        records.append(record)
    if records and records[0].get("op") == "begin" and records[0].get("format") != _FORMAT:
        raise RepairFailed(f"{home}/journal is of another torchwheel (format {records[0].get('format')})")
    return _Pending(home, records)


def _inside(root: Path, allowed: tuple[Path, ...], rel: object, home: Path) -> Path:
    if not isinstance(rel, str):
        raise RepairFailed(f"{home}/journal holds a path that is no string: not repairing; left as it is")
    path = Path(os.path.normpath(root / rel))
    if not any(path.is_relative_to(a) for a in allowed) or path == root:
        raise RepairFailed(
            f"{home}/journal names {rel}, outside the environment: not repairing; left as it is"
        )
    return path


def replay(home: Path, root: Path, allowed: tuple[Path, ...]) -> str:
    """Finish (committed) or roll back (not) the install whose journal is in ``home``; the
    one line that says which. ``allowed``: the folders a journal's paths must lie in."""
    pending = _read(home)
    begin = pending.begin
    if not pending.records and {p.name for p in home.iterdir()} <= {"journal"}:
        _remove(home)  # killed before the first record was durable: nothing was touched
        return "removed the journal of an install killed before it changed anything"
    if begin is None:
        raise RepairFailed(f"{home}/journal does not begin as a journal does: not repairing; left as it is")
    wheel, replaces = begin.get("wheel"), begin.get("replaces")
    records = pending.records
    for r in records:  # every path checked before anything is touched
        if r.get("op") == "write":
            _inside(root, allowed, r.get("path"), home)
            _paths(r.get("dirs"), root, allowed, home)
        elif r.get("op") == "aside":
            moves = r.get("moves")
            for move in moves if isinstance(moves, list) else []:
                if not (isinstance(move, list) and len(move) == 2 and str(move[1]).isdigit()):
                    raise RepairFailed(f"{home}/journal holds a move it cannot have made: left as it is")
                _inside(root, allowed, move[0], home)
    try:
        if any(r.get("op") == "commit" for r in records):
            _finish(home, root, allowed, records)
            done = f"finished an install of {wheel} that was complete when it was interrupted"
            return done + (f" (removed the {replaces} it replaced)" if replaces else "")
        _roll_back(home, root, allowed, records)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise RepairFailed(
            f"could not replay {home}/journal: {exc.strerror or exc}{where}; fix that and run "
            "torchwheel install --repair-env"
        ) from exc
    back = f": {replaces} is back in place" if replaces else ": nothing of it is left"
    return f"rolled back an install of {wheel} that was interrupted{back}"


def _paths(rel: Any, root: Path, allowed: tuple[Path, ...], home: Path) -> list[Path]:
    return [_inside(root, allowed, r, home) for r in (rel if isinstance(rel, list) else [])]


def _roll_back(home: Path, root: Path, allowed: tuple[Path, ...], records: list[dict[str, Any]]) -> None:
    if not any(r.get("op") == "undone" for r in records):  # first what the new version wrote...
        writes = [r for r in records if r.get("op") == "write"]
        for r in reversed(writes):
            path = _inside(root, allowed, r.get("path"), home)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            if path.suffix == ".py":  # bytecode of it a concurrent import may have written
                for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
                    pyc.unlink(missing_ok=True)
        for r in reversed(writes):
            for d in reversed(_paths(r.get("dirs"), root, allowed, home)):
                shutil.rmtree(d / "__pycache__", ignore_errors=True)
                with contextlib.suppress(OSError):  # not empty: someone else's files too
                    d.rmdir()
        # Said before the old version moves back, to the paths the new one wrote: a replay
        # after this must never take the old files for new ones and delete them.
        _append_to(home / "journal", {"op": "undone"})
    aside = home / "aside"
    for r in reversed([r for r in records if r.get("op") == "aside"]):  # ...then the old one back
        moves = r.get("moves")
        for original, held in reversed(moves if isinstance(moves, list) else []):
            target = _inside(root, allowed, original, home)
            if os.path.lexists(aside / str(held)):
                _put_back(aside / str(held), target)
    leftovers = [p for p in aside.iterdir() if not p.name.endswith(".partial")] if aside.is_dir() else []
    if leftovers:  # never: every move is in the journal before it is made
        raise RepairFailed(f"{aside} still holds {leftovers[0].name} after the rollback: left as it is")
    _remove(home)


def _finish(home: Path, root: Path, allowed: tuple[Path, ...], records: list[dict[str, Any]]) -> None:
    kept = records[0].get("keep")
    keep = {
        Path(os.path.normpath(root / k))
        for k in (kept if isinstance(kept, list) else [])
        if isinstance(k, str)
    }
    keep.add(root)
    shutil.rmtree(home / "aside", ignore_errors=True)
    for r in records:
        if r.get("op") != "aside":
            continue
        moves = r.get("moves")
        for original, _ in moves if isinstance(moves, list) else []:
            for d in _inside(root, allowed, original, home).parents:  # folders only the old one used
                if d in keep or not d.is_relative_to(root):
                    break
                for empty in (d / "__pycache__", d):
                    with contextlib.suppress(OSError):  # not empty: the new version's too
                        empty.rmdir()
    _remove(home)


def _remove(home: Path) -> None:
    """The journal last: until it is gone, a replay can be run again."""
    shutil.rmtree(home / "aside", ignore_errors=True)
    (home / "journal").unlink(missing_ok=True)
    home.rmdir()
    _fsync_dir(home.parent)


def pending(sites: Iterable[Path]) -> list[Path]:
    """The journals a killed run left in these site folders."""
    found: list[Path] = []
    for site in dict.fromkeys(sites):
        with contextlib.suppress(FileNotFoundError):
            found += sorted(p for p in site.iterdir() if p.name.startswith(PREFIX) and p.is_dir())
    return found
