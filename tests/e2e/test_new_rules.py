"""TW206 (a "future" build: a target newer than the imports need) and TW415 (a platform tag
PyPI refuses), beyond their fixture wheels in ``fixtures/wheels.py`` (``tw206``, ``tw415``,
the near miss ``tw415_armv7l``, and ``recipe_linux``: what a plain ``pip wheel`` leaves)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchwheel.rules import pypi

from ..lib.helpers import fixture_wheels_module, torchwheel


def _messages(wheel: Path, code: str, cwd: Path) -> list[str]:
    result = torchwheel("check", "--no-config", "--format", "json", str(wheel), cwd=cwd)
    return [f["message"] for f in json.loads(result.stdout)["findings"] if f["code"] == code]


def test_a_future_build_is_told_the_target_it_could_have(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    (message,) = _messages(fixture_wheels["tw206"], "TW206", tmp_path)
    assert message == (
        "[x86_64] declares torch 2.12.0, but the wheel's imports need only torch 2.10 "
        "(torch_call_dispatcher, torch_library_impl): the target makes the floor torch 2.12 and keeps the "
        "wheel off torch 2.10-2.11; if the code allows, rebuild with TORCH_TARGET_VERSION=0x020a000000000000 "
        "(the symbols are a lower bound: inlined header code leaves none)"
    )
    result = torchwheel("check", "--no-config", str(fixture_wheels["tw206"]), cwd=tmp_path)
    assert result.returncode == 0  # info: reported, never an error


@pytest.mark.parametrize("name", ["clean", "tw201", "tw203", "tw104", "tw107", "tw207", "weak_shim", "tw204"])
def test_no_future_finding_where_the_need_is_met_or_unknown(
    name: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """target = need (clean), target below need (TW201), shims newer than the table (TW203),
    targets that disagree (TW104), a target older than the stable ABI (TW107), one newer than the
    tables (TW207), weak imports (no floor), unstable."""
    assert _messages(fixture_wheels[name], "TW206", tmp_path) == []


def test_the_newest_target_in_a_wheel_sets_the_need(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """A 2.12 library beside one whose imports need 2.13: the wheel's floor is 2.13 anyway,
    so lowering the 2.12 target gains nothing and nothing is said."""
    wm = fixture_wheels_module()
    spec = wm.WheelSpec(
        "two", "wtwo", wm.A,
        (("wtwo/elf_marker_2_12_shims_2_10.abi3.so", "elf_marker_2_12_shims_2_10"),
         ("wtwo/elf_marker_2_13_shims_2_13.abi3.so", "elf_marker_2_13_shims_2_13")),
        requires=("torch>=2.13",),
    )  # fmt: skip
    wheel = wm.write_wheel(tmp_path / spec.filename, spec, built_fixtures)
    assert _messages(wheel, "TW206", tmp_path) == []
    assert _messages(wheel, "TW105", tmp_path)  # the targets differ: that is said


@pytest.mark.parametrize(
    ("platform", "refused"),
    [
        ("linux_x86_64", True),
        ("linux_aarch64", True),
        ("linux_i686", True),
        ("linux_armv7l", False),  # piwheels-era builds: PyPI takes them
        ("linux_armv6l", False),
        ("manylinux_2_28_x86_64", False),
        ("manylinux_2_17_ppc64", False),
        ("musllinux_1_2_ppc64", True),  # ppc64 is a manylinux architecture only
        ("manylinux_2_36_loongarch64", True),
        ("manylinux2014_x86_64", False),
        ("manylinux2014_riscv64", True),
        ("macosx_10_9_x86_64", False),
        ("macosx_11_0_arm64", False),
        ("macosx_11_1_arm64", True),  # macOS 11 and newer: X_0 only (pip installs no other)
        ("macosx_16_0_arm64", True),  # there was no macOS 16
        ("macosx_27_0_arm64", False),  # newer than Warehouse's list: not judged
        ("win_amd64", False),
        ("win_arm64", False),
        ("freebsd_14_0_amd64", True),
        ("ios_13_0_arm64_iphoneos", False),
        ("android_24_x86_64", False),
        ("pyemscripten_2025_0_wasm32", False),
        ("emscripten_3_1_58_wasm32", True),
        ("any", False),
    ],
)
def test_pypi_platform_rule(platform: str, refused: bool) -> None:
    """Warehouse's ``_valid_platform_tag`` (warehouse/forklift/legacy.py), case by case."""
    assert pypi.refused(platform) == refused


def test_each_refused_platform_gets_its_way_out() -> None:
    assert "auditwheel repair" in pypi.remedy("linux_aarch64")
    assert "MACOSX_DEPLOYMENT_TARGET=11.0" in pypi.remedy("macosx_11_1_arm64")
    assert "your own index" in pypi.remedy("linux_loongarch64")  # PyPI takes no manylinux of it either
    assert "your own index" in pypi.remedy("freebsd_14_0_amd64")


def test_only_the_file_name_is_judged(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """PyPI reads the file name: tw404's WHEEL says linux_x86_64, its name manylinux."""
    assert _messages(fixture_wheels["tw404"], "TW415", tmp_path) == []
    (message,) = _messages(fixture_wheels["tw415"], "TW415", tmp_path)
    assert message.startswith(
        "platform tag linux_x86_64 (what a plain `pip wheel` writes) is refused by PyPI"
    )
    assert torchwheel("check", "--no-config", str(fixture_wheels["tw415"]), cwd=tmp_path).returncode == 0
