"""The TW7xx rules' parts (rules/accelerator.py, torchabi/grafting.py): what a repair tool
must leave out, a grafted copy recognised by its name, what a name claims, which code runs on
which GPU. The rules on whole fixture wheels are in test_check.py (``tw701`` ... ``tw706``)."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest

from torchwheel.analysis.alternatives import flavoured, unit_key
from torchwheel.binary.gpucode import CudaImage
from torchwheel.rules.accelerator import covers
from torchwheel.torchabi.accelerators import classify_library
from torchwheel.torchabi.grafting import bundled, repair_excludes

from ..lib.helpers import torchwheel

PLAN_13 = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")

# names the tools meet: one of each family torchabi.accelerators classifies
LINUX = (
    "libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so", "libtorch_python.so", "libc10.so", "libc10_cuda.so",
    "libc10_hip.so", "libtorch_hip.so", "libshm.so", "libtorch_global_deps.so", "libcudart.so.13",
    "libcudart.so.12.8.90", "libnvrtc.so.12", "libnvrtc-builtins.so.13.0", "libcublas.so.12", "libcublasLt.so.12",
    "libnvJitLink.so.12", "libcupti.so.13", "libcudnn.so.9", "libcudnn_graph.so.9", "libnccl.so.2",
    "libcufft.so.11", "libcurand.so.10", "libcusolver.so.11", "libcusparse.so.12", "libcusparseLt.so.0",
    "libnvToolsExt.so.1", "libcufile.so.0", "libcuda.so.1", "libnvidia-ml.so.1", "libamdhip64.so.7",
    "libhiprtc.so.7", "librocblas.so.5", "libMIOpen.so.1", "librccl.so.1", "libsycl.so.8", "libze_loader.so.1",
)  # fmt: skip
WINDOWS = (
    "torch.dll", "torch_cpu.dll", "torch_cuda.dll", "c10.dll", "c10_cuda.dll", "torch_python.dll",
    "cudart64_12.dll", "cudart64_110.dll", "nvrtc64_120_0.dll", "cublas64_12.dll", "cublasLt64_12.dll",
    "nvJitLink_120_0.dll", "cudnn64_9.dll", "cudnn_graph64_9.dll", "nvcuda.dll", "amdhip64_7.dll", "sycl8.dll",
)  # fmt: skip
MACOS = ("libtorch.dylib", "libtorch_cpu.dylib", "libtorch_python.dylib", "libc10.dylib", "libshm.dylib")


@pytest.mark.parametrize(("tool", "names"), [("auditwheel", LINUX), ("delvewheel", WINDOWS)])
def test_every_torch_or_runtime_name_is_excluded(tool: str, names: tuple[str, ...]) -> None:
    patterns = repair_excludes(tool)  # type: ignore[arg-type]
    for name in names:
        assert classify_library(name) is not None, name
        # auditwheel: fnmatch on the SONAME; delvewheel: fnmatch on the lower-cased DLL name
        probe = name if tool == "auditwheel" else name.lower()
        assert any(fnmatch.fnmatchcase(probe, p) for p in patterns), name


def test_delocate_excludes_are_substrings_of_torchs_dylibs() -> None:
    patterns = repair_excludes("delocate")
    for name in MACOS:
        assert any(p in f"/site-packages/torch/lib/{name}" for p in patterns), name


@pytest.mark.parametrize("tool", ["auditwheel", "delvewheel"])
def test_no_exclude_pattern_takes_an_ordinary_library(tool: str) -> None:
    """Only torch's and the runtimes' names: the extension's own dependencies stay grafted."""
    others = ("libpng16.so.16", "libnvjpeg.so.13", "libtorchaudio.so", "libjpeg.so.8", "libgomp.so.1",
              "libstdc++.so.6", "zlib1.dll", "nvjpeg64_13.dll", "torchaudio.dll", "libcurl.so.4")  # fmt: skip
    for name in others:
        probe = name if tool == "auditwheel" else name.lower()
        assert not any(fnmatch.fnmatchcase(probe, p) for p in repair_excludes(tool)), name  # type: ignore[arg-type]
        assert classify_library(name) is None, name


@pytest.mark.parametrize(
    ("member", "component"),
    [
        ("pkg.libs/libtorch_cuda-3f2a9c1d.so", "torch_cuda"),  # auditwheel
        ("pkg.libs/libcudart-9a8b7c6d.so.12.8.90", "cudart"),  # auditwheel, versioned
        ("torchvision.libs/libcudart.faf08d9a.so.13", "cudart"),  # PyTorch's own wheels
        ("pkg.libs/cudart64_12-0123456789abcdef0123456789abcdef.dll", "cudart"),  # delvewheel
        ("pkg/.dylibs/libc10.dylib", "c10"),  # delocate keeps the name
        ("pkg/lib/libnccl.so.2", "nccl"),
    ],
)
def test_a_grafted_copy_is_known_by_its_name(member: str, component: str) -> None:
    found = bundled(member)
    assert found is not None and found.component == component


