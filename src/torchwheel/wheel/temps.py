"""Temp files of the writers: recognisable, removed on any exception, and swept up after
a SIGKILL.

A temp file is named ``TEMP_PREFIX`` + the writer's pid, in the directory of the file it
will replace (same filesystem: the final rename is atomic). A writer killed outright
cannot remove its own; the next writer in that directory removes every such file whose
pid is gone. SIGTERM and SIGHUP become an exception in the CLI (so ``except
BaseException`` cleanups run); they are held back while a temp file is created, so the
exception cannot land between its creation and the ``try`` that removes it.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.safeopen import kind

TEMP_PREFIX = ".torchwheel-tmp-"  # then the writer's pid: a leftover is recognisable
_TEMP = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)-.*\.tmp$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temps(directory: Path) -> list[Path]:
    """Temp files a killed writer (SIGKILL, power loss) left here: removed when their pid is
    gone. A live pid may be a writer at work (or a reused pid): its file stays."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        found = _TEMP.match(entry.name)
        if found and entry.is_file(follow_symlinks=False) and not _pid_alive(int(found.group(1))):
            try:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            except OSError:
                pass
    return removed


def temp_in(directory: Path) -> tuple[int, Path]:
    """A new temp file, created with SIGTERM/SIGHUP held back: the CLI turns them into an
    exception, which must not land between the file's creation and the ``try`` that
    removes it. The caller enters that ``try`` and then calls ``release_signals``."""
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(directory)
    _hold_signals()
    try:
        fd, name = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=".tmp", dir=directory)
    except BaseException:
        release_signals()
        raise
    return fd, Path(name)


_HELD = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]


_previous_mask: list[set[int | signal.Signals]] = []


def _hold_signals() -> None:
    if hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread():
        _previous_mask.append(signal.pthread_sigmask(signal.SIG_BLOCK, _HELD))


def release_signals() -> None:
    """Deliver what ``_temp_in`` held back (its handler runs here, inside the caller's ``try``)."""
    if _previous_mask and threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(signal.SIG_SETMASK, _previous_mask.pop())


@frozen
class OutputKind:
    """What torchwheel writes at an output path: an existing file there is replaced only
    when ``looks_like`` says it is one (a wheel, a symbol table), never another file, a link,
    a folder, a FIFO or a device."""

    what: str  # "wheel", "symbol table"
    looks_like: Callable[[int], bool]  # given a descriptor open for reading at its start


def check_replaceable(target: Path, kind_of: OutputKind) -> None:
    """``InputError`` naming ``target`` unless it is missing or a regular file of the kind."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(
            f"{target}: {exc.strerror or exc} (checking the output)",
            reference="file-system-error",
            path=target,
        ) from exc
    keep = f"not replaced (torchwheel replaces only a {kind_of.what} it could have written; remove it or write elsewhere)"
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{target}: a symbolic link: {keep}", reference="output-refused", path=target)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"{target}: {kind(st.st_mode)}, not a {kind_of.what}: {keep}",
            reference="output-refused",
            path=target,
        )
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise InputError(
            f"{target}: {exc.strerror or exc} (checking the output)",
            reference="file-system-error",
            path=target,
        ) from exc
    try:
        if not (stat.S_ISREG(os.fstat(fd).st_mode) and kind_of.looks_like(fd)):
            raise InputError(
                f"{target}: not a {kind_of.what}: {keep}", reference="output-refused", path=target
            )
    finally:
        os.close(fd)


def replace_atomically(
    target: Path,
    write: Callable[[BinaryIO], None],
    mode: int,
    check: Callable[[Path], None] = lambda written: None,
    kind_of: OutputKind | None = None,
) -> None:
    """The one way torchwheel replaces a file: ``write`` fills a temp file beside ``target``
    (same filesystem), which is synced, given ``mode`` (mkstemp makes it private), handed
    to ``check`` (which may refuse by raising), and only then renamed onto ``target``. On
    any exception, KeyboardInterrupt and SIGTERM/SIGHUP included, the temp file is removed
    and ``target`` is as it was. With ``kind_of``, a file already at ``target`` is replaced
    only when it is of that kind (``check_replaceable``, before and again just before the
    rename)."""
    if kind_of is not None:
        check_replaceable(target, kind_of)
    fd, tmp = temp_in(target.parent)
    try:
        release_signals()
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        check(tmp)
        tmp.chmod(mode)
        if kind_of is not None:
            check_replaceable(target, kind_of)
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a write error names no file
            raise OSError(
                exc.errno, f"{exc.strerror or exc} (writing it, through {tmp.name})", str(target)
            ) from exc
        raise
