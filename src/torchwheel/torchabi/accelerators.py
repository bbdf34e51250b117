"""What a library needs of the torch *build*, and the GPU code it carries.

The stable ABI frees an extension from the torch version, not from the build: a library
that links ``libtorch_cuda.so`` and ``libcudart.so.13`` loads only where torch was built for
CUDA 13, however stable its shim imports are. The loader's own list says so: ELF
``DT_NEEDED``, Mach-O load commands, PE import DLLs (``SliceFacts.needed``). This module
classifies those names and joins them with the GPU code the readers found
(``binary.gpucode``). Pure functions over plain frozen data: the rules, ``tag`` and the
installer side build on ``AcceleratorNeeds`` without reading a file again.

Which library majors name the toolkit: ``libcudart.so.N``, ``libnvrtc.so.N``,
``libcublas(Lt).so.N``, ``libnvJitLink.so.N`` and ``libcupti.so.N`` carry the CUDA major
(CUDA 12: ``.12``; CUDA 13: ``.13``), as ``cudart64_12.dll``, ``nvrtc64_120_0.dll`` and
``cublas64_12.dll`` do on Windows; ``libamdhip64.so.N`` and ``libhiprtc.so.N`` carry the ROCm
major. cuDNN, NCCL, cuFFT, cuRAND, cuSOLVER, cuSPARSE, rocBLAS, hipBLAS and the SYCL runtime
number their own releases: their major is recorded, not read as a toolkit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Literal

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from torchwheel.binary.facts import Import
from torchwheel.binary.gpucode import NO_GPU_CODE, CudaImage, GpuCode
from torchwheel.frozen import frozen
from torchwheel.torchabi.backend import TorchBuild

Accelerator = Literal["cuda", "rocm", "xpu"]
Role = Literal["torch", "torch-python", "runtime", "library", "driver"]

_ORDER: tuple[Accelerator, ...] = ("cuda", "rocm", "xpu")
_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}

# torch's own libraries: component -> the build that ships it (None: every build)
_TORCH = re.compile(
    r"(?:lib)?(torch|torch_cpu|torch_cuda|torch_cuda_cpp|torch_cuda_cu|torch_cuda_linalg|torch_hip|"
    r"torch_xpu|torch_python|torch_global_deps|c10|c10_cuda|c10_hip|c10_xpu|shm)"
    r"(?:\.so(?:\.[\d.]+)?|\.dylib|\.dll)"
)
_TORCH_BUILD: dict[str, Accelerator] = {
    "torch_cuda": "cuda", "torch_cuda_cpp": "cuda", "torch_cuda_cu": "cuda", "torch_cuda_linalg": "cuda",
    "c10_cuda": "cuda", "torch_hip": "rocm", "c10_hip": "rocm", "torch_xpu": "xpu", "c10_xpu": "xpu",
}  # fmt: skip


@frozen
class _Pattern:
    regex: re.Pattern[str]
    accelerator: Accelerator
    role: Role
    toolkit: bool  # the name's major is the toolkit's (CUDA or ROCm) major


def _p(regex: str, accelerator: Accelerator, role: Role = "library", toolkit: bool = False) -> _Pattern:
    return _Pattern(re.compile(regex, re.IGNORECASE), accelerator, role, toolkit)


# Each pattern's group "c" is the component, group "v" its version digits (when named).
_LIBRARIES = (
    # CUDA on Linux: lib<component>.so.<major>[.minor...]
    _p(
        r"lib(?P<c>cudart|nvrtc|nvrtc-builtins|cublas|cublasLt|nvJitLink|cupti)\.so(?:\.(?P<v>\d+)[\d.]*)?",
        "cuda",
        "runtime",
        toolkit=True,
    ),
    _p(r"lib(?P<c>cuda|nvidia-ml)\.so(?:\.(?P<v>\d+)[\d.]*)?", "cuda", "driver"),
    _p(
        r"lib(?P<c>cudnn\w*|nccl|cufft|cufftw|curand|cusolver|cusolverMg|cusparse|cusparseLt|nvToolsExt|"
        r"nvtx3interop|cufile|nvshmem_host|nvperf_host)\.so(?:\.(?P<v>\d+)[\d.]*)?",
        "cuda",
    ),
    # CUDA on Windows: cudart64_12.dll, cudart64_110.dll (11.0), nvrtc64_120_0.dll, nvJitLink_120_0.dll
    _p(
        r"(?P<c>cudart|nvrtc|cublas|cublasLt|cupti)(?:64)?_(?P<v>\d+)(?:_\d+)?\.dll",
        "cuda",
        "runtime",
        toolkit=True,
    ),
    _p(r"(?P<c>nvJitLink)_(?P<v>\d+)(?:_\d+)?\.dll", "cuda", "runtime", toolkit=True),
    _p(r"(?P<c>nvcuda|nvml)\.dll", "cuda", "driver"),
    _p(
        r"(?P<c>cudnn\w*|nccl|cufft|cufftw|curand|cusolver|cusolverMg|cusparse|nvToolsExt)64_(?P<v>\d+)\.dll",
        "cuda",
    ),
    # ROCm: libamdhip64.so.7, amdhip64_7.dll
    _p(r"lib(?P<c>amdhip64|hiprtc)\.so(?:\.(?P<v>\d+)[\d.]*)?", "rocm", "runtime", toolkit=True),
    _p(r"(?P<c>amdhip64|hiprtc\w*)_(?P<v>\d+)\.dll", "rocm", "runtime", toolkit=True),
    _p(
        r"lib(?P<c>hsa-runtime64|rocblas|hipblas|hipblaslt|hipsparse|hipsparselt|hipfft|hiprand|rocrand|"
        r"rocsolver|hipsolver|rocfft|MIOpen|rccl|roctx64|roctracer64|rocm_smi64|amd_comgr|hipblas-common)"
        r"\.so(?:\.(?P<v>\d+)[\d.]*)?",
        "rocm",
    ),
    # XPU: the SYCL runtime and Level Zero
    _p(r"lib(?P<c>sycl)\.so(?:\.(?P<v>\d+)[\d.]*)?", "xpu", "runtime"),
    _p(r"(?P<c>sycl)(?P<v>\d+)\.dll", "xpu", "runtime"),
    _p(r"(?:lib)?(?P<c>ze_loader)(?:\.so(?:\.(?P<v>\d+)[\d.]*)?|\.dll)", "xpu", "driver"),
)


_CANONICAL = {
    c.lower(): c for c in ("cublasLt", "nvJitLink", "cusolverMg", "cusparseLt", "nvToolsExt", "MIOpen")
}


@frozen(order=True)
class LinkedLibrary:
    """One needed library that says something about torch's build or an accelerator."""

    name: str  # as the binary spells it
    role: Role
    component: str  # "torch_cuda", "cudart", "amdhip64", "sycl"
    accelerator: Accelerator | None  # None: a torch library every build ships
    major: int | None = None  # the number in the name (libcudart.so.13: 13; cudart64_110.dll: 11)
    toolkit_major: int | None = None  # the CUDA or ROCm major it pins, where the name's major is that


