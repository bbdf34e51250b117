"""``torchabi.accelerators``: the CUDA runtime a requirement installs, read the one way for a
torch's METADATA (its build) and an extension's (what it brings, what it claims), on the
requirement lines PyPI's torch wheels publish (``fixtures/metadata/torch/``, copied verbatim).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.selection.target import torch_build_of
from torchwheel.torchabi.accelerators import (
    cuda_runtime_required,
    platform_markers,
    required_runtimes,
    runtime_requirement,
    torch_build_of_requirements,
)
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.wheel.metadata import parse_metadata

from ..lib.helpers import FIXTURES

METADATA = FIXTURES / "metadata" / "torch"


def _requirements(wheel: str) -> tuple[Requirement, ...]:
    return parse_metadata((METADATA / f"{wheel}.METADATA").read_text()).requirements


def _linux(release: str) -> str:
    return f"torch-{release}-cp311-cp311-manylinux_2_28_x86_64.whl"


@pytest.mark.parametrize(
    ("release", "build"),
    [("2.12.1", "cu130"), ("2.13.0", "cu130"), ("2.14.1", "cu130"), ("2.15.0", "cu132")],
)
def test_torchs_own_requirements_name_its_cuda_build(release: str, build: str) -> None:
    """PyPI's Linux torch requires ``cuda-toolkit[...]==13.x.y`` since 2.12.1: the toolkit's
    version is the build (13.2.2: cu132), where nvidia-cuda-runtime-cuNN once said it."""
    found = torch_build_of_requirements(_requirements(_linux(release)), platform_markers("linux"))
    assert found is not None and found.backend == build
    assert str(found) == f"CUDA 13.{build[-1]} build ({build})"


@pytest.mark.parametrize("platform", ["win_amd64", "macosx_14_0_arm64"])
def test_the_linux_only_line_says_nothing_on_windows_or_macos(platform: str) -> None:
    """PyPI's Windows and macOS torch 2.15.0 (CPU builds) carry the very same line, under
    ``platform_system == "Linux"``: read for their platform, it names no CUDA build."""
    reqs = _requirements(f"torch-2.15.0-cp311-cp311-{platform}.whl")
    assert reqs == _requirements(_linux("2.15.0"))  # the lines are the same ...
    system = "win32" if platform.startswith("win") else "darwin"
    assert torch_build_of_requirements(reqs, platform_markers(system)) is None  # ... their markers differ
    assert torch_build_of_requirements(reqs, None) is None  # unknown environment: only unconditional lines


def test_components_come_from_the_extras_and_the_major_from_the_version() -> None:
    reqs = _requirements(_linux("2.15.0"))
    (toolkit,) = [found for r in reqs if (found := runtime_requirement(r)) is not None]
    assert (toolkit.major, toolkit.minor) == (13, 2)
    assert "curand" not in toolkit.components  # 2.15.0 dropped the curand extra
    assert {"cudart", "cublas", "cublasLt", "nvrtc", "nvJitLink", "cupti", "cufft", "cusparse"} <= set(
        toolkit.components
    )
    brought = {c: m for c, m, _ in required_runtimes(reqs, "linux")}
    assert brought["cudart"] == 13 and brought["nvJitLink"] == 13
    assert list(required_runtimes(reqs, "win32")) == []  # not installed on Windows


def test_2_12_1_brings_cublas_by_a_line_of_its_own() -> None:
    """2.12.1's cuda-toolkit line has no ``cublas`` extra: ``nvidia-cublas<=13.1.1.3,>=13.1.0.3``
    brings it, and both are read as CUDA 13."""
    brought = {(c, m) for c, m, _ in required_runtimes(_requirements(_linux("2.12.1")), "linux")}
    assert {("cudart", 13), ("cublas", 13), ("cublasLt", 13)} <= brought
    toolkit = runtime_requirement(Requirement(str(_requirements(_linux("2.12.1"))[7])))
    assert toolkit is not None and "cublas" not in toolkit.components


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("nvidia-cuda-runtime-cu12==12.8.90", TorchBuild("cuda", 12, 8)),  # torch 2.8.0's: cu128
        ("nvidia-cuda-runtime==13.0.96", TorchBuild("cuda", 13, 0)),
        ("nvidia-cuda-runtime-cu12", TorchBuild("cuda", 12)),  # the suffix says the major only
        ("cuda-toolkit[cudart]>=13.0", TorchBuild("cuda", 13)),  # a bound, not a build
        ("cuda-toolkit[cublas]==13.2.2", None),  # installs no CUDA runtime
        ("cuda-toolkit==13.2.2", None),  # no extras: installs nothing
        ("nvidia-cublas-cu12", None),
        ("cuda-toolkit[cudart]==13.0.3; extra == 'gpu'", None),  # only an extra asks
    ],
)
def test_old_and_new_names(line: str, expected: TorchBuild | None) -> None:
    assert torch_build_of_requirements([Requirement(line)], platform_markers("linux")) == expected


def test_a_torch_read_from_its_metadata_alone(tmp_path: Path) -> None:
    """No ``version.py``, no local label (PyPI's torch is ``2.15.0``): the requirement lines,
    evaluated with the environment's markers, are the build; on Windows they say nothing,
    which stays unknown (never a CPU guess)."""
    lines = [str(r) for r in _requirements(_linux("2.15.0"))]
    linux = {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "python_version": "3.11",
    }
    windows = {**linux, "sys_platform": "win32", "platform_system": "Windows", "os_name": "nt"}
    found = torch_build_of(Version("2.15.0"), None, lines, linux)
    assert found == TorchBuild("cuda", 13, 2)
    assert torch_build_of(Version("2.15.0"), None, lines, windows) is None
    assert cuda_runtime_required(_requirements(_linux("2.15.0")), windows) is None
    assert torch_build_of(Version("2.15.0+cpu"), None, lines, linux) == TorchBuild("cpu")  # the label first
