"""CI's short form of ``benchmarks/loadtruth_machine.py``: ``doctor``'s driver and system-library
axes held to what a real import does, on two machines (no driver; a stub driver that says CUDA
12.4 on ``LD_LIBRARY_PATH``).

The env: torch 2.14.1's CUDA 13.0 build (``.venv-cu130``'s files hard-linked into a venv of its
own; the shared venv is never written) with torchvision 0.29.1 and torchcodec 0.17.0 from their
published wheels; this machine has no FFmpeg. The truth is a fresh interpreter of the env
(``import``, torchcodec's ``load_core_libraries()``, torch's own word on its CUDA); ``doctor``
runs in this process with the same ``LD_LIBRARY_PATH``. Built once into
``.cache/loadtruth-machine``; a missing ``.venv-cu130`` fails the test (``bash scripts/dev-setup``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..lib.helpers import REPO, load_script, machine_fixtures

lm = load_script("torchwheel_loadtruth_machine", REPO / "benchmarks" / "loadtruth_machine.py")
MACHINES = {"no driver": None, "driver 12.4": 12040}
DRIVER_ERROR = "RuntimeError: CUDA driver version is insufficient for CUDA runtime version"


@pytest.fixture(scope="module")
def env() -> Path:
    try:
        python: Path = lm.build_env(lm.CACHE / "env", lm.wheels(download=True))
    except lm.HarnessError as exc:
        pytest.fail(str(exc))
    return python


@pytest.fixture(scope="module")
def truth(env: Path) -> dict[str, dict[str, str]]:
    """A full import on the machine without a driver; on the 12.4 one, the CUDA runtime torch
    loads (the env's ``libcudart.so.13``) asked alone: importing a CUDA torch costs half a
    minute on a busy machine, and the benchmark does both on every machine."""
    stub = machine_fixtures().drivers[12040]
    return {
        "no driver": {**lm.truth(env, None), **lm.runtime_truth(env, None)},
        "driver 12.4": lm.runtime_truth(env, stub),
    }


@pytest.fixture(scope="module")
def said(env: Path) -> dict[str, Any]:
    """``api.doctor`` on each machine (the command's document is ``to_json()``)."""
    from torchwheel import api

    out = {}
    with pytest.MonkeyPatch.context() as mp:
        for machine, version in MACHINES.items():
            if version is None:
                mp.delenv("LD_LIBRARY_PATH", raising=False)
            else:
                mp.setenv("LD_LIBRARY_PATH", str(machine_fixtures().drivers[version]))
            explain = DRIVER_ERROR if version is not None else None
            out[machine] = api.doctor(python=env, explain=explain)
    return out


def test_the_truth_here(truth: dict[str, dict[str, str]]) -> None:
    """What the machines are: both packages import; torchcodec's own loader opens no FFmpeg core
    (no libavutil here); torch finds no driver, and its runtime calls the 12.4 one too old."""
    none = truth["no driver"]
    assert none["torch"] == "2.14.1+cu130" and none["torchvision"] == "imports" == none["torchcodec"], none
    assert none["torchcodec_core"] == "fails: libavutil" and none["libcuda"] == "absent", none
    assert "Found no NVIDIA driver" in none["torch_cuda_init"]
    old = truth["driver 12.4"]
    assert old["libcuda"] == "loads"
    assert old["cuda_runtime"] == "CUDA driver version is insufficient for CUDA runtime version"


@pytest.mark.parametrize("machine", list(MACHINES))
def test_doctor_agrees_with_the_import(
    machine: str, truth: dict[str, dict[str, str]], said: dict[str, Any]
) -> None:
    found = said[machine]
    doc = found.to_json()
    assert lm.judge(doc, truth[machine]) == []
    assert found.diagnosis.exit_code == 0  # partly is a warning: every package imports
    rows = {d["name"]: d for d in doc["distributions"]}
    codec = rows["torchcodec"]
    assert codec["state"] == "partly" and "libavutil (FFmpeg 4-9: libavutil.so.56-61)" in "; ".join(
        codec["partly"]
    )
    (part,) = [p for p in codec["machine"] if p["axis"] == "system library"]
    assert not part["required"] and "libavutil.so.58" in part["missing_libraries"]
    assert "torchcodec/libtorchcodec_core4.so" in part["files"]
    driver = doc["machine"]["driver"]
    if machine == "no driver":
        assert driver["state"] == "none" and doc["machine"]["driver_verdict"] is None
        assert rows["torchvision"]["state"] == "loads"
        assert not [p for r in rows.values() for p in r["machine"] if p["axis"] == "driver"]
    else:
        assert driver["state"] == "found" and driver["cuda"] == "12.4"
        assert driver["source"].endswith("drivers/12040/libcuda.so.1")
        assert doc["machine"]["driver_verdict"] == (
            "this machine's driver supports CUDA 12.4: torch 2.14.1+cu130, torchcodec and torchvision need CUDA 13"
        )
        assert rows["torchvision"]["state"] == "partly" and "CUDA 12.4" in "; ".join(
            rows["torchvision"]["partly"]
        )


def test_explain_the_runtimes_words(said: dict[str, Any], truth: dict[str, dict[str, str]]) -> None:
    """The runtime's own error on the 12.4 machine, explained: the driver, torch's CUDA 13 and
    the distributions whose CUDA code it cannot run, the fix; exit 1."""
    assert truth["driver 12.4"]["cuda_runtime"] in DRIVER_ERROR
    found = said["driver 12.4"]
    assert found.exit_code == 1
    answer = found.to_json()["explain"]["machine"]
    assert answer["axis"] == "driver" and not answer["runs_here"]
    assert answer["found"][0].startswith("this machine's driver supports CUDA 12.4 (")
    assert "torch 2.14.1+cu130 needs CUDA 13; this machine's driver supports CUDA 12.4" in answer["found"]
    assert set(answer["needed_by"]) == {"torchcodec", "torchvision"}
    assert answer["fix"].startswith("update the NVIDIA driver to one that supports CUDA 13")


def test_every_output_names_the_driver(said: dict[str, Any]) -> None:
    from torchwheel.doctor.doctor_report import doctor_github, doctor_markdown, doctor_text

    found = said["driver 12.4"]
    text = doctor_text(found.target.description, found.diagnosis)
    assert "driver: NVIDIA driver supporting CUDA 12.4 (" in text
    assert "torchvision 0.29.1: loads PARTLY: its CUDA code will not run" in text
    assert "torch 2.14.1+cu130, torchcodec and torchvision need CUDA 13" in text
    github = doctor_github(found.diagnosis)
    assert "::warning title=torchwheel doctor%3A torchcodec 0.17.0::loads partly: " in github
    markdown = doctor_markdown(found.target.description, found.diagnosis)
    assert "NVIDIA driver supporting CUDA 12.4" in markdown and "`loads PARTLY: " in markdown


@pytest.fixture(scope="module")
def cuda13_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """nvcc's library that links libtorch_cuda.so and libcudart.so.13 (``fixtures/cuda``), as
    an untagged wheel that requires a bare torch: it loads on a CUDA 13 torch only."""
    from ..lib.helpers import fixture_wheels_module

    fw = fixture_wheels_module()
    spec = fw.WheelSpec(
        "machine_cu13", "machinecu13", "cp39-abi3-" + fw.LINUX, (("machinecu13/_ops.so", "cuda:cu13_torch_cuda.so"),),
        requires=("torch",),
    )  # fmt: skip
    out: Path = fw.write_wheel(tmp_path_factory.mktemp("machine_wheel") / spec.filename, spec, {})
    return out


@pytest.mark.parametrize(("driver", "note"), [(12040, True), (13000, False)])
def test_select_notes_a_driver_too_old(
    driver: int, note: bool, cuda13_wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``select --python`` on the CUDA 13 torch still chooses the wheel that loads there, and
    says on stderr when this machine's driver cannot run its CUDA code."""
    from ..lib.helpers import torchwheel

    monkeypatch.setenv("LD_LIBRARY_PATH", str(machine_fixtures().drivers[driver]))
    run = torchwheel("select", "--python", str(REPO / ".venv-cu130" / "bin" / "python"), str(cuda13_wheel))
    assert run.returncode == 0, run.stderr
    said = "note: machinecu13 1.0.0: its CUDA code will not run on this machine: it needs CUDA 13"
    assert (said in run.stderr) == note, run.stderr
    if note:
        assert "the NVIDIA driver supports CUDA 12.4" in run.stderr
