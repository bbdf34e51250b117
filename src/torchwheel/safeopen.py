"""Open only regular files: a FIFO, a device or a socket is refused before it is read.

Reading a FIFO given as a wheel blocks forever; a link to ``/dev/zero`` never ends; a
tape or terminal device has side effects on open. So the path is ``stat``-ed first, then
opened with ``O_NONBLOCK`` (a FIFO that appeared in between cannot block the open) and
the open file is ``fstat``-ed again: what is read is what was judged, whatever was
swapped in meanwhile. Errors are ``OSError`` with ``filename`` set, so every caller's
existing one-line handling applies.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class NotRegularFile(OSError):
    """The path is not a regular file; ``strerror`` says what it is."""


def kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: str | os.PathLike[str], mode: int) -> NotRegularFile:
    return NotRegularFile(0, f"{kind(mode)}, not a regular file: not opened", str(path))


def open_regular(path: str | os.PathLike[str], follow_symlinks: bool = True) -> int:
    """A read-only descriptor of the regular file at ``path`` (blocking mode restored). A
    path holding a NUL byte names no file (the OS calls would raise ValueError): OSError."""
    if "\x00" in os.fspath(path):
        raise OSError(errno.EINVAL, "a path with a NUL byte names no file", repr(os.fspath(path))[:200])
    st = os.stat(path) if follow_symlinks else os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, st.st_mode)
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    )
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, st.st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path, limit: int, follow_symlinks: bool = True) -> bytes:
    """A whole small file (metadata), refusing one larger than ``limit`` bytes."""
    fd = open_regular(path, follow_symlinks)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise OSError(
                0, f"{size:,} bytes, more than the {limit:,} torchwheel reads of such a file", str(path)
            )
        with open(fd, "rb", closefd=False) as fh:
            # as much as fstat promised and one byte more (a 16 MB read buffer per small file
            # was most of the time of reading 2,000 installed distributions' metadata); a
            # file whose size fstat does not tell (0: procfs) up to the limit
            return fh.read(min(size, limit) + 1 if size else limit + 1)[:limit]
    finally:
        os.close(fd)


def read_head(path: Path, limit: int, follow_symlinks: bool = True) -> bytes:
    """The first ``limit`` bytes of the regular file at ``path``, however large it is: for a
    file only its start is read of (a torch's ``version.py``), where a huge one must cost no
    more than a small one."""
    fd = open_regular(path, follow_symlinks)
    try:
        with open(fd, "rb", closefd=False) as fh:
            return fh.read(limit)
    finally:
        os.close(fd)


def read_chunks(fd: int, end: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The bytes of ``fd`` up to ``end`` by ``pread`` (no shared file position: callers may
    share the descriptor); a file that shrank meanwhile just ends early, and its reader
    sees fewer bytes and says so."""
    pos = 0
    while pos < end:
        data = os.pread(fd, min(chunk, end - pos), pos)
        if not data:
            return
        pos += len(data)
        yield data
