"""Our struct ELF reader and LIEF give the same answer on every ELF we can find here.

The fast reader exists for speed; this is what makes it trustworthy: every ELF fixture
and every shared library of the installed torch (libtorch_cpu.so is ~430 MB, with its
.dynstr moved to the end by patchelf) must yield identical exports, imports, needed
libraries, marker and raw records.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest

from torchwheel.binary.elf import read_elf
from torchwheel.binary.facts import SliceFacts

from .lib.helpers import fixture_build
from .lib.lief_reference import read_elf_with_lief


def _torch_libraries() -> list[Path]:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None, "torch must be installed for the test suite"
    root = Path(spec.origin).parent
    libs = sorted(p for p in (root / "lib").iterdir() if ".so" in p.name)
    assert any(p.name == "libtorch_cpu.so" for p in libs)
    return libs + sorted(root.glob("*.so"))


def _same(a: SliceFacts, b: SliceFacts) -> None:
    assert sorted(a.exports) == sorted(b.exports)
    assert sorted(a.imports) == sorted(b.imports)  # names, and the weak flag with them
    assert sorted(i.name for i in a.imports if i.weak) == sorted(i.name for i in b.imports if i.weak)
    assert a.needed == b.needed
    assert a.marker == b.marker
    assert a.raw_markers == b.raw_markers
    assert a.companions == b.companions


ELF_SCENARIOS = [n for n, sc in fixture_build().SCENARIOS.items() if sc.format == "elf"]


@pytest.mark.parametrize("name", ELF_SCENARIOS)
def test_fixture(name: str, built_fixtures: dict[str, Path]) -> None:
    data = built_fixtures[name].read_bytes()
    _same(read_elf(data, name), read_elf_with_lief(data, name))


def test_weak_imports(built_fixtures: dict[str, Path]) -> None:
    """STB_WEAK undefined symbols are weak imports to both readers, and only those."""
    data = built_fixtures["elf_weak_shim"].read_bytes()
    for facts in (read_elf(data, "w"), read_elf_with_lief(data, "w")):
        weak = {i.name for i in facts.imports if i.weak}
        assert set(fixture_build().WEAK_SHIMS) <= weak
        assert "aoti_torch_get_sizes" in {i.name for i in facts.imports if not i.weak}


@pytest.mark.parametrize("path", _torch_libraries(), ids=lambda p: p.name)
def test_installed_torch_library(path: Path) -> None:
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        ours = read_elf(mm, str(path))
        theirs = read_elf_with_lief(mm, str(path))
        _same(ours, theirs)
        del ours, theirs
