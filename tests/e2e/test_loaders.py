"""The package's own loader decides, and one floor for every import (issue 46), on real op
libraries built against the real torch 2.13 headers of ``.venv``.

``fixtures/real_ext/oplib``: the everyday op library, ``#include <torch/extension.h>`` (which
brings pybind11, so it imports ``Py*``), ``TORCH_LIBRARY``, no ``PyInit__C``, built by
``CppExtension("twdemo_oplib._C", ...)`` and loaded by its ``__init__.py`` with
``torch.ops.load_library``: no TW304, its op runs; the same library imported with
``from . import _C`` is TW304, and the import really fails.

``fixtures/real_ext/mixed``: shims torch 2.10 first shipped (a target-2.10 translation unit)
plus one unstable ``at::`` symbol (a second unit without the target): dated from 2.10 by
every command, never from the older torches that export its unstable symbol.

Cost: the two wheels build once (~1 min each on a busy machine) into ``.cache/real_ext``;
the tests then take a few seconds plus two interpreters that import torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import pytest

from ..lib.helpers import REPO, fixture_wheels_module, load_script, torchwheel

CPU_ENV = REPO / ".venv"


@pytest.fixture(scope="module")
def built() -> dict[str, Path]:
    real = load_script("torchwheel_real_ext_build", REPO / "fixtures" / "real_ext" / "build.py")
    wheels: dict[str, Path] = real.build_real_wheels(
        REPO / ".cache" / "real_ext", str(CPU_ENV / "bin" / "python"), names=("oplib", "mixed")
    )
    return wheels


def _codes(wheel: Path, cwd: Path) -> tuple[int, dict[str, list[str]]]:
    result = torchwheel("check", "--format", "json", "--no-config", str(wheel), cwd=cwd)
    found: dict[str, list[str]] = {}
    for f in json.loads(result.stdout)["findings"]:
        found.setdefault(f["code"], []).append(f["message"])
    return result.returncode, found


def _rewrap(wheel: Path, out: Path, init: bytes, dist: str = "twdemo_oplib") -> Path:
    """The same built library in a wheel of ``dist`` whose ``__init__.py`` is ``init``."""
    with zipfile.ZipFile(wheel) as zf:
        (so,) = [n for n in zf.namelist() if n.endswith(".so")]
        lib = out.parent / f"{dist}.so"
        lib.write_bytes(zf.read(so))
    fw = fixture_wheels_module()
    spec = fw.WheelSpec(
        out.stem, dist, "cp311-cp311-linux_x86_64", ((f"{dist}/{so.split('/', 1)[1]}", "lib"),),
        requires=("torch==2.13.*",), extra=((f"{dist}/__init__.py", init),),
    )  # fmt: skip
    return Path(fw.write_wheel(out / f"{dist}-1.0.0-cp311-cp311-linux_x86_64.whl", spec, {"lib": lib}))


def _run_in_torch(site: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [str(CPU_ENV / "bin" / "python"), "-W", "ignore", "-c", code],
        capture_output=True, text=True, timeout=300, cwd=cwd, env={**env, "PYTHONPATH": str(site)},
    )  # fmt: skip


def _install(wheel: Path, target: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target)]
    subprocess.run([*cmd, str(wheel)], check=True, capture_output=True, timeout=300)
    return target


# --------------------------------------------------------------------------------------------
# an op library loaded by path: no module hook needed


def test_the_op_library_is_what_the_issue_describes(built: dict[str, Path], tmp_path: Path) -> None:
    """No PyInit, Py* imports (pybind11 from torch/extension.h), named as a module."""
    doc = json.loads(torchwheel("show", "--json", str(built["oplib"]), cwd=tmp_path).stdout)
    (file,) = doc["wheels"][0]["files"]
    assert file["member"] == "twdemo_oplib/_C.cpython-311-x86_64-linux-gnu.so"
    (s,) = file["slices"]
    assert s["python"]["hooks"] == []
    assert s["python"]["verdict"] != "not-python"  # it calls CPython's API
    assert file["reach"]["how"] == "library" and file["reach"]["when"] == "import"


def test_loaded_by_path_it_is_no_module(built: dict[str, Path], tmp_path: Path) -> None:
    """Tagged for its build torch: `check` exit 0, no TW304, and its op runs in torch 2.13."""
    untagged = _codes(built["oplib"], tmp_path)[1]
    assert "TW304" not in untagged and "TW302" not in untagged, untagged
    tagged_dir = tmp_path / "tagged"
    tag = torchwheel("tag", "-w", str(tagged_dir), "--build-torch", "2.13", str(built["oplib"]), cwd=tmp_path)
    assert tag.returncode == 0, tag.stdout + tag.stderr
    (tagged,) = tagged_dir.glob("*.whl")
    code, found = _codes(tagged, tmp_path)
    assert (code, "TW304" in found) == (0, False), found
    site = _install(tagged, tmp_path / "site")
    run = _run_in_torch(
        site,
        "import torch, twdemo_oplib\nprint(torch.ops.twdemo_oplib.twice(torch.arange(3.0)).tolist())",
        tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[0.0, 2.0, 4.0]"


def test_imported_as_a_module_it_is_tw304(built: dict[str, Path], tmp_path: Path) -> None:
    """The same library behind `from . import _C`: TW304, and Python's import says why."""
    wheel = _rewrap(built["oplib"], tmp_path, b"import torch\nfrom . import _C\n")
    code, found = _codes(wheel, tmp_path)
    assert code == 1 and "TW304" in found, found
    assert "PyInit__C" in found["TW304"][0]
    run = _run_in_torch(_install(wheel, tmp_path / "site"), "import twdemo_oplib", tmp_path)
    assert run.returncode != 0 and "dynamic module does not define module export function" in run.stderr
    index = torchwheel("index", str(wheel.parent), "-o", str(tmp_path / "index"), cwd=tmp_path)
    assert index.returncode == 0, index.stderr
    assert f"note: {wheel.name}: in no per-torch index (its code imports" in index.stderr, index.stderr
    assert not list((tmp_path / "index").glob("torch-*/simple/twdemo-oplib"))


