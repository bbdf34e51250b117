"""binary/elflayout.py: the ELF header, program headers and section table of the fixture
binaries (both classes, both byte orders) as pyelftools reads them, and a header that lies
about a table refused with ``BinaryError`` before a row is read."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.enums import ENUM_E_MACHINE

from torchwheel.binary.elflayout import PT_LOAD, Reader, Segment, sections, shstrtab
from torchwheel.binary.facts import BinaryError

# 64-bit LE, 32-bit LE, 64-bit BE (ppc64, s390x), 32-bit ARM, no sections at all
_SCENARIOS = [
    "elf_marker_2_10",
    "elf_probe_i686",
    "elf_probe_ppc64",
    "elf_probe_s390x",
    "elf_probe_armv7l",
    "elf_stripped",
    "elf_nosections",
]


def _reader(path: Path) -> Reader:
    return Reader(path.read_bytes(), str(path))


@pytest.mark.parametrize("scenario", _SCENARIOS)
def test_the_layout_agrees_with_pyelftools(built_fixtures: dict[str, Path], scenario: str) -> None:
    path = built_fixtures[scenario]
    r = _reader(path)
    with path.open("rb") as fh:
        ref = ELFFile(fh)
        assert (r.lay.is64, r.lay.endian) == (ref.elfclass == 64, "<" if ref.little_endian else ">")
        machine = ENUM_E_MACHINE[ref.header["e_machine"]]  # pyelftools names it
        assert (r.machine, r.shnum, r.shstrndx) == (machine, ref.num_sections(), ref.header["e_shstrndx"])
        segs = list(ref.iter_segments())
        loads, dynamic = r.segments()
        assert loads == [
            Segment(s["p_vaddr"], s["p_offset"], s["p_filesz"]) for s in segs if s["p_type"] == "PT_LOAD"
        ]
        dyn = [
            Segment(s["p_vaddr"], s["p_offset"], s["p_filesz"]) for s in segs if s["p_type"] == "PT_DYNAMIC"
        ]
        assert dynamic == (dyn[-1] if dyn else None)
        table = sections(r) if r.shnum else []
        assert [(s.name, s.offset, s.size, s.link, s.entsize) for s in table] == [
            (s["sh_name"], s["sh_offset"], s["sh_size"], s["sh_link"], s["sh_entsize"])
            for s in ref.iter_sections()
        ]
        names = shstrtab(r, table)
        if ref.num_sections():
            assert (
                names is not None and names.offset == ref.get_section(ref.header["e_shstrndx"])["sh_offset"]
            )
        else:
            assert names is None


def test_vaddr_to_offset() -> None:
    loads = [Segment(0x1000, 0x0, 0x500), Segment(0x3000, 0x800, 0x100)]
    assert Reader.vaddr_to_offset(loads, 0x1000) == 0x0
    assert Reader.vaddr_to_offset(loads, 0x14FF) == 0x4FF
    assert Reader.vaddr_to_offset(loads, 0x1500) is None  # one past the file bytes
    assert Reader.vaddr_to_offset(loads, 0x3010) == 0x810
    assert Reader.vaddr_to_offset([], 0) is None
    assert PT_LOAD == 1


def test_a_truncated_header() -> None:
    with pytest.raises(BinaryError, match=r"^truncated ELF header$"):
        Reader(b"\x7fELF" + b"\0" * 40, "x.so")


def test_an_unknown_class() -> None:
    with pytest.raises(BinaryError, match=r"^unknown ELF class/encoding 3/1$"):
        Reader(b"\x7fELF\x03\x01" + b"\0" * 60, "x.so")


def _lying(built_fixtures: dict[str, Path], field: str, value: int) -> Reader:
    data = bytearray(built_fixtures["elf_marker_2_10"].read_bytes())  # 64-bit little-endian
    at = {"phnum": 56, "shnum": 60, "shoff": 40}[field]
    struct.pack_into("<H" if field != "shoff" else "<Q", data, at, value)
    return Reader(bytes(data), "x.so")


def test_a_section_table_that_lies_outside_the_file(built_fixtures: dict[str, Path]) -> None:
    r = _lying(built_fixtures, "shnum", 0xFFFF)
    with pytest.raises(
        BinaryError, match=r"^section header table \(65535 entries at 0x[0-9a-f]+\) lies outside the file$"
    ):
        sections(r)


def test_a_program_header_count_that_lies(built_fixtures: dict[str, Path]) -> None:
    r = _lying(built_fixtures, "phnum", 0xFFFF)
    with pytest.raises(
        BinaryError, match=r"^program header table \(65535 entries at 0x40\) lies outside the file$"
    ):
        r.segments()


def test_a_table_with_entries_smaller_than_its_rows(built_fixtures: dict[str, Path]) -> None:
    r = _reader(built_fixtures["elf_marker_2_10"])
    with pytest.raises(BinaryError, match=r"^symbols \(1 entries at 0x0\) lies outside the file$"):
        r.table(r.lay.sym, 0, 4, 1, "symbols")
    assert list(r.table(r.lay.sym, 0, 24, 0, "symbols")) == []


def test_unpack_and_strtab_outside_the_file(built_fixtures: dict[str, Path]) -> None:
    r = _reader(built_fixtures["elf_marker_2_10"])
    with pytest.raises(BinaryError, match=r"^DT_HASH at offset 0x[0-9a-f]+ lies outside the file$"):
        r.unpack("<II", r.size - 4, "DT_HASH")
    with pytest.raises(BinaryError, match=r"^string table at 0x0 \(\+-1\) lies outside the file$"):
        r.strtab(0, -1)
