"""safeopen.py: only regular files are opened; a FIFO, a directory or a link refused
(``follow_symlinks=False``) is an ``OSError`` with its file name and what it is, and a
metadata file over its limit is refused before it is read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from torchwheel.safeopen import NotRegularFile, kind, open_regular, read_chunks, read_regular


@pytest.mark.parametrize(
    ("mode", "name"),
    [
        (stat.S_IFDIR, "a directory"),
        (stat.S_IFIFO, "a FIFO (named pipe)"),
        (stat.S_IFCHR, "a character device"),
        (stat.S_IFBLK, "a block device"),
        (stat.S_IFSOCK, "a socket"),
        (stat.S_IFLNK, "a symbolic link"),
        (stat.S_IFREG, "not a regular file"),
    ],
)
def test_kind_names_each_file_type(mode: int, name: str) -> None:
    assert kind(mode | 0o644) == name


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "wheel.whl"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile) as info:
        open_regular(fifo)
    assert info.value.filename == str(fifo)
    assert info.value.strerror == "a FIFO (named pipe), not a regular file: not opened"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile, match="a directory, not a regular file"):
        read_regular(tmp_path, 100)


def test_a_symlink_is_followed_or_refused(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.write_bytes(b"Name: x\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert read_regular(link, 100) == b"Name: x\n"
    with pytest.raises(NotRegularFile, match="a symbolic link, not a regular file"):
        read_regular(link, 100, follow_symlinks=False)


def test_read_regular_refuses_a_file_over_its_limit(tmp_path: Path) -> None:
    f = tmp_path / "METADATA"
    f.write_bytes(b"x" * 1001)
    assert read_regular(f, 1001) == b"x" * 1001
    with pytest.raises(
        OSError, match=r"^\[Errno 0\] 1,001 bytes, more than the 1,000 torchwheel reads of such a file"
    ):
        read_regular(f, 1000)


def test_read_chunks_reads_to_end_in_chunks(tmp_path: Path) -> None:
    f = tmp_path / "data"
    f.write_bytes(bytes(range(256)) * 10)
    fd = open_regular(f)
    try:
        assert [len(c) for c in read_chunks(fd, 2000, chunk=512)] == [512, 512, 512, 464]
        assert b"".join(read_chunks(fd, 5000, chunk=1024)) == bytes(range(256)) * 10  # ends early
    finally:
        os.close(fd)