# --------------------------------------------------------------------------------------------
# one floor for every import


def _need(wheel: Path, cwd: Path) -> dict[str, Any]:
    doc = json.loads(torchwheel("show", "--format", "json", str(wheel), cwd=cwd).stdout)
    need: dict[str, Any] = doc["wheels"][0]["need"]
    return need


def test_the_floor_of_its_shims_dates_it(built: dict[str, Path], tmp_path: Path) -> None:
    """2.10 shims plus an at:: symbol torch 2.4 already exports: dated from 2.10, by show,
    select, matrix, index and tag alike; and it does load on torch 2.13."""
    wheel = built["mixed"]
    need = _need(wheel, tmp_path)
    assert need["kind"] == "unstable" and need["releases"][0] == "2.10", need
    assert need["summary"] == "unstable, torch 2.10-2.15 (dated by its imports)"
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / wheel.name).write_bytes(wheel.read_bytes())
    assert torchwheel("select", str(folder), "--torch", "2.9", cwd=tmp_path).returncode == 1
    chosen = torchwheel("select", str(folder), "--torch", "2.13", cwd=tmp_path)
    assert chosen.returncode == 0 and f"chose {wheel.name}" in chosen.stdout, chosen.stdout
    grid = json.loads(torchwheel("matrix", "--format", "json", "--torch", "2.9", "--torch", "2.13",
                                 str(folder), cwd=tmp_path).stdout)  # fmt: skip
    cells = grid["wheels"][0]["cells"]
    assert cells["2.9"]["fit"] == "no" and cells["2.13"]["fit"] == "only", cells
    index = torchwheel("index", str(folder), "-o", str(tmp_path / "index"), cwd=tmp_path)
    assert index.returncode == 0, index.stdout + index.stderr
    listed = sorted(p.name for p in (tmp_path / "index").glob("torch-*") if any(p.rglob("*.whl")) or
                    any(p.rglob("index.html")))  # fmt: skip
    assert listed and all(tuple(map(int, n.split("-")[1].split("."))) >= (2, 10) for n in listed), listed
    tagged = torchwheel(
        "tag", "-w", str(tmp_path / "tagged"), "--build-torch", "2.13", str(wheel), cwd=tmp_path
    )
    assert tagged.returncode == 0, tagged.stdout + tagged.stderr
    (out,) = (tmp_path / "tagged").glob("*.whl")
    with zipfile.ZipFile(out) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
        fields = HeaderParser().parsestr(zf.read(name).decode())
    exports = [tuple(map(int, v.split("."))) for v in fields["Torch-ABI-Exports"].split(", ")]
    assert min(exports) == (2, 10), fields["Torch-ABI-Exports"]
    assert _need(out, tmp_path)["releases"] == need["releases"]  # WHEEL says what the binaries said
    site = _install(wheel, tmp_path / "site")
    run = _run_in_torch(site, "import torch, twdemo_mixed\nprint(torch.ops.twdemo_mixed.copy(torch.ones(2)).shape)",
                        tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]


