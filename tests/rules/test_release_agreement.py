"""rules/release_agreement.py: the TW6xx rules, which judge each wheel of a release (same name
and version) beside its siblings, called directly with a ``ReleaseView``.

These tests exist so that each release rule is held to ``docs/reference/rules.md`` without the command
line: the release sets are the ones of ``tests/e2e/test_release.py`` (one library per wheel, the
scenario's documented target: ``elf_marker_2_10`` 2.10, ``macho_arm64_marker_2_12`` 2.12,
``pe_mingw_marker_2_10`` 2.10, ``elf_unstable_cpp`` unstable), written as wheels by the
fixtures' own zipfile writer. Expected file names, floors and requirements are hand-written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchwheel.analysis.release_wheels import ReleaseView
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.api import inspect_wheel
from torchwheel.rules import release_agreement
from torchwheel.rules.registry import REGISTRY, Check, Hit, Omitted, Policy

from ..lib.helpers import release_wheels

LINUX = "cp39-abi3-manylinux_2_28_x86_64"
MAC = "cp39-abi3-macosx_11_0_arm64"
WIN = "cp39-abi3-win_amd64"
UNSTABLE = "cp311-cp311-manylinux_2_28_x86_64"
LINUX_FILE = f"relset-1.0.0-{LINUX}.whl"
MAC_FILE = f"relset-1.0.0-{MAC}.whl"
WIN_FILE = f"relset-1.0.0-{WIN}.whl"
UNSTABLE_FILE = f"relset-1.0.0-{UNSTABLE}.whl"


def release(
    built: dict[str, Path], out: Path, members: list[tuple[str, str, tuple[str, ...]]]
) -> list[WheelFacts]:
    """One release of ``relset`` 1.0.0: a wheel per (binary scenario, tag, requirements)."""
    return list(inspect_wheel(release_wheels(built, out, members)).facts)


def named(found: list[Hit | Omitted]) -> list[Hit]:
    """The hits, having checked that the rule counted none instead of naming it (only the
    RECORD rules ever do)."""
    assert not any(isinstance(h, Omitted) for h in found), found
    return [h for h in found if not isinstance(h, Omitted)]


def each(rule: Check, wheels: list[WheelFacts]) -> dict[str, list[Hit]]:
    """The rule's hits on every wheel of the release, by file name."""
    group = tuple(wheels)
    return {Path(w.contents.path).name: named(list(rule(ReleaseView(w, group), Policy()))) for w in wheels}


def test_each_rule_is_registered_under_its_code() -> None:
    assert REGISTRY["TW601"].check is release_agreement.release_requirements_differ
    assert REGISTRY["TW602"].check is release_agreement.release_targets_differ
    assert REGISTRY["TW603"].check is release_agreement.release_stable_and_unstable
    assert all(REGISTRY[c].scope.release for c in ("TW601", "TW602", "TW603"))