@pytest.mark.parametrize(
    "member",
    [
        "torchvision.libs/libnvjpeg.36e11081.so.13",
        "pkg/libtorchaudio.so",
        "pkg/_C.so",
        "pkg/libtorchcodec_core4.so",
    ],
)
def test_other_libraries_are_not_copies_of_torch(member: str) -> None:
    assert bundled(member) is None


def test_toolkit_numbered_flavours_are_one_library() -> None:
    """bitsandbytes names its builds ``_cuda121`` ... ``_rocm72``, ``_xpu2025``: one library."""
    names = [f"bnb/libbitsandbytes_{f}.so" for f in ("cpu", "cuda121", "cuda130", "rocm72", "xpu2025")]
    assert len({unit_key(n) for n in names}) == 1
    assert flavoured(names)
    assert unit_key("pkg/libcore4.so") != unit_key("pkg/libcore5.so")  # a number alone is no flavour


def _img(name: str) -> CudaImage:
    kind = "cubin" if name.startswith("sm_") else "ptx"
    digits = name.split("_", 1)[1]
    variant = digits[-1] if digits[-1] in "af" else ""
    return CudaImage(kind, int(digits.rstrip("af")), variant)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("images", "declared", "runs"),
    [
        (["sm_80"], "sm_86", True),  # a cubin runs on later minors of its major
        (["sm_86"], "sm_80", False),
        (["sm_80"], "sm_90", False),  # not on the next major
        (["sm_90a"], "sm_90", True),  # arch-specific: exactly that GPU
        (["sm_90a"], "sm_90a", True),
        (["sm_90"], "sm_90a", False),  # declared arch-specific code must be there as such
        (["sm_100f"], "sm_103", True),  # family code runs on later members of the family
        (["compute_80"], "compute_90", True),  # PTX JITs for newer GPUs
        (["compute_90"], "compute_80", False),
        (["compute_90a"], "compute_90", False),  # arch-specific PTX is no forward path
        (["sm_80", "compute_80"], "sm_120", False),  # PTX is not native code
    ],
)
def test_which_code_runs_on_which_gpu(images: list[str], declared: str, runs: bool) -> None:
    assert covers([_img(i) for i in images], declared) is runs


