"""GPU code and accelerator needs, read from libraries nvcc really built (``fixtures/cuda``).

The reference is NVIDIA's own ``cuobjdump --list-elf/--list-ptx`` (the test extra's
``nvidia-cuda-cuobjdump``); the load proof is the real dynamic loader with the registry's
``libcudart.so.12``. Hostile variants are the same fixtures with header fields rewritten.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.lib.helpers import REPO, load_script, torchwheel
from torchwheel.binary import read_binary, read_path
from torchwheel.binary.gpucode import GpuCode, scan_buffer
from torchwheel.binary.memberscan import scan
from torchwheel.binary.offload import BUNDLE_MAGIC
from torchwheel.torchabi.accelerators import classify_library, classify_needs
from torchwheel.torchabi.cuda_archs import ptx_cuda

CUDA = REPO / "fixtures" / "cuda"
BIN = CUDA / "bin"
build = load_script("torchwheel_cuda_build", CUDA / "build.py")
agreement = load_script("torchwheel_cuda_agreement", REPO / "benchmarks" / "cuda_agreement.py")
ALL = sorted(p.name for p in BIN.iterdir())


def gpu(path: Path) -> GpuCode:
    facts = read_path(path)
    return facts.slices[0].gpu


def images(code: GpuCode) -> dict[str, int]:
    return {image.name: n for image, n in code.cuda}


@pytest.mark.parametrize("name", ALL)
def test_agrees_with_cuobjdump(name: str) -> None:
    ours = agreement.torchwheel_images(read_path(BIN / name))
    theirs, complaint = agreement.cuobjdump_images(BIN / name)
    assert complaint == ""
    assert ours == theirs
    assert bool(ours) == (name != build.CUDA12_FIXTURE)


@pytest.mark.parametrize("fx", build.FIXTURES, ids=lambda fx: fx.name)
def test_fixture_facts(fx: object) -> None:
    path = BIN / fx.name  # type: ignore[attr-defined]
    code = gpu(path)
    # nvcc 13 writes two fatbins per translation unit, each with every cubin; PTX once
    assert code.containers == 2
    assert images(code) == {**{arch: 2 for arch in fx.cubins}, **{arch: 1 for arch in fx.ptx}}  # type: ignore[attr-defined]
    assert code.problems == () and code.registered
    assert {i.ptx_isa for i, _ in code.cuda if i.kind == "ptx"} == ({(9, 5)} if fx.ptx else set())  # type: ignore[attr-defined]
    facts = read_path(path).slices[0]
    needs = classify_needs(facts.needed, facts.imports, facts.gpu)
    assert needs.accelerators == ("cuda",)
    assert needs.static_cudart == (fx.name == "cu13_static.so")  # type: ignore[attr-defined]
    assert needs.cuda_majors == (() if needs.static_cudart else (13,))
    assert needs.torch_accelerator == ("cuda" if fx.torch_cuda else None)  # type: ignore[attr-defined]
    assert [lib.name for lib in needs.libraries] == list(fx.needed_cuda)  # type: ignore[attr-defined]


def test_concat_fixture_has_groups() -> None:
    """nvcc groups only some images under -Xfatbin -concat: the fixture must hold a group."""
    if str(REPO / "fixtures") not in sys.path:
        sys.path.insert(0, str(REPO / "fixtures"))  # hostile_gpu imports hostile_bin
    hostile_gpu = load_script("hostile_gpu", REPO / "fixtures" / "hostile_gpu.py")
    data = (BIN / "cu13_concat.so").read_bytes()
    assert struct.unpack_from("<H", data, hostile_gpu.first_group(data))[0] == 0x100


def test_compression_as_built() -> None:
    def compressed(name: str) -> set[tuple[str, bool]]:
        return {(i.name, i.compressed) for i, _ in gpu(BIN / name).cuda}

    assert compressed("cu13_compress_all.so") == {("sm_80", True), ("compute_80", True)}
    assert compressed("cu13_no_compress.so") == {("sm_86", False), ("compute_90", False)}
    default = compressed("cu13_torch_cuda.so")  # nvcc compresses PTX only, by default
    assert ("compute_120", True) in default and ("sm_90a", False) in default


def test_pe_carries_the_elf_fatbin() -> None:
    pe = read_path(BIN / build.PE_FIXTURE).slices[0]
    assert pe.gpu.cuda == gpu(BIN / "cu13_torch_cuda.so").cuda
    needs = classify_needs(pe.needed, pe.imports, pe.gpu)
    assert needs.torch_accelerator == "cuda" and needs.cuda_majors == (13,) and not needs.static_cudart
    assert needs.label == "CUDA 13"


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    for at in range(0, len(data), size):
        yield data[at : at + size]


@pytest.mark.parametrize("size", [7, 64, 4099, 1 << 16])
@pytest.mark.parametrize("name", ["cu13_torch_cuda.so", "cu13_concat.so", build.PE_FIXTURE])
def test_streamed_in_any_chunks(name: str, size: int) -> None:
    """The streaming path (forced with ``big=0``) sees the same GPU code whatever the chunk
    size: headers straddling chunks, a magic cut in two, a -concat group across chunks."""
    data = (BIN / name).read_bytes()
    _, got = scan(name, len(data), lambda stop: chunked(data[:stop], size), big=0, head=4096, tail=4096)
    assert not isinstance(got, Exception)
    assert got.slices[0].gpu == read_binary(data, name).slices[0].gpu


def test_load_proof_cuda12(tmp_path: Path) -> None:
    """The CUDA 12 fixture loads when libcudart.so.12 is reachable, and fails without: the
    need ``CUDA 12`` is the loader's, not a guess."""
    import nvidia

    lib_dir = next(
        Path(p) / "cuda_runtime" / "lib" for p in nvidia.__path__ if (Path(p) / "cuda_runtime").is_dir()
    )
    assert (lib_dir / "libcudart.so.12").is_file()
    code = "import ctypes, sys\nlib = ctypes.CDLL(sys.argv[1])\nprint(lib.tw_runtime_version())\n"
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    fixture = str(BIN / build.CUDA12_FIXTURE)
    with_it = subprocess.run(
        [sys.executable, "-c", code, fixture],
        env={**env, "LD_LIBRARY_PATH": str(lib_dir)},
        capture_output=True,
        text=True,
    )
    assert with_it.returncode == 0, with_it.stderr
    assert with_it.stdout.strip() == "12090"  # cudaRuntimeGetVersion works without a GPU
    without = subprocess.run([sys.executable, "-c", code, fixture], env=env, capture_output=True, text=True)
    assert without.returncode == 1  # Python's exit on the uncaught OSError
    assert "libcudart.so.12: cannot open shared object file" in without.stderr
    facts = read_path(BIN / build.CUDA12_FIXTURE).slices[0]
    assert classify_needs(facts.needed, facts.imports).label == "CUDA 12"


