"""binary/fatbin.py: the CUDA fatbin cursor (find a container, walk entry header to entry
header, tally each cubin and PTX image by its raw header fields), driven directly through
``Scan`` and ``Cursor.feed`` rather than through a whole binary reader.

These tests exist so that the cursor is held to the layout ``gpucode``'s docstring describes,
on two kinds of input: the libraries nvcc really built (``fixtures/cuda/bin``), whose images
``fixtures/cuda/README.md`` and ``tests/test_gpucode.py`` (against cuobjdump) establish, with
the ``.nv_fatbin`` section located by pyelftools and the ``.nv_fatb`` section by pefile; and
containers assembled here byte by byte, so every field and every lie is chosen by hand.
"""

from __future__ import annotations

import io
import struct
from collections import Counter
from collections.abc import Callable

import pefile
import pytest
from elftools.elf.elffile import ELFFile

from torchwheel.binary.fatbin import FATBIN_MAGIC, CudaCursor
from torchwheel.binary.gpuscan import Scan

from ..lib.helpers import REPO

BIN = REPO / "fixtures" / "cuda" / "bin"
PTX, CUBIN, GROUP = 1, 2, 0x100
COMPRESSED, ARCH_SPECIFIC, FAMILY = 0x2000, 0x100000, 0x200000


def scan(data: bytes, zones: list[tuple[int, int]], chunk: int | None = None) -> Scan:
    """Feed ``data`` to a fresh cursor, whole or in chunks of ``chunk`` bytes."""
    s = Scan()
    cursor = CudaCursor(s, zones, len(data))
    step = chunk or len(data)
    for pos in range(0, len(data), step):
        cursor.feed(pos, data[pos : pos + step])
    return s


def images(s: Scan) -> Counter[tuple[int, int, int]]:
    """(kind, arch, arch-specific/family flags) -> entries, over every run."""
    out: Counter[tuple[int, int, int]] = Counter()
    for run in s.runs:
        for (kind, arch, flags, _, _, _), n in run.raw.items():
            out[(kind, arch, flags & (ARCH_SPECIFIC | FAMILY))] += n
    return out


def nv_fatbin(name: str) -> tuple[bytes, int, int]:
    """The library's bytes and its .nv_fatbin section's file range, by pyelftools."""
    data = (BIN / name).read_bytes()
    section = ELFFile(io.BytesIO(data)).get_section_by_name(".nv_fatbin")
    assert section is not None
    return data, int(section["sh_offset"]), int(section["sh_offset"]) + int(section["sh_size"])


# -- hand-built containers: the layout of gpucode's docstring -----------------------------------


def entry(
    kind: int, arch: int, payload: bytes = b"", *, major: int = 0, minor: int = 0, flags: int = 0,
    compressed_size: int = 0, header_size: int = 64,
) -> bytes:  # fmt: skip
    """A 64-byte entry header (u16 kind, u16, u32 header size, u64 payload size, u32 compressed
    size, u32 extension offset, u16 minor, u16 major, u32 arch, u32 name offset, u32 name size,
    u64 flags, then 16 bytes) and its payload."""
    head = struct.pack(
        "<HHIQIIHHIIIQ",
        kind,
        0,
        header_size,
        len(payload),
        compressed_size,
        0,
        minor,
        major,
        arch,
        0,
        0,
        flags,
    )
    return head + bytes(64 - len(head)) + payload


def container(*entries: bytes, size: int | None = None) -> bytes:
    body = b"".join(entries)
    return FATBIN_MAGIC + struct.pack("<Q", len(body) if size is None else size) + body


def test_the_container_magic_is_nvccs() -> None:
    """0xBA55ED50 little-endian, version 1, header size 16."""
    assert FATBIN_MAGIC == b"\x50\xed\x55\xba\x01\x00\x10\x00"


def test_one_container_each_image_tallied_by_its_header() -> None:
    fat = container(
        entry(CUBIN, 86, b"\x7fELF" + bytes(60), major=1, minor=8),
        entry(PTX, 90, b".version 9.0\n\0\0\0", major=9, minor=0),
    )
    data = bytes(100) + fat + bytes(50)
    s = scan(data, [(0, len(data))])
    assert s.problems == [] and s.images == 2
    (run,) = s.runs
    assert (run.lo, run.hi, run.containers) == (100, 100 + len(fat), 1)
    assert run.raw == {(CUBIN, 86, 0, 1, 8, False): 1, (PTX, 90, 0, 9, 0, False): 1}


def test_kept_flags_and_compressed_size() -> None:
    """Compression (0x8000, 0x2000), arch-specific (0x100000) and family (0x200000) are kept;
    any other flag bit is dropped; a compressed size given is noted."""
    fat = container(
        entry(CUBIN, 90, bytes(8), flags=ARCH_SPECIFIC | 0x1),
        entry(CUBIN, 100, bytes(8), flags=FAMILY | 0x10),
        entry(PTX, 120, bytes(8), major=9, minor=5, flags=COMPRESSED | 0x8000, compressed_size=8),
    )
    (run,) = scan(fat, [(0, len(fat))]).runs
    assert run.raw == {
        (CUBIN, 90, ARCH_SPECIFIC, 0, 0, False): 1,
        (CUBIN, 100, FAMILY, 0, 0, False): 1,
        (PTX, 120, 0xA000, 9, 5, True): 1,
    }


