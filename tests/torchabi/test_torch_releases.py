"""torchabi/torch_releases.py and torchabi/need.py: torch requirements read as installers read
them (issue 41, layout 3). ``==2.8.0+cpu`` names the release 2.8.0 and the CPU build, ``===``
compares version strings, ``~=`` and wildcards admit a minor's patches.

Expected answers are PEP 440 read by hand against torch's real release list (2.8 has one
release, 2.8.0; 2.9 has 2.9.0 and 2.9.1), never from the code under test.
"""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild
from torchwheel.torchabi.need import claimed_releases, narrowed_builds, pinned_builds


@pytest.mark.parametrize(
    ("spec", "minor", "admitted"),
    [
        ("==2.8.0+cpu", (2, 8), ["2.8.0"]),  # the release with a build label: pip installs 2.8.0+cpu
        ("==2.9.1+cu128", (2, 9), ["2.9.1"]),
        ("===2.9.0", (2, 9), ["2.9.0"]),  # arbitrary equality: the string "2.9.0" only
        ("===2.9", None, []),  # no torch release is spelled "2.9"
        ("===2.8.0+cpu", (2, 8), ["2.8.0"]),
        ("~=2.9.0", (2, 9), ["2.9.0", "2.9.1"]),  # >=2.9.0, ==2.9.*
        ("~=2.9", None, None),  # >=2.9, ==2.*: every minor from 2.9 on
        ("==2.9.*", (2, 9), ["2.9.0", "2.9.1"]),
        ("==2.9.1", (2, 9), ["2.9.1"]),
    ],
)
def test_pins_name_the_releases_installers_admit(
    spec: str, minor: tuple[int, int] | None, admitted: list[str] | None
) -> None:
    specifier = SpecifierSet(spec)
    assert torch_releases.shipped_releases().pinned_minor(specifier) == minor
    if admitted is not None:
        assert [str(v) for v in torch_releases.shipped_releases().admitted(specifier)] == admitted


@pytest.mark.parametrize(
    ("spec", "torch", "admits"),
    [
        ("==2.8.0+cpu", "2.8.0+cpu", True),
        ("==2.8.0+cpu", "2.8.0+cu128", False),  # another build of that release: pip would swap it
        ("==2.8.0+cpu", "2.8.0", True),  # a release whose build is not known: the build axis decides
        ("==2.8.0+cpu", "2.9.0", False),
        (">=2.8", "2.8.0+cu128", True),  # a range admits every build of a release it admits
        ("===2.9.0", "2.9.0", True),
        ("===2.9.0", "2.9.0+cpu", False),  # the string differs
    ],
)
def test_admits_a_target_torch(spec: str, torch: str, admits: bool) -> None:
    assert torch_releases.admits(SpecifierSet(spec), Version(torch)) is admits


@pytest.mark.parametrize(
    ("reqs", "builds"),
    [
        (["torch==2.8.0+cpu"], {TorchBuild("cpu")}),
        (["torch==2.8.0+cu128"], {TorchBuild("cuda", 12)}),
        (["torch===2.9.0+cu130"], {TorchBuild("cuda", 13)}),
        (["torch==2.9.1+rocm7.1"], {TorchBuild("rocm", 7)}),
        (["torch==2.9.1+xpu"], {TorchBuild("xpu")}),
        (["torch==2.8.0"], None),  # no label: no build named
        (["torch==2.8.0+torch28"], None),  # a label that names no build
        (['torch==2.8.0+cpu; sys_platform == "linux"'], None),  # only unconditional pins decide
        (["torch==2.8.0+cpu", "torch==2.8.0+cu128"], set()),  # two builds at once: none
    ],
)
def test_a_pins_local_label_names_the_build(reqs: list[str], builds: set[TorchBuild] | None) -> None:
    found = pinned_builds(Requirement(r) for r in reqs)
    assert found == (None if builds is None else frozenset(builds))


def test_the_build_axis_is_narrowed_to_the_pin() -> None:
    cpu, cuda12 = frozenset({TorchBuild("cpu")}), frozenset({TorchBuild("cuda", 12)})
    assert narrowed_builds(ANY_BUILD, cpu) == cpu  # binaries load anywhere: the pin decides
    assert narrowed_builds(frozenset({TorchBuild("cuda")}), cuda12) == cuda12
    assert narrowed_builds(frozenset({TorchBuild("cuda", 13)}), cpu) == frozenset()  # TW702 says why
    assert narrowed_builds(None, cpu) is None  # unread binaries stay unknown
    assert narrowed_builds(cuda12, None) == cuda12


def test_a_labelled_pin_dates_an_unstable_build() -> None:
    """The issue's third layout: `Requires-Dist: torch (==2.8.0+cpu)` on an unstable wheel
    named no release before (`releases: []`, `unknown: ["version"]`)."""
    found, how = claimed_releases(
        (Requirement("torch (==2.8.0+cpu)"),), Version("1.0"), torch_releases.shipped_releases()
    )
    assert (found, how) == (frozenset({(2, 8)}), "pin")
