"""Only regular files and directories are inputs (issue 11, finding 9).

A FIFO given as a wheel or a binary used to hang every command, a link to ``/dev/zero``
ran until ``MemoryError``. Every case must end quickly with one line and exit 2 (or, inside
an unpacked wheel, a finding naming the entry), and nothing is ever opened that could block.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..lib.helpers import torchwheel

TIMEOUT = 30  # a hang is the bug: every case here answers in about a second


def _refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchwheel: error: "), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.fixture
def special(tmp_path: Path) -> dict[str, Path]:
    """A FIFO and links to a character device, named like a wheel and like a binary."""
    fifo_whl = tmp_path / "demo-1.0-py3-none-any.whl"
    os.mkfifo(fifo_whl)
    fifo_so = tmp_path / "fifo.so"
    os.mkfifo(fifo_so)
    zero_whl = tmp_path / "zero-1.0-py3-none-any.whl"
    zero_whl.symlink_to("/dev/zero")
    zero_so = tmp_path / "zero.so"
    zero_so.symlink_to("/dev/zero")
    return {"fifo_whl": fifo_whl, "fifo_so": fifo_so, "zero_whl": zero_whl, "zero_so": zero_so}


@pytest.mark.parametrize("command", ["check", "show", "tag", "compat", "inspect"])
@pytest.mark.parametrize("case", ["fifo_whl", "fifo_so", "zero_whl", "zero_so"])
def test_special_files_are_refused(command: str, case: str, special: dict[str, Path], tmp_path: Path) -> None:
    path = special[case]
    extra = ["--against", str(tmp_path)] if command == "compat" else []
    if command == "tag":
        extra = ["-w", str(tmp_path / "out")]
    result = torchwheel(command, *extra, str(path), cwd=tmp_path, timeout=TIMEOUT)
    what = "FIFO" if case.startswith("fifo") else "character device"
    _refused(result, str(path), what)
    assert not (tmp_path / "out").exists()


def test_special_entries_in_a_directory_of_wheels(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """A folder of downloads: the bad entry is named, never opened or followed."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    shutil.copy(fixture_wheels["clean"], folder)
    assert torchwheel("check", "--no-config", str(folder), cwd=tmp_path, timeout=TIMEOUT).returncode == 0
    fifo = folder / "fifo-1.0-py3-none-any.whl"
    os.mkfifo(fifo)
    _refused(torchwheel("check", str(folder), cwd=tmp_path, timeout=TIMEOUT), str(fifo), "FIFO")
    fifo.unlink()
    outside = tmp_path / "elsewhere.whl"
    shutil.copy(fixture_wheels["clean"], outside)
    link = folder / "link-1.0-py3-none-any.whl"
    link.symlink_to(outside)
    _refused(
        torchwheel("show", str(folder), cwd=tmp_path, timeout=TIMEOUT), str(link), "symbolic link out of"
    )
    link.unlink()
    (folder / "dir-1.0-py3-none-any.whl").mkdir()
    _refused(
        torchwheel("check", str(folder), cwd=tmp_path, timeout=TIMEOUT),
        "dir-1.0-py3-none-any.whl",
        "directory",
    )


def _unpack(wheel: Path, root: Path) -> Path:
    shutil.unpack_archive(wheel, root, "zip")
    return root


def test_special_entries_in_an_unpacked_wheel(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """Inside an unpacked wheel a FIFO or a link out is reported as not read (TW403), and
    the command finishes: nothing blocks on the FIFO, nothing outside is read."""
    root = _unpack(fixture_wheels["clean"], tmp_path / "unpacked")
    os.mkfifo(root / "demo_stable" / "pipe.so")
    secret = tmp_path / "secret.so"
    secret.write_bytes(b"\x7fELF outside")
    (root / "demo_stable" / "out.so").symlink_to(secret)
    (root / "demo_stable" / "zero.py").symlink_to("/dev/zero")
    result = torchwheel("check", "--no-config", "--format", "json", str(root), cwd=tmp_path, timeout=TIMEOUT)
    assert result.returncode == 1, result.stderr
    found = {(f["code"], f["member"]): f["message"] for f in json.loads(result.stdout)["findings"]}
    assert "FIFO" in found["TW403", "demo_stable/pipe.so"]
    assert "symbolic link out of the wheel directory" in found["TW403", "demo_stable/out.so"]
    assert "symbolic link out of the wheel directory" in found["TW403", "demo_stable/zero.py"]


def test_directory_named_like_a_wheel(tmp_path: Path) -> None:
    folder = tmp_path / "demo-1.0-py3-none-any.whl"
    folder.mkdir()
    for command in ("check", "show"):
        _refused(torchwheel(command, str(folder), cwd=tmp_path, timeout=TIMEOUT), str(folder))
    for command in ("tag", "inspect"):
        result = torchwheel(command, str(folder), cwd=tmp_path, timeout=TIMEOUT)
        _refused(result, "is a directory")


# root reads any file: without these two capabilities (util-linux setpriv) the mode bites
_NO_OVERRIDE = ["--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]


def test_unreadable_file(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = tmp_path / fixture_wheels["clean"].name
    shutil.copy(fixture_wheels["clean"], wheel)
    binary = tmp_path / "lib.so"
    binary.write_bytes(b"\x7fELF")
    prefix = ["setpriv", *_NO_OVERRIDE] if os.geteuid() == 0 else []
    for path in (wheel, binary):
        path.chmod(0)
        for command in ("check", "inspect"):
            result = subprocess.run(
                [*prefix, sys.executable, "-m", "torchwheel", command, str(path)],
                capture_output=True,
                text=True,
                cwd=tmp_path,
                timeout=TIMEOUT,
            )
            _refused(result, str(path))
            assert "ermission denied" in result.stderr or "not readable" in result.stderr, result.stderr


def test_linked_metadata_in_an_unpacked_wheel(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """An unpacked wheel's METADATA that is a link (here: out of it) is refused, not read."""
    root = _unpack(fixture_wheels["clean"], tmp_path / "unpacked")
    meta = next(root.glob("*.dist-info")) / "METADATA"
    elsewhere = tmp_path / "METADATA"
    shutil.move(meta, elsewhere)
    meta.symlink_to(elsewhere)
    _refused(torchwheel("check", str(root), cwd=tmp_path, timeout=TIMEOUT), "METADATA", "symbolic link")
