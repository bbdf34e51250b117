"""binary/elfneeded.py: DT_NEEDED and the dynamic string table alone, held to the full
reader (``read_path``) on every ELF fixture and every library of the installed torch, and
never missing a needle that an imported or exported name holds."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from torchwheel.binary import BinaryError, read_path
from torchwheel.binary.elfneeded import dynamic_names

NEEDLES = (b"aoti_torch_", b"N3c10", b"N2at", b"N5torch", b"PyInit_", b"never in any name \x01")


def _torch_libs() -> list[Path]:
    lib = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    return sorted(p for p in (lib / "torch" / "lib").glob("*.so*") if p.is_file())


def _agrees(path: Path) -> bool:
    """Whether the cheap read agrees with the full one; False when neither reads the file."""
    try:
        full = read_path(path, raw_scan=False)
    except BinaryError:
        full = None
    cheap = dynamic_names(path, NEEDLES)
    if full is None or full.format != "elf":
        assert cheap is None or full is None, path
        return False
    (only,) = full.slices
    if cheap is None:  # no PT_DYNAMIC: nothing needed, nothing imported
        assert not only.needed and not only.imports, path
        return True
    assert cheap.needed == only.needed, path
    names = [i.name.encode() for i in only.imports] + [e.encode() for e in only.exports]
    for needle in NEEDLES:
        if any(needle in name for name in names):
            assert needle in cheap.found, (path, needle)  # never a false "does not name it"
    assert b"never in any name \x01" not in cheap.found
    return True


def test_every_elf_fixture(built_fixtures: dict[str, Path]) -> None:
    read = sum(_agrees(p) for p in built_fixtures.values())
    assert read >= 20


def test_the_installed_torchs_libraries() -> None:
    libs = _torch_libs()
    assert len(libs) >= 5  # the dev .venv has torch (CPU)
    assert all(_agrees(p) for p in libs)
    cpu = dynamic_names(next(p for p in libs if p.name == "libtorch_cpu.so"), NEEDLES)
    assert cpu is not None and "libc10.so" in cpu.needed and b"aoti_torch_" in cpu.found


def test_what_it_does_not_read(tmp_path: Path) -> None:
    (tmp_path / "text.so").write_bytes(b"not an elf file at all, just text" * 4)
    assert dynamic_names(tmp_path / "text.so") is None
    (tmp_path / "short").write_bytes(b"\x7fELF")
    assert dynamic_names(tmp_path / "short") is None
    lib = _torch_libs()[0].read_bytes()
    (tmp_path / "cut.so").write_bytes(lib[:200])  # headers point past the end
    assert dynamic_names(tmp_path / "cut.so") is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.so")
    with pytest.raises(OSError):
        dynamic_names(tmp_path / "pipe.so")
