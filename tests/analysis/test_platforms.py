"""TW405 against every platform-tag shape in use, on real binaries of each architecture.

Each case puts a matching binary (cross-compiled by ``fixtures/build.py``: zig for every
architecture but gcc's x86_64) and a binary of another architecture into a wheel tagged with
the platform, and runs the rule on the wheel's facts. Mach-O archs zig cannot build any more
(i386, ppc, ppc64) have no matching binary; their multi-arch names are checked against
``packaging.tags.mac_platforms`` instead, and a binary lacking those slices must be reported.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.tags import mac_platforms

from torchwheel.analysis.load import load_facts
from torchwheel.analysis.platforms import _MACHO_ARCHS, expected
from torchwheel.rules import REGISTRY
from torchwheel.rules.registry import Policy
from torchwheel.tables.tableset import shipped_tables

from ..lib.helpers import fixture_wheels_module

X86_64_ELF = "elf_marker_2_10"
X86_64_MACHO = "macho_x86_64_marker_2_10"
ARM64_MACHO = "macho_arm64_marker_2_12"
X86_64_PE = "pe_mingw_marker_2_10"

# platform -> (binary scenario of that platform or None, binary scenario of another arch)
CASES: dict[str, tuple[str | None, str]] = {
    "manylinux1_x86_64": (X86_64_ELF, "elf_probe_i686"),
    "manylinux1_i686": ("elf_probe_i686", X86_64_ELF),
    "manylinux2010_x86_64": (X86_64_ELF, "elf_probe_aarch64"),
    "manylinux2010_i686": ("elf_probe_i686", X86_64_ELF),
    "manylinux2014_x86_64": (X86_64_ELF, "elf_probe_i686"),
    "manylinux2014_i686": ("elf_probe_i686", "elf_probe_armv7l"),
    "manylinux2014_aarch64": ("elf_probe_aarch64", X86_64_ELF),
    "manylinux2014_armv7l": ("elf_probe_armv7l", "elf_probe_aarch64"),
    "manylinux2014_ppc64le": ("elf_probe_ppc64le", "elf_probe_ppc64"),
    "manylinux2014_ppc64": ("elf_probe_ppc64", "elf_probe_ppc64le"),
    "manylinux2014_s390x": ("elf_probe_s390x", X86_64_ELF),
    "manylinux_2_17_x86_64.manylinux2014_x86_64": (X86_64_ELF, "elf_probe_aarch64"),
    "manylinux_2_17_aarch64.manylinux2014_aarch64": ("elf_probe_aarch64", X86_64_ELF),
    "manylinux_2_28_x86_64": (X86_64_ELF, "elf_probe_s390x"),
    "manylinux_2_28_aarch64": ("elf_probe_aarch64", "elf_probe_riscv64"),
    "manylinux_2_28_ppc64le": ("elf_probe_ppc64le", "elf_probe_ppc64"),
    "manylinux_2_28_s390x": ("elf_probe_s390x", "elf_probe_ppc64"),
    "manylinux_2_31_armv7l": ("elf_probe_armv7l", "elf_probe_i686"),
    "manylinux_2_39_riscv64": ("elf_probe_riscv64", "elf_probe_aarch64"),
    "manylinux_2_36_loongarch64": ("elf_probe_loongarch64", "elf_probe_riscv64"),
    "musllinux_1_2_x86_64": ("elf_probe_x86_64_musl", "elf_probe_aarch64"),
    "musllinux_1_2_i686": ("elf_probe_i686", "elf_probe_x86_64_musl"),
    "musllinux_1_2_aarch64": ("elf_probe_aarch64", "elf_probe_x86_64_musl"),
    "musllinux_1_2_armv7l": ("elf_probe_armv7l", "elf_probe_aarch64"),
    "musllinux_1_2_ppc64le": ("elf_probe_ppc64le", "elf_probe_s390x"),
    "musllinux_1_2_s390x": ("elf_probe_s390x", "elf_probe_ppc64le"),
    "musllinux_1_2_riscv64": ("elf_probe_riscv64", "elf_probe_loongarch64"),
    "musllinux_1_2_loongarch64": ("elf_probe_loongarch64", "elf_probe_x86_64_musl"),
    "linux_x86_64": (X86_64_ELF, "elf_probe_i686"),
    "linux_i686": ("elf_probe_i686", X86_64_ELF),
    "linux_aarch64": ("elf_probe_aarch64", "elf_probe_armv7l"),
    "linux_armv7l": ("elf_probe_armv7l", "elf_probe_aarch64"),
    "linux_armv6l": ("elf_probe_armv7l", "elf_probe_i686"),
    "linux_ppc64le": ("elf_probe_ppc64le", "elf_probe_ppc64"),
    "linux_ppc64": ("elf_probe_ppc64", "elf_probe_ppc64le"),
    "linux_s390x": ("elf_probe_s390x", X86_64_ELF),
    "linux_riscv64": ("elf_probe_riscv64", X86_64_ELF),
    "linux_loongarch64": ("elf_probe_loongarch64", X86_64_ELF),
    "android_21_arm64_v8a": ("elf_probe_android_aarch64", "elf_probe_android_x86_64"),
    "android_21_armeabi_v7a": ("elf_probe_android_armv7l", "elf_probe_android_aarch64"),
    "android_24_x86_64": ("elf_probe_android_x86_64", "elf_probe_android_i686"),
    "android_24_x86": ("elf_probe_android_i686", "elf_probe_android_x86_64"),
    "macosx_11_0_x86_64": (X86_64_MACHO, ARM64_MACHO),
    "macosx_11_0_arm64": (ARM64_MACHO, X86_64_MACHO),
    "macosx_11_0_universal2": ("macho_universal_differ", ARM64_MACHO),
    "macosx_10_9_intel": (None, "macho_universal_differ"),
    "macosx_10_6_fat": (None, X86_64_MACHO),
    "macosx_10_6_fat3": (None, X86_64_MACHO),
    "macosx_10_5_fat64": (None, X86_64_MACHO),
    "macosx_10_5_universal": (None, "macho_universal_differ"),
    "macosx_10_9_i386": (None, X86_64_MACHO),
    "macosx_10_5_ppc": (None, X86_64_MACHO),
    "macosx_10_5_ppc64": (None, X86_64_MACHO),
    "ios_13_0_arm64_iphoneos": ("macho_probe_ios_arm64", "macho_probe_ios_sim_x86_64"),
    "ios_13_0_arm64_iphonesimulator": ("macho_probe_ios_sim_arm64", "macho_probe_ios_sim_x86_64"),
    "ios_13_0_x86_64_iphonesimulator": ("macho_probe_ios_sim_x86_64", "macho_probe_ios_sim_arm64"),
    "win32": ("pe_probe_x86", X86_64_PE),
    "win_amd64": (X86_64_PE, "pe_probe_arm64"),
    "win_arm64": ("pe_probe_arm64", "pe_probe_x86"),
}

# a binary of the right architecture but the wrong format is reported too
WRONG_FORMAT = {
    "manylinux2014_aarch64": ARM64_MACHO,
    "android_21_x86_64": X86_64_MACHO,
    "macosx_11_0_x86_64": X86_64_PE,
    "ios_13_0_arm64_iphoneos": "elf_probe_aarch64",
    "win_arm64": ARM64_MACHO,
}


def _tw405(platform: str, scenario: str, built: dict[str, Path], tmp: Path) -> list[str]:
    """The TW405 messages for a wheel tagged ``platform`` whose one compiled file is ``scenario``."""
    wheels = fixture_wheels_module()
    dist = "probe"
    binary = built[scenario]
    member = f"{dist}/lib{binary.stem}{binary.suffix}"  # a library name: no CPython rule applies
    spec = wheels.WheelSpec(scenario, dist, f"cp39-abi3-{platform}", ((member, scenario),))
    path = wheels.write_wheel(tmp / spec.filename, spec, built)
    (facts,) = load_facts((path,), (), shipped_tables())
    return [f.message for f in REGISTRY["TW405"].run(facts, Policy(), str(path))[0]]


@pytest.mark.parametrize("platform", sorted(CASES))
def test_matching_binary_is_clean(platform: str, built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    good = CASES[platform][0]
    if good is None:
        assert platform.startswith("macosx_")  # archs zig cannot build: see the table test below
        return
    assert _tw405(platform, good, built_fixtures, tmp_path) == []


@pytest.mark.parametrize("platform", sorted(CASES))
def test_other_arch_is_reported(platform: str, built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    messages = _tw405(platform, CASES[platform][1], built_fixtures, tmp_path)
    assert messages and all("but the wheel is tagged" in m for m in messages), messages


@pytest.mark.parametrize("platform", sorted(WRONG_FORMAT))
def test_other_format_is_reported(platform: str, built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    (message,) = _tw405(platform, WRONG_FORMAT[platform], built_fixtures, tmp_path)
    assert message.startswith("is ") and platform in message


def test_every_platform_has_a_promise() -> None:
    for compound in CASES:
        for platform in compound.split("."):
            assert expected(platform) is not None, platform


@pytest.mark.parametrize(
    "platform",
    ["linux_mips", "emscripten_3_1_58_wasm32", "macosx_11_0_arm64e", "macosx_10_6_fat32", "cygwin"],
)
def test_unknown_platforms_promise_nothing(platform: str) -> None:
    assert expected(platform) is None


@pytest.mark.parametrize(("name", "archs"), sorted(_MACHO_ARCHS.items()))
def test_macos_names_agree_with_packaging(name: str, archs: frozenset[str]) -> None:
    """Every arch a name stands for is one packaging installs that name on, and vice versa."""
    version = (11, 0) if name in ("arm64", "universal2") else (10, 5)
    tag = f"macosx_{version[0]}_{version[1]}_{name}"
    installs_on = {a for a in ("x86_64", "arm64", "i386", "ppc", "ppc64") if tag in mac_platforms(version, a)}
    assert installs_on == archs
