"""Replaying an install journal (``install.journal``): finish a committed install, roll
back one that was not. Two steps, in this order:

1. **Check, touching nothing.** The transaction folder, its ``journal`` and ``aside/`` must
   be a real folder, file and folder (no link); the journal must read whole within
   ``max-journal-line-bytes`` and ``max-journal-entries``, every line through ``safejson``
   and its record's schema (no NUL, no nesting), the records in the order a run writes
   them; every path inside the environment, and no folder on the way to it a symbolic link
   (each walked with ``lstat`` from the scheme folder it lies in). A journal that fails any
   of this is refused whole (``RepairFailed``, exit 2): nothing was changed.
2. **Act**, judged by what is on disk, not by what the journal claims was done, so a replay
   killed half way is replayed again. The commit record is the only decision. With it: delete
   ``aside/`` and the folders only the old version used. Without it: delete each file the
   killed run wrote, and only while it is still the file its ``wrote`` record names (the same
   device, inode, modification time, size and sha256) and no other installed distribution's
   RECORD lists it (and a write's temporary file, ours by its name); write ``undone``; move
   every file of ``aside/`` back, never over a file that is there. What cannot be done so is
   left as it is and named, with how to finish by hand (``Unfinished``, exit 3): a rollback
   never deletes a file the install did not write (another installer's copy of the same
   wheel over it, ``pip install --ignore-installed``, has the same bytes in other files), and
   never loses one it set aside.

A last line without its newline was never durable whole, so its act never started: ignored.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import os
import shutil
import stat
from pathlib import Path

from packaging.utils import canonicalize_name

from torchwheel import limits
from torchwheel.errors import Unfinished
from torchwheel.install import journal
from torchwheel.install.journal_check import Move, ReplayPlan, Write, check_journal, same_file
from torchwheel.safeopen import read_regular


def replay(home: Path, root: Path, allowed: tuple[Path, ...]) -> str:
    """Finish (committed) or roll back (not) the install whose journal is in ``home``; the
    one line that says which. ``allowed``: the folders a journal's paths must lie in."""
    plan = check_journal(home, root, allowed)
    if plan.empty:
        _remove_home(plan)  # killed before the first record was durable: nothing was touched
        return "removed the journal of an install killed before it changed anything"
    act = _Act(plan, allowed)
    try:
        if plan.committed:
            act.finish()
        else:
            act.roll_back()
    except OSError as exc:
        act.failed(exc)
    if plan.committed:
        done = f"finished an install of {plan.wheel} that was complete when it was interrupted"
        return done + (f" (removed the {plan.replaces} it replaced)" if plan.replaces else "")
    back = f": {plan.replaces} is back in place" if plan.replaces else ": nothing of it is left"
    return f"rolled back an install of {plan.wheel} that was interrupted{back}"


def _rel(plan: ReplayPlan, path: Path | str) -> str:
    return os.path.relpath(path, plan.root)