def _windows_major(digits: str) -> int:
    """``12`` -> 12, ``110`` -> 11 (CUDA 11.0), ``120`` -> 12, ``101`` -> 10 (10.1)."""
    return int(digits[:-1]) if len(digits) >= 3 else int(digits)


# what the repair tools add to a grafted copy's name: auditwheel ``libcudart-96c42e41.so.13.0.96``,
# PyTorch's own wheels ``libnvjpeg.36e11081.so.13``, delvewheel ``cudart64_12-<32 hex>.dll``
_MANGLED = re.compile(r"^(?P<stem>[^.]+?)[-.][0-9a-f]{8}(?:[0-9a-f]{24})?(?P<rest>\.(?:so|dylib|dll)\b.*)$")


def unmangled(base: str) -> str:
    """A library's file name with a repair tool's hash taken off: the grafted copy
    ``libcudart-96c42e41.so.13.0.96`` names the same runtime and major as ``libcudart.so.13``,
    and a binary that needs it needs what the plain name says."""
    m = _MANGLED.match(base)
    return m.group("stem") + m.group("rest") if m else base


def classify_library(name: str) -> LinkedLibrary | None:
    """What one needed name (or a member's file name) means, or None for a library of no
    concern here (libc, ...). A grafted copy's hashed name is read as its plain name: the
    torch need and the copy rules (TW703, TW704) read names through this one function."""
    spelled = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = unmangled(spelled)
    found = _classify(name, base)
    return found if found is not None or base == spelled else _classify(name, spelled)


