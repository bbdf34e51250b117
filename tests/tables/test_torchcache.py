"""tables/torchcache.py: a reader's answer kept by path, size, mtime and inode in the user's
data folder, made again when the file changes or the entry is damaged or hostile, never an
error; the folder bounded."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from torchwheel import limits
from torchwheel.errors import InputError
from torchwheel.tables import torchcache
from torchwheel.torchabi.torchlibs import LibraryExports
from torchwheel.wheel.record import RecordEntry, parse_record

NAMES = frozenset({"at::empty", "aoti_torch_empty", "c10::Error", "odd\nname"})


class Counted:
    """A library reader that counts its calls."""

    def __init__(self, names: frozenset[str] = NAMES) -> None:
        self.names, self.calls = names, 0

    def __call__(self, path: Path) -> LibraryExports:
        self.calls += 1
        return LibraryExports(frozenset({("elf", "x86_64")}), self.names, len(self.names))


def _library(tmp_path: Path, name: str = "libtorch_cpu.so", data: bytes = b"one") -> Path:
    lib = tmp_path / name
    lib.write_bytes(data)
    return lib


def test_an_answer_is_read_back_until_the_file_changes(tmp_path: Path) -> None:
    lib, folder, read = _library(tmp_path), tmp_path / "cache", Counted()
    for _ in range(3):
        found = torchcache.exports(lib, read, None, folder)
        assert found == LibraryExports(frozenset({("elf", "x86_64")}), NAMES, 4)
    assert read.calls == 1
    assert torchcache.exports(lib, read, frozenset({"at::empty", "gone"}), folder).names == {"at::empty"}
    assert torchcache.exports(lib, read, frozenset({"odd\nname"}), folder).names == {"odd\nname"}
    assert read.calls == 1
    lib.write_bytes(b"two!")  # reinstalled: another size
    torchcache.exports(lib, read, None, folder)
    assert read.calls == 2
    st = lib.stat()
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # same size, another mtime
    torchcache.exports(lib, read, None, folder)
    assert read.calls == 3
    st = lib.stat()
    (tmp_path / "new").write_bytes(b"two?")  # made while the old one is there: another inode
    os.utime(tmp_path / "new", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp_path / "new", lib)  # same size and mtime, a new file (as pip installs one)
    assert lib.stat().st_ino != st.st_ino
    torchcache.exports(lib, read, None, folder)
    assert read.calls == 4
    assert len(list(folder.iterdir())) == 1  # one entry per file: overwritten, not piled up


def test_other_limits_are_another_key(tmp_path: Path) -> None:
    """A run with a lower limit must refuse what a run with the default kept."""
    lib, folder, read = _library(tmp_path), tmp_path / "cache", Counted()
    torchcache.exports(lib, read, None, folder)
    lower = limits.Limits(max_metadata_bytes=limits.Limit("max-metadata-bytes", 1000))
    with limits.applied(lower):
        torchcache.exports(lib, read, None, folder)
    assert read.calls == 2


def test_a_damaged_entry_is_made_again(tmp_path: Path) -> None:
    lib, folder, read = _library(tmp_path, "libc10.so"), tmp_path / "cache", Counted()
    torchcache.exports(lib, read, None, folder)
    (entry,) = folder.iterdir()
    data = entry.read_bytes()
    header = json.loads(data.split(b"\n", 1)[0])
    other_key = json.dumps({**header, "key": {**header["key"], "size": 4}}).encode()
    damaged = [
        data[:-3],  # cut short
        data.replace(b"Error", b"Errox"),  # another digest
        b"not json\n" + data,
        b"",
        b"[" * 4000 + b"\n",  # a header json cannot nest so deep
        other_key + b"\n" + data.split(b"\n", 1)[1],  # another file's
        b'{"key": 1, "length": -1}\n',
    ]
    for bad in damaged:
        entry.write_bytes(bad)
        assert torchcache.exports(lib, read, None, folder).names == NAMES
    assert read.calls == 1 + len(damaged)
    assert entry.read_bytes() == data  # written whole again


def test_a_payload_that_lies_is_made_again(tmp_path: Path) -> None:
    """An entry whose header and digest agree but whose payload is no answer (a hostile
    writer can make one): made again, not a traceback."""
    lib, folder, read = _library(tmp_path), tmp_path / "cache", Counted()
    torchcache.exports(lib, read, None, folder)
    (entry,) = folder.iterdir()
    header = json.loads(entry.read_bytes().split(b"\n", 1)[0])
    for payload in (
        b"[1, 2]\nx",
        b'{"platforms": 3, "count": 1}\n',
        b'{"platforms": [], "count": true}\n',
        b"\xff",
    ):
        head = {**header, "length": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
        entry.write_bytes(json.dumps(head).encode() + b"\n" + payload)
        assert torchcache.exports(lib, read, None, folder).names == NAMES
    assert read.calls == 5


def test_an_entry_that_is_a_fifo_or_a_link_is_not_opened(tmp_path: Path) -> None:
    """A FIFO where the entry should be would block a plain open forever; a link may point
    anywhere: both are passed over (and replaced by the rename of a new entry)."""
    lib, folder, read = _library(tmp_path), tmp_path / "cache", Counted()
    torchcache.exports(lib, read, None, folder)
    (entry,) = folder.iterdir()
    kept = entry.read_bytes()
    entry.unlink()
    os.mkfifo(entry)
    done: list[LibraryExports] = []
    worker = threading.Thread(target=lambda: done.append(torchcache.exports(lib, read, None, folder)))
    worker.start()
    worker.join(20)
    assert done and done[0].names == NAMES, "reading the cache blocked on a FIFO"
    assert entry.is_file() and not entry.is_symlink()
    (tmp_path / "elsewhere").write_bytes(kept)
    entry.unlink()
    entry.symlink_to(tmp_path / "elsewhere")
    torchcache.exports(lib, read, None, folder)
    assert read.calls == 3


def test_a_folder_that_cannot_be_written_costs_the_making_only(tmp_path: Path) -> None:
    """A cache folder that cannot be made (a file is in its way, as a read-only home is to a
    user): the answer is made every time, and nothing is raised."""
    lib, folder, read = _library(tmp_path), tmp_path / "cache", Counted()
    folder.write_bytes(b"a file, not a folder")
    assert torchcache.exports(lib, read, None, folder).names == NAMES
    assert torchcache.exports(lib, read, None, folder).names == NAMES
    assert read.calls == 2 and folder.read_bytes() == b"a file, not a folder"


def test_the_folder_is_bounded(tmp_path: Path) -> None:
    """Past ``MAX_ENTRIES`` the oldest entries go; a killed run's old temporary file too."""
    folder, read = tmp_path / "cache", Counted(frozenset({"a"}))
    folder.mkdir()
    stale = folder / ".entry-left-by-a-killed-run"
    stale.write_bytes(b"x")
    os.utime(stale, (1, 1))
    libs = [_library(tmp_path, f"lib{i}.so") for i in range(torchcache.MAX_ENTRIES + 4)]
    for i, lib in enumerate(libs):
        torchcache.exports(lib, read, None, folder)
        for p in folder.glob("*.bin"):
            if p.stat().st_mtime > 10**9:  # the one just written: an age the clock cannot blur
                os.utime(p, (10**6 + i, 10**6 + i))
    entries = [p for p in folder.iterdir() if p.suffix == ".bin"]
    assert len(entries) == torchcache.MAX_ENTRIES
    assert not stale.exists()
    calls = read.calls
    torchcache.exports(libs[-1], read, None, folder)  # the newest are kept
    torchcache.exports(libs[0], read, None, folder)  # the oldest went
    assert read.calls == calls + 1