class _Act:
    """One replay's acts, and what it had to leave (said in one line when it cannot finish)."""

    def __init__(self, plan: ReplayPlan, allowed: tuple[Path, ...]) -> None:
        self.plan = plan
        self.allowed = allowed
        self.changed = False
        self.left: dict[str, list[str]] = {}  # why -> what was left for that reason
        self.left_aside = False  # something set aside could not go back
        self.owners: dict[str, str] = {}

    def _unlink(self, path: Path) -> None:
        path.unlink()
        self.changed = True

    def _leave(self, what: str, why: str) -> None:
        self.left.setdefault(why, []).append(what)

    def _rmdir_empty(self, path: Path) -> None:
        with contextlib.suppress(OSError):  # not empty, or gone: someone else's files too
            os.rmdir(path)
            self.changed = True

    def roll_back(self) -> None:
        plan = self.plan
        if not plan.undone:  # first what the new version wrote...
            self.owners = _other_owners(plan, self.allowed)
            for w in reversed(plan.writes):
                self._unwrite(w)
            for w in reversed(plan.writes):
                for d in map(Path, reversed(w.dirs)):
                    self._rmdir_empty(d / "__pycache__")
                    self._rmdir_empty(d)
            # Said before the old version moves back, to the paths the new one wrote: a replay
            # after this must never take the old files for new ones and delete them.
            _append_undone(plan)
            self.changed = True
        for m in reversed(plan.moves):  # ...then the old one back
            held = plan.aside / m.held
            if os.path.lexists(held):
                self._put_back(held, Path(m.original), m)
        if plan.aside_exists:
            for p in sorted(plan.aside.iterdir()):
                if not p.name.endswith(".partial") and not any(p.name == m.held for m in plan.moves):
                    self._leave(_rel(plan, p), "in aside/ but named by no move")
                    self.left_aside = True
        if self.left:
            raise self._unfinished("rolled back", "")
        _remove_home(plan)

    def _unwrite(self, w: Write) -> None:
        """A recorded write undone: its temporary file, and its file while it is still the
        file the ``wrote`` record names and no other distribution lists it (with the bytecode
        Python compiled from it)."""
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISREG(os.lstat(w.temp).st_mode):
                self._unlink(Path(w.temp))
        if not os.path.lexists(w.path):
            return
        rel = _rel(self.plan, w.path)
        if w.wrote is None:  # the write a kill cut short: its file is made only after its wrote record
            self._leave(rel, "there, though the install never finished writing it")
            return
        if w.path in self.owners:
            self._leave(rel, f"another distribution's: {self.owners[w.path]} lists it")
            return
        if not same_file(w.path, w.wrote):
            self._leave(rel, "not the file the install wrote: replaced or changed since, or never its")
            return
        path = Path(w.path)
        self._unlink(path)
        cache = path.parent / "__pycache__"
        found = _lstat(cache)
        if path.suffix == ".py" and found is not None and stat.S_ISDIR(found.st_mode):
            for pyc in cache.glob(f"{path.stem}.*.pyc"):  # bytecode a concurrent import compiled of it
                if _compiled_from(pyc, w.wrote.mtime_ns, w.wrote.size):
                    self._unlink(pyc)

    def _put_back(self, held: Path, original: Path, m: Move) -> None:
        """``held`` back at ``original``: a folder merges into one that exists again; a file
        goes back only where nothing is, but bytecode a concurrent import wrote meanwhile."""
        st = os.lstat(held)
        there = _lstat(original)
        if stat.S_ISDIR(st.st_mode):
            if there is None:
                original.parent.mkdir(parents=True, exist_ok=True)
                journal.move(held, original)
                self.changed = True
                return
            if not stat.S_ISDIR(there.st_mode):
                self._leave(
                    _rel(self.plan, held), f"the folder {_rel(self.plan, original)}: something else is there"
                )
                self.left_aside = True
                return
            for child in sorted(held.iterdir()):
                self._put_back(child, original / child.name, m)
            self._rmdir_empty(held)
            return
        if there is not None:
            stale_pyc = original.parent.name == "__pycache__" and original.suffix == ".pyc"
            if not (stale_pyc and stat.S_ISREG(there.st_mode)):
                self._leave(
                    _rel(self.plan, held),
                    f"the old {_rel(self.plan, original)}: a file torchwheel did not write is there",
                )
                self.left_aside = True
                return
        original.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(held, original)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            journal.move(held, original)
        self.changed = True

    def finish(self) -> None:
        plan = self.plan
        for w in plan.writes:  # never there after a commit; a leftover is ours by its name
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISREG(os.lstat(w.temp).st_mode):
                    self._unlink(Path(w.temp))
        if plan.aside_exists:
            shutil.rmtree(plan.aside)
            self.changed = True
        for m in plan.moves:
            for d in Path(m.original).parents:  # folders only the old version used
                if d in plan.keep or not d.is_relative_to(plan.root):
                    break
                self._rmdir_empty(d / "__pycache__")
                self._rmdir_empty(d)
        _remove_home(plan)

    def _unfinished(self, what: str, why: str) -> Unfinished:
        plan = self.plan
        shown = "; ".join(
            ", ".join(what[:3]) + (f" and {len(what) - 3:,} more" if len(what) > 3 else "") + f" ({why})"
            for why, what in self.left.items()
        )
        if self.left_aside or why:
            how = (
                f"move what is still in {plan.aside} back to the path its journal's aside record "
                "names, after removing what is in the way if it is not yours"
            )
        else:  # everything torchwheel wrote is gone; what is named was not its to remove
            how = (
                "nothing of the install is left but what is named, which torchwheel did not write "
                "(or which changed since): keep it or remove it"
            )
        return Unfinished(
            f"{plan.home}: {what} an install of {plan.wheel} only in part{why}: left {shown}. "
            f"To finish by hand: {how}; then run `torchwheel install --repair-env`"
        )

    def failed(self, exc: OSError) -> None:
        where = f" ({exc.filename})" if exc.filename else ""
        why = f": {exc.strerror or exc}{where}"
        if not self.changed:
            raise journal.RepairFailed(
                f"could not replay {self.plan.home}/journal{why}: nothing changed; fix that and run "
                "torchwheel install --repair-env"
            ) from exc
        raise self._unfinished("finished" if self.plan.committed else "rolled back", why) from exc