def _classify(name: str, base: str) -> LinkedLibrary | None:
    torch = _TORCH.fullmatch(base.lower())
    if torch is not None:
        component = torch.group(1)
        role: Role = "torch-python" if component == "torch_python" else "torch"
        return LinkedLibrary(name, role, component, _TORCH_BUILD.get(component))
    for pattern in _LIBRARIES:
        m = pattern.regex.fullmatch(base)
        if m is None:
            continue
        digits = m.group("v") if "v" in pattern.regex.groupindex else None
        major = None
        if digits:
            major = _windows_major(digits) if base.lower().endswith(".dll") else int(digits)
        component = m.group("c").lower()  # Windows names come in any case
        return LinkedLibrary(
            name,
            pattern.role,
            _CANONICAL.get(component, component),
            pattern.accelerator,
            major,
            # a toolkit major is a small number: CUPTI 2025.3 (CUDA 13's) numbers its own releases
            major if pattern.toolkit and major is not None and major < 100 else None,
        )
    return None


# NVIDIA's PyPI distributions of the toolkit runtimes: ``nvidia-cuda-runtime-cu12`` (CUDA 12
# and older), ``nvidia-cuda-runtime`` with a version of the toolkit's (CUDA 13 on), and since
# torch 2.12.1 the meta-package ``cuda-toolkit[cudart,cublas,...]==13.0.2``, whose extras name
# the components it installs and whose version is the toolkit's; the components each
# installs, as ``classify_library`` names them
_NVIDIA_RUNTIME = re.compile(r"nvidia-(cuda-runtime|cuda-nvrtc|cublas|nvjitlink|cuda-cupti)(?:-cu(\d{2,3}))?")
_NVIDIA_COMPONENTS = {
    "cuda-runtime": ("cudart",), "cuda-nvrtc": ("nvrtc", "nvrtc-builtins"), "cublas": ("cublas", "cublasLt"),
    "nvjitlink": ("nvJitLink",), "cuda-cupti": ("cupti",),
}  # fmt: skip
CUDA_TOOLKIT = "cuda-toolkit"
_TOOLKIT_EXTRAS = {
    "cudart": ("cudart",), "nvrtc": ("nvrtc", "nvrtc-builtins"), "cublas": ("cublas", "cublasLt"),
    "nvjitlink": ("nvJitLink",), "cupti": ("cupti",), "cufft": ("cufft", "cufftw"), "curand": ("curand",),
    "cusolver": ("cusolver", "cusolverMg"), "cusparse": ("cusparse",), "cufile": ("cufile",),
    "nvtx": ("nvToolsExt", "nvtx3interop"),
}  # fmt: skip
_LOWER_BOUND = re.compile(r"(?:>=|==|~=|>)\s*(\d+)")
_PINNED = re.compile(r"^===?\s*(\d+)\.(\d+)")


@frozen
class RuntimeRequirement:
    """One requirement that installs CUDA toolkit runtimes: the ``components`` it installs
    (``classify_library``'s names), the toolkit ``major`` (None: its version does not say) and,
    for an exact pin, the ``minor`` (``cuda-toolkit[...]==13.2.2``: 13.2, torch's cu132 build)."""

    requirement: Requirement
    components: tuple[str, ...]
    major: int | None
    minor: int | None = None


def runtime_requirement(req: Requirement) -> RuntimeRequirement | None:
    """What one requirement says of the CUDA runtime, or None when it installs none: the one
    reading of the ``nvidia-*`` names and of ``cuda-toolkit[...]``, for a torch's METADATA (its
    build) and an extension's (what it brings itself, what it claims)."""
    name = canonicalize_name(req.name)
    pins = [_PINNED.match(str(s)) for s in req.specifier]
    pin = next((m for m in pins if m is not None), None)
    if name == CUDA_TOOLKIT:
        components = tuple(c for extra in sorted(req.extras) for c in _TOOLKIT_EXTRAS.get(extra.lower(), ()))
        bound = _LOWER_BOUND.search(str(req.specifier))
        major: int | None = int(bound.group(1)) if bound else None
        minor = int(pin.group(2)) if pin is not None and major == int(pin.group(1)) else None
        return RuntimeRequirement(req, components, major, minor)
    m = _NVIDIA_RUNTIME.fullmatch(name)
    if m is None:
        return None
    if m.group(2):
        major = _windows_major(m.group(2)) if len(m.group(2)) == 3 else int(m.group(2))
    else:
        bound = _LOWER_BOUND.search(str(req.specifier))
        major = int(bound.group(1)) if bound else None
    minor = int(pin.group(2)) if pin is not None and major == int(pin.group(1)) else None
    return RuntimeRequirement(req, _NVIDIA_COMPONENTS[m.group(1)], major, minor)


