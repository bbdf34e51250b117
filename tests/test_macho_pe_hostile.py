"""Hostile Mach-O and PE: every claim a header makes is checked against the bytes present.

Each case is a compiled fixture with one field made to lie (huge ``ncmds``, overlapping or
outlying fat slices, a bogus ``e_lfanew``, export-directory RVAs outside every section, a
huge ``NumberOfNames``) or a fat64 wrapper. Each ends in ``BinaryError`` (TW406 inside a
wheel) or a named limit (exit 2), quickly, and never in a traceback. The memory cases run
``torchwheel check`` as a child and hold its peak RSS to the 300 MB budget: a 1 MB wheel
carrying 1 GB of zeros behind Mach-O and PE magic (finding 3 of issue 11: 4.2 GB before),
a PE whose export directory claims 400 MB, and torch's own 322 MB libtorch_cpu.dylib.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from torchwheel import limits
from torchwheel.binary import BinaryError, read_binary
from torchwheel.binary.macho import _trie
from torchwheel.limits import LimitExceeded

from .lib.helpers import measured_run

BUDGET_MB = limits.MEMORY_BUDGET_MB


def _u32(data: bytes | bytearray, at: int) -> int:
    return int(struct.unpack_from("<I", data, at)[0])


def _patch(data: bytes, at: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, *values)
    return bytes(out)


def _fat(slices: list[bytes], is64: bool = False, place: list[int] | None = None) -> bytes:
    """A universal file around thin images (``place``: lying offsets for the table)."""
    step = 32 if is64 else 20
    at = 0x4000
    offsets: list[int] = []
    body = bytearray(at)
    for image in slices:
        offsets.append(len(body))
        body += image + b"\0" * (-len(image) % 0x4000)
    header = struct.pack(">II", 0xCAFEBABF if is64 else 0xCAFEBABE, len(slices))
    for i, image in enumerate(slices):
        cpu, sub = struct.unpack_from("<iI", image, 4)
        off = offsets[i] if place is None else place[i]
        if is64:
            header += struct.pack(">iIQQII", cpu, sub, off, len(image), 14, 0)
        else:
            header += struct.pack(">iIIII", cpu, sub, off, len(image), 14)
    assert len(header) <= at and len(header) == 8 + step * len(slices)
    body[: len(header)] = header
    return bytes(body)


def _pe_dirs(data: bytes) -> int:
    """File offset of the data directories of a PE32+ or PE32 image."""
    pe_at = _u32(data, 0x3C)
    opt_at = pe_at + 24
    (magic,) = struct.unpack_from("<H", data, opt_at)
    return opt_at + (112 if magic == 0x20B else 96)


def _rva_to_offset(data: bytes, rva: int) -> int:
    pe_at = _u32(data, 0x3C)
    nsections, opt_size = (
        struct.unpack_from("<H", data, pe_at + 6)[0],
        struct.unpack_from("<H", data, pe_at + 20)[0],
    )
    table = pe_at + 24 + opt_size
    for i in range(nsections):
        vsize, va, raw_size, raw_at = struct.unpack_from("<IIII", data, table + 40 * i + 8)
        if va <= rva < va + max(vsize, raw_size):
            return int(raw_at + rva - va)
    raise AssertionError("fixture RVA not in a section")


def _export_dir(data: bytes) -> int:
    return _rva_to_offset(data, _u32(data, _pe_dirs(data)))


def _load_commands(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, cmd, cmdsize) of a 64-bit thin image's load commands."""
    ncmds = _u32(data, 16)
    out, at = [], 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        out.append((at, cmd, size))
        at += size
    return out


def _symtab(data: bytes) -> int:
    return next(at for at, cmd, _ in _load_commands(data) if cmd == 0x2)


