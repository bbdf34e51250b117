"""Issue 17, optional GPU in plans: ``select --gpu sm_90`` (or the GPU ``nvidia-smi``
reports, when there is one) makes the verdict check the wheel's GPU code: a cubin for the
GPU's architecture family, PTX the driver can JIT for it, an ``a`` arch only on exactly that
GPU. A tagged wheel says its code in ``WHEEL Torch-GPU``; an untagged one is read from its
binaries (the nvcc fixtures: ``cu13_torch_cuda.so`` has sm_75, sm_80, sm_90a, sm_100f, sm_120
and PTX compute_120; ``cu13_cubins_only.so`` sm_80 and sm_90, no PTX)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from torchwheel.torchabi.cuda_archs import parse_gpu, runs_on

from ..lib.helpers import torchwheel

PLAN = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")
WHEELS = {"cuda13": "wcuda13", "tw705": "w705", "clean": "demo-stable"}


@pytest.mark.parametrize(
    ("code", "gpu", "runs"),
    [
        (["sm_80"], "sm_86", True),
        (["sm_80"], "9.0", False),
        (["sm_90a"], "sm_90", True),
        (["sm_90a"], "sm_100", False),
        (["sm_100f"], "10.3", True),
        (["sm_100f"], "12.0", False),
        (["compute_80"], "sm_120", True),  # the driver JITs PTX for newer GPUs
        (["compute_120"], "sm_90", False),
        (["compute_90a"], "sm_100", False),
        (["sm_75", "compute_120"], "sm_61", False),
    ],
)
def test_which_code_runs_on_which_gpu(code: list[str], gpu: str, runs: bool) -> None:
    assert runs_on(code, parse_gpu(gpu)) is runs


@pytest.fixture(scope="module")
def folder(fixture_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gpu")
    for name in WHEELS:
        shutil.copy(fixture_wheels[name], out)
    return out


def _fits(*args: str) -> dict[str, str]:
    result = torchwheel("select", "--format", "json", *PLAN, *args)
    doc = json.loads(result.stdout)
    every_chosen = all(p["outcome"] == "chosen" for p in doc["projects"])
    assert result.returncode == (0 if every_chosen else 1), result.stderr
    return {p["name"]: p["chosen"]["file"] if p["chosen"] else "" for p in doc["projects"]}


@pytest.mark.parametrize(
    ("gpu", "loads"),
    [
        (None, {"wcuda13", "w705", "demo-stable"}),  # no GPU known: not judged
        ("sm_86", {"wcuda13", "w705", "demo-stable"}),  # both have sm_80 cubins
        ("sm_90", {"wcuda13", "w705", "demo-stable"}),  # sm_90a, sm_90
        ("sm_120", {"wcuda13", "demo-stable"}),  # w705 has nothing for Blackwell
        ("sm_61", {"demo-stable"}),  # neither has Pascal code; the CPU wheel needs none
    ],
)
def test_select_judges_the_gpu_code(folder: Path, tmp_path: Path, gpu: str | None, loads: set[str]) -> None:
    backend = ("--torch-backend", "cu130")
    args = (*backend, "--gpu", gpu) if gpu else backend
    chosen = {n for n, f in _fits(*args, str(folder)).items() if f}
    assert chosen == loads
    tagged = tmp_path / "tagged"
    assert torchwheel("tag", "-w", str(tagged), *map(str, sorted(folder.glob("*.whl")))).returncode == 0
    assert {n for n, f in _fits(*args, str(tagged)).items() if f} == loads  # from WHEEL Torch-GPU


def test_the_reason_names_the_gpu_and_the_code(folder: Path) -> None:
    result = torchwheel("select", *PLAN, "--torch-backend", "cu130", "--gpu", "sm_120", str(folder))
    assert "has no GPU code that runs on sm_120 (it has sm_80, sm_90)" in result.stdout
    assert "GPU sm_120" in result.stdout  # the target line says which GPU was judged


def test_tag_writes_torch_gpu(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    assert torchwheel("tag", "-w", str(tmp_path), str(fixture_wheels["cuda13"])).returncode == 0
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read("wcuda13-1.0.0.dist-info/WHEEL").decode()
    assert "Torch-GPU: sm_75, sm_80, sm_90a, sm_100f, sm_120, compute_120\n" in text
    clean = tmp_path / "clean"
    assert torchwheel("tag", "-w", str(clean), str(fixture_wheels["clean"])).returncode == 0
    with zipfile.ZipFile(next(clean.glob("*.whl"))) as zf:
        assert b"Torch-GPU" not in zf.read("demo_stable-1.0.0.dist-info/WHEEL")  # no CUDA code


@pytest.mark.parametrize("bad", ["sm90a", "gfx90a", "90a"])
def test_a_bad_gpu_is_one_line_exit_2(folder: Path, bad: str) -> None:
    result = torchwheel("select", *PLAN, "--gpu", bad, str(folder))
    assert result.returncode == 2 and "compute capability" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_interpreter_target_takes_nvidia_smis_gpu_when_there_is_one(folder: Path) -> None:
    """Never required: on a machine without nvidia-smi (this one, CI) no GPU is judged; with
    one, the target names the GPU it reported."""
    result = torchwheel("select", "--format", "json", str(folder / next(folder.glob("w705-*")).name))
    description = json.loads(result.stdout)["target"]["description"]
    assert ("(nvidia-smi)" in description) is (shutil.which("nvidia-smi") is not None), description