def test_a_record_keeps_the_rows_asked_for(tmp_path: Path) -> None:
    record, folder = tmp_path / "RECORD", tmp_path / "cache"
    record.write_text(
        "torch/__init__.py,sha256=abc,12\ntorch/lib/libc10.so,sha256=def,34\ntorch-2.13.0.dist-info/RECORD,,\n"
    )
    calls = []

    def read() -> dict[str, RecordEntry]:
        calls.append(1)
        return parse_record(record.read_text())

    def lib(path: str) -> bool:
        return path.startswith("torch/lib/")

    first = torchcache.record(record, read, lib, "lib", folder)
    assert first == {"torch/lib/libc10.so": RecordEntry("torch/lib/libc10.so", "sha256=def", 34)}
    assert torchcache.record(record, read, lib, "lib", folder) == first
    assert len(calls) == 1
    assert len(torchcache.record(record, read, lambda p: True, "all", folder)) == 3  # its own entry
    assert len(calls) == 2
    (entry,) = [p for p in folder.iterdir() if p.name.startswith("record-lib-")]
    entry.write_bytes(entry.read_bytes().replace(b"34", b"3x"))  # the digest no longer matches
    assert torchcache.record(record, read, lib, "lib", folder) == first
    assert len(calls) == 3


def test_a_record_that_cannot_be_read_says_so_every_time(tmp_path: Path) -> None:
    """The reader's error is the answer, and nothing is kept of it."""
    record, folder = tmp_path / "RECORD", tmp_path / "cache"
    record.write_text("a,b\n")
    for _ in range(2):
        with pytest.raises(InputError, match="3 fields"):
            torchcache.record(record, lambda: parse_record(record.read_text()), bool, "all", folder)
    assert not folder.exists() or not list(folder.iterdir())


def test_the_folder_is_beside_the_user_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "data"))
    assert torchcache.cache_folder() == tmp_path / "data" / "torchwheel" / "cache"


def test_a_missing_file_is_left_to_the_reader(tmp_path: Path) -> None:
    def read(path: Path) -> LibraryExports:
        raise FileNotFoundError(path)

    with pytest.raises(FileNotFoundError):
        torchcache.exports(tmp_path / "gone.so", read, None, tmp_path / "cache")


def test_a_hostile_clean_files_entry_is_ignored(tmp_path: Path) -> None:
    """Rows of the files kept as not naming torch that are not a path and three integers
    void the entry (even with a header that matches them): every file is then read."""
    lib, folder = _library(tmp_path, "libm.so"), tmp_path / "cache"
    clean = torchcache.clean_files(folder)
    key = torchcache.file_key(lib)
    assert key is not None
    clean.learned.add(key)
    torchcache.keep_clean(folder, clean)
    assert torchcache.clean_files(folder).known == {key}
    (entry,) = folder.iterdir()
    header = json.loads(entry.read_bytes().split(b"\n", 1)[0])
    for rows in ([[str(lib), "1", 2, 3]], [[str(lib), True, 2, 3]], [[str(lib), 1, 2]], {"a": 1}, [None]):
        payload = json.dumps(rows).encode()
        fixed = {**header, "length": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
        entry.write_bytes(json.dumps(fixed).encode() + b"\n" + payload)
        assert torchcache.clean_files(folder).known == frozenset()
