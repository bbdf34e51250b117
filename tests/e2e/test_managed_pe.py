""".NET assemblies: the PE reader's CLR runtime header, and TW405 judging managed code by the
processes that can load it, not by the PE machine field.

The assemblies are written by ``fixtures/managed_pe.py`` (no .NET toolchain here; zig's
lld-link writes no CLR header) and checked against LIEF, and the real one is the AnyCPU
assembly of aikernel-cuda13-libtorch2-12-win-x64 0.1.2, fetched once by ``pip download`` and
pinned by sha256 (77,785 bytes; a failed download fails the test, it is never skipped).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import lief
import pytest

from torchwheel.analysis.load import load_facts
from torchwheel.binary import BinaryError, memberscan, read_binary
from torchwheel.rules import REGISTRY
from torchwheel.rules.registry import Policy
from torchwheel.tables.symtable import load_shipped
from torchwheel.tables.tableset import shipped_tables

from ..binary.test_memberscan import chunked
from ..lib.helpers import FIXTURES, REPO, fixture_wheels_module, load_script, torchwheel

m = load_script("torchwheel_managed_pe", FIXTURES / "managed_pe.py")

AIKERNEL = "aikernel_cuda13_libtorch2_12_win_x64-0.1.2-py3-none-win_amd64.whl"
AIKERNEL_SHA256 = "f6cdf779373b7a751a3e6adbb36c12025cbadd8fd2eba1dfded92d62005178ad"
ASSEMBLY = "aikernel_cuda13_libtorch2_12_win_x64/managed/AIKernel.Cuda13.0.Libtorch2.12.win-x64.dll"

# kind -> (generator arguments, arch, runs_in, what show prints)
KINDS: dict[str, tuple[dict[str, Any], str, str, str]] = {
    "anycpu": ({}, "x86", "any", "managed (.NET, AnyCPU)"),
    "x86_only": ({"flags": m.ILONLY | m.BIT32_REQUIRED}, "x86", "32-bit", "managed (.NET, 32-bit only)"),
    "anycpu_32bit_preferred": (
        {"flags": m.ILONLY | m.BIT32_REQUIRED | m.BIT32_PREFERRED},
        "x86",
        "32-bit",
        "managed (.NET, 32-bit only)",
    ),
    "x64_only": ({"pe32plus": True, "machine": m.AMD64}, "x86_64", "x86_64", "managed (.NET, x86_64 only)"),
    "mixed_mode_x86": ({"flags": 0}, "x86", "x86", "x86 (mixed-mode .NET)"),
    "mixed_mode_x64": (
        {"flags": m.NATIVE_ENTRYPOINT, "pe32plus": True, "machine": m.AMD64},
        "x86_64",
        "x86_64",
        "x86_64 (mixed-mode .NET)",
    ),
}


@pytest.fixture(scope="module")
def aikernel() -> Path:
    corpus = load_script("torchwheel_corpus", REPO / "benchmarks" / "corpus.py")
    path = REPO / ".cache" / "corpus" / AIKERNEL
    if not path.is_file() or corpus.file_sha256(path) != AIKERNEL_SHA256:
        try:
            corpus.download_pinned(
                "aikernel-cuda13-libtorch2-12-win-x64",
                "0.1.2",
                AIKERNEL,
                AIKERNEL_SHA256,
                ["win_amd64"],
                "3.11",
                path,
            )
        except corpus.CorpusError as exc:
            pytest.fail(str(exc))
    return path


@pytest.fixture(scope="module")
def assembly(aikernel: Path) -> bytes:
    with zipfile.ZipFile(aikernel) as zf:
        return zf.read(ASSEMBLY)


def _lief_clr(data: bytes) -> tuple[int, int, int, int]:
    """LIEF's machine, directory 14 (RVA, size) and the COR20 flags in its content."""
    binary = lief.PE.parse(list(data))
    assert binary is not None
    clr = binary.data_directories[14]
    assert clr.type == lief.PE.DataDirectory.TYPES.CLR_RUNTIME_HEADER
    flags = int.from_bytes(bytes(clr.content)[16:20], "little")
    return int(binary.header.machine.value), clr.rva, clr.size, flags


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_generated_assemblies_read_as_lief_reads_them(kind: str) -> None:
    args, arch, runs_in, label = KINDS[kind]
    data = m.managed_dll(**args)
    (s,) = read_binary(data, f"{kind}.dll").slices
    assert s.clr is not None
    assert (s.arch, s.runs_in, s.arch_label) == (arch, runs_in, label)
    assert s.managed == bool(args.get("flags", m.ILONLY) & m.ILONLY)
    assert s.needed == ("mscoree.dll",) and [i.name for i in s.imports] == ["_CorDllMain"]
    machine, rva, size, flags = _lief_clr(data)
    assert (machine, size, flags) == (args.get("machine", m.I386), 72, s.clr.flags)
    assert rva == (0x2010 if args.get("pe32plus") else 0x2008)  # after the IAT, as csc places it