# --------------------------------------------------------------------------------------------
# doctor in real environments, held to a real `import` in a fresh process
#
# Two venvs whose torch is .venv's torch 2.13.0 (CPU), by hard links (as tests/e2e/
# test_doctor.py makes them), with wheels installed by `installer`. "working": the op library
# loaded by path, the mixed library, torchao 0.18.0 (its two CUDA 13 kernel libraries load in
# a `try` that goes on: optional) and a package whose CUDA module is imported in
# `try: ... except ImportError:` with a pure-torch fallback. Each of them imports on this CPU
# torch, so doctor exits 0, with "partly" for the two whose optional parts cannot load.
# "broken": the same plus torchaudio 2.11.0 and torchvision 0.28.0 (CUDA 13 builds: their
# imports fail here) and the op library behind `from . import _C`: the errors a real import
# prints are what `--explain` is given.

TORCH_DEPS = ("torch", "torchgen", "functorch", "sympy", "mpmath", "networkx", "jinja2", "markupsafe",
              "filelock", "fsspec")  # fmt: skip
FALLBACK_INIT = b"""import torch

try:
    from . import _cuda_ext  # the CUDA kernels, where a CUDA build of torch has them
except ImportError:
    _cuda_ext = None


def twice(x):
    return x * 2  # the pure-torch fallback
"""

_IMPORT = r"""
import importlib, json, os, sys, warnings
import torch
out = {}
for name in json.loads(sys.argv[1]):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        said = "imports"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                importlib.import_module(name)
            except BaseException as exc:
                said = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        os.write(w, said.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    out[name] = data.decode() or "the process died"
print(json.dumps(out))
"""


def _published(*names: str) -> list[Path]:
    """Published wheels of ``benchmarks/corpus.toml``, downloaded once (sha256-checked) into
    ``.cache/corpus``: a failed download fails the test."""
    corpus = load_script("torchwheel_corpus", REPO / "benchmarks" / "corpus.py")
    by_name = {e.filename: e for e in corpus.load_corpus()}
    found = []
    for name in names:
        path = corpus.ensure(by_name[name], download=True)
        assert path is not None and path.is_file(), f"{name}: not downloaded"
        found.append(Path(path))
    return found


def _venv(root: Path, wheels: list[Path]) -> Path:
    from ..lib.helpers import fresh_venv, install_into

    python = fresh_venv(root)
    (site,) = (root / "lib").glob("python3*/site-packages")
    (source,) = (CPU_ENV / "lib").glob("python3*/site-packages")
    names = [*TORCH_DEPS, *(p.name for p in source.glob("torch-*.dist-info"))]
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(source / name, site / name, copy_function=os.link)
    os.link(source / "typing_extensions.py", site / "typing_extensions.py")
    for wheel in wheels:
        install_into(python, wheel)
    return python