Case = Callable[[dict[str, bytes]], bytes]
MACHO, PE = "macho_x86_64_marker_2_10", "pe_mingw_marker_2_10"
CASES: dict[str, tuple[Case, str]] = {
    "macho_huge_ncmds": (lambda f: _patch(f[MACHO], 16, "<I", 0xFFFFFFFF), "do not fit the file"),
    "macho_ncmds_over_sizeofcmds": (lambda f: _patch(f[MACHO], 16, "<I", 10_000), "do not fit the file"),
    "macho_zero_cmdsize": (lambda f: _patch(f[MACHO], 36, "<I", 0), "bad size"),
    "macho_huge_nsyms": (lambda f: _patch(f[MACHO], _symtab(f[MACHO]) + 12, "<I", 0x7FFFFFFF), "max-symbols"),
    "macho_nsyms_past_eof": (lambda f: _patch(f[MACHO], _symtab(f[MACHO]) + 12, "<I", 700_000), "outside"),
    "macho_strtab_past_eof": (lambda f: _patch(f[MACHO], _symtab(f[MACHO]) + 20, "<I", 0x7FFFFFFF), "outside"),
    "fat_overlapping_slices": (lambda f: _fat([f[MACHO], f[MACHO]], place=[0x4000, 0x4000]), "overlap"),
    "fat_slice_in_header": (lambda f: _fat([f[MACHO]], place=[0]), "outside the file"),
    "fat64_slice_past_eof": (lambda f: _fat([f[MACHO]], is64=True, place=[1 << 40]), "outside the file"),
    "fat_java_like_count": (lambda f: _patch(_fat([f[MACHO]]), 4, ">I", 50), "slices"),
    "fat_not_macho_inside": (lambda f: _fat([b"\xcf\xfa\xed\xfe" + b"\0" * 60]).replace(b"\xcf", b"\0", 1), "not a Mach-O"),
    "pe_bogus_e_lfanew": (lambda f: _patch(f[PE], 0x3C, "<I", 0xFFFFFF00), "no PE signature"),
    "pe_export_rva_outside": (lambda f: _patch(f[PE], _pe_dirs(f[PE]), "<I", 0x7FFF0000), "in no section"),
    "pe_huge_number_of_names": (lambda f: _patch(f[PE], _export_dir(f[PE]) + 24, "<I", 0xFFFFFFFF), "max-symbols"),
    "pe_names_past_eof": (lambda f: _patch(f[PE], _export_dir(f[PE]) + 24, "<I", 700_000), "outside the file"),
    "pe_name_table_rva_outside": (lambda f: _patch(f[PE], _export_dir(f[PE]) + 32, "<I", 0x7FFF0000), "in no section"),
    "pe_import_dir_outside": (lambda f: _patch(f[PE], _pe_dirs(f[PE]) + 8, "<I", 0x7FFF0000), "in no section"),
    "pe_truncated_section_table": (lambda f: f[PE][: _u32(f[PE], 0x3C) + 24 + 0xF0 + 8], "outside the file"),
}  # fmt: skip


