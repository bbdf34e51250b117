"""Which CUDA code runs on which GPU: the CUDA images of a library (cubins by architecture,
PTX by ISA and the toolkit that ISA needs), compute capabilities as users name them, and
the rule that decides whether an image runs on a GPU (plain, arch-specific ``a`` and family
``f`` code). Pure functions over ``binary.gpucode``'s facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from torchwheel.binary.gpucode import CudaImage, GpuCode
from torchwheel.errors import InvalidValue

# PTX ISA -> the first CUDA toolkit that writes (and whose driver JITs) it, from NVIDIA's
# PTX ISA release notes: 7.x is CUDA 11.x, 8.0-8.4 are 12.0-12.4, 8.5 is 12.5 and 12.6,
# then one ISA per toolkit; 9.x is CUDA 13.x.
_PTX_CUDA = {
    (6, 0): (9, 0), (6, 1): (9, 1), (6, 2): (9, 2), (6, 3): (10, 0), (6, 4): (10, 1), (6, 5): (10, 2),
    (8, 5): (12, 5), (8, 6): (12, 7), (8, 7): (12, 8), (8, 8): (12, 9),
}  # fmt: skip


def ptx_cuda(isa: tuple[int, int]) -> tuple[int, int] | None:
    """The CUDA version whose toolkit (and driver) a PTX ISA version needs; None if unknown."""
    major, minor = isa
    if isa in _PTX_CUDA:
        return _PTX_CUDA[isa]
    if major == 7:
        return (11, minor)
    if major == 8 and minor <= 4:
        return (12, minor)
    if major == 9:
        return (13, minor)
    return None


def cubin_archs(gpu: GpuCode) -> tuple[str, ...]:
    """The distinct cubin architectures, oldest first (``sm_75``, ``sm_90a``, ``sm_100f``)."""
    return tuple(dict.fromkeys(i.name for i, _ in sorted(gpu.cuda, key=_arch_key) if i.kind == "cubin"))


def ptx_images(gpu: GpuCode) -> tuple[CudaImage, ...]:
    """One PTX image per architecture and ISA, oldest first."""
    seen: dict[tuple[str, tuple[int, int] | None], CudaImage] = {}
    for image, _ in sorted(gpu.cuda, key=_arch_key):
        if image.kind == "ptx":
            seen.setdefault((image.name, image.ptx_isa), image)
    return tuple(seen.values())


def _arch_key(item: tuple[CudaImage, int]) -> tuple[int, str, str]:
    image = item[0]
    return (image.arch, image.variant, image.kind)


_CODE = re.compile(r"(sm|compute)_(\d{2,3})([af]?)")


_GPU = re.compile(r"(?:sm_)?(\d{1,2})\.?(\d)")


def parse_gpu(text: str) -> int:
    """A GPU by compute capability: ``sm_90``, ``9.0``, ``sm_120``, ``12.0`` -> 90, 120."""
    m = _GPU.fullmatch(text.strip().lower())
    if m is None:
        raise InvalidValue(f"GPU {text[:40]!r}: expected a compute capability like sm_90 or 9.0")
    return int(m.group(1)) * 10 + int(m.group(2))


# the compute capabilities of NVIDIA's GPUs since Volta (CUDA programming guide, "Compute
# capabilities"; Thor's 10.1 is 11.0 from CUDA 13 on): what TW705 names when a library lacks code
KNOWN_GPUS = (70, 72, 75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121)


def runs_on(code: Iterable[str], gpu: int) -> bool:
    """Does one of these images (``sm_80``, ``sm_90a``, ``sm_100f``, ``compute_90``) run on a
    GPU of compute capability ``gpu`` (90 for 9.0)? A cubin runs on its major's later minors
    (``sm_80`` on 8.6), arch-specific ``a`` code only on exactly its GPU, family ``f`` code on
    its family's later members; PTX is compiled by the driver for any GPU at least as new
    (arch-specific or family PTX only within that GPU or family)."""
    for name in code:
        m = _CODE.fullmatch(name)
        if m is None:
            continue
        kind, arch, variant = m.group(1), int(m.group(2)), m.group(3)
        same_major = arch // 10 == gpu // 10
        if variant == "a":
            if arch == gpu:
                return True
        elif kind == "sm" or variant == "f":
            if same_major and arch <= gpu:
                return True
        elif arch <= gpu:
            return True
    return False


def code_names(gpu: GpuCode) -> tuple[str, ...]:
    """The distinct CUDA image names of a library or wheel, oldest first (cubins before PTX of
    one architecture): what ``tag`` writes as ``Torch-GPU``."""
    return tuple(dict.fromkeys(i.name for i, _ in sorted(gpu.cuda, key=_arch_key)))