def _fallback_wheel(tmp: Path) -> Path:
    """A package whose CUDA module (the nvcc library of fixtures/cuda: libtorch_cuda.so,
    libcudart.so.13) is imported in a `try` with a fallback."""
    fw = fixture_wheels_module()
    spec = fw.WheelSpec(
        "fallback", "twdemo_fallback", "cp39-abi3-" + fw.LINUX,
        (("twdemo_fallback/_cuda_ext.abi3.so", "cuda:cu13_torch_cuda.so"),), requires=("torch",),
        extra=(("twdemo_fallback/__init__.py", FALLBACK_INIT),),
    )  # fmt: skip
    return Path(fw.write_wheel(tmp / spec.filename, spec, {}))


@pytest.fixture(scope="module")
def envs(built: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("loaders")
    tag = torchwheel("tag", "-w", str(tmp / "tagged"), "--build-torch", "2.13", str(built["oplib"]), cwd=tmp)
    assert tag.returncode == 0, tag.stdout + tag.stderr
    (oplib,) = (tmp / "tagged").glob("*.whl")
    torchao, torchaudio, torchvision = _published(
        "torchao-0.18.0-cp310-abi3-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        "torchaudio-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torchvision-0.28.0-cp311-cp311-manylinux_2_28_x86_64.whl",
    )
    working = [oplib, built["mixed"], torchao, _fallback_wheel(tmp)]
    imported = _rewrap(built["oplib"], tmp, b"import torch\nfrom . import _C\n", "twdemo_imported")
    return {
        "working": _venv(tmp / "working", working),
        "broken": _venv(tmp / "broken", [*working, torchaudio, torchvision, imported]),
    }


PACKAGES = {
    "working": ("twdemo_oplib", "twdemo_mixed", "torchao", "twdemo_fallback"),
    "broken": ("twdemo_oplib", "twdemo_mixed", "torchao", "twdemo_fallback", "torchaudio", "torchvision",
               "twdemo_imported"),
}  # fmt: skip


@pytest.fixture(scope="module")
def imports(envs: dict[str, Path]) -> dict[str, dict[str, str]]:
    """Package -> "imports" or the error a real `import` raised, per env (fresh processes)."""
    out = {}
    for name, python in envs.items():
        done = subprocess.run(
            [str(python), "-W", "ignore", "-c", _IMPORT, json.dumps(PACKAGES[name])],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        out[name] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _doctor(python: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = torchwheel("doctor", "--python", str(python), "--format", "json", *args)
    assert result.returncode in (0, 1), result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, doc


def test_partly_is_a_working_import(envs: dict[str, Path], imports: dict[str, dict[str, str]]) -> None:
    """torchao 0.18.0 and the try/except package import on the CPU torch: doctor says
    "partly" (naming the optional CUDA parts), never "no"; with nothing else failing, exit 0."""
    assert imports["working"] == dict.fromkeys(PACKAGES["working"], "imports"), imports["working"]
    code, doc = _doctor(envs["working"])
    states = {d["name"]: d["state"] for d in doc["distributions"]}
    assert states == {"twdemo_oplib": "loads", "twdemo_mixed": "loads", "torchao": "partly",
                      "twdemo_fallback": "partly"}, states  # fmt: skip
    assert code == 0
    torchao = next(d for d in doc["distributions"] if d["name"] == "torchao")
    assert torchao["need"]["optional"][0]["files"] == [
        "torchao/_C_cutlass_90a.abi3.so", "torchao/_C_mxfp8.cpython-310-x86_64-linux-gnu.so"
    ]  # fmt: skip
    assert "CUDA 13 build of torch" in torchao["partly"][0] and "optional" in torchao["partly"][0]
    assert "loads partly" in doc["summary"]
    text = torchwheel("doctor", "--python", str(envs["working"])).stdout
    assert "torchao 0.18.0: loads PARTLY" in text
    github = torchwheel("doctor", "--python", str(envs["working"]), "--format", "github").stdout
    assert "::warning title=torchwheel doctor%3A torchao 0.18.0::" in github and "::error" not in github
    markdown = torchwheel("doctor", "--python", str(envs["working"]), "--format", "markdown").stdout
    assert "`loads PARTLY: " in markdown


def test_every_row_agrees_with_import(envs: dict[str, Path], imports: dict[str, dict[str, str]]) -> None:
    """In the broken env too: what imports is "loads" or "partly", what does not is "no"."""
    truth = imports["broken"]
    assert truth["torchaudio"].startswith("OSError: Could not load this library: "), truth
    assert truth["torchvision"] == "RuntimeError: operator torchvision::nms does not exist", truth
    assert "dynamic module does not define module export function (PyInit__C)" in truth["twdemo_imported"]
    code, doc = _doctor(envs["broken"])
    states = {d["name"]: d["state"] for d in doc["distributions"]}
    wrong = {
        n: (states[n], truth[n])
        for n in truth
        if (states[n] in ("loads", "partly")) != (truth[n] == "imports")
    }
    assert wrong == {}, wrong
    assert code == 1


def _explain(python: Path, asked: str) -> tuple[int, dict[str, Any]]:
    code, doc = _doctor(python, "--explain", asked)
    explained: dict[str, Any] = doc["explain"]
    return code, explained


def test_explain_what_torch_says(envs: dict[str, Path], imports: dict[str, dict[str, str]]) -> None:
    """torch.ops.load_library's words on a torchaudio CUDA library, and the op torchvision's
    import could not find: the distribution and the CUDA-build reason."""
    code, e = _explain(envs["broken"], imports["broken"]["torchaudio"])
    assert code == 1 and e["distribution"]["name"] == "torchaudio", e
    assert e["member"] == "torchaudio/lib/_torchaudio.abi3.so" and e["reach"].startswith("loaded by path")
    assert "needs a CUDA 13 build of torch, the target's torch is a CPU build" in e["file_reason"]
    code, e = _explain(envs["broken"], imports["broken"]["torchvision"])
    assert code == 1 and e["operator"] == "torchvision::nms" and e["distribution"]["name"] == "torchvision"
    assert "torchvision/_C.so" in e["candidates"] and "CUDA 13 build of torch" in e["file_reason"]
    text = torchwheel(
        "doctor", "--python", str(envs["broken"]), "--explain", imports["broken"]["torchvision"]
    ).stdout
    assert "owner: torchvision 0.28.0" in text and "needs a CUDA 13 build of torch" in text, text


def test_explain_the_other_forms(envs: dict[str, Path], imports: dict[str, dict[str, str]]) -> None:
    """A module without its hook, a bare library path, and the loader's 'cannot open shared
    object file' with the file that needed it."""
    code, e = _explain(
        envs["broken"], "ImportError: " + imports["broken"]["twdemo_imported"].split(": ", 1)[1]
    )
    assert code == 1 and e["hook"] == "PyInit__C" and e["distribution"]["name"] == "twdemo_imported", e
    assert e["reach"].startswith("imported as a module")
    (site,) = (envs["broken"].parent.parent / "lib").glob("python3*/site-packages")
    kernel = site / "torchao" / "_C_mxfp8.cpython-310-x86_64-linux-gnu.so"
    code, e = _explain(envs["broken"], str(kernel))
    assert code == 0 and e["distribution"]["state"] == "partly" and e["file_fit"] == "no", e
    assert "optional" in e["reach"]
    said = f"OSError: {site}/torchvision/_C.so: libc10_cuda.so: cannot open shared object file: No such file or directory"
    code, e = _explain(envs["broken"], said)
    assert code == 1 and e["library"] == "libc10_cuda.so" and e["distribution"]["name"] == "torchvision", e
    assert "only by its CUDA builds" in e["library_is"]