def required_runtimes(
    requirements: Iterable[Requirement], platform: str | None
) -> Iterator[tuple[str, int | None, Requirement]]:
    """(component, toolkit major or None, the requirement) for each toolkit runtime the wheel's own
    requirements install on its platform (``linux``, ``win32``, ``darwin``; None: any),
    leaving out those only an extra asks for."""
    for req in requirements:
        found = runtime_requirement(req)
        if found is None or not applies(req, platform_markers(platform)):
            continue
        for component in found.components:
            yield component, found.major, req


def cuda_runtime_required(
    requirements: Iterable[Requirement], markers: Mapping[str, str] | None
) -> RuntimeRequirement | None:
    """The requirement that brings the CUDA runtime (``cudart``) where ``markers`` hold (None:
    only unconditional ones count), or None: how a torch's METADATA names its CUDA build when
    nothing more direct does (PyPI's Windows and macOS torch carry the Linux-only line too)."""
    for req in requirements:
        found = runtime_requirement(req)
        where = req.marker is None or (markers is not None and applies(req, markers))
        if found is not None and "cudart" in found.components and where:
            return found
    return None


def torch_build_of_requirements(
    requirements: Iterable[Requirement], markers: Mapping[str, str] | None
) -> TorchBuild | None:
    """A torch's CUDA build as its own requirements name it (``cuda-toolkit[...]==13.2.2``:
    CUDA 13.2, ``cu132``; ``nvidia-cuda-runtime-cu12==12.8.90``: CUDA 12.8), or None when no
    requirement that applies brings the CUDA runtime (which says nothing of the build)."""
    found = cuda_runtime_required(requirements, markers)
    return (
        TorchBuild("cuda", found.major, found.minor if found.major is not None else None) if found else None
    )


def platform_markers(platform: str | None) -> dict[str, str] | None:
    """The markers of a platform (``linux``, ``win32``, ``darwin``) that requirements name;
    None for none (then nothing rules a requirement out)."""
    if platform is None:
        return None
    system = {"linux": "Linux", "win32": "Windows", "darwin": "Darwin"}[platform]
    return {
        "sys_platform": platform,
        "platform_system": system,
        "os_name": "nt" if platform == "win32" else "posix",
    }


def applies(req: Requirement, markers: Mapping[str, str] | None) -> bool:
    """Does ``req`` apply where ``markers`` hold? A requirement only an extra asks for never
    does; with no markers every other one does (nothing rules it out), and so does one whose
    marker names a variable the markers lack."""
    if req.marker is None:
        return True
    if "extra" in str(req.marker):
        return False
    if markers is None:
        return True
    try:
        return req.marker.evaluate(dict(markers))
    except Exception:  # an undefined marker variable: the marker cannot rule it out
        return True


