"""The test binaries of ``fixtures/build.py`` are what their scenarios claim.

Checked with LIEF and pyelftools directly (never with torchwheel, which these binaries test):
every scenario's expected facts from ``SCENARIOS`` (exported marker, raw records, hooks, shim
and C++ imports, companion symbols, provider libraries), plus the format details that make a
scenario what it is (binding, section tables, export lists, slices, limited API).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lief
import pytest
from elftools.elf import elffile
from elftools.elf.dynamic import DynamicSegment
from elftools.elf.sections import SymbolTableSection

from .lib.helpers import FIXTURES, fixture_build, load_script

fb = fixture_build()
lief.logging.disable()

MARKER = "__torch_stable_abi_marker_v1"
MAGIC = b"TORCHABI"
_FV_ITANIUM = re.compile(r"^_?_ZN21__torch_stable_abi_fvILy(\d+)EE3tag")
_FV_MSVC = re.compile(r"^\?tag@\?\$__torch_stable_abi_fv@\$0([A-P]+|\d)@@")
BINARY_SCENARIOS = [n for n, sc in fb.SCENARIOS.items() if sc.format != "bad" and n not in fb.ODD_MARKERS]
BAD_SCENARIOS = [n for n, sc in fb.SCENARIOS.items() if sc.format == "bad"]


def _msvc_uint(enc: str) -> int:
    if enc.isdigit():
        return int(enc) + 1
    return int("".join("0123456789ABCDEF"[ord(c) - 65] for c in enc), 16)


def _fv(record: bytes) -> int:
    assert len(record) == 17 and record[:8] == MAGIC and record[8] == 1, record.hex()
    return int.from_bytes(record[9:17], "big")


def _raw(data: bytes, lo: int, hi: int) -> tuple[int, ...]:
    return tuple(
        sorted(
            _fv(data[m.start() : m.start() + 17]) for m in re.finditer(MAGIC, data) if lo <= m.start() < hi
        )
    )


@dataclass
class Seen:
    arch: str
    marker: int | None
    exports: list[str]
    imports: list[tuple[str, str | None]]  # (name, library or None)
    libraries: list[str]
    raw: tuple[int, ...]
    weak: tuple[str, ...] = ()  # imports the loader may leave null


# LIEF's machine names -> the manylinux/uname spellings SCENARIOS (and torchwheel) use
_ELF_ARCH = {
    "X86_64": "x86_64",
    "I386": "i686",
    "AARCH64": "aarch64",
    "ARM": "armv7l",
    "PPC64": "ppc64",
    "S390": "s390x",
    "RISCV": "riscv64",
    "LOONGARCH": "loongarch64",
}


def _read_elf(data: bytes) -> list[Seen]:
    b = lief.ELF.parse(io.BytesIO(data))
    bind, vis = lief.ELF.Symbol.BINDING, lief.ELF.Symbol.VISIBILITY
    exports: list[str] = []
    imports: list[tuple[str, str | None]] = []
    weak: list[str] = []
    marker = None
    for s in b.dynamic_symbols:
        if not s.name:
            continue
        if s.shndx == 0:
            imports.append((s.name, None))
            if s.binding == bind.WEAK:
                weak.append(s.name)
        elif s.binding in (bind.GLOBAL, bind.WEAK) and s.visibility == vis.DEFAULT:
            exports.append(s.name)
            if s.name == MARKER:
                marker = _fv(bytes(b.get_content_from_virtual_address(s.value, 17)))
    needed = [e.name for e in b.dynamic_entries if e.tag == lief.ELF.DynamicEntry.TAG.NEEDED]
    arch = _ELF_ARCH[b.header.machine_type.name]
    if arch == "ppc64" and b.header.identity_data == lief.ELF.Header.ELF_DATA.LSB:
        arch = "ppc64le"
    return [Seen(arch, marker, exports, imports, needed, _raw(data, 0, len(data)), tuple(sorted(weak)))]


def _read_macho(data: bytes) -> list[Seen]:
    fat = lief.MachO.parse(io.BytesIO(data))  # keep `fat` alive while slices are used
    out = []
    for i in range(len(fat)):
        b = fat.at(i)
        exports: list[str] = []
        imports: list[tuple[str, str | None]] = []
        weak: set[str] = set()
        seen: set[str] = set()
        marker = None
        for s in b.symbols:
            name = s.name[1:] if s.name.startswith("_") else s.name
            if not s.has_export_info and s.description & 0x40:  # N_WEAK_REF
                weak.add(name)
            if s.has_export_info:
                exports.append(name)
                if name == MARKER:
                    assert int(s.export_info.flags) & 0x4, "marker must be a weak definition"
                    va = b.imagebase + s.export_info.address
                    marker = _fv(bytes(b.get_content_from_virtual_address(va, 17)))
            elif s.has_binding_info and s.name not in seen:
                seen.add(s.name)
                bi = s.binding_info
                imports.append((name, bi.library.name if bi.has_library else None))
            elif (s.raw_type & 0xEE) == 0 and (s.raw_type & 1) and s.name not in seen:
                seen.add(s.name)  # N_UNDF | N_EXT without bind info: -undefined dynamic_lookup
                imports.append((name, None))
        arch = {"X86_64": "x86_64", "ARM64": "arm64"}[b.header.cpu_type.name]
        lo = b.fat_offset
        libs = [lib.name for lib in b.libraries]
        raw = _raw(data, lo, lo + b.original_size)
        out.append(Seen(arch, marker, exports, imports, libs, raw, tuple(sorted(weak))))
    return out


def _read_pe(data: bytes) -> list[Seen]:
    b = lief.PE.parse(io.BytesIO(data))
    entries = {e.name: e for e in b.get_export().entries} if b.has_exports else {}
    marker = None
    if MARKER in entries:
        rva = entries[MARKER].address
        content = b.get_content_from_virtual_address(rva, 17, lief.Binary.VA_TYPES.RVA)
        marker = _fv(bytes(content))
    imports = [(x.name, i.name) for i in b.imports for x in i.entries]
    libs = [i.name for i in b.imports]
    arch = {"AMD64": "x86_64", "I386": "x86", "ARM64": "arm64"}[b.header.machine.name]
    return [Seen(arch, marker, list(entries), imports, libs, _raw(data, 0, len(data)))]


READERS = {"elf": _read_elf, "macho": _read_macho, "pe": _read_pe}


def _read(path: Path, fmt: str) -> list[Seen]:
    return READERS[fmt](path.read_bytes())


def _companions(exports: list[str]) -> tuple[int, ...]:
    found = [int(m.group(1)) for e in exports if (m := _FV_ITANIUM.match(e))]
    found += [_msvc_uint(m.group(1)) for e in exports if (m := _FV_MSVC.match(e))]
    return tuple(sorted(found))


def _is_shim(name: str) -> bool:
    return name.startswith(("aoti_torch_", "torch_"))


def _is_cpp(name: str) -> bool:
    return name.startswith(("_Z", "?")) and any(ns in name for ns in ("c10", "at", "torch"))


# ------------------------------------------------------------------------------------------
# (a) every scenario is built


def test_every_scenario_is_built(built_fixtures: dict[str, Path]) -> None:
    assert set(built_fixtures) == set(fb.SCENARIOS)
    for name, path in built_fixtures.items():
        assert path.name == fb.SCENARIOS[name].file
        assert path.is_file(), name
        assert path.stat().st_size > 0, name


def test_warm_build_reuses_the_cache(built_fixtures: dict[str, Path]) -> None:
    out = next(iter(built_fixtures.values())).parent
    before = {p: p.stat().st_mtime_ns for p in built_fixtures.values()}
    start = time.monotonic()
    again = fb.build_all(out)
    elapsed = time.monotonic() - start
    assert again == built_fixtures
    assert {p: p.stat().st_mtime_ns for p in again.values()} == before
    assert (out / ".stamp").is_file()
    assert elapsed < 5, f"a warm build took {elapsed:.1f} s"


def test_providers_are_built(built_fixtures: dict[str, Path]) -> None:
    providers = next(iter(built_fixtures.values())).parent / "providers"
    for rel in (
        "elf/libtorchfake.so",
        "elf/libc10fake.so",
        "macos-x86_64/libtorchfake.dylib",
        "macos-arm64/libc10fake.dylib",
        "mingw/torchfake.dll",
        "mingw/libtorchfake.dll.a",
        "msvc/c10fake.dll",
        "msvc/c10fake.lib",
    ):
        assert (providers / rel).is_file(), rel


def test_readme_table_is_current() -> None:
    readme = (FIXTURES / "README.md").read_text()
    assert fb.readme_table() in readme, "regenerate: python fixtures/build.py --readme-table"


# ------------------------------------------------------------------------------------------
# (b) each scenario shows its expected facts


@pytest.mark.parametrize("name", BINARY_SCENARIOS)
def test_scenario_facts(built_fixtures: dict[str, Path], name: str) -> None:
    _assert_facts(built_fixtures[name], name)


def _assert_facts(path: Path, name: str) -> None:
    sc = fb.SCENARIOS[name]
    seen = _read(path, sc.format)
    assert [s.arch for s in seen] == [f.arch for f in sc.slices]
    for got, want in zip(seen, sc.slices, strict=True):
        imports = [n for n, _ in got.imports]
        assert got.marker == want.marker
        assert got.raw == want.raw
        assert tuple(sorted(e for e in got.exports if e.startswith("PyInit_"))) == want.hooks
        assert tuple(sorted(n for n in imports if _is_shim(n))) == want.shims
        assert tuple(sorted(n for n in imports if _is_cpp(n))) == tuple(
            sorted(want.unstable + want.stable_cpp)
        )
        assert _companions(got.exports) == want.companions
        assert set(want.providers) <= set(got.libraries)
        assert tuple(n for n in got.weak if _is_shim(n) or _is_cpp(n)) == tuple(sorted(want.weak))


# ------------------------------------------------------------------------------------------
# (c) the committed copy (fixtures/prebuilt) is what the recipes make from these sources

# one scenario per toolchain and format: gcc ELF (C and C++), the CPython limited API, zig's
# universal Mach-O (llvm-lipo) and MSVC-ABI PE. zig's MinGW PE is rebuilt by the long form
# (TORCHWHEEL_FIXTURES_FROM_SOURCE=1 builds every scenario from source, README): its first link
# builds zig's MinGW C runtime and libc++, about 85 s of a clean clone's suite for one scenario
FROM_SOURCE = (
    "elf_marker_2_10",
    "elf_unstable_cpp",
    "elf_cpython_abi3",
    "macho_universal_differ",
    "pe_msvc_marker_2_11",
)


def test_the_prebuilt_copy_is_of_these_sources() -> None:
    record = fb.prebuilt_record()
    assert record is not None and record.get("sources") == fb.sources_digest(), (
        "a fixture source, header or fixtures/build.py changed since fixtures/prebuilt was "
        "written: run `.venv/bin/python fixtures/build.py --write-prebuilt` and commit fixtures/prebuilt"
    )


def test_the_suite_reads_the_prebuilt_copy(built_fixtures: dict[str, Path]) -> None:
    out = next(iter(built_fixtures.values())).parent
    stamp = (out / ".stamp").read_text()
    if os.environ.get(fb.FROM_SOURCE_ENV) == "1":
        assert not stamp.startswith("prebuilt "), stamp
        return
    assert stamp == f"prebuilt {fb.sources_digest()}\n"
    for name, path in built_fixtures.items():
        assert path.read_bytes() == (fb.PREBUILT / path.relative_to(out)).read_bytes(), name


def _without_tools(tmp_path: Path, script_dir: Path, call: str) -> str:
    """``call`` on the ``build`` module of ``script_dir`` in a process whose PATH holds no
    tool at all (no gcc, zig or llvm-lipo): its output, once it exits 0."""
    code = f"import sys; sys.path.insert(0, sys.argv[1]); import build; print({call})"
    env = {"PATH": str(tmp_path / "no-tools"), "HOME": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-c", code, str(script_dir), str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip()


def test_the_prebuilt_copy_needs_no_compiler(tmp_path: Path) -> None:
    """The unit tier runs where no gcc, zig or llvm-lipo is: only the copy is read."""
    found = _without_tools(tmp_path, FIXTURES, "len(build.build_all(build.Path(sys.argv[2])))")
    assert found == str(len(fb.SCENARIOS))


@pytest.fixture(scope="module")
def from_source(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return fb.build_some(FROM_SOURCE, tmp_path_factory.mktemp("from-source"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", FROM_SOURCE)
def test_built_from_source_reads_as_the_committed_copy(
    from_source: dict[str, Path], built_fixtures: dict[str, Path], name: str
) -> None:
    sc = fb.SCENARIOS[name]
    _assert_facts(from_source[name], name)
    assert _read(from_source[name], sc.format) == _read(built_fixtures[name], sc.format)


# ------------------------------------------------------------------------------------------
# ELF details (pyelftools)


def _elf(path: Path) -> Any:
    return elffile.ELFFile(io.BytesIO(path.read_bytes()))


def _symbol(elf: Any, section: str, name: str) -> Any:
    sec = elf.get_section_by_name(section)
    assert isinstance(sec, SymbolTableSection), section
    found = sec.get_symbol_by_name(name)
    return found[0] if found else None


def test_elf_marker_is_weak_object_in_dynsym(built_fixtures: dict[str, Path]) -> None:
    elf = _elf(built_fixtures["elf_marker_2_10"])
    sym = _symbol(elf, ".dynsym", MARKER)
    assert sym is not None
    assert sym["st_info"]["bind"] == "STB_WEAK"
    assert sym["st_info"]["type"] == "STT_OBJECT"
    assert sym["st_size"] == 17
    assert sym["st_other"]["visibility"] == "STV_DEFAULT"
    data = built_fixtures["elf_marker_2_10"].read_bytes()
    assert bytes.fromhex("544f52434841424901020a000000000000") in data


def test_elf_marker_tag(built_fixtures: dict[str, Path]) -> None:
    data = built_fixtures["elf_marker_2_12_tag"].read_bytes()
    assert b"TORCHABI\x01\x02\x0c\x00\x00\x00\x00\x00\x07" in data


def test_elf_lto_marker_is_global(built_fixtures: dict[str, Path]) -> None:
    sym = _symbol(_elf(built_fixtures["elf_lto"]), ".dynsym", MARKER)
    assert sym is not None and sym["st_info"]["bind"] == "STB_GLOBAL"


def test_elf_weak_shims_are_weak_undefined(built_fixtures: dict[str, Path]) -> None:
    elf = _elf(built_fixtures["elf_weak_shim"])
    for name in (*fb.WEAK_SHIMS, "aoti_torch_get_sizes"):
        sym = _symbol(elf, ".dynsym", name)
        assert sym is not None and sym["st_shndx"] == "SHN_UNDEF", name
        assert sym["st_info"]["bind"] == ("STB_WEAK" if name in fb.WEAK_SHIMS else "STB_GLOBAL"), name


@pytest.mark.parametrize("name", ["elf_hidden_vscript", "elf_hidden_exclude_libs"])
def test_elf_hidden_marker_is_local_only(built_fixtures: dict[str, Path], name: str) -> None:
    elf = _elf(built_fixtures[name])
    assert _symbol(elf, ".dynsym", MARKER) is None
    local = _symbol(elf, ".symtab", MARKER)
    assert local is not None and local["st_info"]["bind"] == "STB_LOCAL"
    assert _symbol(elf, ".dynsym", f"PyInit_{name}") is not None
    assert MAGIC in built_fixtures[name].read_bytes()


def test_elf_stripped_has_no_symtab(built_fixtures: dict[str, Path]) -> None:
    elf = _elf(built_fixtures["elf_stripped"])
    assert elf.get_section_by_name(".symtab") is None
    assert _symbol(elf, ".dynsym", MARKER) is not None


def test_elf_nosections_needs_pt_dynamic(built_fixtures: dict[str, Path]) -> None:
    elf = _elf(built_fixtures["elf_nosections"])
    assert elf["e_shoff"] == 0 and elf["e_shnum"] == 0 and elf.num_sections() == 0
    dynamic = [seg for seg in elf.iter_segments() if isinstance(seg, DynamicSegment)]
    assert len(dynamic) == 1
    names = {s.name for s in dynamic[0].iter_symbols()}
    assert {MARKER, "PyInit_elf_marker_2_10", "torch_call_dispatcher"} <= names


def test_elf_mismatch_companion_names(built_fixtures: dict[str, Path]) -> None:
    elf = _elf(built_fixtures["elf_mismatch_tu"])
    dynsym = elf.get_section_by_name(".dynsym")
    names = {s.name for s in dynsym.iter_symbols()}
    for decimal in (146929937842962432, 147492887796383744):  # 2.10.0, 2.12.0
        assert f"_ZN21__torch_stable_abi_fvILy{decimal}EE3tagEv" in names


def test_elf_no_torch_is_plain(built_fixtures: dict[str, Path]) -> None:
    data = built_fixtures["elf_no_torch"].read_bytes()
    assert MAGIC not in data
    (seen,) = _read_elf(data)
    assert not [n for n, _ in seen.imports if _is_shim(n) or _is_cpp(n)]
    assert {"plain_add", "plain_name"} <= set(seen.exports)


def _abi3_functions() -> set[str]:
    import abi3info

    return {sym.name for sym in abi3info.FUNCTIONS}


def test_cpython_abi3_uses_only_the_limited_api(built_fixtures: dict[str, Path]) -> None:
    (seen,) = _read_elf(built_fixtures["elf_cpython_abi3"].read_bytes())
    python = {n for n, _ in seen.imports if n.startswith(("Py", "_Py"))}
    assert {"PyLong_FromLong", "PyModule_Create2"} <= python
    assert python <= _abi3_functions(), python - _abi3_functions()
    assert set(seen.exports) == {"PyInit_foo", MARKER}


def test_cpython_cp312_uses_the_full_api(built_fixtures: dict[str, Path]) -> None:
    (seen,) = _read_elf(built_fixtures["elf_cpython_cp312"].read_bytes())
    python = {n for n, _ in seen.imports if n.startswith(("Py", "_Py"))}
    non_limited = python - _abi3_functions()
    assert {"PyUnicode_New", "PyDict_SetDefault"} <= non_limited


@pytest.mark.parametrize("name", ["elf_cpython_abi3", "elf_cpython_cp312"])
def test_cpython_extension_imports(built_fixtures: dict[str, Path], name: str, tmp_path: Path) -> None:
    python = fb.find_python312()
    path = tmp_path / built_fixtures[name].name  # alone: foo.cpython-312-*.so beats foo.abi3.so
    shutil.copy2(built_fixtures[name], path)
    code = (
        "import ctypes, sys; sys.path.insert(0, sys.argv[1]); import foo; "
        "assert foo.__file__.endswith(sys.argv[2]), foo.__file__; "
        "assert foo.answer() == 42; "
        "rec = bytes((ctypes.c_ubyte * 17).in_dll(ctypes.CDLL(foo.__file__), sys.argv[3])); "
        "print(rec.hex())"
    )
    env = {**os.environ, **dict(python.env)}
    proc = subprocess.run(
        [*python.cmd, "-I", "-c", code, str(path.parent), path.name, MARKER],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "544f52434841424901020a000000000000"


# ------------------------------------------------------------------------------------------
# Mach-O details


def test_macho_universal_has_two_slices(built_fixtures: dict[str, Path]) -> None:
    data = built_fixtures["macho_universal_differ"].read_bytes()
    magic, nfat = struct.unpack_from(">II", data, 0)
    assert magic == 0xCAFEBABE and nfat == 2
    seen = _read_macho(data)
    assert [(s.arch, s.marker) for s in seen] == [("x86_64", fb.V2_10), ("arm64", fb.V2_12)]


def test_macho_symbol_names_carry_extra_underscore(built_fixtures: dict[str, Path]) -> None:
    fat = lief.MachO.parse(str(built_fixtures["macho_unstable_cpp"]))
    names = {s.name for s in fat.at(0).symbols}
    assert "__ZN3c104cuda9SetDeviceEi" in names
    assert "_PyInit_macho_unstable_cpp" in names


def test_macho_dynamic_lookup_imports_have_no_library(built_fixtures: dict[str, Path]) -> None:
    (seen,) = _read_macho(built_fixtures["macho_dynamic_lookup"].read_bytes())
    shims = {(n, lib) for n, lib in seen.imports if _is_shim(n)}
    assert shims == {(n, None) for n in fb.SHIMS_2_10}
    assert not any("torchfake" in lib for lib in seen.libraries)


def test_macho_imports_name_their_dylib(built_fixtures: dict[str, Path]) -> None:
    (seen,) = _read_macho(built_fixtures["macho_x86_64_marker_2_10"].read_bytes())
    shims = {lib for n, lib in seen.imports if _is_shim(n)}
    assert shims == {"@rpath/libtorchfake.dylib"}


def test_macho_weak_dylib_is_a_weak_load_command(built_fixtures: dict[str, Path]) -> None:
    fat = lief.MachO.parse(str(built_fixtures["macho_weak_dylib"]))
    weak = lief.MachO.LoadCommand.TYPE.LOAD_WEAK_DYLIB
    assert [c.name for c in fat.at(0).commands if c.command == weak] == ["@rpath/libtorchfake.dylib"]


def test_macho_weak_import_binds(built_fixtures: dict[str, Path]) -> None:
    """zig's linker marks the binds weak_import, as ld64 does (what dyld reads), not only n_desc.

    (``--weak-bind`` lists weak *definitions* to coalesce; weak imports are in the bind table.)
    """
    tools = {}
    for tool in ("objdump", "nm"):
        tools[tool] = next(filter(None, map(shutil.which, (f"llvm-{tool}-14", f"llvm-{tool}"))), None)
        assert tools[tool] is not None, f"apt-get install llvm-14 (llvm-{tool})"
    path = str(built_fixtures["macho_weak_shim"])

    def run(*cmd: str) -> list[str]:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()

    binds = run(tools["objdump"], "--macho", "--bind", path)
    weak = {line.split()[-2] for line in binds if line.endswith("(weak_import)")}
    assert weak == {f"_{n}" for n in fb.WEAK_SHIMS}
    nlist = run(tools["nm"], "-m", path)  # "(undefined) [weak ]external _name (from libtorchfake)"
    undefined = {line.split()[-3]: "weak external" in line for line in nlist if "(undefined)" in line}
    assert {n for n, is_weak in undefined.items() if is_weak} == weak
    assert undefined["_aoti_torch_get_sizes"] is False


# ------------------------------------------------------------------------------------------
# PE details


def test_pe_exports_include_the_marker(built_fixtures: dict[str, Path]) -> None:
    for name in ("pe_mingw_marker_2_10", "pe_mingw_def_export", "pe_msvc_marker_2_11"):
        (seen,) = _read_pe(built_fixtures[name].read_bytes())
        assert MARKER in seen.exports, name
        assert {lib for n, lib in seen.imports if _is_shim(n)} == {"torchfake.dll"}, name


def test_pe_def_file_exports_only_hook_and_marker(built_fixtures: dict[str, Path]) -> None:
    (seen,) = _read_pe(built_fixtures["pe_mingw_def_export"].read_bytes())
    assert set(seen.exports) == {"PyInit_pe_mingw_def_export", MARKER}


def test_pe_msvc_imports_carry_msvc_names(built_fixtures: dict[str, Path]) -> None:
    (seen,) = _read_pe(built_fixtures["pe_msvc_unstable_cpp"].read_bytes())
    assert ("?torchInternalAssertFail@detail@c10@@YAXPEBD0I0@Z", "c10fake.dll") in seen.imports
    assert all(lib == "c10fake.dll" for _, lib in seen.imports)
    assert not any(n.startswith("_Z") for n, _ in seen.imports)


def test_pe_mingw_imports_carry_itanium_names(built_fixtures: dict[str, Path]) -> None:
    (seen,) = _read_pe(built_fixtures["pe_mingw_unstable_cpp"].read_bytes())
    cpp = {(n, lib) for n, lib in seen.imports if _is_cpp(n)}
    assert cpp == {(n, "c10fake.dll") for n in (*fb.ITANIUM_UNSTABLE, *fb.ITANIUM_STABLE)}


def test_pe_msvc_companion_is_the_only_mismatch_evidence(built_fixtures: dict[str, Path]) -> None:
    data = built_fixtures["pe_msvc_mismatch_companion"].read_bytes()
    assert data.count(MAGIC) == 1
    (seen,) = _read_pe(data)
    tags = sorted(e for e in seen.exports if e.startswith("?tag@"))
    assert tags == [
        "?tag@?$__torch_stable_abi_fv@$0CAKAAAAAAAAAAAA@@@2EB",  # 2.10.0
        "?tag@?$__torch_stable_abi_fv@$0CAMAAAAAAAAAAAA@@@2EB",  # 2.12.0
    ]


# ------------------------------------------------------------------------------------------
# Bad input


def test_bad_inputs_are_what_they_claim(built_fixtures: dict[str, Path]) -> None:
    assert set(BAD_SCENARIOS) == {
        "bad_not_binary",
        "bad_truncated_elf",
        "bad_garbage_elf",
        "bad_fat_offsets",
        "bad_lying_sections",
        "bad_truncated_pe",
    }
    text = built_fixtures["bad_not_binary"].read_bytes()
    assert text[:4] not in (b"\x7fELF", b"\xca\xfe\xba\xbe", b"\xcf\xfa\xed\xfe")
    assert text[:2] != b"MZ"

    truncated = built_fixtures["bad_truncated_elf"].read_bytes()
    assert len(truncated) == 100 and truncated[:4] == b"\x7fELF"

    garbage = built_fixtures["bad_garbage_elf"].read_bytes()
    assert garbage[:4] == b"\x7fELF" and len(garbage) == 4096

    fat = built_fixtures["bad_fat_offsets"].read_bytes()
    magic, nfat = struct.unpack_from(">II", fat, 0)
    offset, size = struct.unpack_from(">II", fat, 16)
    assert magic == 0xCAFEBABE and nfat == 1 and offset > len(fat) and size > 0

    lying = built_fixtures["bad_lying_sections"].read_bytes()
    shoff = struct.unpack_from("<Q", lying, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", lying, 0x3A)
    sizes = {}
    for i in range(shnum):
        base = shoff + i * shentsize
        sh_type = struct.unpack_from("<I", lying, base + 4)[0]
        sh_offset, sh_size = struct.unpack_from("<QQ", lying, base + 0x18)
        sizes[sh_type] = sh_offset + sh_size
    assert sizes[11] > len(lying)  # SHT_DYNSYM runs past EOF

    pe = built_fixtures["bad_truncated_pe"].read_bytes()
    assert pe[:2] == b"MZ" and len(pe) < 0x40  # e_lfanew (at 0x3C) is missing


# ------------------------------------------------------------------------------------------
# (d) the machine fixtures (fixtures/machine): committed, and what gcc makes here


def _machine() -> Any:
    return load_script("torchwheel_machine_build", FIXTURES / "machine" / "build.py")


def test_the_committed_machine_build_is_of_these_sources() -> None:
    assert _machine()._committed() is not None, (
        "fixtures/machine changed since its build was committed: run "
        "`.venv/bin/python fixtures/machine/build.py --write-prebuilt` and commit fixtures/machine/prebuilt"
    )


def test_the_machine_fixtures_need_no_compiler(tmp_path: Path) -> None:
    found = _without_tools(
        tmp_path, FIXTURES / "machine", "build.build_machine(build.Path(sys.argv[2])).root.name"
    )
    assert found == _machine()._committed().name


def test_gcc_here_makes_the_committed_machine_build(tmp_path: Path) -> None:
    """The same files, links and loader facts (DT_NEEDED, SONAME, RPATH/RUNPATH, versions)."""
    from torchwheel.binary.elfdynamic import dynamic_facts

    built = _machine().build_machine(tmp_path, force=True).root
    committed = _machine()._committed()

    def tree(root: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for p in sorted(root.rglob("*")):
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_file() and p.suffix != ".c":
                out[rel] = dynamic_facts(p) if p.name.startswith("lib") else p.read_bytes()
        return out

    assert tree(built) == tree(committed)


# ------------------------------------------------------------------------------------------
# (e) the libraries tests/analysis/test_export_dating.py dates (fixtures/dating): committed


def test_the_dating_libraries_are_what_the_toolchains_make_here(tmp_path: Path) -> None:
    """gcc and zig build them again here (against this venv's torch): torchwheel reads the
    same imports, exports and needed libraries in each as in the committed ones (which
    ``committed()`` holds to today's build script)."""
    import importlib.util

    from torchwheel.binary.tables import read_tables

    dating = load_script("torchwheel_dating_build", FIXTURES / "dating" / "build.py")
    spec = importlib.util.find_spec("torch")  # its libc10.so, which the ELF ones link
    assert spec is not None and spec.origin is not None
    torch_lib = Path(spec.origin).parent / "lib"
    built = dating.build(tmp_path, torch_lib)
    for name, committed in dating.committed().items():
        here, there = read_tables(built[name], name), read_tables(committed, name)
        assert [(s.imports, s.exports, s.needed) for s in here.slices] == [
            (s.imports, s.exports, s.needed) for s in there.slices
        ], name