@pytest.mark.parametrize(
    ("name", "component", "accelerator", "major", "toolkit"),
    [
        ("libtorch_cuda.so", "torch_cuda", "cuda", None, None),
        ("libc10_hip.so", "c10_hip", "rocm", None, None),
        ("libtorch_xpu.so", "torch_xpu", "xpu", None, None),
        ("@rpath/libtorch.dylib", "torch", None, None, None),
        ("torch_cuda.dll", "torch_cuda", "cuda", None, None),
        ("libcudart.so.13", "cudart", "cuda", 13, 13),
        ("libnvrtc.so.12", "nvrtc", "cuda", 12, 12),
        ("libnvrtc-builtins.so.12.8", "nvrtc-builtins", "cuda", 12, 12),
        ("libcublasLt.so.13", "cublasLt", "cuda", 13, 13),
        ("libcudnn.so.9", "cudnn", "cuda", 9, None),  # cuDNN's own major, not CUDA's
        ("libnccl.so.2", "nccl", "cuda", 2, None),
        ("libcuda.so.1", "cuda", "cuda", 1, None),  # the driver
        ("cudart64_12.dll", "cudart", "cuda", 12, 12),
        ("cudart64_110.dll", "cudart", "cuda", 11, 11),
        ("nvrtc64_120_0.dll", "nvrtc", "cuda", 12, 12),
        ("CUBLAS64_12.DLL", "cublas", "cuda", 12, 12),
        ("libamdhip64.so.7", "amdhip64", "rocm", 7, 7),
        ("libhipblas.so.3", "hipblas", "rocm", 3, None),
        ("libsycl.so.8", "sycl", "xpu", 8, None),
        ("sycl8.dll", "sycl", "xpu", 8, None),
        # grafted copies (auditwheel, delvewheel, PyTorch's own wheels): the plain name's runtime and major
        ("libcudart-96c42e41.so.13.0.96", "cudart", "cuda", 13, 13),
        ("libnvrtc-a49e67e8.so.13.0.88", "nvrtc", "cuda", 13, 13),
        ("libamdhip64-1a2b3c4d.so.7", "amdhip64", "rocm", 7, 7),
        ("cudart64_12-0123456789abcdef0123456789abcdef.dll", "cudart", "cuda", 12, 12),
        ("libnvjpeg.36e11081.so.13", None, None, None, None),
        ("libcupti-e2f9ed86.so.2025.3.1", "cupti", "cuda", 2025, None),  # CUPTI numbers its own releases
    ],
)
def test_classify_library(
    name: str, component: str | None, accelerator: str | None, major: int | None, toolkit: int | None
) -> None:
    lib = classify_library(name)
    if component is None:  # not a runtime torch's build brings
        assert lib is None
        return
    assert lib is not None
    assert (lib.component, lib.accelerator, lib.major, lib.toolkit_major) == (
        component,
        accelerator,
        major,
        toolkit,
    )


