"""wheel/sources.py: an unpacked wheel and an installed distribution read as wheel-shaped
input. Wheels carry only regular files, so a link out of the tree, a FIFO or a RECORD entry
that resolves outside the environment is reported, never opened."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest

from torchwheel.errors import InputError
from torchwheel.wheel.sources import DirectorySource, directory_source, environment_prefix

_WHEEL = "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp39-abi3-linux_x86_64\n"
_META = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"


def _unpacked(root: Path) -> Path:
    info = root / "demo-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "WHEEL").write_text(_WHEEL)
    (info / "METADATA").write_text(_META)
    (root / "demo").mkdir()
    (root / "demo" / "__init__.py").write_text("x = 1\n")
    (root / "demo" / "__pycache__").mkdir()
    (root / "demo" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    return root


def test_an_unpacked_wheel(tmp_path: Path) -> None:
    root = _unpacked(tmp_path / "w")
    (root / "demo" / "lib.so.1").write_bytes(b"\x7fELF")
    (root / "demo" / "lib.so").symlink_to("lib.so.1")  # a link inside: skipped silently
    (root / "demo" / "escape").symlink_to(tmp_path)
    os.mkfifo(root / "demo" / "pipe")
    src = directory_source(root)
    c = src.contents
    assert (c.filename_name, c.filename_version, c.dist_info, c.record, c.installed) == (
        "demo", "1.0", "demo-1.0.dist-info", None, False,
    )  # fmt: skip
    assert c.members == [
        "demo-1.0.dist-info/METADATA",
        "demo-1.0.dist-info/WHEEL",
        "demo/__init__.py",
        "demo/lib.so.1",
    ]
    assert [(p.path, p.problem, p.detail) for p in c.record_problems] == [
        (
            "demo/escape",
            "not-regular",
            f"a symbolic link out of the wheel directory (to {tmp_path}): not followed",
        ),
        ("demo/pipe", "not-regular", "a FIFO (named pipe), not a regular file: not opened"),
    ]
    assert c.wheel_text == _WHEEL
    assert src.read("demo/__init__.py") == b"x = 1\n"
    assert src.member_size("demo/lib.so.1") == 4
    assert b"".join(src.stream("demo/__init__.py", stop=3)) == b"x ="
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"x = 1\n").digest()).rstrip(b"=").decode()
    assert src.hash_member("demo/__init__.py") == (f"sha256={digest}", 6)


def test_reading_a_fifo_member_is_refused(tmp_path: Path) -> None:
    src = directory_source(_unpacked(tmp_path / "w"))
    os.mkfifo(tmp_path / "w" / "demo" / "late")  # appeared after the listing
    with pytest.raises(
        InputError, match=r"demo/late: a FIFO \(named pipe\), not a regular file: not opened$"
    ):
        src.read("demo/late")


@pytest.mark.parametrize("count", [0, 2])
def test_one_dist_info_is_required(tmp_path: Path, count: int) -> None:
    for i in range(count):
        (tmp_path / f"d{i}-1.0.dist-info").mkdir()
    with pytest.raises(InputError) as info:
        directory_source(tmp_path)
    found = "d0-1.0.dist-info, d1-1.0.dist-info" if count else "none"
    assert str(info.value) == f"{tmp_path}: expected one .dist-info directory, found {found}"


def test_a_missing_metadata_file(tmp_path: Path) -> None:
    root = _unpacked(tmp_path / "w")
    (root / "demo-1.0.dist-info" / "METADATA").unlink()
    with pytest.raises(InputError, match=r"demo-1\.0\.dist-info: METADATA is missing$"):
        directory_source(root)


def test_metadata_that_is_not_utf8(tmp_path: Path) -> None:
    root = _unpacked(tmp_path / "w")
    (root / "demo-1.0.dist-info" / "METADATA").write_bytes(b"Name: d\xe9mo\n")
    with pytest.raises(InputError, match=r"METADATA: cannot be read as UTF-8 text \("):
        directory_source(root)


def test_an_unpacked_wheels_metadata_link_is_refused(tmp_path: Path) -> None:
    root = _unpacked(tmp_path / "w")
    meta = root / "demo-1.0.dist-info" / "METADATA"
    (tmp_path / "elsewhere").write_text(_META)
    meta.unlink()
    meta.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match=r"METADATA: a symbolic link, not a regular file: not opened$"):
        directory_source(root)


def _installed(prefix: Path) -> tuple[Path, Path]:
    """An installed distribution's site-packages and ``.dist-info`` (no RECORD yet)."""
    site = prefix / "lib" / "site-packages"
    info = site / "demo-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "WHEEL").write_text(_WHEEL)
    (info / "METADATA").write_text(_META)
    return site, info


def test_an_installed_distribution_reads_only_inside_its_environment(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    site, info = _installed(prefix)
    (site / "demo.py").write_text("")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "demo").write_text("#!python\n")
    (tmp_path / "secret").write_text("no")
    record = (
        "demo.py,,\n../../bin/demo,,\n../../../secret,,\n"
        f"{tmp_path / 'secret'},,\ndemo-1.0.dist-info/RECORD,,\ngone.py,,\n"
    )
    (info / "RECORD").write_text(record)
    src = DirectorySource(site, info, installed=True, boundary=prefix)
    c = src.contents
    assert c.path == str(info)
    assert c.members == ["../../bin/demo", "demo-1.0.dist-info/RECORD", "demo.py"]  # gone.py: no file
    assert [(p.path, p.problem) for p in c.record_problems] == [
        ("../../../secret", "outside-environment"),
        (str(tmp_path / "secret"), "outside-environment"),
    ]
    assert c.record_problems[0].detail == (
        f"resolves to {tmp_path / 'secret'}, outside the environment {prefix}: not read"
    )


def test_environment_prefix_of_a_directory_outside_every_prefix(tmp_path: Path) -> None:
    assert environment_prefix(tmp_path) == tmp_path.resolve()


def test_only_lists_the_entries_asked_for(tmp_path: Path) -> None:
    """``only``: the entries it accepts are listed as a full listing lists them, the others
    not at all (no stat): doctor's first pass over a distribution's compiled files."""
    prefix = tmp_path / "env"
    site, info = _installed(prefix)
    (site / "demo").mkdir()
    for name in ("a.py", "_a.abi3.so", "_b.so"):
        (site / "demo" / name).write_text("")
    os.mkfifo(site / "demo" / "_pipe.so")
    (tmp_path / "outside.so").write_text("")
    rows = ["demo/a.py", "demo/_a.abi3.so", "demo/_b.so", "demo/_pipe.so", "../../../outside.so", "gone.so"]
    (info / "RECORD").write_text("".join(f"{r},,\n" for r in rows))

    def compiled(path: str) -> bool:
        return path.endswith(".so")

    every = DirectorySource(site, info, installed=True, boundary=prefix).contents
    some = DirectorySource(site, info, installed=True, boundary=prefix, only=compiled).contents
    assert some.members == [m for m in every.members if compiled(m)] == ["demo/_a.abi3.so", "demo/_b.so"]
    assert some.record_problems == every.record_problems  # the FIFO and the link out: both .so
    assert [p.path for p in some.record_problems] == ["demo/_pipe.so", "../../../outside.so"]
    assert some.record == every.record  # the whole RECORD read and checked all the same