@pytest.fixture(scope="module")
def bases(built_fixtures: dict[str, Path]) -> dict[str, bytes]:
    return {name: built_fixtures[name].read_bytes() for name in (MACHO, PE, "macho_arm64_marker_2_12")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_quickly(case: str, bases: dict[str, bytes]) -> None:
    make, message = CASES[case]
    data = make(bases)
    start = time.monotonic()
    with pytest.raises((BinaryError, LimitExceeded), match=message):
        read_binary(data, case)
    assert time.monotonic() - start < 2


@pytest.mark.parametrize("case", ["macho_huge_ncmds", "fat_overlapping_slices", "pe_huge_number_of_names"])
def test_refused_by_the_cli(case: str, bases: dict[str, bytes], tmp_path: Path) -> None:
    """One line on stderr and exit 2 (no traceback) when the binary itself is the input."""
    path = tmp_path / f"{case}.so"
    path.write_bytes(CASES[case][0](bases))
    run = measured_run([sys.executable, "-m", "torchwheel", "inspect", str(path)], timeout=60)
    assert run.code == 2, run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_fat64_reads_like_fat(bases: dict[str, bytes]) -> None:
    thin = [bases[MACHO], bases["macho_arm64_marker_2_12"]]
    fat32, fat64 = read_binary(_fat(thin), "fat"), read_binary(_fat(thin, is64=True), "fat64")
    assert [s.arch for s in fat64.slices] == ["x86_64", "arm64"]
    for a, b in zip(fat32.slices, fat64.slices, strict=True):
        assert (a.exports, a.imports, a.needed, a.marker) == (b.exports, b.imports, b.needed, b.marker)


def test_export_trie_cycle_and_depth() -> None:
    with pytest.raises(BinaryError, match="reached twice"):
        _trie(b"\x00\x01a\x00\x00")  # the root's only child is the root
    chain = bytearray()
    for i in range(40_000):  # each node: not terminal, one child "a" at the next node
        chain += b"\x00\x01a\x00" + bytes(
            [((i + 1) * 7) & 0x7F | 0x80, ((i + 1) * 7) >> 7 & 0x7F | 0x80, ((i + 1) * 7) >> 14]
        )
    with pytest.raises(BinaryError, match="longer than 32 KiB"):
        _trie(bytes(chain) + b"\x00\x00")


# -- memory: the budget holds for members far larger than it -----------------------------


def _wheel(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    """A wheel whose members are ``head`` followed by zeros up to ``size`` (deflated: ~1 MB
    per GB), with a RECORD that matches."""
    meta = b"Metadata-Version: 2.1\nName: zeros\nVersion: 1.0\n"
    wheel = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: cp311-cp311-win_amd64\n"
    rows: list[str] = []

    def row(name: str, digest: bytes, size: int) -> None:
        rows.append(f"{name},sha256={base64.urlsafe_b64encode(digest).rstrip(b'=').decode()},{size}")

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, data in (("zeros-1.0.dist-info/METADATA", meta), ("zeros-1.0.dist-info/WHEEL", wheel)):
            zf.writestr(name, data)
            row(name, hashlib.sha256(data).digest(), len(data))
        block = b"\0" * (1 << 20)
        for name, (head, size) in members.items():
            digest = hashlib.sha256(head)
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as out:
                out.write(head)
                left = size - len(head)
                while left > 0:
                    piece = block[: min(left, len(block))]
                    out.write(piece)
                    digest.update(piece)
                    left -= len(piece)
            row(name, digest.digest(), size)
        zf.writestr("zeros-1.0.dist-info/RECORD", "\n".join([*rows, "zeros-1.0.dist-info/RECORD,,"]) + "\n")
    return path


def _check(wheel: Path) -> tuple[int, str, float]:
    run = measured_run([sys.executable, "-m", "torchwheel", "check", str(wheel)], timeout=300)
    assert not run.timed_out and "Traceback" not in run.stderr, run.stderr
    return run.code, run.stdout + run.stderr, run.peak_mb


def test_gigabyte_of_zeros_behind_macho_and_pe_magic(tmp_path: Path) -> None:
    wheel = _wheel(
        tmp_path / "zeros-1.0-cp311-cp311-win_amd64.whl",
        {"zeros/a.pyd": (b"MZ", 1 << 30), "zeros/b.so": (b"\xcf\xfa\xed\xfe", 1 << 30)},
    )
    assert wheel.stat().st_size < 4 << 20
    code, out, peak = _check(wheel)
    assert code == 1 and "zeros/a.pyd" in out and "TW406" in out, out
    assert peak < BUDGET_MB, f"peak RSS {peak:.0f} MB"


def test_pe_export_directory_claiming_400_mb(tmp_path: Path) -> None:
    """Consistent with the member (512 MB of zeros) but past max-binary-tables: exit 2 names it."""
    head = bytearray(0x400)
    head[:2] = b"MZ"
    struct.pack_into("<I", head, 0x3C, 0x80)
    head[0x80:0x84] = b"PE\0\0"
    struct.pack_into("<HHIIIHH", head, 0x84, 0x8664, 1, 0, 0, 0, 0xF0, 0x2022)
    struct.pack_into("<H", head, 0x98, 0x20B)  # PE32+
    struct.pack_into("<I", head, 0x98 + 60, 0x400)  # SizeOfHeaders
    struct.pack_into("<I", head, 0x98 + 108, 16)  # NumberOfRvaAndSizes
    struct.pack_into("<II", head, 0x98 + 112, 0x1000, 400 << 20)  # export directory: 400 MB
    struct.pack_into("<8sIIII", head, 0x98 + 0xF0, b".rdata", 512 << 20, 0x1000, (512 << 20) - 0x400, 0x400)
    wheel = _wheel(
        tmp_path / "zeros-1.0-cp311-cp311-win_amd64.whl", {"zeros/a.pyd": (bytes(head), 512 << 20)}
    )
    code, out, peak = _check(wheel)
    assert code == 2 and "max-binary-tables" in out, out
    assert peak < BUDGET_MB, f"peak RSS {peak:.0f} MB"


def test_real_322_mb_dylib_within_budget(torch_platform_wheels: dict[str, Path]) -> None:
    code, out, peak = _check(torch_platform_wheels["macos"])
    assert code == 0, out
    assert peak < BUDGET_MB, f"peak RSS {peak:.0f} MB"


@pytest.mark.parametrize("name", [MACHO, PE])
def test_table_limit_holds_for_whole_files(
    name: str, bases: dict[str, bytes], set_limits: Callable[..., None]
) -> None:
    """A mapped file (``inspect`` on a binary) is held to max-binary-tables like a stream."""
    set_limits(MAX_BINARY_TABLES="64")
    with pytest.raises(LimitExceeded, match="TORCHWHEEL_MAX_BINARY_TABLES"):
        read_binary(bases[name], name)
