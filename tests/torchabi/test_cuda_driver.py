"""``torchabi.cuda_driver``: NVIDIA's rules, held to NVIDIA's own CUDA runtime. Each runtime
the test extra installs (``libcudart.so.12`` of CUDA 12.9, ``libcudart.so.13`` of 13.5) asks
each stub driver (``fixtures/machine``: 12.4, 13.0, 13.2) in a fresh process: ``cudaGetDeviceCount``
answers 35 ("CUDA driver version is insufficient for CUDA runtime version") where the driver is
too old, and 100 ("no CUDA-capable device is detected", from the stub's ``cuInit``) where the
runtime accepted it. ``runs`` must say the same for every pair."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchwheel.torchabi.cuda_driver import (
    CudaNeed,
    driver_runs,
    parse_driver_version,
    under_minor_compatibility,
)

from ..lib.helpers import machine_fixtures

_ASK = r"""
import ctypes, json, sys
rt = ctypes.CDLL(sys.argv[1])
version, count = ctypes.c_int(0), ctypes.c_int(0)
rt.cudaRuntimeGetVersion(ctypes.byref(version))
status = rt.cudaGetDeviceCount(ctypes.byref(count))
rt.cudaGetErrorString.restype = ctypes.c_char_p
print(json.dumps([version.value, status, rt.cudaGetErrorString(status).decode()]))
"""


def _runtimes() -> list[Path]:
    import nvidia

    roots = [Path(p) for p in nvidia.__path__]
    found = sorted(
        {
            lib
            for root in roots
            for name in ("libcudart.so.12", "libcudart.so.13")
            for lib in root.glob(f"*/lib/{name}")
        }
    )
    assert len(found) == 2, f"the test extra's CUDA 12 and 13 runtimes: {found}"
    return found


PAIRS = [(rt, driver) for rt in range(2) for driver in (12040, 13000, 13020)]


@pytest.mark.parametrize(("which", "driver"), PAIRS)
def test_the_rule_is_the_runtimes(which: int, driver: int) -> None:
    runtime = _runtimes()[which]
    env = {**os.environ, "LD_LIBRARY_PATH": str(machine_fixtures().drivers[driver])}
    proc = subprocess.run(
        [sys.executable, "-c", _ASK, str(runtime)], capture_output=True, text=True, env=env, check=True
    )
    version, status, words = json.loads(proc.stdout)
    assert status in (35, 100), words
    cuda = parse_driver_version(driver)
    assert cuda is not None
    need = CudaNeed("runtime", (version // 1000, (version % 1000) // 10), runtime.name)
    assert driver_runs(cuda, need) == (status == 100), (runtime, driver, words)
    if status == 35:
        assert words == "CUDA driver version is insufficient for CUDA runtime version"


def test_minor_version_compatibility_and_ptx() -> None:
    cu135 = CudaNeed("runtime", (13, 5), "libcudart.so.13")
    assert driver_runs((13, 0), cu135) and under_minor_compatibility((13, 0), cu135)
    assert not driver_runs((12, 9), cu135) and not under_minor_compatibility((12, 9), cu135)
    assert driver_runs((14, 0), cu135) and not under_minor_compatibility((14, 0), cu135)
    ptx = CudaNeed("ptx", (13, 5), "compute_90 PTX, ISA 9.5")
    assert not driver_runs((13, 2), ptx) and driver_runs((13, 5), ptx) and driver_runs((14, 0), ptx)
    assert ptx.words == "CUDA 13.5 (for its compute_90 PTX, ISA 9.5)"


@pytest.mark.parametrize(
    ("value", "cuda"), [(12040, (12, 4)), (13020, (13, 2)), (11080, (11, 8)), (0, None), (-1, None)]
)
def test_the_drivers_integer(value: int, cuda: tuple[int, int] | None) -> None:
    assert parse_driver_version(value) == cuda


def test_what_a_cuda_only_wheel_needs_on_a_cuda_torch() -> None:
    from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild
    from torchwheel.torchabi.cuda_driver import build_need

    cu130 = TorchBuild("cuda", 13, 0)
    need = build_need(frozenset({TorchBuild("cuda", 13)}), cu130, "torch 2.14.1+cu130")
    assert need == CudaNeed("runtime", (13, 0), "torch 2.14.1+cu130, a CUDA 13 build")
    assert build_need(ANY_BUILD, cu130, "t") is None  # loads on every build: needs no CUDA of torch's
    assert build_need(frozenset({TorchBuild("cpu"), TorchBuild("cuda", 13)}), cu130, "t") is None
    assert build_need(frozenset({TorchBuild("cuda", 13)}), TorchBuild("cpu"), "t") is None
    assert build_need(None, cu130, "t") is None
