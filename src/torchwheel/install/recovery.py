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
   killed run wrote, and only while it still holds the bytes its ``wrote`` record names (and
   a write's temporary file); write ``undone``; move every file of ``aside/`` back, never
   over a file that is there. What cannot be done so is left as it is and said, with how to
   finish by hand (``Unfinished``, exit 3): a rollback never deletes a file the install did
   not write, and never loses one it set aside.

A last line without its newline was never durable whole, so its act never started: ignored.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from pathlib import Path

from torchwheel.errors import Unfinished
from torchwheel.install import journal
from torchwheel.install.journal_check import Move, Plan, Write, check, same_bytes


def replay(home: Path, root: Path, allowed: tuple[Path, ...]) -> str:
    """Finish (committed) or roll back (not) the install whose journal is in ``home``; the
    one line that says which. ``allowed``: the folders a journal's paths must lie in."""
    plan = check(home, root, allowed)
    if plan.empty:
        _remove_home(plan)  # killed before the first record was durable: nothing was touched
        return "removed the journal of an install killed before it changed anything"
    act = _Act(plan)
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


def _rel(plan: Plan, path: Path | str) -> str:
    return os.path.relpath(path, plan.root)


class _Act:
    """One replay's acts, and what it had to leave (said in one line when it cannot finish)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.changed = False
        self.left: list[str] = []

    def _unlink(self, path: Path) -> None:
        path.unlink()
        self.changed = True

    def _rmdir_empty(self, path: Path) -> None:
        with contextlib.suppress(OSError):  # not empty, or gone: someone else's files too
            os.rmdir(path)
            self.changed = True

    def roll_back(self) -> None:
        plan = self.plan
        if not plan.undone:  # first what the new version wrote...
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
                    self.left.append(f"{_rel(plan, p)} (in aside/ but named by no move)")
        if self.left:
            raise self._unfinished("rolled back", "")
        _remove_home(plan)

    def _unwrite(self, w: Write) -> None:
        """A recorded write undone: its temporary file, and its file while it holds the bytes
        the ``wrote`` record names (with the bytecode Python wrote for it)."""
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISREG(os.lstat(w.temp).st_mode):
                self._unlink(Path(w.temp))
        if not os.path.lexists(w.path):
            return
        if w.sha256 is None:  # the write a kill cut short: its file is made only after its wrote record
            self.left.append(
                f"{_rel(self.plan, w.path)} (there, though the install never finished writing it)"
            )
            return
        if not same_bytes(w.path, w.sha256, w.size):
            self.left.append(
                f"{_rel(self.plan, w.path)} (not the bytes the install wrote: changed since, or never its)"
            )
            return
        path = Path(w.path)
        self._unlink(path)
        cache = path.parent / "__pycache__"
        found = _lstat(cache)
        if path.suffix == ".py" and found is not None and stat.S_ISDIR(found.st_mode):
            for pyc in cache.glob(f"{path.stem}.*.pyc"):  # bytecode a concurrent import wrote of it
                if stat.S_ISREG(os.lstat(pyc).st_mode):
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
                self.left.append(
                    f"{_rel(self.plan, held)} (the folder {_rel(self.plan, original)}: something else is there)"
                )
                return
            for child in sorted(held.iterdir()):
                self._put_back(child, original / child.name, m)
            self._rmdir_empty(held)
            return
        if there is not None:
            stale_pyc = original.parent.name == "__pycache__" and original.suffix == ".pyc"
            if not (stale_pyc and stat.S_ISREG(there.st_mode)):
                self.left.append(
                    f"{_rel(self.plan, held)} (the old {_rel(self.plan, original)}: a file torchwheel did not write is there)"
                )
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
        shown = "; ".join(self.left[:3]) + (
            f"; and {len(self.left) - 3:,} more" if len(self.left) > 3 else ""
        )
        return Unfinished(
            f"{plan.home}: {what} an install of {plan.wheel} only in part{why}: left {shown}. "
            f"To finish by hand: move what is still in {plan.aside} back to the path its journal's "
            "aside record names, after removing what is in the way if it is not yours; then run "
            "`torchwheel install --repair-env`"
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


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _append_undone(plan: Plan) -> None:
    """The ``undone`` record after the last whole one (a torn last line, never durable, is
    cut first, or the record would join it into one unreadable line)."""
    fd = os.open(plan.home / "journal", os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    try:
        if os.fstat(fd).st_size != plan.journal_end:
            os.ftruncate(fd, plan.journal_end)
        journal.write_record(fd, {"op": "undone"})
    finally:
        os.close(fd)


def _remove_home(plan: Plan) -> None:
    """The journal last: until it is gone, a replay can be run again. ``aside/`` holds
    nothing but half-copied ``.partial`` files by now (``check`` saw it is a real folder)."""
    if os.path.lexists(plan.aside):
        for p in plan.aside.iterdir():
            if p.name.endswith(".partial"):
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        os.rmdir(plan.aside)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(plan.home / "journal")
    os.rmdir(plan.home)
    journal.fsync_dir(plan.home.parent)
