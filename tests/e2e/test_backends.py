"""Issue 17: loads on *which* torch build. The CUDA fixtures are real nvcc output
(fixtures/cuda); targets are the real CPU torch of the test venv, stub torch distributions
(metadata and ``version.py`` only, never imported) and plans with ``--torch-backend``."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ..lib.helpers import fixture_wheels_module, torchwheel
from ..lib.publish_helpers import pip, uv, venv_with_torch

PLAN = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")
CUDA = ("cuda13", "cuda12", "cuda_flavours")


@pytest.fixture(scope="module")
def folder(fixture_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cuda")
    for name in CUDA:
        (out / fixture_wheels[name].name).write_bytes(fixture_wheels[name].read_bytes())
    return out


def _chosen(*args: str) -> dict[str, str | None]:
    result = torchwheel("select", "--format", "json", *args)
    doc = json.loads(result.stdout)
    every_chosen = all(p["outcome"] == "chosen" for p in doc["projects"])
    assert result.returncode == (0 if every_chosen else 1), result.stderr
    return {p["name"]: (p["chosen"]["name"] if p["chosen"] else None) for p in doc["projects"]}


@pytest.mark.parametrize(
    ("backend", "loads"),
    [
        ("cpu", {"wflavours"}),
        ("cu128", {"wcuda12"}),
        ("cu126", {"wcuda12"}),
        ("cu130", {"wcuda13", "wflavours"}),
    ],
)
def test_select_by_torch_backend(folder: Path, backend: str, loads: set[str]) -> None:
    chosen = _chosen(*PLAN, "--torch-backend", backend, str(folder))
    assert {name for name, c in chosen.items() if c} == loads


def test_the_real_cpu_torch_rejects_a_cuda_wheel_with_the_reason(folder: Path) -> None:
    """The test venv's torch is 2.13.0+cpu: its version.py says so (cuda = None)."""
    result = torchwheel("select", str(folder / next(folder.glob("wcuda13-*.whl")).name))
    assert result.returncode == 1
    assert "needs a CUDA 13 build of torch, the target's torch is a CPU build" in result.stdout
    compat = torchwheel(
        "compat", "--against", "installed", "--format", "json", str(next(folder.glob("wcuda13-*")))
    )
    doc = json.loads(compat.stdout)
    assert compat.returncode == 1 and doc["torch"]["backend"] == "cpu"
    assert "CPU build" in doc["inputs"][0]["verdict"]["reason"]


@pytest.mark.parametrize(("torch", "cuda", "loads"), [("2.13.0+cu130", "13.0", {"wcuda13", "wflavours"}),
                                                      ("2.13.0+cu128", "12.8", {"wcuda12"}),
                                                      ("2.13.0+cpu", None, {"wflavours"})])  # fmt: skip
def test_a_stub_torch_is_judged_by_its_version_py(
    folder: Path, tmp_path: Path, torch: str, cuda: str | None, loads: set[str]
) -> None:
    python = venv_with_torch(tmp_path / "venv", torch, tmp_path / "stubs", cuda=cuda if cuda else "")
    chosen = _chosen("--python", str(python), str(folder))
    assert {name for name, c in chosen.items() if c} == loads


def test_a_torch_with_no_version_py_is_judged_by_its_requirements(folder: Path, tmp_path: Path) -> None:
    """Issue 48: PyPI's torch 2.15.0 (no local label) as its METADATA alone says it, the
    requirement lines copied verbatim: ``cuda-toolkit[...]==13.2.2`` is a CUDA 13.2 build
    (cu132), so the CUDA 13 wheels load and the CUDA 12 one does not; before, "unknown build"."""
    torch_requirement = fixture_wheels_module().torch_requirement
    lines = (torch_requirement("2.15.0"), torch_requirement("2.15.0", "nvidia-cudnn-cu13"))
    python = venv_with_torch(tmp_path / "venv", "2.15.0", tmp_path / "stubs", requires=lines)
    chosen = _chosen("--python", str(python), str(folder))
    assert {name for name, c in chosen.items() if c} == {"wcuda13", "wflavours"}
    doc = json.loads(torchwheel("select", "--format", "json", "--python", str(python), str(folder)).stdout)
    (cuda12,) = [p for p in doc["projects"] if p["name"] == "wcuda12"]
    assert "CUDA 13.2 build (cu132)" in json.dumps(cuda12)


