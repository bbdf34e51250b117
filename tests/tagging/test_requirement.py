"""tagging/requirement.py: the ``Requires-Dist: torch`` that ``tag`` writes. Expected values
follow PEP 440 specifier semantics (``==2.13.*`` is the 2.13 patches, ``>=2.10`` every
release from 2.10.0 on) against the known torch releases (``data/torch_releases.json``)."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from torchwheel.errors import InputError
from torchwheel.tagging.requirement import (
    apply_requirements,
    desired_spec,
    merged_requirement,
    named_minor,
    narrowed,
    with_torch_requirements,
)
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.backend import ANY_BUILD
from torchwheel.torchabi.need import Kind, ReleasesFrom, TorchNeed
from torchwheel.torchabi.torch_releases import shipped_releases
from torchwheel.version import FeatureVersion

RELEASES = shipped_releases()


def _need(
    kind: Kind,
    floor: str | None = None,
    minors: tuple[tuple[int, ...], ...] = (),
    source: ReleasesFrom = "",
) -> TorchNeed:
    return TorchNeed(
        kind=kind,
        floor=FeatureVersion.parse(floor) if floor else None,
        releases=frozenset(minors),
        releases_from=source,
        builds=ANY_BUILD,
        gpu_code=frozenset(),
        requirements=(),
    )


_STABLE_210 = _need("stable", "2.10")


@pytest.mark.parametrize(
    ("name", "minor"),
    [
        ("nvfuser-cu130-torch210", "2.10"),
        ("aikernel-x-libtorch2-12-win-x64", "2.12"),
        ("flash_attn_torch2.7", "2.7"),
        ("Kernels-TORCH_2_9", "2.9"),
        ("ext-torch27-torch28", None),  # two minors: none
        ("torch2100", None),  # no minor of three digits
        ("demo", None),
    ],
)
def test_named_minor(name: str, minor: str | None) -> None:
    assert named_minor(name) == minor


def test_desired_spec_of_a_stable_floor() -> None:
    assert desired_spec(_STABLE_210, (), TagOptions(), releases=RELEASES) == ">=2.10"
    assert desired_spec(_need("stable", "2.10.1"), (), TagOptions(), releases=RELEASES) == ">=2.10.1"
    assert desired_spec(_STABLE_210, (), TagOptions(upper_bound="2.14"), releases=RELEASES) == ">=2.10,<2.14"


def test_desired_spec_refuses_a_floor_newer_than_every_release() -> None:
    newest = torch_releases.shipped_releases().newest()
    beyond = f"{newest.major}.{newest.minor + 1}"
    with pytest.raises(InputError) as info:
        desired_spec(_need("stable", beyond), (), TagOptions(), releases=RELEASES)
    assert str(info.value) == (
        f"the binaries need torch {beyond}, newer than any torch release this torchwheel knows "
        f"(newest {newest}): writing torch>={beyond} would admit no torch it knows; "
        "check TORCH_TARGET_VERSION, or run `torchwheel symbols update TORCH_WHEEL_OR_ENV` with that torch (TW207)"
    )


def test_desired_spec_of_unstable_builds() -> None:
    per_minor = _need("unstable", minors=((2, 9), (2, 10)), source="names")
    assert (
        desired_spec(per_minor, (), TagOptions(), releases=RELEASES) is None
    )  # a pin would break every other minor
    one = _need("unstable", minors=((2, 13),), source="exports")
    assert desired_spec(one, (), TagOptions(build_torch="2.13"), releases=RELEASES) == "==2.13.*"
    assert desired_spec(one, (Requirement("torch==2.9.1"),), TagOptions(), releases=RELEASES) == "==2.9.*"
    assert (
        desired_spec(one, (Requirement("torch>=2.12,<2.13"),), TagOptions(), releases=RELEASES) == "==2.12.*"
    )


def test_an_undated_unstable_build_is_refused_with_what_names_its_torch() -> None:
    one = _need("unstable", minors=((2, 12),), source="exports")
    with pytest.raises(InputError) as info:
        desired_spec(one, (Requirement("torch>=2.0"),), TagOptions(), named="2.10", releases=RELEASES)
    assert str(info.value) == (
        "the wheel uses unstable libtorch symbols and its torch requirement does not name the build torch: "
        "pass --build-torch X.Y (its name says torch 2.10; its imports exist in the exports of torch 2.12), "
        "or --build-torch installed (the torch installed here); "
        "`torchwheel compat --against TORCH WHEEL` (a torch 2.10 wheel, or `installed`) checks it first"
    )


def test_an_undated_unstable_build_without_clues() -> None:
    with pytest.raises(
        InputError,
        match=r"pass --build-torch X\.Y, or --build-torch installed \(the torch installed here\); "
        r"`torchwheel compat .*\(a torch X\.Y wheel",
    ):
        desired_spec(_need("unstable"), (), TagOptions(), releases=RELEASES)


@pytest.mark.parametrize("kind", ["any", "none"])
def test_no_requirement_for_a_wheel_that_needs_no_torch_version(kind: Kind) -> None:
    assert desired_spec(_need(kind), (), TagOptions(), releases=RELEASES) is None


@pytest.mark.parametrize(
    ("author", "desired", "expected"),
    [
        ("torch>=2.11", ">=2.10", ">=2.11"),  # already inside: the author's text
        ("torch>=2.8", ">=2.10", ">=2.10"),  # the author's floor is implied
        ("torch>=2.8,<2.14", ">=2.10", ">=2.10,<2.14"),  # the author's cap kept
        ("torch>=2.9,!=2.12.0", ">=2.10", ">=2.10,!=2.12.0"),
        ("torch>=2.10", "==2.13.*", "==2.13.*"),
        ("torch<2.10", ">=2.10", None),  # they exclude each other
        ("torch", ">=2.10", ">=2.10"),
    ],
)
def test_narrowed(author: str, desired: str, expected: str | None) -> None:
    assert narrowed(Requirement(author), SpecifierSet(desired), RELEASES) == expected


def test_merged_requirement_narrows_and_says_so() -> None:
    req = Requirement("torch[cuda]>=2.8; sys_platform == 'linux'")
    assert merged_requirement(req, ">=2.10", _STABLE_210, TagOptions(), releases=RELEASES) == (
        ">=2.10",
        [
            'Requires-Dist: torch[cuda]>=2.8; sys_platform == "linux" -> torch[cuda]>=2.10; sys_platform == "linux"'
        ],
    )


def test_a_pin_is_kept_unless_relax_pin() -> None:
    pin = Requirement("torch==2.12.*")
    assert merged_requirement(pin, ">=2.10", _STABLE_210, TagOptions(), releases=RELEASES) == (
        "==2.12.*",
        [
            "kept the pin torch==2.12.* although the stable ABI loads on torch>=2.10: --relax-pin would widen it"
        ],
    )
    assert merged_requirement(pin, ">=2.10", _STABLE_210, TagOptions(relax_pin=True), releases=RELEASES) == (
        ">=2.10",
        ["Requires-Dist: torch==2.12.* -> torch>=2.10 (relax-pin)"],
    )


def test_a_requirement_that_excludes_every_usable_torch_is_refused() -> None:
    with pytest.raises(InputError) as info:
        merged_requirement(Requirement("torch<2.10"), ">=2.10", _STABLE_210, TagOptions(), releases=RELEASES)
    assert str(info.value) == (
        "Requires-Dist 'torch<2.10' admits no torch the binaries load on (torch>=2.10): "
        "fix it in the project, or pass --relax-pin to replace it"
    )


_META = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: numpy\n"


def test_metadata_text_adds_a_missing_requirement() -> None:
    text, notes = with_torch_requirements(_META + "\nbody\n", _STABLE_210, TagOptions(), releases=RELEASES)
    assert text == _META + "Requires-Dist: torch>=2.10\n\nbody\n"
    assert notes == ["added Requires-Dist: torch>=2.10"]


def test_metadata_text_keeps_a_correct_requirement() -> None:
    meta = _META + "Requires-Dist: torch >= 2.10\n"
    assert with_torch_requirements(meta, _STABLE_210, TagOptions(), releases=RELEASES) == (meta, [])


def test_metadata_text_replaces_a_wrong_requirement_in_place() -> None:
    meta = (
        "Metadata-Version: 2.1\r\nName: demo\r\nVersion: 1.0\r\nRequires-Dist: torch>=2.4\r\nSummary: s\r\n"
    )
    text, notes = with_torch_requirements(meta, _STABLE_210, TagOptions(), releases=RELEASES)
    assert text == meta.replace("torch>=2.4", "torch>=2.10")
    assert notes == ["Requires-Dist: torch>=2.4 -> torch>=2.10"]


def test_apply_requirements_replaces_the_set_line_for_line() -> None:
    meta = _META + "Requires-Dist: torch>=2.9\nRequires-Dist: torch>=2.8; sys_platform == 'darwin'\n"
    text, notes = apply_requirements(meta, ("torch>=2.10",), "tag --release")
    assert text == _META + "Requires-Dist: torch>=2.10\n"
    assert notes == ["Requires-Dist torch (one set for the release): torch>=2.10"]


def test_apply_requirements_adds_lines_the_wheel_lacks() -> None:
    wanted = ('torch>=2.10; sys_platform == "linux"', 'torch>=2.12; sys_platform == "darwin"')
    text, _ = apply_requirements(_META, wanted, "tag --release")
    assert text == _META + "".join(f"Requires-Dist: {r}\n" for r in wanted)


def test_apply_requirements_of_the_same_set_is_no_change() -> None:
    meta = _META + "Requires-Dist: torch>=2.10\n"
    assert apply_requirements(meta, ("torch>=2.10",), "tag --release") == (meta, [])