@frozen
class AcceleratorNeeds:
    """One library's needs beyond the torch version, and its GPU code.

    ``links_torch``: it links a torch library (which is not the same as importing from
    torch: ``TorchUsage`` judges the imports); ``torch_accelerator``: the accelerator of the
    torch libraries it links (``libtorch_cuda.so``: CUDA; None for ``libtorch.so`` alone).
    ``accelerators``: every accelerator it needs, from torch's libraries, the runtimes and
    the GPU code; more than one is a contradiction the rules can name.
    ``cuda_majors`` / ``rocm_majors``: the toolkit majors the runtime names pin (more than
    one: two runtimes that cannot both load). ``static_cudart``: nvcc linked the CUDA
    runtime into the library (its fatbins are registered by no imported runtime), so the
    need is the driver's CUDA version, which the PTX ISA names."""

    libraries: tuple[LinkedLibrary, ...] = ()
    links_torch: bool = False
    torch_accelerator: Accelerator | None = None
    accelerators: tuple[Accelerator, ...] = ()
    cuda_majors: tuple[int, ...] = ()
    rocm_majors: tuple[int, ...] = ()
    static_cudart: bool = False
    gpu: GpuCode = NO_GPU_CODE

    @property
    def accelerator(self) -> Accelerator | None:
        """The one accelerator, None for none (or for a contradiction: see ``accelerators``)."""
        return self.accelerators[0] if len(self.accelerators) == 1 else None

    @property
    def label(self) -> str:
        """``CUDA 13``, ``CUDA 12 + CUDA 13``, ``ROCm 7``, ``CUDA (static runtime)``, ``XPU``;
        ``-`` for a library that needs no accelerator."""
        parts: list[str] = []
        for acc in self.accelerators:
            majors = self.cuda_majors if acc == "cuda" else self.rocm_majors if acc == "rocm" else ()
            if majors:
                parts += [f"{_NAMES[acc]} {m}" for m in majors]
            elif acc == "cuda" and self.static_cudart:
                parts.append("CUDA (static runtime)")
            else:
                parts.append(_NAMES[acc])
        return " + ".join(parts) or "-"


def classify_needs(
    needed: Iterable[str], imports: Iterable[Import] = (), gpu: GpuCode = NO_GPU_CODE
) -> AcceleratorNeeds:
    """A library's needs from its needed names, its imports and its GPU code."""
    libraries = tuple(lib for lib in (classify_library(n) for n in needed) if lib is not None)
    torch = [lib for lib in libraries if lib.role in ("torch", "torch-python")]
    built = {lib.accelerator for lib in torch if lib.accelerator is not None}
    found: set[Accelerator] = {lib.accelerator for lib in libraries if lib.accelerator is not None}
    if gpu.cuda or gpu.containers:
        found.add("cuda")
    if gpu.rocm_targets or gpu.rocm_bundles:
        found.add("rocm")
    cuda = sorted({lib.toolkit_major for lib in libraries if lib.accelerator == "cuda" and lib.toolkit_major})
    rocm = sorted({lib.toolkit_major for lib in libraries if lib.accelerator == "rocm" and lib.toolkit_major})
    imports_registration = any(imp.name == "__cudaRegisterFatBinary" for imp in imports)
    links_cudart = any(lib.component == "cudart" for lib in libraries)
    static = bool(
        gpu.registered and (gpu.cuda or gpu.containers) and not imports_registration and not links_cudart
    )
    return AcceleratorNeeds(
        libraries=libraries,
        links_torch=bool(torch),
        torch_accelerator=next((a for a in _ORDER if a in built), None),
        accelerators=tuple(a for a in _ORDER if a in found),
        cuda_majors=tuple(cuda),
        rocm_majors=tuple(rocm),
        static_cudart=static,
        gpu=gpu,
    )


def combine(needs: Iterable[AcceleratorNeeds]) -> AcceleratorNeeds:
    """A wheel's needs: every library's, joined (its GPU code summed image by image)."""
    needs = list(needs)
    built = {n.torch_accelerator for n in needs if n.torch_accelerator is not None}
    images: dict[CudaImage, int] = {}
    for n in needs:
        for image, count in n.gpu.cuda:
            images[image] = images.get(image, 0) + count
    gpu = GpuCode(
        cuda=tuple(sorted(images.items())),
        containers=sum(n.gpu.containers for n in needs),
        rocm_targets=tuple(sorted({t for n in needs for t in n.gpu.rocm_targets})),
        rocm_bundles=sum(n.gpu.rocm_bundles for n in needs),
        registered=any(n.gpu.registered for n in needs),
        problems=tuple(p for n in needs for p in n.gpu.problems),
    )
    accs = {a for n in needs for a in n.accelerators}
    return AcceleratorNeeds(
        libraries=tuple(sorted({lib for n in needs for lib in n.libraries})),
        links_torch=any(n.links_torch for n in needs),
        torch_accelerator=next((a for a in _ORDER if a in built), None),
        accelerators=tuple(a for a in _ORDER if a in accs),
        cuda_majors=tuple(sorted({m for n in needs for m in n.cuda_majors})),
        rocm_majors=tuple(sorted({m for n in needs for m in n.rocm_majors})),
        static_cudart=any(n.static_cudart for n in needs),
        gpu=gpu,
    )
