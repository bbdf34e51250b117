"""``torchwheel doctor`` on a real environment, held to the dynamic loader (CI's short form of
``benchmarks/loadtruth_doctor.py``).

The environment is a venv whose torch is the real torch 2.13.0 (CPU) of ``.venv``, by hard
links (nothing copied, every file inside the env, as pip would have put it), with extensions
installed by ``installer`` (a dist-info and a RECORD, as pip writes them): the real stable and
unstable extensions of ``fixtures/real_ext`` (torch headers, ``BuildExtension``), the one that
imports torch 2.14's ``torch_has_storage`` while built against 2.13, the custom autograd
function whose template imports a symbol torch 2.14 changed (it loads now and breaks on the
upgrade, with no torch requirement to stop it), and the nvcc library that links
``libtorch_cuda.so`` and ``libcudart.so.13`` (``fixtures/cuda``). It is built once into
``.cache/doctor-env`` and reused while its inputs are unchanged.

The truth: in the env, a process that imports torch opens each distribution's libraries with
``ctypes.CDLL(RTLD_NOW)`` (one forked child per distribution: one op library registered twice
crashes a process). The upgrade's truth: the same files opened by ``.venv-cu130``'s torch
2.14.1 (CUDA 13), which ``doctor --torch 2.14.1 --torch-backend cu130`` and ``--against``
that torch must predict. A missing env fails the test: ``bash scripts/dev-setup``.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchwheel.cli import cli
from torchwheel.cli.exits import run
from torchwheel.wheel.contents import is_compiled_name

from ..lib.helpers import REPO, fixture_wheels_module, fresh_venv, load_script

CPU_ENV = REPO / ".venv"
CUDA_ENV = REPO / ".venv-cu130"
CACHE = REPO / ".cache" / "doctor-env"
STANDINS = "void tw_torch_cuda_stub(void) {}\nvoid tw_c10_cuda_stub(void) {}\n"
TORCH_TREES = ("torch", "torchgen", "functorch")

_PROBE = r"""
import ctypes, json, os, sys
import torch
if sys.argv[1]:
    ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_GLOBAL)