def test_other_entry_kinds_are_walked_past_not_tallied() -> None:
    fat = container(entry(7, 80, bytes(16)), entry(CUBIN, 80, bytes(16)))
    s = scan(fat, [(0, len(fat))])
    assert s.runs[0].raw == {(CUBIN, 80, 0, 0, 0, False): 1} and s.images == 1


def test_containers_right_behind_each_other_make_one_run() -> None:
    """nvcc pads containers to 8 bytes: the next one is looked for right behind the last."""
    first = container(entry(CUBIN, 80, bytes(8)))
    second = container(entry(CUBIN, 90, bytes(8)))
    data = first + bytes(8) + second
    s = scan(data, [(0, len(data))])
    (run,) = s.runs
    assert (run.lo, run.hi, run.containers) == (0, len(data), 2)
    assert images(s) == {(CUBIN, 80, 0): 1, (CUBIN, 90, 0): 1}


def test_distant_containers_make_two_runs() -> None:
    first = container(entry(CUBIN, 80, bytes(8)))
    second = container(entry(CUBIN, 90, bytes(8)))
    data = first + bytes(256) + second
    s = scan(data, [(0, len(data))])
    assert [(r.lo, r.containers) for r in s.runs] == [(0, 1), (len(first) + 256, 1)]


def test_a_container_outside_the_zones_is_not_searched_for() -> None:
    fat = container(entry(CUBIN, 80, bytes(8)))
    data = bytes(64) + fat + bytes(64)
    assert scan(data, [(0, 64)]).runs == []
    assert scan(data, [(64 + len(fat), len(data))]).runs == []
    assert len(scan(data, [(64, 64 + len(fat))]).runs) == 1


def test_a_container_claiming_bytes_past_the_file() -> None:
    fat = container(entry(CUBIN, 80, bytes(8)), size=1 << 30)
    s = scan(fat, [(0, len(fat))])
    assert s.problems[0] == (0, f"fatbin at 0x0 claims {1 << 30:,} bytes, past the end of the file")
    assert s.runs[0].hi == len(fat)  # the walk stops at the end of the file
    assert s.runs[0].raw == {(CUBIN, 80, 0, 0, 0, False): 1}


def test_an_entry_header_shorter_than_64_bytes_stops_the_walk() -> None:
    fat = container(entry(CUBIN, 80, bytes(8), header_size=8), entry(CUBIN, 90, bytes(8)))
    s = scan(fat, [(0, len(fat))])
    assert s.problems == [(16, "fatbin entry at 0x10 claims 8+8 bytes, past its container: rest not read")]
    assert s.runs[0].raw == {}


def test_an_entry_whose_payload_runs_past_its_container() -> None:
    fat = container(entry(CUBIN, 80, bytes(8)), entry(CUBIN, 90, bytes(8)))
    lying = bytearray(fat)
    struct.pack_into("<Q", lying, 16 + 72 + 8, 1000)  # the second entry's payload size
    s = scan(bytes(lying), [(0, len(lying))])
    assert s.problems == [
        (88, "fatbin entry at 0x58 claims 64+1,000 bytes, past its container: rest not read")
    ]
    assert s.runs[0].raw == {(CUBIN, 80, 0, 0, 0, False): 1}


# -- -Xfatbin -concat groups: one entry listing its images in the header's extension -------------


def group(*heads: bytes, count: int | None = None, flags: int = COMPRESSED) -> bytes:
    """A kind-0x100 entry whose header holds (u32 count, u32 size) and a header per image."""
    listing = struct.pack("<II", len(heads) if count is None else count, 8 + 64 * len(heads)) + b"".join(
        heads
    )
    head = entry(GROUP, 0, header_size=64 + len(listing), flags=flags)
    return head[:64] + listing


def test_a_group_lists_its_images() -> None:
    g = group(
        entry(CUBIN, 80, major=1, minor=8),
        entry(CUBIN, 90, major=1, minor=8),
        entry(PTX, 120, major=9, minor=5),
    )
    fat = container(g, entry(CUBIN, 120, bytes(8), major=1, minor=8))
    s = scan(fat, [(0, len(fat))])
    assert s.problems == [] and s.images == 4
    assert s.runs[0].raw == {
        (CUBIN, 80, 0, 1, 8, True): 1,  # compressed: the group's flags say so
        (CUBIN, 90, 0, 1, 8, True): 1,
        (PTX, 120, 0, 9, 5, True): 1,
        (CUBIN, 120, 0, 1, 8, False): 1,
    }


def test_a_group_whose_count_does_not_add_up_is_not_read() -> None:
    fat = container(group(entry(CUBIN, 80), entry(CUBIN, 90), count=3))
    s = scan(fat, [(0, len(fat))])
    assert s.problems == [(16, "fatbin group at 0x10: its list of 3 images does not add up; not read")]
    assert s.runs[0].raw == {}