def test_tag_writes_the_build_and_select_reads_it(folder: Path, tmp_path: Path) -> None:
    expected = {"wcuda13": "cuda-13", "wcuda12": "cuda-12", "wflavours": "cpu, cuda-13, rocm, xpu"}
    result = torchwheel("tag", "-w", str(tmp_path), *map(str, sorted(folder.glob("*.whl"))))
    assert result.returncode == 0, result.stderr
    for wheel in tmp_path.glob("*.whl"):
        with zipfile.ZipFile(wheel) as zf:
            (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/WHEEL")]
            text = zf.read(name).decode()
        assert f"Torch-Build: {expected[wheel.name.split('-')[0]]}\n" in text, text
    for backend, loads in (("cpu", {"wflavours"}), ("cu130", {"wcuda13", "wflavours"})):
        chosen = _chosen(*PLAN, "--torch-backend", backend, str(tmp_path))
        assert {name for name, c in chosen.items() if c} == loads


def test_matrix_has_a_backend_axis(folder: Path) -> None:
    doc = json.loads(torchwheel("matrix", "--format", "json", str(folder)).stdout)
    assert doc["backends"] == ["cpu", "cu128", "cu130", "rocm7.1", "xpu"]  # wflavours' `_cpu` on ROCm, XPU
    rows = {w["file"].split("-")[0]: w for w in doc["wheels"]}
    assert rows["wcuda13"]["by_backend"]["cu130"]["2.13"]["fit"] == "loads"
    assert rows["wcuda13"]["by_backend"]["cpu"]["2.13"]["fit"] == "no"
    # the `_cpu` flavour needs no accelerator: the fallback on a torch it has no build for (ROCm, XPU)
    assert rows["wflavours"]["torch_build"] == "cpu, cuda-13, rocm, xpu"
    markdown = torchwheel("matrix", "--format", "markdown", str(folder)).stdout
    assert markdown.count("| wheel |") == 5 and "**torch build cu130: CUDA 13.0 build (cu130)**" in markdown


def test_index_has_per_backend_indexes_pip_and_uv_take_the_right_file(folder: Path, tmp_path: Path) -> None:
    tagged = tmp_path / "tagged"
    assert torchwheel("tag", "-w", str(tagged), *map(str, sorted(folder.glob("*.whl")))).returncode == 0
    site = tmp_path / "site"
    result = torchwheel("index", "-v", str(tagged), "-o", str(site))
    assert result.returncode == 0, result.stderr
    assert "torch-2.13-cu130/simple" in result.stdout
    plain = (
        (site / "torch-2.13" / "simple" / "index.html").read_text() if (site / "torch-2.13").exists() else ""
    )
    assert "wcuda13" not in plain  # the build-agnostic index lists no CUDA-only wheel
    assert (site / "torch-2.13-cu130" / "simple" / "wcuda13" / "index.html").is_file()
    assert not (site / "torch-2.13-cu130" / "simple" / "wcuda12").exists()
    python = venv_with_torch(tmp_path / "venv", "2.13.0+cu130", tmp_path / "stubs", cuda="13.0")
    url = (site / "torch-2.13-cu130" / "simple").as_uri()
    got = pip(python, "--index-url", url, "wcuda13", "wflavours")
    assert got.returncode == 0, got.stderr
    missing = pip(python, "--index-url", url, "wcuda12")
    assert missing.returncode == 1  # not on the CUDA 13 index: pip finds nothing to install
    uvpy = venv_with_torch(tmp_path / "uvvenv", "2.13.0+cu130", tmp_path / "stubs", cuda="13.0")
    got = uv(
        "pip", "install", "--python", str(uvpy), "--index-url", url, "wcuda13", cache=tmp_path / "uvcache"
    )
    assert got.returncode == 0, got.stderr
