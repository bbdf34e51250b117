"""NVIDIA's rules for what a driver runs: the CUDA version a driver supports against the CUDA
a library needs (NVIDIA's "CUDA Compatibility" guide). Pure functions; the driver is read by
``doctor.driver``.

* A CUDA runtime (``libcudart.so.N``, a torch build ``cuNNN``, a runtime nvcc linked in
  statically) needs a driver that supports its CUDA major: within one major, minor-version
  compatibility runs a newer minor on an older driver of that major (13.2's runtime on a
  13.0 driver); a new major (12 -> 13) always needs a new driver. A driver of a newer major
  runs an older runtime (backward compatibility).
* PTX is compiled by the driver's JIT, which knows the ISAs up to its own CUDA version:
  PTX written by a newer toolkit than the driver ("the provided PTX was compiled with an
  unsupported toolchain") does not run, minor-version compatibility or not. PTX is needed
  only where no cubin runs on the GPU: code that is PTX only, or a GPU newer than every cubin.
"""

from __future__ import annotations

from typing import Literal

from torchwheel.frozen import frozen
from torchwheel.torchabi.backend import ANY_BUILD, BuildSet, TorchBuild

Cuda = tuple[int, int]  # (major, minor): (12, 4) for CUDA 12.4


def parse_driver_version(value: int) -> Cuda | None:
    """``cuDriverGetVersion``'s integer (``1000 * major + 10 * minor``: 12040) as (12, 4);
    None for a value no driver reports."""
    if value <= 0 or value >= 100_000:
        return None
    return value // 1000, (value % 1000) // 10


def cuda_text(cuda: Cuda) -> str:
    return f"{cuda[0]}.{cuda[1]}"


@frozen(order=True)
class CudaNeed:
    """What one piece of code needs of the driver: ``runtime`` (a CUDA runtime of that
    major; ``cuda`` its version where known, else (major, 0)) or ``ptx`` (PTX of an ISA the
    driver's JIT must know: that exact version). ``what`` says where the need comes from
    (``libcudart.so.13``, ``torch 2.14.1+cu130``, ``compute_90 PTX, ISA 9.2``)."""

    kind: Literal["runtime", "ptx"]
    cuda: Cuda
    what: str

    @property
    def words(self) -> str:
        if self.kind == "ptx":
            return f"CUDA {cuda_text(self.cuda)} (for its {self.what})"
        return f"CUDA {self.cuda[0]} ({self.what})"


def driver_runs(driver: Cuda, need: CudaNeed) -> bool:
    """Does a driver that supports CUDA ``driver`` run what ``need`` needs (module docstring)?"""
    if need.kind == "ptx":
        return driver >= need.cuda
    return driver[0] >= need.cuda[0]


def under_minor_compatibility(driver: Cuda, need: CudaNeed) -> bool:
    """A runtime newer than the driver within one major: it runs, by minor-version
    compatibility, without the features that need the newer driver."""
    return need.kind == "runtime" and driver[0] == need.cuda[0] and driver[1] < need.cuda[1]


def build_need(builds: BuildSet | None, target: TorchBuild | None, torch: str) -> CudaNeed | None:
    """What a wheel that loads only on CUDA builds of torch needs of the driver where the
    target's torch is such a build: that build's CUDA. None for a wheel any build loads (its
    code needs no CUDA of torch's) or a target whose torch is no CUDA build."""
    if not builds or builds == ANY_BUILD or target is None or target.kind != "cuda" or target.major is None:
        return None
    if any(b.kind != "cuda" for b in builds):
        return None
    return CudaNeed("runtime", (target.major, target.minor or 0), f"{torch}, a CUDA {target.major} build")