# -- the image cap (limits.max_gpu_images) ------------------------------------------------------


@pytest.fixture
def two_images(set_limits: Callable[..., None]) -> None:
    set_limits(MAX_GPU_IMAGES="2")


def test_images_past_the_cap_are_not_read(two_images: None) -> None:
    fat = container(*(entry(CUBIN, arch, bytes(8)) for arch in (75, 80, 86, 90)))
    s = scan(fat, [(0, len(fat))])
    assert sum(s.runs[0].raw.values()) == 2
    assert [text for _, text in s.problems] == [
        "more than 2 GPU images (max-gpu-images); the rest were not read"
    ]


# -- what nvcc built ----------------------------------------------------------------------------

# fixtures/cuda/README.md: nvcc 13 writes two fatbins per translation unit, each with every
# cubin; the PTX once (ISA 9.5 = CUDA 13.5)
NVCC = {
    "cu13_torch_cuda.so": {
        (CUBIN, 75, 0): 2, (CUBIN, 80, 0): 2, (CUBIN, 90, ARCH_SPECIFIC): 2, (CUBIN, 100, FAMILY): 2,
        (CUBIN, 120, 0): 2, (PTX, 120, 0): 1,
    },
    "cu13_no_compress.so": {(CUBIN, 86, 0): 2, (PTX, 90, 0): 1},
    "cu13_compress_all.so": {(CUBIN, 80, 0): 2, (PTX, 80, 0): 1},
    "cu13_cubins_only.so": {(CUBIN, 80, 0): 2, (CUBIN, 90, 0): 2},
    "cu13_concat.so": {(CUBIN, 80, 0): 2, (CUBIN, 90, 0): 2, (CUBIN, 120, 0): 2, (PTX, 120, 0): 1},
    "cu13_static.so": {(CUBIN, 90, 0): 2, (PTX, 90, 0): 1},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NVCC))
def test_nvcc_libraries(name: str) -> None:
    """Two containers, one run that spans the .nv_fatbin section exactly, the images cuobjdump
    lists, every PTX of ISA 9.5, no problem."""
    data, lo, hi = nv_fatbin(name)
    s = scan(data, [(lo, hi)])
    assert s.problems == []
    (run,) = s.runs
    assert (run.lo, run.hi, run.containers) == (lo, hi, 2)
    assert images(s) == NVCC[name]
    assert {(major, minor) for kind, _, _, major, minor, _ in run.raw if kind == PTX} <= {(9, 5)}


def compressed(name: str) -> set[tuple[int, int, bool]]:
    data, lo, hi = nv_fatbin(name)
    (run,) = scan(data, [(lo, hi)]).runs
    return {(kind, arch, bool(flags & 0xA000) or given) for kind, arch, flags, _, _, given in run.raw}


def test_compression_as_nvcc_wrote_it() -> None:
    """--no-compress: nothing; -compress-all: everything; the default: PTX only."""
    assert compressed("cu13_no_compress.so") == {(CUBIN, 86, False), (PTX, 90, False)}
    assert compressed("cu13_compress_all.so") == {(CUBIN, 80, True), (PTX, 80, True)}
    default = compressed("cu13_torch_cuda.so")
    assert (PTX, 120, True) in default and (CUBIN, 90, False) in default


@pytest.mark.parametrize("chunk", [7, 64, 4099])
def test_nvcc_library_fed_in_chunks(chunk: int) -> None:
    """Headers straddling chunks, the magic cut in two, a -concat group across a seam: the
    same tally as read whole."""
    for name in ("cu13_torch_cuda.so", "cu13_concat.so"):
        data, lo, hi = nv_fatbin(name)
        whole = scan(data, [(lo, hi)])
        pieces = scan(data, [(lo, hi)], chunk)
        assert pieces.problems == []
        assert [(r.lo, r.hi, r.containers, r.raw) for r in pieces.runs] == [
            (r.lo, r.hi, r.containers, r.raw) for r in whole.runs
        ]


def test_the_dll_carries_the_same_fatbin() -> None:
    """cu13_fatbin.dll holds cu13_torch_cuda.so's .nv_fatbin in its .nv_fatb section."""
    data = (BIN / "cu13_fatbin.dll").read_bytes()
    pe = pefile.PE(data=data, fast_load=True)
    (section,) = [s for s in pe.sections if s.Name.rstrip(b"\0") == b".nv_fatb"]
    lo = section.PointerToRawData
    s = scan(data, [(lo, lo + section.SizeOfRawData)])
    assert s.problems == []
    assert images(s) == NVCC["cu13_torch_cuda.so"]
    assert [r.lo for r in s.runs] == [lo]


def test_nothing_outside_a_fatbin_section_is_taken_for_one() -> None:
    """The rest of an nvcc library (its code, its other read-only data) holds no container."""
    data, lo, hi = nv_fatbin("cu13_no_compress.so")
    assert scan(data, [(0, lo), (hi, len(data))]).runs == []


def test_a_library_without_gpu_code() -> None:
    data = (BIN / "cu12_runtime.so").read_bytes()
    s = scan(data, [(0, len(data))])
    assert s.runs == [] and s.problems == [] and s.images == 0
