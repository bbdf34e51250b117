"""tagging/release_requirements.py: the one torch requirement set ``tag`` writes into every
wheel of a release (``tag --release``), with ``sys_platform`` markers where floors differ by
platform family, and the releases it refuses.

These tests exist so that the merge is held to its docstring on real wheels (one fixture
library per wheel: ``elf_marker_2_10`` targets 2.10, ``macho_arm64_marker_2_12`` 2.12,
``pe_mingw_marker_2_10`` 2.10, ``elf_marker_2_13_shims_2_13`` 2.13, ``elf_unstable_cpp``
unstable), without going through the command line. Expected requirement lines are
hand-written PEP 508 text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchwheel.analysis.release_wheels import platform_family
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.api import inspect_wheel
from torchwheel.errors import InputError
from torchwheel.tagging.release_requirements import release_sets, shared_requirements
from torchwheel.tagging.tag_options import TagOptions

from ..lib.helpers import release_wheels

LINUX = "cp39-abi3-manylinux_2_28_x86_64"
MAC = "cp39-abi3-macosx_11_0_arm64"
WIN = "cp39-abi3-win_amd64"
UNSTABLE = "cp311-cp311-manylinux_2_28_x86_64"

Member = tuple[str, str, tuple[str, ...]]  # binary scenario, wheel tag, requirements


def write(built: dict[str, Path], out: Path, members: list[Member], dist: str = "relset") -> list[Path]:
    return release_wheels(built, out, members, dist)


def release(built: dict[str, Path], out: Path, members: list[Member]) -> list[WheelFacts]:
    return list(inspect_wheel(write(built, out, members)).facts)


# -- platform_family ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "family"),
    [
        ("clean", "linux"),  # manylinux_2_28_x86_64
        ("tw405_compound", "linux"),  # manylinux_2_17_x86_64.manylinux2014_x86_64: two tags, one family
        ("tw415", "linux"),  # linux_x86_64
        ("recipe_macos", "darwin"),  # macosx_11_0_x86_64
        ("tw405_universal", "darwin"),  # macosx_11_0_universal2
        ("recipe_windows", "win32"),  # win_amd64
        ("tw306", None),  # py3-none-any
    ],
)
def test_platform_family(scenario: str, family: str | None, fixture_wheels: dict[str, Path]) -> None:
    assert platform_family(inspect_wheel(fixture_wheels[scenario]).facts[0]) == family


def test_platform_family_of_a_wheel_for_two_families(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    (w,) = release(
        built_fixtures,
        tmp_path,
        [("elf_marker_2_10", "cp39-abi3-manylinux_2_28_x86_64.macosx_11_0_arm64", ())],
    )
    assert platform_family(w) is None


# -- shared_requirements ------------------------------------------------------------------------


def test_one_requirement_for_every_wheel_stays_as_it_is(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    group = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10",)), ("pe_mingw_marker_2_10", WIN, ("torch>=2.10",))],
    )  # fmt: skip
    assert shared_requirements(group, TagOptions()) == ("torch>=2.10",)


def test_floors_that_differ_by_platform_get_markers(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """Linux 2.10 and Windows 2.10 against macOS 2.12: the common floor (two families) takes
    ``!=``, so a platform nobody built for keeps it; macOS gets its own line."""
    group = release(
        built_fixtures, tmp_path,
        [
            ("elf_marker_2_10", LINUX, ("torch",)),
            ("macho_arm64_marker_2_12", MAC, ("torch",)),
            ("pe_mingw_marker_2_10", WIN, ("torch",)),
        ],
    )  # fmt: skip
    assert shared_requirements(group, TagOptions()) == (
        'torch>=2.12; sys_platform == "darwin"',
        'torch>=2.10; sys_platform != "darwin"',
    )


def test_the_authors_marker_is_kept_beside_the_family(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    cond = 'python_version >= "3.10"'
    group = release(
        built_fixtures, tmp_path,
        [
            ("elf_marker_2_10", LINUX, (f"torch; {cond}",)),
            ("pe_mingw_marker_2_10", WIN, (f"torch; {cond}",)),
            ("macho_arm64_marker_2_12", MAC, (f"torch; {cond}",)),
        ],
    )  # fmt: skip
    assert shared_requirements(group, TagOptions()) == (
        f'torch>=2.12; sys_platform == "darwin" and {cond}',
        f'torch>=2.10; sys_platform != "darwin" and {cond}',
    )


def test_stable_and_unstable_are_refused(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    group = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch>=2.10",)), ("elf_unstable_cpp", UNSTABLE, ("torch==2.13.*",))],
    )  # fmt: skip
    with pytest.raises(InputError) as info:
        shared_requirements(group, TagOptions())
    message = str(info.value)
    assert message.startswith("relset 1.0.0: stable and unstable builds in one release")
    assert "(TW603)" in message and "--local-label torchX.Y" in message


def test_floors_that_differ_within_one_family_are_refused(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """manylinux_2_28 (2.10) and manylinux_2_17 (2.13): both sys_platform "linux"."""
    group = release(
        built_fixtures, tmp_path,
        [
            ("elf_marker_2_10", LINUX, ("torch>=2.10",)),
            ("elf_marker_2_13_shims_2_13", "cp39-abi3-manylinux_2_17_x86_64", ("torch>=2.10",)),
        ],
    )  # fmt: skip
    with pytest.raises(InputError) as info:
        shared_requirements(group, TagOptions())
    message = str(info.value)
    assert message.startswith(str(tmp_path / "relset-1.0.0-cp39-abi3-manylinux_2_17_x86_64.whl"))
    assert "its torch requirement torch>=2.13 differs from another linux wheel of the same release" in message
    assert "markers cannot tell them apart" in message


def test_a_platform_independent_wheel_beside_differing_floors_is_refused(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    group = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", "cp39-abi3-any", ("torch",)), ("macho_arm64_marker_2_12", MAC, ("torch",))],
    )  # fmt: skip
    with pytest.raises(InputError, match="a platform-independent wheel cannot share a release"):
        shared_requirements(group, TagOptions())


# -- release_sets -------------------------------------------------------------------------------


def test_no_release_mode_shares_nothing(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    group = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch",)), ("macho_arm64_marker_2_12", MAC, ("torch",))],
    )  # fmt: skip
    assert release_sets(group, TagOptions(), False) == {}


def test_automatic_mode_groups_each_release_of_two_or_more(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """relset has two wheels (one set for both); a lone wheel of another project gets none."""
    paths = write(
        built_fixtures, tmp_path,
        [("elf_marker_2_10", LINUX, ("torch",)), ("macho_arm64_marker_2_12", MAC, ("torch",))],
    )  # fmt: skip
    paths += write(built_fixtures, tmp_path, [("elf_marker_2_10", LINUX, ("torch",))], dist="lonely")
    linux, mac, lonely = inspect_wheel(paths).facts
    shared = ('torch>=2.12; sys_platform == "darwin"', 'torch>=2.10; sys_platform != "darwin"')
    assert release_sets([linux, mac, lonely], TagOptions(), None) == {id(linux): shared, id(mac): shared}


def test_release_mode_takes_one_release(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    (w,) = release(built_fixtures, tmp_path, [("elf_marker_2_10", LINUX, ("torch",))])
    assert release_sets([w], TagOptions(), True) == {id(w): ("torch>=2.10",)}


def test_release_mode_refuses_two_releases(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    paths = write(built_fixtures, tmp_path, [("elf_marker_2_10", LINUX, ("torch",))])
    paths += write(built_fixtures, tmp_path, [("elf_marker_2_10", LINUX, ("torch",))], dist="other")
    wheels = list(inspect_wheel(paths).facts)
    with pytest.raises(InputError) as info:
        release_sets(wheels, TagOptions(), True)
    assert str(info.value) == "--release: the wheels given are not one release (other 1.0.0, relset 1.0.0)"


def test_a_hybrid_release_keeps_each_wheels_requirement(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 48, item 3: stable >= 2.13 beside a per-minor build for 2.12. Given together
    (automatic mode), each keeps its own; ``--release`` refuses with the recipe."""
    wheels = release(
        built_fixtures, tmp_path,
        [("elf_marker_2_13_shims_2_13", LINUX, ("torch>=2.13",)), ("elf_unstable_cpp", UNSTABLE, ("torch==2.12.*",))],
    )  # fmt: skip
    assert release_sets(wheels, TagOptions(), None) == {}
    with pytest.raises(InputError) as info:
        release_sets(wheels, TagOptions(), True)
    assert str(info.value) == (
        "relset 1.0.0: a hybrid release (stable >= 2.13, per-minor builds for torch 2.12) cannot share one torch "
        "requirement: tag each build on its own, the per-minor builds with --build-torch X.Y --local-label "
        "torchX.Y, and publish them with `torchwheel index` (docs/installers.md, hybrid releases)"
    )
