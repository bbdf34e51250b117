"""tagging/contradictions.py: the options ``tag`` refuses because the wheel would then
contradict itself (a ``--build-torch`` on a build that names its own torch or none, or that
its requirement excludes; a ``--local-label torchX.Y`` for a torch it does not load on)."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

from torchwheel.errors import InputError
from torchwheel.tables.tableset import shipped_tables
from torchwheel.tagging.contradictions import check_build_torch, check_local_label
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.backend import ANY_BUILD
from torchwheel.torchabi.need import Kind, ReleasesFrom, TorchNeed
from torchwheel.torchabi.torch_releases import shipped_releases
from torchwheel.version import FeatureVersion


def _need(
    kind: Kind,
    floor: str | None = None,
    minors: tuple[tuple[int, ...], ...] = (),
    source: ReleasesFrom = "",
    reqs: tuple[str, ...] = (),
) -> TorchNeed:
    return TorchNeed(
        kind, FeatureVersion.parse(floor) if floor else None, frozenset(minors), source, ANY_BUILD, frozenset(),
        tuple(Requirement(r) for r in reqs),
    )  # fmt: skip


def _refusal(need: TorchNeed, build_torch: str) -> str:
    with pytest.raises(InputError) as info:
        check_build_torch(need, TagOptions(build_torch=build_torch), releases=shipped_releases())
    return str(info.value)


def test_no_build_torch_no_question() -> None:
    check_build_torch(_need("stable", "2.10"), TagOptions(), releases=shipped_releases())


def test_build_torch_on_a_stable_wheel() -> None:
    assert _refusal(_need("stable", "2.10"), "2.13") == (
        "--build-torch 2.13: the wheel is stable-ABI (target 2.10): it loads on every torch from its target on, "
        "and --build-torch only names the torch of a version-locked (unstable) build; drop it"
    )


@pytest.mark.parametrize("kind", ["any", "none"])
def test_build_torch_on_a_wheel_without_torch_symbols(kind: Kind) -> None:
    assert _refusal(_need(kind), "2.13.1") == (
        "--build-torch 2.13: the wheel uses no torch symbols, so no build torch to name; drop it"
    )


def test_build_torch_on_per_minor_builds() -> None:
    need = _need("unstable", minors=((2, 9), (2, 10), (2, 11)), source="names")
    assert _refusal(need, "2.10") == (
        "--build-torch 2.10: the wheel ships builds for torch 2.9-2.11 and names them itself "
        "(Torch-ABI-Builds); drop it"
    )


def test_build_torch_against_the_wheels_own_requirement() -> None:
    need = _need("unstable", reqs=("torch>=2.9,<2.11",))
    assert _refusal(need, "2.12") == (
        "--build-torch 2.12 contradicts the wheel's Requires-Dist torch<2.11,>=2.9 (it admits torch "
        "2.9.0-2.10.0): fix the requirement in the project (or the option)"
    )


def test_build_torch_the_requirement_admits_or_a_marker_limits() -> None:
    check_build_torch(
        _need("unstable", reqs=("torch>=2.9,<2.11",)),
        TagOptions(build_torch="2.10"),
        releases=shipped_releases(),
    )
    check_build_torch(
        _need("unstable", reqs=("torch<2.0; sys_platform == 'win32'",)),
        TagOptions(build_torch="2.10"),
        releases=shipped_releases(),
    )


def test_a_build_torch_newer_than_every_release_is_left_to_requirement() -> None:
    newest = torch_releases.shipped_releases().newest()
    check_build_torch(
        _need("unstable", reqs=("torch<2.1",)),
        TagOptions(build_torch=f"{newest.major}.{newest.minor + 2}"),
        releases=shipped_releases(),
    )


_FIELDS = [("Wheel-Version", "1.0"), ("Torch-ABI", "2.12"), ("Torch-Build", "any")]


def test_a_local_label_for_a_torch_the_wheel_loads_on() -> None:
    check_local_label(
        _FIELDS,
        (Requirement("torch>=2.12"),),
        "1.0+torch2.13",
        TagOptions(local_label="torch2.13"),
        tables=shipped_tables(),
    )


def test_a_local_label_that_names_no_torch_is_not_judged() -> None:
    check_local_label(_FIELDS, (), "1.0+cu130", TagOptions(local_label="cu130"), tables=shipped_tables())
    check_local_label(
        _FIELDS, (), "1.0+torch2.10", TagOptions(), tables=shipped_tables()
    )  # no --local-label given


def test_a_local_label_for_a_torch_below_the_floor() -> None:
    with pytest.raises(InputError) as info:
        check_local_label(
            _FIELDS,
            (Requirement("torch>=2.12"),),
            "1.0+torch2.10",
            TagOptions(local_label="torch2.10"),
            tables=shipped_tables(),
        )
    assert str(info.value) == (
        "--local-label torch2.10 names torch 2.10, but the wheel does not load there (stable >= 2.12: "
        "torch 2.10.0 is older than its target); label it with a torch it loads on, or fix the requirement"
    )
