"""binary/elfsymbols.py: the dynamic symbols and DT_NEEDED of the fixture binaries by both of
the loader's routes (section headers; PT_DYNAMIC sized by DT_HASH or DT_GNU_HASH), each
equal to what pyelftools reads from .dynsym and .dynamic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from elftools.elf.dynamic import DynamicSection, DynamicSegment
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from torchwheel.binary.elflayout import Reader
from torchwheel.binary.elfsymbols import Symbols, dynamic_route, section_route
from torchwheel.binary.facts import BinaryError

_SCENARIOS = [
    "elf_marker_2_10",
    "elf_weak_shim",
    "elf_unstable_cpp",
    "elf_probe_i686",
    "elf_probe_ppc64",
    "elf_probe_s390x",
    "elf_probe_armv7l",
    "elf_stripped",
]
_EXPORTED_BINDS = ("STB_GLOBAL", "STB_WEAK", "STB_LOOS")  # STB_LOOS (10) is STB_GNU_UNIQUE


def _needed(tag: Any) -> str:
    """pyelftools sets ``needed`` on a DT_NEEDED tag at run time (no attribute in its stubs)."""
    return str(tag.needed)


def _reference(path: Path) -> tuple[list[str], list[tuple[str, bool]], list[str]]:
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        dynsym = next(
            s for s in elf.iter_sections() if isinstance(s, SymbolTableSection) and s.name == ".dynsym"
        )
        exports, imports = [], []
        for sym in dynsym.iter_symbols():
            if not sym.name:
                continue
            bind = sym["st_info"]["bind"]
            if sym["st_shndx"] == "SHN_UNDEF":
                imports.append((sym.name, bind == "STB_WEAK"))
            elif bind in _EXPORTED_BINDS and sym["st_other"]["visibility"] in (
                "STV_DEFAULT",
                "STV_PROTECTED",
            ):
                exports.append(sym.name)
        dynamic = next(s for s in elf.iter_sections() if isinstance(s, DynamicSection))
        needed = [_needed(t) for t in dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
    return exports, imports, needed


def _shown(found: tuple[Symbols, list[str]]) -> tuple[list[str], list[tuple[str, bool]], list[str]]:
    symbols, needed = found
    return symbols.exports, [(i.name, i.weak) for i in symbols.imports], needed


@pytest.mark.parametrize("scenario", _SCENARIOS)
def test_both_routes_read_what_pyelftools_reads(built_fixtures: dict[str, Path], scenario: str) -> None:
    path = built_fixtures[scenario]
    r = Reader(path.read_bytes(), str(path))
    expected = _reference(path)
    by_sections = section_route(r)
    assert by_sections is not None
    assert _shown(by_sections) == expected
    loads, dynamic = r.segments()
    assert _shown(dynamic_route(r, loads, dynamic)) == expected


def test_the_marker_symbols_value_is_kept(built_fixtures: dict[str, Path]) -> None:
    path = built_fixtures["elf_marker_2_10"]
    with path.open("rb") as fh:
        dynsym = ELFFile(fh).get_section_by_name(".dynsym")
        assert isinstance(dynsym, SymbolTableSection)
        hits = dynsym.get_symbol_by_name("__torch_stable_abi_marker_v1")
        assert hits is not None
        value = hits[0]["st_value"]
    r = Reader(path.read_bytes(), str(path))
    found = section_route(r)
    assert found is not None and found[0].marker_value == value
    assert _shown(found)[0].count("__torch_stable_abi_marker_v1") == 1


def test_without_section_headers_only_the_dynamic_route_reads(built_fixtures: dict[str, Path]) -> None:
    path = built_fixtures["elf_nosections"]
    r = Reader(path.read_bytes(), str(path))
    assert section_route(r) is None
    with path.open("rb") as fh:  # pyelftools through PT_DYNAMIC too
        segment = next(s for s in ELFFile(fh).iter_segments() if isinstance(s, DynamicSegment))
        names = {sym.name for sym in segment.iter_symbols() if sym.name}
        needed = [_needed(t) for t in segment.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
    loads, dynamic = r.segments()
    symbols, got_needed = dynamic_route(r, loads, dynamic)
    assert got_needed == needed and needed
    assert {*symbols.exports, *(i.name for i in symbols.imports)} == names


def test_no_pt_dynamic_is_nothing_dynamic(built_fixtures: dict[str, Path]) -> None:
    path = built_fixtures["elf_marker_2_10"]
    r = Reader(path.read_bytes(), str(path))
    loads, _ = r.segments()
    assert dynamic_route(r, loads, None) == (Symbols([], [], None), [])


def test_a_dynamic_segment_without_symtab_is_refused(built_fixtures: dict[str, Path]) -> None:
    path = built_fixtures["elf_marker_2_10"]
    r = Reader(path.read_bytes(), str(path))
    loads, dynamic = r.segments()
    assert dynamic is not None
    empty = type(dynamic)(dynamic.vaddr, 0, 0)  # a PT_DYNAMIC of no bytes: no DT_SYMTAB
    with pytest.raises(BinaryError, match=r"^PT_DYNAMIC has no DT_SYMTAB/DT_STRTAB$"):
        dynamic_route(r, loads, empty)