def _other_owners(plan: ReplayPlan, allowed: tuple[Path, ...]) -> dict[str, str]:
    """Which of the journal's written paths another installed distribution's RECORD lists
    (path -> that ``.dist-info``): never this install's to remove, whatever the journal
    says. Each RECORD is read bounded, without following a link; one that cannot be read
    tells nothing (the file's identity still guards it). Only the journal's paths are kept,
    however large the RECORDs."""
    wanted = {w.path for w in plan.writes if w.wrote is not None}
    owners: dict[str, str] = {}
    if not wanted:
        return owners
    limit = limits.current().max_record_bytes.value
    for site in dict.fromkeys(os.path.normpath(a) for a in (plan.home.parent, *allowed)):
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        for name in entries:
            project = name.removesuffix(".dist-info").split("-", 1)[0]
            if not name.endswith(".dist-info") or canonicalize_name(project) == plan.project:
                continue
            try:
                data = read_regular(Path(site, name, "RECORD"), limit, follow_symlinks=False)
            except (OSError, ValueError):
                continue
            try:
                rows = [row[0] for row in csv.reader(data.decode("utf-8", "replace").splitlines()) if row]
            except csv.Error:
                continue
            for listed in rows:
                if listed and "\x00" not in listed:
                    path = os.path.normpath(os.path.join(site, listed))
                    if path in wanted:
                        owners.setdefault(path, name)
    return owners


def _compiled_from(pyc: Path, mtime_ns: int, size: int) -> bool:
    """``pyc`` is a regular file Python compiled from a source of this modification time and
    size (a timestamp-based pyc's header, PEP 552): bytecode of the file the install wrote,
    not of anything else."""
    try:
        fd = os.open(pyc, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        head = os.read(fd, 16) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return False
    finally:
        os.close(fd)
    if len(head) < 16 or int.from_bytes(head[4:8], "little") != 0:  # hash-based: not its mtime
        return False
    stamp, length = int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little")
    return stamp == (mtime_ns // 1_000_000_000) & 0xFFFFFFFF and length == size & 0xFFFFFFFF


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _append_undone(plan: ReplayPlan) -> None:
    """The ``undone`` record after the last whole one (a torn last line, never durable, is
    cut first, or the record would join it into one unreadable line)."""
    fd = os.open(plan.home / "journal", os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    try:
        if os.fstat(fd).st_size != plan.journal_end:
            os.ftruncate(fd, plan.journal_end)
        journal.write_record(fd, {"op": "undone"})
    finally:
        os.close(fd)


def _remove_home(plan: ReplayPlan) -> None:
    """The journal last: until it is gone, a replay can be run again. ``aside/`` holds
    nothing but half-copied ``.partial`` files by now (``check_journal`` saw it is a real folder)."""
    if os.path.lexists(plan.aside):
        for p in plan.aside.iterdir():
            if p.name.endswith(".partial"):
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        os.rmdir(plan.aside)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(plan.home / "journal")
    os.rmdir(plan.home)
    journal.fsync_dir(plan.home.parent)