out = {}
for group in json.loads(sys.argv[2]):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        said = "loads"
        for path in group["files"]:
            try:
                ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
            except OSError as exc:
                said = str(exc).splitlines()[0]
                break
        os.write(w, said.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    out[group["name"]] = data.decode() or "the process died"
print(json.dumps(out))
"""


def _site(prefix: Path) -> Path:
    found = sorted(prefix.glob("lib/python3*/site-packages"))
    if not found:
        pytest.fail(f"{prefix}: no site-packages: run `bash scripts/dev-setup`")
    return found[0]


def _wheels(tmp: Path) -> list[Path]:
    """The extensions: real ones built against .venv's torch, and the nvcc library packed as
    an untagged wheel that requires a bare ``torch`` (xformers' layout)."""
    real = load_script("torchwheel_real_ext_build", REPO / "fixtures" / "real_ext" / "build.py")
    built = real.build_real_wheels(
        REPO / ".cache" / "real_ext",
        str(CPU_ENV / "bin" / "python"),
        names=("stable", "unstable", "future", "autograd"),
    )
    fw = fixture_wheels_module()
    spec = fw.WheelSpec(
        "doctor_cu13", "doctorcu13", "cp39-abi3-" + fw.LINUX, (("doctorcu13/_ops.so", "cuda:cu13_torch_cuda.so"),),
        requires=("torch",),
    )  # fmt: skip
    return [*built.values(), fw.write_wheel(tmp / spec.filename, spec, {})]


def _install(wheel: Path, prefix: Path, python: Path) -> None:
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    site = str(_site(prefix))
    scheme = {"purelib": site, "platlib": site, "headers": str(prefix / "include"),
              "scripts": str(prefix / "bin"), "data": str(prefix)}  # fmt: skip
    with WheelFile.open(wheel) as source:
        install(source, SchemeDictionaryDestination(scheme, str(python), "posix"), {"INSTALLER": b"tests\n"})


def _build(root: Path, wheels: list[Path]) -> Path:
    python = fresh_venv(root)
    site, source = _site(root), _site(CPU_ENV)
    for name in [*TORCH_TREES, *(p.name for p in source.glob("torch-*.dist-info"))]:
        if (source / name).is_dir():
            shutil.copytree(source / name, site / name, copy_function=os.link)
    os.link(source / "typing_extensions.py", site / "typing_extensions.py")  # import torch needs it
    for wheel in wheels:
        _install(wheel, root, python)
    return python


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The env's interpreter, built once per set of inputs (module docstring)."""
    wheels = _wheels(tmp_path_factory.mktemp("doctor_wheels"))
    torch_record = next(_site(CPU_ENV).glob("torch-*.dist-info")) / "RECORD"
    key = hashlib.sha256(torch_record.read_bytes())
    for w in sorted(wheels, key=lambda p: p.name):
        key.update(w.name.encode() + hashlib.sha256(w.read_bytes()).digest())
    root = CACHE / key.hexdigest()[:16]
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").is_file():
            for old in CACHE.iterdir():
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
            _build(root, wheels)
            (root / "done").write_text("")
    return root / "bin" / "python"


@pytest.fixture(scope="module")
def libraries(env: Path) -> dict[str, list[str]]:
    """Distribution name -> its compiled files, from its RECORD (torch itself left out)."""
    site = _site(env.parent.parent)
    out = {}
    for record in sorted(site.glob("*.dist-info/RECORD")):
        name = record.parent.name.split("-")[0]
        if name != "torch":
            rows = csv.reader(record.read_text().splitlines())
            out[name] = [str(site / r[0]) for r in rows if r and is_compiled_name(r[0])]
    assert len(out) == 5, out
    return out


def _truth(python: Path, libraries: dict[str, list[str]], tmp: Path) -> dict[str, str]:
    """Distribution -> "loads" or the loader's first error, in the env of ``python``."""
    standins = tmp / "libtw_standins.so"
    (tmp / "standins.c").write_text(STANDINS)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(standins), str(tmp / "standins.c")], check=True)
    groups = json.dumps([{"name": n, "files": f} for n, f in libraries.items()])
    try:
        done = subprocess.run(
            [str(python), "-W", "ignore", "-c", _PROBE, str(standins), groups],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except OSError as exc:
        pytest.fail(f"{python}: does not run ({exc}): run `bash scripts/dev-setup`")
    if done.returncode != 0:
        pytest.fail(
            f"{python}: the loader probe failed: {done.stderr.strip()[-400:]} (bash scripts/dev-setup)"
        )
    result: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def truth(
    env: Path, libraries: dict[str, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("doctor_truth")
    return {"cpu": _truth(env, libraries, tmp), "cu130": _truth(CUDA_ENV / "bin" / "python", libraries, tmp)}


def _doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = run(cli, ["doctor", "--format", "json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


def _verdicts(document: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {d["name"].replace("-", "_"): d["state"] for d in document["distributions"]}


def _agree(verdicts: dict[str, str], truth: dict[str, str]) -> None:
    assert set(verdicts) == set(truth), (verdicts, truth)
    wrong = {n: (verdicts[n], truth[n]) for n in truth if (verdicts[n] == "loads") != (truth[n] == "loads")}
    assert wrong == {}, "doctor disagrees with the loader: " + repr(wrong)
    assert {"loads"} < {*truth.values(), "loads"} and len(set(truth.values())) > 1, truth  # both kinds occur


def test_doctor_names_exactly_what_fails_on_the_installed_torch(
    env: Path, truth: dict[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = _doctor(capsys, "--python", str(env))
    _agree(_verdicts(doc), truth["cpu"])
    assert code == 1
    assert doc["torch"]["judged"] == "installed" and doc["torch"]["exports_from"], doc["torch"]
    assert doc["torch"]["torch_backend"] == "cpu"
    by_name = {d["name"]: d for d in doc["distributions"]}
    assert by_name["twdemo_future"]["missing_symbols"][0]["name"] == "torch_has_storage"
    assert by_name["doctorcu13"]["axis"] == "build" and "CUDA 13" in by_name["doctorcu13"]["reason"]
    assert "reinstall doctorcu13" in by_name["doctorcu13"]["fix"]


@pytest.mark.parametrize("how", ["--torch", "--against"])
def test_the_upgrade_is_predicted(
    how: str, env: Path, truth: dict[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before the upgrade: what torch 2.14.1's CUDA 13 build breaks and keeps, as its loader
    says after it; ``--torch`` from the tables, ``--against`` from its own exports."""
    plan = (
        ["--torch", "2.14.1", "--torch-backend", "cu130"]
        if how == "--torch"
        else ["--against", str(_site(CUDA_ENV))]
    )
    code, doc = _doctor(capsys, "--python", str(env), *plan)
    _agree(_verdicts(doc), truth["cu130"])
    assert doc["installed_torch"]["version"] == "2.13.0"
    breaks = {d["name"] for d in doc["distributions"] if d["breaks"]}
    assert breaks == {
        n for n, said in truth["cpu"].items() if said == "loads" and truth["cu130"][n] != "loads"
    }
    assert code == (0 if set(truth["cu130"].values()) == {"loads"} else 1)


def test_explain_an_undefined_symbol(
    env: Path, truth: dict[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The loader's own words for the extension built for a newer torch: its file, owner,
    the symbol's date (torch 2.14's shim), that this torch lacks it, and the fix."""
    error = "ImportError: " + truth["cpu"]["twdemo_future"]
    assert "undefined symbol: torch_has_storage" in error, error
    code, doc = _doctor(capsys, "--python", str(env), "--explain", error)
    explained = doc["explain"]
    assert code == 1
    assert explained["distribution"]["name"] == "twdemo_future" and explained["symbol"] == "torch_has_storage"
    assert explained["shim_since"] == "2.14" and explained["judged_torch_exports"] is False
    code = run(cli, ["doctor", "--python", str(env), "--explain", "twdemo_future._C"])
    text = capsys.readouterr().out
    assert code == 1 and "owner: twdemo_future 0.1.0" in text and "fix: reinstall" in text, text


def test_the_other_formats(
    env: Path, truth: dict[str, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """One diagnosis (``api.doctor``) rendered as the command renders it in each format."""
    from torchwheel import api
    from torchwheel.doctor.doctor_report import doctor_github, doctor_markdown, doctor_text

    failing = sorted(n for n, said in truth["cpu"].items() if said != "loads")
    found = api.doctor(python=env)
    assert found.exit_code == 1
    assert (
        found.to_json() == _doctor(capsys, "--python", str(env))[1]
    )  # the library's document is the command's
    github = doctor_github(found.diagnosis).splitlines()
    assert len([line for line in github if line.startswith("::error ")]) == len(failing), github
    markdown = doctor_markdown(found.target.description, found.diagnosis)
    assert markdown.startswith("### torchwheel doctor") and all(f"`{n}`" in markdown for n in failing), (
        markdown
    )
    text = doctor_text(found.target.description, found.diagnosis)
    assert "DOES NOT LOAD" in text and "fix: reinstall" in text, text


def test_an_environment_that_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho not a python\n")
    script.chmod(0o755)
    assert run(cli, ["doctor", "--python", str(script)]) == 2
    assert "not a Python interpreter" in capsys.readouterr().err
    assert run(cli, ["doctor", "--python", sys.executable, "--torch", "2.14", "--against", "x"]) == 2
    assert "exclude each other" in capsys.readouterr().err