@pytest.mark.parametrize(
    "name", ["libc.so.6", "libstdc++.so.6", "KERNEL32.dll", "libtorchaudio.so", "libcudf.so"]
)
def test_unrelated_libraries(name: str) -> None:
    assert classify_library(name) is None


def test_links_torch_without_accelerator_needs_some_torch() -> None:
    needs = classify_needs(["libtorch.so", "libc10.so", "libc.so.6"])
    assert (
        needs.links_torch
        and needs.torch_accelerator is None
        and needs.accelerators == ()
        and needs.label == "-"
    )
    assert not classify_needs(["libc.so.6"]).links_torch


def test_two_cuda_majors_are_both_kept() -> None:
    needs = classify_needs(["libcudart.so.12", "libnvrtc.so.13", "libtorch_cuda.so"])
    assert needs.cuda_majors == (12, 13) and needs.label == "CUDA 12 + CUDA 13"


@pytest.mark.parametrize(
    ("isa", "cuda"),
    [((7, 8), (11, 8)), ((8, 4), (12, 4)), ((8, 5), (12, 5)), ((8, 7), (12, 8)), ((9, 0), (13, 0))],
)
def test_ptx_isa_names_the_toolkit(isa: tuple[int, int], cuda: tuple[int, int]) -> None:
    assert ptx_cuda(isa) == cuda


def test_inspect_json_and_text() -> None:
    path = BIN / "cu13_torch_cuda.so"
    doc = json.loads(torchwheel("inspect", "--format", "json", str(path)).stdout)
    acc = doc["files"][0]["slices"][0]["accelerator"]
    assert acc["label"] == "CUDA 13" and acc["torch_build"] == "cuda" and acc["cuda_majors"] == [13]
    assert acc["gpu_code"]["cubin"] == ["sm_75", "sm_80", "sm_90a", "sm_100f", "sm_120"]
    assert acc["gpu_code"]["ptx"] == [{"arch": "compute_120", "isa": "9.5", "cuda": "13.5"}]
    text = torchwheel("inspect", str(path)).stdout
    assert "needs a CUDA 13 build of torch: libtorch_cuda.so, libc10_cuda.so, libcudart.so.13" in text
    assert "kernels sm_75, sm_80, sm_90a, sm_100f, sm_120, PTX compute_120 (CUDA 13.5)" in text


