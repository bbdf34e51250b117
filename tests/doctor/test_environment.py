"""``doctor``'s environment reading passes a library over by its dynamic string table when that
cannot name torch (issue 49), and never one that does: every ELF fixture that imports, links
or marks torch is read, as is every real extension built by torch's ``BuildExtension``."""

from __future__ import annotations

import ctypes
import zipfile
from pathlib import Path

import pytest

from torchwheel.analysis.usage import is_shim_name
from torchwheel.binary.elfdynamic import dynamic_facts
from torchwheel.binary.tables import read_tables
from torchwheel.doctor.environment import _TORCH_NEEDLES, _kept_no_torch, _names_no_torch
from torchwheel.tables.torchcache import clean_files, file_key, keep_clean
from torchwheel.torchabi.cxxnames import is_unstable

from ..lib.helpers import REPO, fixture_build

fb = fixture_build()
TOUCHING = [
    name
    for name, sc in fb.SCENARIOS.items()
    if sc.format == "elf"
    and any(s.marker is not None or s.shims or s.unstable or s.stable_cpp or s.providers for s in sc.slices)
]


def test_the_fixtures_cover_every_way_of_naming_torch() -> None:
    kinds = {
        kind
        for name in TOUCHING
        for s in fb.SCENARIOS[name].slices
        for kind, there in (
            ("marker", s.marker),
            ("shims", s.shims),
            ("unstable", s.unstable),
            ("stable_cpp", s.stable_cpp),
            ("providers", s.providers),
        )
        if there
    }
    assert kinds == {"marker", "shims", "unstable", "stable_cpp", "providers"}


@pytest.mark.parametrize("name", TOUCHING)
def test_a_library_that_names_torch_is_read(built_fixtures: dict[str, Path], name: str) -> None:
    assert not _names_no_torch(built_fixtures[name])


def test_a_library_without_torch_is_passed_over(built_fixtures: dict[str, Path]) -> None:
    assert _names_no_torch(built_fixtures["elf_no_torch"])


def test_real_extensions_are_read(tmp_path: Path) -> None:
    prebuilt = REPO / "fixtures" / "real_ext" / "prebuilt"
    wheels = sorted(prebuilt.glob("*/*.whl"))
    assert len(wheels) >= 7
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            for member in (m for m in z.namelist() if m.endswith(".so")):
                path = Path(z.extract(member, tmp_path / wheel.parent.name))
                assert not _names_no_torch(path), (wheel.name, member)


@pytest.mark.parametrize("library", ["libtorch_cpu.so", "libc10.so", "libtorch_python.so"])
def test_every_name_torch_exports_holds_a_needle(library: str) -> None:
    """torch 2.13.0's own exports (this venv's): every unstable C++ name, every shim, holds one
    of the needles, so no import of one can pass over (the fixtures link a library named
    torch, which alone would hold "torch")."""
    import torch

    path = Path(torch.__file__).parent / "lib" / library
    names = read_tables(path, library).slices[0].exports
    torch_names = [n for n in names if is_unstable(n) or is_shim_name(n)]
    assert len(torch_names) > 500, len(torch_names)
    missed = [n for n in torch_names if not any(needle.decode() in n for needle in _TORCH_NEEDLES)]
    assert not missed, missed[:5]


def _loaded(soname: str) -> Path:
    ctypes.CDLL(soname)
    for line in Path("/proc/self/maps").read_text().splitlines():
        if line.rstrip().endswith(soname) or f"/{soname}" in line:
            return Path(line.split(None, 5)[5])
    raise AssertionError(f"{soname} loaded but not mapped")


def test_std_string_at_is_not_torchs_at() -> None:
    """libstdc++ exports ``std::string::at`` (``..E2atEm``): "2at" alone would read every C++
    library whole; at:: is the first part of a nested name (``N2at``)."""
    libstdcxx = _loaded("libstdc++.so.6")
    assert b"2at" in dynamic_facts(libstdcxx, (b"2at",)).holds
    assert _names_no_torch(libstdcxx)


def test_a_file_kept_as_clean_is_answered_by_its_key_and_a_changed_one_is_read(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """The cache of files not naming torch (``torchcache.clean_files``): a warm run learns
    nothing and writes nothing; the same file rewritten as a torch extension is read again."""
    lib, folder = tmp_path / "site" / "lib.so", tmp_path / "cache"
    lib.parent.mkdir()
    lib.write_bytes(built_fixtures["elf_no_torch"].read_bytes())
    first = clean_files(folder)
    assert first.known == frozenset()
    assert _kept_no_torch(lib, first)
    assert first.learned == {file_key(lib)}
    keep_clean(folder, first)
    warm = clean_files(folder)
    assert warm.known == {file_key(lib)}
    assert _kept_no_torch(lib, warm)
    assert warm.learned == set()  # answered by the key: nothing learned, nothing to write
    lib.write_bytes(built_fixtures[TOUCHING[0]].read_bytes())  # the same path and inode, changed
    changed = clean_files(folder)
    assert file_key(lib) not in changed.known
    assert not _kept_no_torch(lib, changed)
    assert changed.learned == set()
