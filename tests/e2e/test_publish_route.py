"""What goes to PyPI and what needs your own index, as `tag` and `check` say it: `tag`
refuses a local label, or a `--build-torch`, that contradicts the wheel (one line, exit 2,
no wheel written), and says where a labelled wheel belongs; `check` flags a local version
(TW413) that `twine check` lets through."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..lib.helpers import fixture_wheels_module, torchwheel

TAGS = "cp39-abi3-manylinux_2_28_x86_64"
# name -> (fixture binary, the author's torch requirement)
WHEELS = {
    "unstable": ("elf_unstable_cpp", "torch==2.8.0"),  # a version-locked build pinned to 2.8.0
    "stable": ("elf_marker_2_10", "torch>=2.10"),
    "stable212": ("elf_marker_2_12_tag", "torch>=2.10"),  # tag narrows to torch>=2.12
}


@pytest.fixture(scope="module")
def wheels(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    wm = fixture_wheels_module()
    out = tmp_path_factory.mktemp("route")
    found = {}
    for key, (binary, req) in WHEELS.items():
        dist = f"twroute{key}"
        spec = wm.WheelSpec(key, dist, TAGS, ((f"{dist}/{binary}.abi3.so", binary),), requires=(req,))
        found[key] = wm.write_wheel(out / spec.filename, spec, built_fixtures)
    return found


@pytest.mark.parametrize(
    ("wheel", "args", "message"),
    [
        (
            "unstable",
            ("--local-label", "torch2.13"),
            "--local-label torch2.13 names torch 2.13, but the wheel does not load there "
            "(Requires-Dist torch==2.8.0 excludes torch 2.13",
        ),
        (
            "unstable",
            ("--build-torch", "2.13"),
            "--build-torch 2.13 contradicts the wheel's Requires-Dist torch==2.8.0 (it admits torch 2.8.0)",
        ),
        ("stable", ("--build-torch", "2.13"), "--build-torch 2.13: the wheel is stable-ABI (target 2.10)"),
        (
            "stable212",
            ("--local-label", "torch2.10"),
            "--local-label torch2.10 names torch 2.10, but the wheel does not load there (stable >= 2.12",
        ),
    ],
    ids=["label-vs-pin", "build-torch-vs-pin", "build-torch-on-stable", "label-below-the-floor"],
)
def test_tag_refuses_a_contradiction(
    wheels: dict[str, Path], wheel: str, args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = torchwheel("tag", "--no-config", "-w", str(out), *args, str(wheels[wheel]))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not out.exists() or not list(out.iterdir())


def test_repair_refuses_build_torch_on_a_stable_wheel(wheels: dict[str, Path], tmp_path: Path) -> None:
    result = torchwheel(
        "repair", "--no-config", "-w", str(tmp_path), "--build-torch", "2.13", str(wheels["stable"])
    )
    assert (
        result.returncode == 1
        and "repair refused: --build-torch 2.13: the wheel is stable-ABI" in result.stderr
    )
    assert not list(tmp_path.glob("*.whl"))


def test_one_contradiction_writes_none_of_the_wheels(wheels: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("tag", "--no-config", "-w", str(out), "--local-label", "torch2.13")
    result = torchwheel(*args, str(wheels["stable"]), str(wheels["unstable"]))
    assert result.returncode == 2 and "torch==2.8.0" in result.stderr
    assert not out.exists() or not list(out.iterdir())  # the stable wheel, fine alone, is not written


def test_a_local_label_is_said_to_need_your_own_index(wheels: dict[str, Path], tmp_path: Path) -> None:
    """Labels that agree are written; tag says where such a wheel belongs, check flags it
    (TW413, a warning: exit 0), and twine check, which PyPI's upload would contradict, passes."""
    out = tmp_path / "out"
    locked = torchwheel(
        "tag", "--no-config", "-w", str(out), "--local-label", "torch2.8", str(wheels["unstable"])
    )
    assert locked.returncode == 0, locked.stderr
    stable = torchwheel(
        "tag", "--no-config", "-w", str(out), "--local-label", "torch2.14", str(wheels["stable"])
    )
    assert stable.returncode == 0, stable.stderr
    assert "PyPI refuses local versions" in stable.stdout
    assert "torchwheel: note: a local version label (+torch2.14) is for your own index" in stable.stderr
    for wheel in sorted(out.glob("*.whl")):
        checked = torchwheel("check", "--no-config", "--format", "json", str(wheel))
        assert checked.returncode == 0, checked.stdout
        (finding,) = [f for f in json.loads(checked.stdout)["findings"] if f["code"] == "TW413"]
        assert finding["severity"] == "warning" and "PyPI refuses local versions" in finding["message"]
        twine = subprocess.run(
            [sys.executable, "-m", "twine", "check", str(wheel)], capture_output=True, text=True
        )
        assert twine.returncode == 0 and "PASSED" in twine.stdout
    plain = torchwheel(
        "tag", "--no-config", "-w", str(tmp_path / "pypi"), "--build-tag", "1", str(wheels["stable"])
    )
    assert plain.returncode == 0 and "note:" not in plain.stderr
    (built,) = (tmp_path / "pypi").glob("*.whl")
    assert torchwheel("check", "--no-config", "--select", "TW413", str(built)).stdout.count("TW413") == 0