def test_torch_requirement_set_is_sorted_text(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    (w,) = release(
        built_fixtures,
        tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10", "torch<3; python_version>'3.9'"))],
    )
    assert release_agreement.torch_requirement_set(w) == ('torch<3; python_version > "3.9"', "torch>=2.10")
    (none,) = release(built_fixtures, tmp_path / "none", [("elf_marker_2_10", LINUX, ())])
    assert release_agreement.torch_requirement_set(none) == ()


# -- TW601 release-requirements-differ --------------------------------------------------------


def test_tw601_each_wheel_names_the_other(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    wheels = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10",)), ("pe_mingw_marker_2_10", WIN, ("torch>=2.11",))],
    )  # fmt: skip
    tail = (
        ": installers read one METADATA per release; write one set to all with `torchwheel tag --release` "
        "(markers where platforms differ)"
    )
    assert each(release_agreement.release_requirements_differ, wheels) == {
        LINUX_FILE: [
            ("", f"requires torch>=2.10 but {WIN_FILE} of the same release requires torch>=2.11{tail}")
        ],
        WIN_FILE: [
            ("", f"requires torch>=2.11 but {LINUX_FILE} of the same release requires torch>=2.10{tail}")
        ],
    }


def test_tw601_a_wheel_without_requirement(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    wheels = release(
        built_fixtures,
        tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10",)), ("pe_mingw_marker_2_10", WIN, ())],
    )
    found = each(release_agreement.release_requirements_differ, wheels)
    assert found[WIN_FILE][0][1].startswith(
        f"requires no torch requirement but {LINUX_FILE} of the same release"
    )
    assert found[LINUX_FILE][0][1].startswith(
        f"requires torch>=2.10 but {WIN_FILE} of the same release requires no torch requirement:"
    )


def test_tw601_silent_when_the_sets_agree(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """Same requirement, in any order of the lines."""
    wheels = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10", "torch<3")), ("pe_mingw_marker_2_10", WIN, ("torch<3", "torch>=2.10"))],
    )  # fmt: skip
    assert each(release_agreement.release_requirements_differ, wheels) == {LINUX_FILE: [], WIN_FILE: []}


# -- TW602 release-targets-differ -------------------------------------------------------------


def test_tw602_linux_and_macos_floors_without_markers(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """Linux 2.10, macOS 2.12, both ``torch>=2.12``: the Linux wheel's requirement excludes its
    own floor, so the message says to loosen it first (tag only narrows)."""
    wheels = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.12",)), ("macho_arm64_marker_2_12", MAC, ("torch>=2.12",))],
    )  # fmt: skip
    tail = (
        ": one requirement set must carry both floors with sys_platform markers; loosen 'torch>=2.12' to "
        "'torch>=2.10' in the project, then `torchwheel tag --release` writes them"
    )
    assert each(release_agreement.release_targets_differ, wheels) == {
        LINUX_FILE: [
            (
                "",
                f"targets torch 2.10 on manylinux_2_28_x86_64 but {MAC_FILE} targets 2.12 on macosx_11_0_arm64{tail}",
            )
        ],
        MAC_FILE: [
            (
                "",
                f"targets torch 2.12 on macosx_11_0_arm64 but {LINUX_FILE} targets 2.10 on manylinux_2_28_x86_64{tail}",
            )
        ],
    }


def test_tw602_nothing_to_loosen(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """A bare ``torch`` admits the lower floor: `tag --release` can write the markers at once."""
    wheels = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch",)), ("macho_arm64_marker_2_12", MAC, ("torch",))],
    )  # fmt: skip
    found = each(release_agreement.release_targets_differ, wheels)
    assert [m for _, m in found[LINUX_FILE]] == [
        f"targets torch 2.10 on manylinux_2_28_x86_64 but {MAC_FILE} targets 2.12 on macosx_11_0_arm64: one "
        "requirement set must carry both floors with sys_platform markers; `torchwheel tag --release` writes them"
    ]


def test_tw602_silent_when_markers_say_so(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    reqs = ('torch>=2.12; sys_platform == "darwin"', 'torch>=2.10; sys_platform != "darwin"')
    wheels = release(
        built_fixtures, tmp_path, [("elf_marker_2_10", LINUX, reqs), ("macho_arm64_marker_2_12", MAC, reqs)]
    )
    assert each(release_agreement.release_targets_differ, wheels) == {LINUX_FILE: [], MAC_FILE: []}


def test_tw602_silent_when_the_floors_agree(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    wheels = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10",)), ("pe_mingw_marker_2_10", WIN, ("torch>=2.10",))],
    )  # fmt: skip
    assert each(release_agreement.release_targets_differ, wheels) == {LINUX_FILE: [], WIN_FILE: []}


def test_tw602_names_no_remedy_markers_cannot_express(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """Two Linux wheels (manylinux_2_28 and manylinux_2_17, both x86_64) of targets 2.10 and
    2.13. Both are ``sys_platform == "linux"``: no sys_platform marker tells them apart, and
    ``tag --release`` refuses such a release ("markers cannot tell them apart",
    tagging/release_requirements.py and its docstring). TW602 must not send the author to
    sys_platform markers and ``tag --release`` for it."""
    old_linux = "cp39-abi3-manylinux_2_17_x86_64"
    wheels = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10",)), ("elf_marker_2_13_shims_2_13", old_linux, ("torch>=2.10",))],
    )  # fmt: skip
    for name, found in each(release_agreement.release_targets_differ, wheels).items():
        assert not any("sys_platform markers" in m or "tag --release" in m for _, m in found), (name, found)


# -- TW603 release-stable-and-unstable --------------------------------------------------------


def test_tw603_stable_beside_unstable(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    wheels = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10",)), ("elf_unstable_cpp", UNSTABLE, ("torch>=2.10",))],
    )  # fmt: skip
    tail = (
        "of the same release is {}: they cannot share one METADATA (a floor vs a one-minor pin); give the "
        "version-locked build a local label (`torchwheel tag --local-label torchX.Y`) or publish it on a "
        "per-target index"
    )
    assert each(release_agreement.release_stable_and_unstable, wheels) == {
        LINUX_FILE: [("", f"this wheel is stable but {UNSTABLE_FILE} " + tail.format("unstable"))],
        UNSTABLE_FILE: [("", f"this wheel is unstable but {LINUX_FILE} " + tail.format("stable"))],
    }


@pytest.mark.parametrize(
    "second",
    [
        ("macho_arm64_marker_2_12", MAC, ("torch>=2.12",)),  # two stable wheels
        ("elf_no_torch", UNSTABLE, ()),  # a wheel that needs no torch
    ],
)
def test_tw603_silent(
    second: tuple[str, str, tuple[str, ...]], built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    wheels = release(built_fixtures, tmp_path, [("elf_marker_2_10", LINUX, ("torch>=2.10",)), second])
    assert all(found == [] for found in each(release_agreement.release_stable_and_unstable, wheels).values())


# -- hybrid releases (issue 48, item 3): a stable build for torch >= 2.13 beside per-minor
# builds for 2.11 and 2.12, each wheel of its own tag so that the files differ

PY311 = "cp311-cp311-manylinux_2_28_x86_64"
PY312 = "cp312-cp312-manylinux_2_28_x86_64"
STABLE_213 = ("elf_marker_2_13_shims_2_13", LINUX, ("torch>=2.13",))


def _hybrid(built: dict[str, Path], out: Path, *locked: tuple[str, str]) -> list[WheelFacts]:
    """The stable 2.13 build and one version-locked build per (tag, requirement)."""
    return release(built, out, [STABLE_213, *(("elf_unstable_cpp", tag, (req,)) for tag, req in locked)])


def test_a_hybrid_release_is_no_tw603(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    wheels = _hybrid(built_fixtures, tmp_path, (PY311, "torch==2.11.*"), (PY312, "torch==2.12.*"))
    assert all(found == [] for found in each(release_agreement.release_stable_and_unstable, wheels).values())


def test_tw601_gives_a_hybrid_release_its_recipe(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    wheels = _hybrid(built_fixtures, tmp_path, (PY311, "torch==2.11.*"), (PY312, "torch==2.12.*"))
    found = each(release_agreement.release_requirements_differ, wheels)
    recipe = (
        "this hybrid release (stable >= 2.13, per-minor builds for torch 2.11, 2.12) cannot be one: give each "
        "per-minor build its local label (`torchwheel tag --build-torch {0} --local-label torch{0}`) and publish "
        "them with `torchwheel index`, whose per-torch indexes serve each torch its build (docs/installers.md, "
        "hybrid releases)"
    )
    assert found[LINUX_FILE] == [
        ("", f"requires torch>=2.13 but relset-1.0.0-{PY311}.whl of the same release requires torch==2.11.*: "
             "installers read one METADATA per release, and " + recipe.format("2.11"))
    ]  # fmt: skip
    ((_, message),) = found[f"relset-1.0.0-{PY312}.whl"]
    assert message.endswith(recipe.format("2.12"))  # its own minor in the example


@pytest.mark.parametrize(
    ("locked", "why"),
    [
        (
            ((PY311, "torch==2.11.*"), (PY312, "torch==2.13.*")),
            "a build for the floor's minor: two load on 2.13",
        ),
        (((PY311, "torch==2.11.*"), (PY312, "torch==2.14.*")), "a build above the floor"),
        (((PY311, "torch==2.11.*"), (PY312, "torch")), "an undated build: nothing says where it loads"),
    ],
)
def test_tw603_stays_for_a_real_conflict(
    locked: tuple[tuple[str, str], ...], why: str, built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    wheels = _hybrid(built_fixtures, tmp_path, *locked)
    found = each(release_agreement.release_stable_and_unstable, wheels)
    assert found[LINUX_FILE] and found[LINUX_FILE][0][1].startswith("this wheel is stable but"), why
    found601 = each(release_agreement.release_requirements_differ, wheels)
    assert all("hybrid" not in m for hits_ in found601.values() for _, m in hits_), why