# -- hostile: the same fixture with lying headers ---------------------------------------------


def _fatbin_at(data: bytes) -> int:
    """The .nv_fatbin section's file offset, by pyelftools (independent of our reader)."""
    import io

    section = ELFFile(io.BytesIO(data)).get_section_by_name(".nv_fatbin")
    assert section is not None
    return int(section["sh_offset"])


def _patched(offset_in_fatbin: int, fmt: str, value: int) -> bytes:
    data = bytearray((BIN / "cu13_no_compress.so").read_bytes())
    struct.pack_into(fmt, data, _fatbin_at(bytes(data)) + offset_in_fatbin, value)
    return bytes(data)


def test_container_claiming_past_eof_is_a_partial_reading() -> None:
    data = _patched(8, "<Q", 1 << 40)
    code = read_binary(data, "x").slices[0].gpu
    assert any("past the end of the file" in p for p in code.problems)


def test_entry_with_short_header_stops_the_walk() -> None:
    data = _patched(16 + 4, "<I", 8)  # the first entry's header size: 8 < 64
    code = read_binary(data, "x").slices[0].gpu
    assert any("past its container" in p for p in code.problems)


def test_truncated_inside_a_fatbin() -> None:
    data = (BIN / "cu13_no_compress.so").read_bytes()
    cut = data[: _fatbin_at(data) + 200]
    _, got = scan("cut", len(cut), lambda stop: chunked(cut[:stop], 4096), big=0)
    # the section table is gone with the tail: the reader fails cleanly or reads in part
    assert isinstance(got, Exception) or got.slices[0].gpu.containers <= 1


def test_image_cap(set_limits: Callable[..., None]) -> None:
    set_limits(MAX_GPU_IMAGES="3")
    code = gpu(BIN / "cu13_torch_cuda.so")
    assert sum(n for _, n in code.cuda) == 3
    assert any("max-gpu-images" in p for p in code.problems)


def test_look_alike_outside_the_section_counts_for_nothing() -> None:
    """A valid-looking container in .eh_frame (read-only, so searched, found and walked) is
    dropped once the section table says where .nv_fatbin is."""
    data = bytearray((BIN / "cu13_no_compress.so").read_bytes())
    start = _fatbin_at(bytes(data))
    first = bytes(data[start : start + 16 + 64])  # a container header and one entry header
    (size,) = struct.unpack_from("<Q", first, 8)
    import io

    rodata = ELFFile(io.BytesIO(bytes(data))).get_section_by_name(".eh_frame")
    assert rodata is not None and rodata["sh_size"] >= 80
    fake = bytearray(first)
    struct.pack_into("<Q", fake, 8, 64)  # one entry
    struct.pack_into("<Q", fake, 16 + 8, 0)  # with no payload
    data[rodata["sh_offset"] : rodata["sh_offset"] + 80] = fake
    assert size > 64
    runs = scan_buffer(bytes(data), [(0, len(data))]).runs
    assert [r.lo for r in runs][-1] == rodata["sh_offset"]  # found and walked, then dropped:
    assert gpu_of(bytes(data)) == gpu(BIN / "cu13_no_compress.so")


def gpu_of(data: bytes) -> GpuCode:
    return read_binary(data, "x").slices[0].gpu


# -- ROCm offload bundles, in the layout clang writes (``.hip_fatbin``, 4096-aligned) ------------