@pytest.mark.parametrize("bad", ['["sm90"]', '["sm_9"]', '["gfx90a"]', '"sm_90"'])
def test_bad_gpu_archs_is_one_line_exit_2(bad: str, fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchwheel]\ngpu-archs = {bad}\n")
    result = torchwheel("check", str(fixture_wheels["tw705"]), cwd=tmp_path)
    assert result.returncode == 2 and "gpu-archs" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_numbered_flavours_load_on_each_build(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    result = torchwheel("tag", "-w", str(tmp_path), str(fixture_wheels["cuda_numbered_flavours"]))
    assert result.returncode == 0, result.stderr
    doc = json.loads(torchwheel("matrix", "--format", "json", str(tmp_path)).stdout)
    # the `_cpu` build needs no accelerator: the package falls back to it on a ROCm or XPU torch
    # (it has no build for those), never on CUDA 11, where it picks one of its CUDA builds
    assert doc["wheels"][0]["torch_build"] == "cpu, cuda-12, cuda-13, rocm, xpu"


@pytest.mark.parametrize(
    ("name", "builds"),
    [
        ("runtime_picked", "cuda-12, cuda-13"),  # `_cu12`/`_cu13` and an unsuffixed default build
        ("pyg_loader", "cuda-13"),  # the loader takes `_cuda` whenever it exists
        ("cuda_flavours", "cpu, cuda-13, rocm, xpu"),  # the same pair without that loader
        ("tw708", "any"),  # brings its own CUDA 13 runtime: no build of torch is needed
        ("cuda13", "cuda-13"),  # relies on torch's runtime: ties the build
        # issue 41: the build axis comes from what the loader binds
        ("fallback_backends", "any"),  # static CUDA runtime, ROCm 7, a fallback: loads where any does
        ("backends_no_fallback", "cpu, cuda, rocm-7, xpu"),  # picked by the torch found: not ROCm 6
        ("pin_local_cpu", "cpu"),  # torch==2.8.0+cpu: the pin's label names the build
    ],
)
def test_how_a_package_picks_its_libraries_decides_the_build(
    fixture_wheels: dict[str, Path], name: str, builds: str
) -> None:
    """Issue 22 items 1 and 3: flavour sets are alternatives the package picks from, a
    flavour that needs nothing is any build, the PyG loader is read, and a runtime the wheel
    brings itself does not constrain torch's build."""
    result = torchwheel("select", "--format", "json", *PLAN_13, str(fixture_wheels[name]))
    doc = json.loads(result.stdout)
    assert doc["projects"][0]["candidates"][0]["torch_abi"]["torch_build"] == builds


def test_show_says_who_picks_the_flavour_and_never_contradicts_itself(
    fixture_wheels: dict[str, Path],
) -> None:
    text = torchwheel("show", "--no-config", str(fixture_wheels["pyg_loader"])).stdout
    assert "takes `_cuda` whenever the file exists, so these load on a CUDA 13 build of torch only" in text
    assert "loads on a CUDA 13 build of torch (cuda-13)" in text and "CPU build" not in text
    picked = torchwheel("show", "--no-config", str(fixture_wheels["runtime_picked"])).stdout
    assert "the package picks one by the torch it finds" in picked
    assert "has builds that need CUDA 12 or CUDA 13" in picked and "CUDA 12 + CUDA 13" not in picked


def test_show_names_the_members_of_a_set_with_a_fallback(fixture_wheels: dict[str, Path]) -> None:
    """Issue 41, layout 1: the set's own members and the builds each loads on, and its GPU code
    reported (TW710, info) rather than turned into a build requirement."""
    wheel = str(fixture_wheels["fallback_backends"])
    text = torchwheel("show", "--no-config", wheel).stdout
    assert (
        "_backend_{cuda,rocm}.so: its loader (wfallback/*.py) tries them and goes on without them where none "
        "loads, so the package loads where any does (any build of torch): _backend_cuda.so (any), "
        "_backend_rocm.so (rocm-7)"
    ) in text
    assert "torch build      loads on" not in text  # any build: no line narrows it
    check = json.loads(torchwheel("check", "--no-config", "--format", "json", wheel).stdout)
    assert [(f["code"], f["severity"], f["member"]) for f in check["findings"]] == [
        ("TW710", "info", "wfallback/_backend_cuda.so")
    ]


@pytest.mark.parametrize(
    ("backend", "chosen", "says"),
    [
        ("cpu", True, "pinned to torch 2.8"),
        ("cu128", False, "needs a CPU build of torch, the target's torch is a CUDA 12.8 build (cu128)"),
    ],
)
def test_a_labelled_pin_decides_release_and_build(
    fixture_wheels: dict[str, Path], backend: str, chosen: bool, says: str
) -> None:
    """Issue 41, layout 3: `torch==2.8.0+cpu` on an unstable wheel names torch 2.8.0 and the CPU
    build; select judges both, as pip would install it only beside torch 2.8.0+cpu."""
    plan = ("--torch", "2.8", "--torch-backend", backend, "--python-version", "3.11")
    result = torchwheel(
        "select",
        "--format",
        "json",
        *plan,
        "--platform",
        "manylinux_2_28_x86_64",
        str(fixture_wheels["pin_local_cpu"]),
    )
    assert result.returncode == (0 if chosen else 1), result.stderr
    assert says in result.stdout


def test_the_loader_binds_nothing_of_a_torch_build_for_a_static_runtime(
    built_fixtures: dict[str, Path],
) -> None:
    """What the build axis of `fallback_backends` rests on, asked of the dynamic loader in a
    process with no torch and no GPU driver: nvcc's static-runtime library opens (it binds no
    torch and no runtime a torch build brings), the ROCm backend does not (its libamdhip64.so.7
    comes only with a ROCm build of torch)."""
    import subprocess
    import sys

    from torchwheel.analysis.buildunits import binds_no_build
    from torchwheel.api import inspect_wheel

    static = Path(__file__).resolve().parents[2] / "fixtures" / "cuda" / "bin" / "cu13_static.so"
    probe = "import ctypes, os, sys\ntry:\n    ctypes.CDLL(sys.argv[1], os.RTLD_NOW)\nexcept OSError as e:\n    print(e)\n"
    for lib, opens in ((static, True), (built_fixtures["elf_rocm_runtime"], False)):
        run = subprocess.run(
            [sys.executable, "-c", probe, str(lib)], capture_output=True, text=True, timeout=60
        )
        assert (run.stdout == "") is opens, run.stdout
        facts = inspect_wheel(lib).facts[0]
        assert binds_no_build(facts.binaries[0].analysis.needs) is opens
    assert "libamdhip64.so.7: cannot open shared object file" in run.stdout
