"""``binary.elfdynamic``: what ld.so reads of an ELF file, held to LIEF on the machine fixtures,
the system's libstdc++ and libc, the interpreter and a real CUDA torch's libraries; and bounded
on hostile bytes."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from torchwheel.binary import read_path
from torchwheel.binary.elfdynamic import DynamicFacts, dynamic_facts, dynamic_needed_ranges, read_dynamic
from torchwheel.binary.facts import BinaryError
from torchwheel.binary.sparse import SparseBuffer

from ..lib.helpers import REPO, machine_fixtures

_WEAK = 0x2
_BASE = 0x1


def _lief_facts(path: Path) -> DynamicFacts:
    """The same facts as LIEF reads them (the reference)."""
    import lief

    lief.logging.disable()
    b = lief.ELF.parse(str(path))
    assert b is not None, path
    tag = lief.ELF.DynamicEntry.TAG

    def text(t: object) -> str:
        entry = b.get(t)
        if entry is None:
            return ""
        return str(getattr(entry, "name", "") or getattr(entry, "runpath", "") or getattr(entry, "rpath", ""))

    needs = []
    for req in b.symbols_version_requirement:
        aux = list(req.get_auxiliary_symbols())
        needs.append(
            (
                req.name,
                tuple(a.name for a in aux if not a.flags & _WEAK),
                tuple(a.name for a in aux if a.flags & _WEAK),
            )
        )
    defined = None
    if b.has(tag.VERDEF):
        defined = frozenset(
            d.auxiliary_symbols[0].name for d in b.symbols_version_definition if not d.flags & _BASE
        )
    flags_1 = b.get(tag.FLAGS_1)
    return DynamicFacts(
        machine=int(b.header.machine_type.value),
        elf_class=64 if b.header.identity_class == lief.ELF.Header.CLASS.ELF64 else 32,
        soname=text(tag.SONAME),
        needed=tuple(lib.name for lib in b.dynamic_entries if lib.tag == tag.NEEDED),
        rpath=text(tag.RPATH),
        runpath=text(tag.RUNPATH),
        nodeflib=bool(flags_1 is not None and flags_1.value & 0x800),
        version_needs=tuple(needs),  # type: ignore[arg-type]  # compared as tuples below
        versions_defined=defined,
        interpreter=b.interpreter if b.has_interpreter else "",
    )


def _files() -> list[Path]:
    built = machine_fixtures()
    files = sorted(
        {lib for lib, _ in built.cases.values()} | {d / "libcuda.so.1" for d in built.drivers.values()}
    )
    files += [
        Path(p) for p in ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/lib/x86_64-linux-gnu/libc.so.6")
    ]
    files.append(Path(sys.executable).resolve())
    cuda = sorted((REPO / ".venv-cu130").glob("lib/python3*/site-packages/torch/lib"))
    if not cuda:
        pytest.fail(".venv-cu130 holds no torch: run `bash scripts/dev-setup`")
    files += [cuda[0] / n for n in ("libtorch_global_deps.so", "libc10.so", "libc10_cuda.so")]
    return [f for f in files if f.exists()]


def test_the_loaders_facts_agree_with_lief() -> None:
    files = _files()
    assert len(files) >= 18, files
    for path in files:
        mine = dynamic_facts(path)
        ref = _lief_facts(path)
        got = (
            mine.machine, mine.elf_class, mine.soname, mine.needed, mine.rpath, mine.runpath, mine.nodeflib,
            tuple((n.library, n.versions, n.weak) for n in mine.version_needs), mine.versions_defined,
            mine.interpreter,
        )  # fmt: skip
        want = (
            ref.machine, ref.elf_class, ref.soname, ref.needed, ref.rpath, ref.runpath, ref.nodeflib,
            ref.version_needs, ref.versions_defined, ref.interpreter,
        )  # fmt: skip
        assert got == want, path


def test_what_the_fixtures_show() -> None:
    """The layouts' own facts: RUNPATH and RPATH as written, the versions libstdc++ defines,
    the version a library needs of the stand-in libstdc++ it was linked against."""
    cases = machine_fixtures().cases
    assert dynamic_facts(cases["runpath"][0]).runpath == "$ORIGIN/deps"
    rpath = dynamic_facts(cases["rpath"][0])
    assert rpath.rpath == "$ORIGIN/deps" and rpath.runpath == ""
    cxx = dynamic_facts(cases["glibcxx"][0])
    assert ("libstdc++.so.6", ("GLIBCXX_3.4.99",)) in [(n.library, n.versions) for n in cxx.version_needs]
    stdcxx = dynamic_facts(Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"))
    assert stdcxx.versions_defined is not None and "GLIBCXX_3.4.30" in stdcxx.versions_defined
    assert "GLIBCXX_3.4.99" not in stdcxx.versions_defined and stdcxx.soname == "libstdc++.so.6"


def test_large_files_cost_their_tables() -> None:
    """libtorch_cuda.so (hundreds of MB) is read by ranges: what ``dynamic_needed_ranges`` names is
    a sliver of it."""
    (lib,) = (REPO / ".venv-cu130").glob("lib/python3*/site-packages/torch/lib/libtorch_cuda.so")
    size = lib.stat().st_size
    with lib.open("rb") as fh:
        head = fh.read(64 << 10)
        fh.seek(size - (64 << 10))
        tail = fh.read()
    ranges = dynamic_needed_ranges(SparseBuffer.from_ranges(size, {0: head, size - len(tail): tail}))
    assert ranges and sum(hi - lo for lo, hi in ranges) < size // 50
    facts = dynamic_facts(lib)
    assert (
        facts.soname == "libtorch_cuda.so" and "libcudart.so.13" in facts.needed and "$ORIGIN" in facts.rpath
    )


def _elf64(dynamic: list[tuple[int, int]], extra: bytes = b"", strtab: bytes = b"\0libx.so\0") -> bytes:
    """A minimal ELF64 shared object: one PT_LOAD covering the file, one PT_DYNAMIC."""
    ehdr_size, phdr_size = 64, 56
    dyn_off = ehdr_size + 2 * phdr_size
    dyn = b"".join(struct.pack("<qQ", t, v) for t, v in [*dynamic, (0, 0)])
    str_off = dyn_off + len(dyn)
    body = dyn + strtab + extra
    size = str_off + len(strtab) + len(extra)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    ehdr = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, ehdr_size, 0, 0, ehdr_size, phdr_size, 2, 64, 0, 0
    )
    load = struct.pack("<IIQQQQQQ", 1, 4, 0, 0, 0, size, size, 0x1000)
    dynamic_ph = struct.pack("<IIQQQQQQ", 2, 4, dyn_off, dyn_off, dyn_off, len(dyn), len(dyn), 8)
    return ehdr + load + dynamic_ph + body


def _buf(data: bytes) -> SparseBuffer:
    return SparseBuffer.from_ranges(len(data), {0: data})


def test_a_minimal_object_and_hostile_version_tables() -> None:
    dyn_off = 64 + 2 * 56
    n_entries = 5  # DT_STRTAB, DT_STRSZ, DT_NEEDED, DT_VERNEED, DT_VERNEEDNUM (+ DT_NULL)
    str_off = dyn_off + 16 * (n_entries + 1)
    strtab = b"\0libx.so\0V_1\0"
    ver_off = str_off + len(strtab)
    # one Elf_Verneed (file libx.so) whose Elf_Vernaux chain points at itself (next = 0 would end it)
    verneed = struct.pack("<HHIII", 1, 3, 1, 16, 0) + struct.pack("<IHHII", 0, 0, 2, 9, 0)
    data = _elf64(
        [(5, str_off), (10, len(strtab)), (1, 1), (0x6FFFFFFE, ver_off), (0x6FFFFFFF, 1)], verneed, strtab
    )
    facts = read_dynamic(_buf(data))
    assert facts.needed == ("libx.so",) and [(n.library, n.versions) for n in facts.version_needs] == [
        ("libx.so", ("V_1",))
    ]
    # a count of a billion entries is refused by the limit, never looped over
    lying = _elf64(
        [(5, str_off), (10, len(strtab)), (1, 1), (0x6FFFFFFE, ver_off), (0x6FFFFFFF, 10**9)], verneed, strtab
    )
    with pytest.raises(BinaryError, match="max-symbols"):
        read_dynamic(_buf(lying))
    # a version table outside the file
    outside = _elf64([(5, str_off), (10, len(strtab)), (0x6FFFFFFE, 10**6), (0x6FFFFFFF, 1)], b"", strtab)
    with pytest.raises(BinaryError):
        read_dynamic(_buf(outside))


def test_not_an_elf_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.so"
    bad.write_bytes(b"MZ" + bytes(200))
    with pytest.raises(BinaryError):
        dynamic_facts(bad)
    with pytest.raises(OSError):
        dynamic_facts(tmp_path / "absent.so")


# -- which needles the dynamic string table holds (issue 49: doctor's cheap "touches torch") --

NEEDLES = (b"aoti_torch_", b"N3c10", b"N2at", b"N5torch", b"PyInit_", b"never in any name \x01")


def _never_misses(path: Path) -> bool:
    """Every needle that an imported or exported name of the full reader (``read_path``)
    holds is found: never a false "does not name it". False when the file is no ELF file
    the loader reads."""
    try:
        full = read_path(path, raw_scan=False)
        cheap = dynamic_facts(path, NEEDLES)
    except BinaryError:
        return False
    if full.format != "elf":
        return False
    (only,) = full.slices
    assert cheap.needed == only.needed, path
    names = [i.name.encode() for i in only.imports] + [e.encode() for e in only.exports]
    for needle in NEEDLES:
        if any(needle in name for name in names):
            assert needle in cheap.holds, (path, needle)
    assert b"never in any name \x01" not in cheap.holds
    return True


def test_the_needles_on_every_elf_fixture(built_fixtures: dict[str, Path]) -> None:
    assert sum(_never_misses(p) for p in built_fixtures.values()) >= 20


def test_the_needles_on_the_installed_torchs_libraries() -> None:
    import importlib.util

    spec = importlib.util.find_spec("torch")  # found, not imported
    assert spec is not None and spec.origin is not None
    libs = sorted(p for p in (Path(spec.origin).parent / "lib").glob("*.so*") if p.is_file())
    assert len(libs) >= 5  # the dev .venv has torch (CPU)
    assert all(_never_misses(p) for p in libs)
    cpu = dynamic_facts(next(p for p in libs if p.name == "libtorch_cpu.so"), NEEDLES)
    assert "libc10.so" in cpu.needed and b"aoti_torch_" in cpu.holds
    assert dynamic_facts(libs[0]).holds == frozenset()  # no needles asked: none looked for


def test_a_needle_in_a_minimal_object() -> None:
    """A needle is looked for anywhere in the table, and only there: one in the bytes after
    it is not found."""
    strtab = b"\0libx.so\0_Z3fooN2at6Tensor\0"
    str_off = 64 + 2 * 56 + 16 * 4
    data = _elf64([(5, str_off), (10, len(strtab)), (1, 1)], b"N5torch", strtab)
    facts = read_dynamic(_buf(data), (b"N2at", b"N5torch", b""))
    assert facts.needed == ("libx.so",) and facts.holds == frozenset({b"N2at"})
