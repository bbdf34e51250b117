"""The short form of ``benchmarks/loadtruth.py``: the dynamic loader referees torchwheel's verdict.

Two real torch environments, both made by ``scripts/dev-setup``: ``.venv`` (torch 2.13.0, a CPU
build) and ``.venv-cu130`` (torch 2.14.1, a CUDA 13 build with its nvidia-* libraries). In each,
a fresh interpreter imports torch and opens a wheel's libraries with ``ctypes.CDLL(RTLD_NOW)``;
whatever the loader does is the truth ``select --python`` must agree with. A missing env fails
the test (never a skip): a skip here would hide exactly the verdict it exists to check.

The wheels: ``cu13_torch_cuda.so`` (nvcc 13, committed in ``fixtures/cuda/bin``; DT_NEEDED
``libtorch_cuda.so``, ``libc10_cuda.so``, ``libcudart.so.13``; its constructor registers its
fatbins with the CUDA 13 runtime) packed beside the real stable-ABI extension of
``fixtures/real_ext/stable`` (torch headers, ``BuildExtension``, target 2.10) in one untagged
wheel that requires a bare ``torch``: the layout of xformers, vllm and torchaudio, whose CUDA
need nothing but the binaries tell (the known defect: such a wheel reported as loading on a CPU
torch; ``benchmarks/loadtruth.py`` shows it on the published wheels).
Then the nvcc library alone (no torch symbols at all), and the real stable extension alone,
which must load, and be chosen, on both.

The nvcc library calls two stand-ins for torch_cuda symbols (``tw_torch_cuda_stub``,
``tw_c10_cuda_stub``, from the stub libraries it was linked against); a real torch has
neither, so a two-function library compiled here provides them, loaded first. Everything else
it needs comes from the real torch and CUDA runtime.

Cost: ~35 s (six probes and six ``select`` runs, each importing a torch); the real extension
builds once in ~20 s into ``.cache/real_ext`` (shared with tests/e2e/test_real_torch.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ..lib.helpers import REPO, fixture_wheels_module, load_script, torchwheel

CPU_ENV = REPO / ".venv"
CUDA_ENV = REPO / ".venv-cu130"
SETUP = "run `bash scripts/dev-setup`"
STANDINS = "void tw_torch_cuda_stub(void) {}\nvoid tw_c10_cuda_stub(void) {}\n"

_PROBE = r"""
import ctypes, json, os, sys
import torch
out = {"torch": torch.__version__, "cuda": torch.version.cuda}
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_GLOBAL)
for path in sys.argv[2:]:
    try:
        ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        out[path] = "loads"
    except OSError as exc:
        out[path] = str(exc).splitlines()[0]
print(json.dumps(out))
"""


def _env_python(env: Path, torch: str, cuda: str | None) -> Path:
    """The env's interpreter, after checking it holds the torch this test is about."""
    python = env / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{env.name} is missing: {SETUP}")
    probe = "import json, torch; print(json.dumps([torch.__version__, torch.version.cuda]))"
    run = subprocess.run(
        [str(python), "-W", "ignore", "-c", probe], capture_output=True, text=True, timeout=120
    )
    if run.returncode != 0:
        pytest.fail(f"{env.name}: import torch fails ({run.stderr.strip()[-300:]}): {SETUP}")
    got = json.loads(run.stdout.strip().splitlines()[-1])
    if got != [torch, cuda]:
        pytest.fail(f"{env.name} has torch {got[0]} (CUDA {got[1]}), not {torch} (CUDA {cuda}): {SETUP}")
    return python


@pytest.fixture(scope="module")
def envs() -> dict[str, Path]:
    return {
        "cpu": _env_python(CPU_ENV, "2.13.0+cpu", None),
        "cu130": _env_python(CUDA_ENV, "2.14.1+cu130", "13.0"),
    }


