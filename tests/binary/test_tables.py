"""``binary.tables``: a compiled file's tables read where they lie, as the whole read reads them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from torchwheel.binary import BinaryError, read_path
from torchwheel.binary.tables import read_tables

from ..lib.helpers import REPO


def _facts(f):  # type: ignore[no-untyped-def]
    return [(s.arch, sorted((i.name, i.weak) for i in s.imports), list(s.needed), sorted(s.exports), s.marker)
            for s in f.slices]  # fmt: skip


def test_every_fixture_reads_as_the_whole_file_does(built_fixtures: dict[str, Path]) -> None:
    """ELF (patchelf'd, sectionless, stripped), Mach-O (universal too) and PE: the same
    imports, needed libraries, exports and marker as the mapped whole file gives."""
    files = [p for n, p in sorted(built_fixtures.items()) if not n.startswith("bad_")]
    files += sorted((REPO / "fixtures" / "cuda" / "bin").glob("*.so"))
    assert len(files) > 50
    for path in files:
        assert _facts(read_tables(path, path.name)) == _facts(read_path(path, path.name, raw_scan=False)), (
            path
        )


def test_broken_files_fail_as_the_whole_read_fails(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    for name in ("bad_truncated_elf", "bad_garbage_elf", "bad_not_binary", "bad_truncated_pe"):
        with pytest.raises(BinaryError):
            read_tables(built_fixtures[name], name)
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    with pytest.raises(BinaryError, match="empty"):
        read_tables(empty, "empty.so")


def test_only_the_tables_are_read(
    built_fixtures: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library with 64 MB after its tables costs its tables and the reader's bounded
    windows (a GNU hash chain is searched a MB at a time), not the 64 MB."""
    big = tmp_path / "big.so"
    big.write_bytes(built_fixtures["elf_marker_2_10"].read_bytes())
    with big.open("ab") as fh:
        fh.truncate(64 << 20)
    read: list[int] = []
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: read.append(n) or real(fd, n, at))
    read_tables(big, "big.so")
    assert 0 < sum(read) < 2 << 20, sum(read)


def test_tables_past_the_budget_are_refused(
    built_fixtures: dict[str, Path], set_limits: Callable[..., None]
) -> None:
    set_limits(MAX_BINARY_TABLES="1000")
    with pytest.raises(BinaryError, match="max-binary-tables"):
        read_tables(built_fixtures["elf_marker_2_10"], "x.so")


def test_special_files_are_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        read_tables(fifo, "fifo.so")
    link = tmp_path / "zero.so"
    link.symlink_to("/dev/zero")
    with pytest.raises(OSError):
        read_tables(link, "zero.so", follow_symlinks=True)
