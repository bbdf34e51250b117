"""Our Mach-O and PE readers and LIEF give the same answer on every Mach-O and PE here.

The readers slice only the ranges they need (so a 1 GB ``.pyd`` streams within the memory
budget); this is what makes them trustworthy: every Mach-O and PE fixture, and every
library of torch 2.13.0's macOS arm64 and Windows wheels (libtorch_cpu.dylib 322 MB,
torch_cpu.dll 291 MB) streamed out of the wheel, must yield LIEF's exports, imports,
needed libraries, marker and raw records.

One documented difference: a Mach-O symbol that dyld coalesces (a C++ inline or template
also defined weakly elsewhere) has a regular bind to its two-level library *and* a weak
bind; LIEF shows the weak bind (no library, ``weak_import``), we report the nlist's
two-level library and its ``N_WEAK_REF`` bit. For those the test checks our answer
against the nlist as LIEF reads it.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

import lief
import pytest

from torchwheel.binary import memberscan, read_binary
from torchwheel.binary.facts import BinaryFacts, Import, SliceFacts
from torchwheel.wheel.archive import WheelArchive

from .lib.helpers import fixture_build
from .lib.lief_reference import read_macho, read_pe

_N_WEAK_REF = 0x40


def _reference(data: bytes, fmt: str) -> list[SliceFacts]:
    return read_macho(data, "ref") if fmt == "macho" else [read_pe(data, "ref")]


def _coalesced(data: bytes, arch_index: int) -> dict[str, Import]:
    """What the nlist says of each undefined external (LIEF's reading of it): name ->
    Import with the two-level library and N_WEAK_REF."""
    fat = lief.MachO.parse(data)  # keep `fat` alive while the slice is used
    b = fat.at(arch_index)
    kinds = lief.MachO.LoadCommand.TYPE
    dylib_commands = {kinds.LOAD_DYLIB, kinds.LOAD_WEAK_DYLIB, kinds.REEXPORT_DYLIB, kinds.LOAD_UPWARD_DYLIB,
                      kinds.LAZY_LOAD_DYLIB}  # fmt: skip
    libs = [c.name for c in b.commands if c.command in dylib_commands]  # not `libraries`: it has ID_DYLIB
    out: dict[str, Import] = {}
    for s in b.symbols:
        if (s.raw_type & 0xEF) == 1:  # N_UNDF | N_EXT, N_PEXT ignored
            ordinal = (s.description >> 8) & 0xFF
            library = libs[ordinal - 1] if 1 <= ordinal <= len(libs) else None
            name = s.name[1:] if s.name.startswith("_") else s.name
            out[name] = Import(name, library, bool(s.description & _N_WEAK_REF))
    return out


def _same(ours: BinaryFacts, data: bytes) -> None:
    theirs = _reference(data, ours.format)
    assert len(ours.slices) == len(theirs)
    for i, (a, b) in enumerate(zip(ours.slices, theirs, strict=True)):
        assert a.arch == b.arch
        assert a.file_range == b.file_range
        assert sorted(a.exports) == sorted(b.exports)
        assert sorted(i.name for i in a.imports) == sorted(i.name for i in b.imports)
        assert a.needed == b.needed
        assert a.marker == b.marker
        assert a.raw_markers == b.raw_markers
        assert a.companions == b.companions
        differ = set(a.imports) - set(b.imports)
        if differ:
            assert ours.format == "macho", sorted(differ)[:5]
            nlist = _coalesced(data, i)
            lief_says = {imp.name: imp for imp in b.imports}
            for imp in differ:
                assert lief_says[imp.name].library is None, imp  # LIEF showed the weak bind
                assert imp == nlist[imp.name]


SCENARIOS = [n for n, sc in fixture_build().SCENARIOS.items() if sc.format in ("macho", "pe")]


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixture(name: str, built_fixtures: dict[str, Path]) -> None:
    data = built_fixtures[name].read_bytes()
    _same(read_binary(data, name), data)


@pytest.mark.parametrize("platform", ["macos", "windows"])
def test_torch_libraries_streamed_from_the_wheel(
    platform: str, torch_platform_wheels: dict[str, Path]
) -> None:
    """Every library of the wheel, streamed (big=0 forces the sparse path even for small
    ones), equals LIEF reading the whole member; and equals our whole-file read."""
    wheel = torch_platform_wheels[platform]
    with WheelArchive(wheel) as archive, zipfile.ZipFile(wheel) as zf:
        libs = [n for n in archive.infos if n.endswith((".dylib", ".so", ".dll", ".pyd"))]
        assert len(libs) >= 8
        for member in libs:
            size = zf.getinfo(member).file_size
            hashed, got = memberscan.scan(member, size, lambda stop, m=member: archive.stream(m, stop), big=0)
            assert not isinstance(got, Exception), (member, got)
            assert hashed[1] == size
            data = zf.read(member)
            assert got == read_binary(data, member), member
            _same(got, data)
            del data


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("head", [64, 4096])
def test_fixture_streams_in_one_pass(name: str, head: int, built_fixtures: dict[str, Path]) -> None:
    """The stream learns each range from the ones before it (fat table, load commands,
    trie/symbols/strings; headers, directories, thunks, names) and keeps them as they go by,
    so even a head that holds only the first header needs no second pass."""
    data = built_fixtures[name].read_bytes()
    passes: list[int | None] = []

    def stream(stop: int | None) -> Iterator[bytes]:
        passes.append(stop)
        end = len(data) if stop is None else min(len(data), stop)
        for at in range(0, end, 512):
            yield data[at : min(at + 512, end)]

    _, got = memberscan.scan(name, len(data), stream, big=0, head=head, tail=0)
    assert got == read_binary(data, name)
    assert passes == [None]
