"""The libraries a repair tool must never graft into an extension's wheel: torch's own and
the accelerator runtimes a torch build brings.

auditwheel, delocate and delvewheel copy every library a binary needs and they can resolve
into the wheel, renamed (``libtorch_cuda-1a2b3c4d.so``). For an extension of torch that is a
second copy of libraries torch has already loaded: two copies of libtorch in one process
register every operator twice and crash (pypa/auditwheel#391, #580); a second CUDA
runtime or cuDNN beside torch's is a second set of handles and a second toolkit version in
the process, and hundreds of MB in the wheel. Each tool has a flag to leave a library out
(``EXCLUDE_FLAG``); ``repair_excludes`` is the list torchwheel passes itself
(``tagging.chain``), and ``bundled`` recognises a copy that was grafted anyway (TW703,
TW704), by its name with the tool's hash taken off.

The patterns are explicit rather than generated from ``accelerators``' name patterns: each
tool matches differently (auditwheel: ``fnmatch`` on the SONAME; delocate: a substring of
the path; delvewheel: ``fnmatch`` on the lower-cased DLL name), and
``tests/e2e/test_accelerator_rules.py`` holds every pattern to ``accelerators.classify_library``.
"""

from __future__ import annotations

from typing import Literal

from torchwheel.torchabi.accelerators import LinkedLibrary, classify_library, unmangled

Tool = Literal["auditwheel", "delocate", "delvewheel"]

EXCLUDE_FLAG: dict[Tool, str] = {"auditwheel": "--exclude", "delocate": "--exclude", "delvewheel": "--no-dll"}

# torch's own libraries, every build (accelerators._TORCH names the same components)
_TORCH = (
    "torch", "torch_cpu", "torch_cuda", "torch_cuda_cpp", "torch_cuda_cu", "torch_cuda_linalg",
    "torch_hip", "torch_xpu", "torch_python", "torch_global_deps", "c10", "c10_cuda", "c10_hip",
    "c10_xpu", "shm",
)  # fmt: skip
# Linux SONAME stems of the runtimes torch's CUDA, ROCm and XPU builds bring, and the drivers
_LINUX_RUNTIMES = (
    "cudart", "nvrtc", "nvrtc-builtins", "cublas", "cublasLt", "nvJitLink", "cupti", "cuda",
    "nvidia-ml", "cudnn*", "nccl", "cufft", "cufftw", "curand", "cusolver", "cusolverMg", "cusparse",
    "cusparseLt", "nvToolsExt", "nvtx3interop", "cufile", "nvshmem_host", "nvperf_host",
    "amdhip64", "hiprtc", "hsa-runtime64", "rocblas", "hipblas", "hipblaslt", "hipsparse",
    "hipsparselt", "hipfft", "hiprand", "rocrand", "rocsolver", "hipsolver", "rocfft", "MIOpen",
    "rccl", "roctx64", "roctracer64", "rocm_smi64", "amd_comgr", "hipblas-common", "sycl",
    "ze_loader",
)  # fmt: skip
# Windows DLL names (delvewheel compares them lower-cased)
_WINDOWS_RUNTIMES = (
    "cudart64_*.dll", "nvrtc64_*.dll", "cublas64_*.dll", "cublaslt64_*.dll", "cupti64_*.dll",
    "nvjitlink_*.dll", "nvcuda.dll", "nvml.dll", "cudnn*64_*.dll", "nccl64_*.dll", "cufft64_*.dll",
    "cufftw64_*.dll", "curand64_*.dll", "cusolver64_*.dll", "cusolvermg64_*.dll", "cusparse64_*.dll",
    "nvtoolsext64_*.dll", "amdhip64_*.dll", "hiprtc*.dll", "sycl*.dll", "ze_loader.dll",
)  # fmt: skip


def repair_excludes(tool: Tool) -> tuple[str, ...]:
    """The values of ``EXCLUDE_FLAG[tool]`` that keep torch's libraries and the accelerator
    runtimes out of the repaired wheel, one per flag."""
    if tool == "auditwheel":
        return (*(f"lib{c}.so" for c in _TORCH), *(f"lib{c}.so*" for c in _LINUX_RUNTIMES))
    if tool == "delocate":  # a substring of the library's path; CUDA left macOS with 10.2
        return tuple(f"lib{c}.dylib" for c in _TORCH)
    return (*(f"{c}.dll" for c in _TORCH), *_WINDOWS_RUNTIMES)


def bundled(member: str) -> LinkedLibrary | None:
    """The torch library or accelerator runtime a member of a wheel is a copy of, or None
    (``accelerators.classify_library`` reads the tool's hash off the name)."""
    base = member.replace("\\", "/").rsplit("/", 1)[-1]
    lower = base.lower()
    if ".so" not in lower and ".dll" not in lower and ".dylib" not in lower:
        return None  # the .py, data and metadata members, most of any wheel: no regex for them
    return classify_library(unmangled(base)) or classify_library(base)  # named as the plain library