# wheel -> env -> does it load (the truth the loader must show, and select must agree with)
TRUTH = {
    "stable_cu13": {"cu130": True, "cpu": False},
    "cuda13": {"cu130": True, "cpu": False},
    "stable": {"cu130": True, "cpu": True},
}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """wheel name -> its file: the nvcc library alone, beside the real stable extension (the
    xformers layout: a stable-ABI wheel whose CUDA 13 need only the binaries tell), and the
    real stable extension alone."""
    fw = fixture_wheels_module()
    out = tmp_path_factory.mktemp("loadtruth")
    real = load_script("torchwheel_real_ext_build", REPO / "fixtures" / "real_ext" / "build.py")
    built = real.build_real_wheels(
        REPO / ".cache" / "real_ext", str(CPU_ENV / "bin" / "python"), names=("stable",)
    )
    ext = out / "_C.abi3.so"
    with zipfile.ZipFile(built["stable"]) as zf:
        ext.write_bytes(zf.read("twdemo_stable/_C.abi3.so"))
    tag = "cp39-abi3-" + fw.LINUX
    specs = {
        "stable_cu13": fw.WheelSpec(
            "loadtruth_stable_cu13",
            "ltstablecu13",
            tag,
            (
                ("ltstablecu13/_C.abi3.so", "real_stable"),
                ("ltstablecu13/_cuda.so", "cuda:cu13_torch_cuda.so"),
            ),
            requires=("torch",),
        ),
        "cuda13": fw.WheelSpec(
            "loadtruth_cu13",
            "ltcuda13",
            tag,
            (("ltcuda13/_ops.so", "cuda:cu13_torch_cuda.so"),),
            requires=("torch",),
        ),
    }
    wheels = {n: fw.write_wheel(out / n / s.filename, s, {"real_stable": ext}) for n, s in specs.items()}
    return {**wheels, "stable": built["stable"]}


@pytest.fixture(scope="module")
def loaded(
    envs: dict[str, Path], wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, dict[str, str]]]:
    """env -> wheel -> library -> "loads" or the loader's first error line. One process per wheel:
    the real extension is in two of them, and one op library registered twice in one process
    crashes it (``TORCH_LIBRARY`` allows one definition per namespace)."""
    work = tmp_path_factory.mktemp("loadtruth_site")
    standins = work / "libtw_standins.so"
    (work / "standins.c").write_text(STANDINS)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(standins), str(work / "standins.c")], check=True)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-compile"]
    libs: dict[str, list[Path]] = {}
    for name, wheel in wheels.items():
        site = work / name
        subprocess.run([*pip, "--target", str(site), str(wheel)], check=True, capture_output=True)
        libs[name] = sorted(site.rglob("*.so"))
        assert libs[name], f"{wheel.name}: no library installed"
    out: dict[str, dict[str, dict[str, str]]] = {}
    for env, python in envs.items():
        out[env] = {}
        for name, paths in libs.items():
            cmd = [str(python), "-W", "ignore", "-c", _PROBE, str(standins), *map(str, paths)]
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            assert run.returncode == 0, f"{env}, {name}: the probe died ({run.returncode}): {run.stderr}"
            doc = json.loads(run.stdout.strip().splitlines()[-1])
            out[env][name] = {p.name: doc[str(p)] for p in paths}
    return out


def _select(python: Path, wheel: Path) -> tuple[int, str]:
    run = torchwheel("select", "--python", str(python), "--format", "json", str(wheel))
    (project,) = json.loads(run.stdout)["projects"]
    assert run.returncode == (0 if project["outcome"] == "chosen" else 1), run.stderr
    return run.returncode, project["candidates"][0]["reason"]


PAIRS = [(w, e) for w, by_env in TRUTH.items() for e in by_env]


@pytest.mark.parametrize(("wheel", "env"), PAIRS)
def test_loader_truth(wheel: str, env: str, loaded: dict[str, dict[str, dict[str, str]]]) -> None:
    """What the verdicts are held to: the libraries that link libtorch_cuda.so load on the CUDA 13
    torch only, and say why on the CPU torch; the real stable extension loads on both."""
    results = loaded[env][wheel]
    if TRUTH[wheel][env]:
        assert set(results.values()) == {"loads"}, results
    else:
        assert results["_cuda.so" if wheel == "stable_cu13" else "_ops.so"].endswith(
            "libtorch_cuda.so: cannot open shared object file: No such file or directory"
        ), results


@pytest.mark.parametrize(("wheel", "env"), PAIRS)
def test_select_agrees_with_the_loader(
    wheel: str,
    env: str,
    envs: dict[str, Path],
    wheels: dict[str, Path],
    loaded: dict[str, dict[str, dict[str, str]]],
) -> None:
    """``select --python ENV`` chooses exactly what loads there; a refusal names the CUDA need."""
    loads = set(loaded[env][wheel].values()) == {"loads"}
    assert loads == TRUTH[wheel][env]
    code, reason = _select(envs[env], wheels[wheel])
    if loads:
        assert code == 0, f"select refuses what the loader loads: {reason}"
    else:
        assert code == 1, f"select chose a wheel the loader refuses ({loaded[env][wheel]}): {reason}"
        assert "CUDA" in reason, reason