def test_the_real_assembly_is_anycpu_and_lief_agrees(assembly: bytes) -> None:
    (s,) = read_binary(assembly, ASSEMBLY).slices
    assert s.clr is not None and s.clr.flags == m.ILONLY and not s.clr.pe32plus
    assert (s.arch, s.runs_in, s.arch_label) == ("x86", "any", "managed (.NET, AnyCPU)")
    assert _lief_clr(assembly) == (m.I386, 0x2008, 72, m.ILONLY)


@pytest.mark.parametrize("chunk", [7, 512, 1 << 16])
def test_the_stream_reads_the_clr_header_as_the_whole_file_does(assembly: bytes, chunk: int) -> None:
    """The streaming path keeps only ranges: the CLR header and the metadata signature it
    points at must be among them."""
    for name, data in (("real.dll", assembly), ("x86_only.dll", m.managed_dll(m.ILONLY | m.BIT32_REQUIRED))):
        _, got = memberscan.scan(name, len(data), chunked(data, chunk), big=0, head=64, tail=0)
        assert not isinstance(got, BinaryError), got
        assert got == read_binary(data, name)


HOSTILE = {
    "directory_short": ({"clr_size": 40}, "CLR runtime header is 40 bytes, fewer than the 72"),
    "cb_short": ({"cb": 8}, "CLR runtime header says it is 8 bytes"),
    "no_metadata": ({"metadata_rva": 0}, "CLR runtime header points at no metadata"),
    "metadata_outside": ({"metadata_rva": 0x7FFFFFF0}, "CLR metadata (RVA 0x7ffffff0) lies in no section"),
    "metadata_signature": ({"signature": b"JUNK"}, "lacks the BSJB signature"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_broken_clr_header_is_a_clear_error(case: str, tmp_path: Path) -> None:
    args, message = HOSTILE[case]
    data = m.managed_dll(**args)
    with pytest.raises(BinaryError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_binary(data, "x.dll")
    path = tmp_path / "x.dll"
    path.write_bytes(data)
    result = torchwheel("inspect", str(path))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and message.split(" (")[0] in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_clr_header_past_the_end_of_the_file_is_a_clear_error() -> None:
    data = bytearray(m.managed_dll())
    data = data[: 0x200 + 0x10]  # the section table still maps RVA 0x2008, its bytes are gone
    with pytest.raises(BinaryError, match="lies outside the file"):
        read_binary(bytes(data), "x.dll")


def _tw405(kind: str, platform: str, tmp: Path) -> list[str]:
    """TW405's messages for a wheel tagged ``platform`` whose one compiled file is ``kind``."""
    wheels = fixture_wheels_module()
    dll = tmp / f"{kind}.dll"
    dll.write_bytes(m.managed_dll(**KINDS[kind][0]))
    spec = wheels.WheelSpec(
        kind, "netprobe", f"py3-none-{platform}", ((f"netprobe/{kind}.dll", kind),), requires=()
    )
    path = wheels.write_wheel(tmp / platform / spec.filename, spec, {kind: dll})
    (facts,) = load_facts((path,), (), shipped_tables())
    return [f.message for f in REGISTRY["TW405"].run(facts, Policy(), str(path))[0]]


@pytest.mark.parametrize(
    ("kind", "platform", "wrong"),
    [
        ("anycpu", "win_amd64", None),  # the aikernel layout: AnyCPU in a 64-bit wheel
        ("anycpu", "win32", None),
        ("anycpu", "win_arm64", None),
        ("anycpu", "any", None),  # pythonnet-style pure wheels ship assemblies
        ("anycpu", "manylinux_2_28_x86_64", None),  # a CLR on Linux loads the same file
        ("x86_only", "win32", None),
        ("x86_only", "win_amd64", "runs only in a 32-bit process (CLR flag 32BITREQUIRED), not x86_64"),
        ("anycpu_32bit_preferred", "win_amd64", "runs only in a 32-bit process"),
        ("x86_only", "manylinux_2_28_i686", None),
        ("x86_only", "any", "tagged for any platform but ships compiled files"),
        ("x64_only", "win_amd64", None),
        ("x64_only", "manylinux_2_28_x86_64", None),
        ("x64_only", "win_arm64", "runs only in a x86_64 process, not arm64"),
        ("mixed_mode_x86", "win_amd64", "has x86 but the wheel is tagged win_amd64"),  # native code
        ("mixed_mode_x64", "win_amd64", None),
        ("mixed_mode_x64", "manylinux_2_28_x86_64", "is PE but the wheel is tagged"),
    ],
)
def test_tw405_judges_managed_code_by_the_process_that_loads_it(
    kind: str, platform: str, wrong: str | None, tmp_path: Path
) -> None:
    messages = _tw405(kind, platform, tmp_path)
    if wrong is None:
        assert messages == []
    else:
        assert len(messages) == 1 and wrong in messages[0], messages


def test_show_names_a_managed_assembly(tmp_path: Path) -> None:
    wheels = fixture_wheels_module()
    dll = tmp_path / "anycpu.dll"
    dll.write_bytes(m.managed_dll())
    spec = wheels.WheelSpec(
        "n", "netprobe", "py3-none-win_amd64", (("netprobe/Probe.dll", "anycpu"),), requires=()
    )
    path = wheels.write_wheel(tmp_path / spec.filename, spec, {"anycpu": dll})
    shown = torchwheel("show", str(path))
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if "netprobe/Probe.dll" in line)
    assert "pe/managed (.NET, AnyCPU)" in row and "managed-assembly" in row
    doc = json.loads(torchwheel("show", "--json", str(path)).stdout)
    (f,) = doc["wheels"][0]["files"]
    assert f["kind"] == "managed-assembly"
    assert f["slices"][0]["arch"] == "x86"  # the machine field, as it is
    assert f["slices"][0]["clr"] == {"flags": 1, "il_only": True, "runs_in": "any"}
    inspected = torchwheel("inspect", str(dll))
    assert inspected.returncode == 0 and "[managed (.NET, AnyCPU)]" in inspected.stdout, inspected.stderr


def test_the_real_wheel_has_no_false_tw405(aikernel: Path) -> None:
    checked = torchwheel("check", "--no-config", "--format", "json", str(aikernel))
    assert checked.returncode == 1, checked.stderr  # TW504: unpinned unstable build, a true error
    codes = {(f["code"], f["member"]) for f in json.loads(checked.stdout)["findings"]}
    assert not any(code == "TW405" for code, _ in codes), codes
    assert ("TW504", None) in codes
    shown = torchwheel("show", str(aikernel))
    row = next(line for line in shown.stdout.splitlines() if ASSEMBLY in line)
    assert "pe/managed (.NET, AnyCPU)" in row and "managed-assembly" in row


@pytest.mark.parametrize(
    ("kind", "loads"), [("anycpu", True), ("x86_only", False), ("mixed_mode_x86", False)]
)
def test_compat_loads_an_anycpu_assembly_beside_a_64_bit_torch(kind: str, loads: bool) -> None:
    """``compat --against`` a win_amd64 torch: an AnyCPU assembly runs in torch's process; one
    that needs a 32-bit process, or holds x86 code, cannot."""
    from torchwheel.analysis.torchcompat import compare_slice
    from torchwheel.torchabi.torchlibs import TorchLibraries

    torch = TorchLibraries("test", "2.12.0", {"c10.dll": frozenset()}, frozenset({("pe", "x86_64")}))
    (s,) = read_binary(m.managed_dll(**KINDS[kind][0]), f"{kind}.dll").slices
    assert compare_slice(f"{kind}.dll", "pe", s, torch, load_shipped()).loads is loads