def _bundle(targets: list[str]) -> bytes:
    """An uncompressed clang offload bundle: magic, count, then (offset, size, triple)
    per entry, then the code objects (here: a few bytes each)."""
    entries = ["host-x86_64-unknown-linux-gnu-", *targets]
    table = len(BUNDLE_MAGIC) + 8 + sum(24 + len(t) for t in entries)
    out = BUNDLE_MAGIC + struct.pack("<Q", len(entries))
    at = table
    for t in entries:
        out += struct.pack("<QQQ", at, 16, len(t)) + t.encode()
        at += 16
    return out + b"\x7fELF" + bytes(12) + b"".join(b"\x7fELF" + bytes(12) for _ in targets)


def _ccob(bundle: bytes) -> bytes:
    """LLVM's CompressedOffloadBundle, version 3, zstd."""
    from backports.zstd import compress

    body = compress(bundle)
    return b"CCOB" + struct.pack("<HHQQQ", 3, 1, 32 + len(body), len(bundle), 0) + body


def _elf_with_hip_fatbin(tmp_path: Path, blobs: list[bytes]) -> Path:
    """gcc places each blob in .hip_fatbin at a 4096-byte boundary, as clang does."""
    src = tmp_path / "hip.c"
    arrays = "\n".join(
        f'__attribute__((section(".hip_fatbin"), aligned(4096), used)) const unsigned char b{i}[] = '
        f"{{{', '.join(str(x) for x in blob)}}};"
        for i, blob in enumerate(blobs)
    )
    src.write_text(arrays + "\nint tw_hip(void) { return 0; }\n")
    out = tmp_path / "hip.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


def test_rocm_bundles_plain_and_compressed(tmp_path: Path) -> None:
    plain = _bundle(["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx942"])
    packed = _ccob(_bundle(["hipv4-amdgcn-amd-amdhsa--gfx1100"]))
    path = _elf_with_hip_fatbin(tmp_path, [plain, packed])
    code = gpu(path)
    assert code.rocm_bundles == 2 and code.problems == ()
    assert code.rocm_targets == (
        "hipv4-amdgcn-amd-amdhsa--gfx1100",
        "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
        "hipv4-amdgcn-amd-amdhsa--gfx942",
    )
    data = path.read_bytes()
    _, streamed = scan("hip", len(data), lambda stop: chunked(data[:stop], 333), big=0, head=4096, tail=4096)
    assert not isinstance(streamed, Exception) and streamed.slices[0].gpu == code
    assert classify_needs([], (), code).label == "ROCm"


def test_rocm_bundle_lying_count(tmp_path: Path) -> None:
    bad = bytearray(_bundle(["hipv4-amdgcn-amd-amdhsa--gfx90a"]))
    struct.pack_into("<Q", bad, len(BUNDLE_MAGIC), 1 << 40)
    code = gpu(_elf_with_hip_fatbin(tmp_path, [bytes(bad)]))
    assert code.rocm_targets == () and any("claims" in p for p in code.problems)


def test_fatbin_in_the_code_segment_takes_one_exact_pass() -> None:
    """-z noseparate-code: no read-only segment to search while streaming, so the section
    table at the end sends one more pass, only up to the end of .nv_fatbin; a library
    without GPU code in that layout (torch's own) costs no search and no pass."""
    name = "cu13_one_segment.so"
    data = (BIN / name).read_bytes()
    passes: list[int | None] = []

    def stream(stop: int | None) -> Iterator[bytes]:
        passes.append(stop)
        return chunked(data[:stop], 4096)

    _, got = scan(name, len(data), stream, big=0, head=4096, tail=4096)
    assert not isinstance(got, Exception)
    assert got.slices[0].gpu == gpu(BIN / name) and images(got.slices[0].gpu) == {"sm_80": 2, "compute_80": 1}
    import io

    section = ELFFile(io.BytesIO(data)).get_section_by_name(".nv_fatbin")
    assert passes == [None, section["sh_offset"] + section["sh_size"]]
