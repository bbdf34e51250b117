"""tables/torchcache.py: a reader's answer kept by path, size and mtime in the user's data
folder, made again when the file changes or the entry is damaged, never an error."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

from torchwheel.tables import torchcache


class Counted:
    """A reader that counts its calls."""

    def __init__(self, answer: list[str]) -> None:
        self.answer, self.calls = answer, 0

    def __call__(self, path: Path) -> list[str]:
        self.calls += 1
        return self.answer


def test_an_answer_is_read_back_until_the_file_changes(tmp_path: Path) -> None:
    lib = tmp_path / "libtorch_cpu.so"
    lib.write_bytes(b"one")
    read = Counted(["at::empty", "aoti_torch_empty", "c10::Error"])
    folder = tmp_path / "cache"
    for _ in range(3):
        assert torchcache.exports(lib, read, folder=folder) == {"at::empty", "aoti_torch_empty", "c10::Error"}
    assert read.calls == 1
    assert torchcache.exports(lib, read, frozenset({"at::empty", "gone"}), folder) == {"at::empty"}
    assert read.calls == 1
    lib.write_bytes(b"two!")  # reinstalled: another size
    torchcache.exports(lib, read, folder=folder)
    assert read.calls == 2
    os.utime(lib, ns=(1, 1))  # same size, another mtime
    torchcache.exports(lib, read, folder=folder)
    assert read.calls == 3
    assert len(list(folder.iterdir())) == 1  # one entry per file: overwritten, not piled up


def test_a_damaged_entry_is_made_again(tmp_path: Path) -> None:
    lib, folder = tmp_path / "libc10.so", tmp_path / "cache"
    lib.write_bytes(b"x")
    read = Counted(["c10::Error"])
    torchcache.exports(lib, read, folder=folder)
    (entry,) = folder.iterdir()
    data = entry.read_bytes()
    for damaged in (data[:-3], data.replace(b"Error", b"Errox"), b"not json\n" + data, b""):
        entry.write_bytes(damaged)
        assert torchcache.exports(lib, read, folder=folder) == {"c10::Error"}
    assert read.calls == 5
    assert entry.read_bytes() == data  # written whole again


def test_a_folder_that_cannot_be_written_costs_the_making_only(tmp_path: Path) -> None:
    """A cache folder that cannot be made (a file is in its way, as a read-only home is to a
    user): the answer is made every time, and nothing is raised."""
    lib, folder = tmp_path / "libtorch.so", tmp_path / "cache"
    lib.write_bytes(b"x")
    folder.write_bytes(b"a file, not a folder")
    read = Counted(["torch::jit::load"])
    assert torchcache.exports(lib, read, folder=folder) == {"torch::jit::load"}
    assert torchcache.exports(lib, read, folder=folder) == {"torch::jit::load"}
    assert read.calls == 2 and folder.read_bytes() == b"a file, not a folder"


def test_a_record_is_kept_as_its_rows(tmp_path: Path) -> None:
    record, folder = tmp_path / "RECORD", tmp_path / "cache"
    record.write_text(
        "torch/__init__.py,sha256=abc,12\ntorch/lib/libc10.so,sha256=def,34\ntorch-2.13.0.dist-info/RECORD,,\n"
    )
    calls = []

    def parse(text: str) -> list[list[str]]:
        calls.append(1)
        return list(csv.reader(io.StringIO(text)))

    first = torchcache.record_rows(record, parse, folder)
    assert (
        torchcache.record_rows(record, parse, folder)
        == first
        == list(csv.reader(io.StringIO(record.read_text())))
    )
    assert len(calls) == 1
    assert {p.name.split("-")[0] for p in folder.iterdir()} == {"record"}  # apart from exports


def test_the_folder_is_beside_the_user_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "data"))
    assert torchcache.cache_folder() == tmp_path / "data" / "torchwheel" / "cache"
    lib = tmp_path / "libtorch.so"
    lib.write_bytes(b"x")
    torchcache.exports(lib, Counted(["a"]))
    assert len(list(torchcache.cache_folder().iterdir())) == 1


def test_a_missing_file_is_left_to_the_reader(tmp_path: Path) -> None:
    def read(path: Path) -> list[str]:
        raise FileNotFoundError(path)

    with pytest.raises(FileNotFoundError):
        torchcache.exports(tmp_path / "gone.so", read, folder=tmp_path / "cache")
