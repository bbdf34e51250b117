"""wheel/metadata_edit.py: ``Requires-Dist`` lines edited, every other byte kept (line
endings, folded headers, the body), and what was written parsed back as installers parse it
(``packaging.metadata.parse_email``)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from packaging.requirements import Requirement

from torchwheel.errors import InputError
from torchwheel.wheel.metadata_edit import requirement, rewrite_requirements, verify_requirements

_META = (
    "Metadata-Version: 2.1\r\nName: demo\r\nVersion: 1.0\r\nRequires-Dist: numpy\r\n"
    "Requires-Dist: torch>=2.9; sys_platform == 'linux'\r\nSummary: folded\r\n  summary\r\n"
    "\r\nRequires-Dist: torch (body, not a header)\r\n"
)


def test_a_replaced_line_keeps_its_line_ending_and_everything_else() -> None:
    seen: list[list[str]] = []

    def edit(reqs: list[Requirement]) -> tuple[Mapping[int, str | None], str | None]:
        seen.append([str(r) for r in reqs])
        return {0: "torch>=2.10; sys_platform == 'linux'"}, None

    text, claimed = rewrite_requirements(_META, "torch", edit)
    assert seen == [['torch>=2.9; sys_platform == "linux"']]  # the body's line is no header
    assert text == _META.replace("torch>=2.9;", "torch>=2.10;")
    assert claimed == ["torch>=2.10; sys_platform == 'linux'"]


def test_a_line_replaced_by_none_is_dropped() -> None:
    def edit(reqs: list[Requirement]) -> tuple[Mapping[int, str | None], str | None]:
        return {0: None}, None

    text, claimed = rewrite_requirements(_META, "torch", edit)
    assert text == _META.replace("Requires-Dist: torch>=2.9; sys_platform == 'linux'\r\n", "")
    assert claimed == []


def test_an_added_line_goes_after_the_last_requires_dist_in_the_files_line_ending() -> None:
    def edit(reqs: list[Requirement]) -> tuple[Mapping[int, str | None], str | None]:
        return {}, "torch==2.13.*"

    text, claimed = rewrite_requirements(_META, "torch", edit)
    assert text == _META.replace(
        "sys_platform == 'linux'\r\n", "sys_platform == 'linux'\r\nRequires-Dist: torch==2.13.*\r\n"
    )
    assert claimed == ['torch>=2.9; sys_platform == "linux"', "torch==2.13.*"]


def test_an_added_line_without_requires_dist_goes_after_the_last_header() -> None:
    def edit(reqs: list[Requirement]) -> tuple[Mapping[int, str | None], str | None]:
        assert reqs == []
        return {}, "torch>=2.10"

    text, _ = rewrite_requirements("Name: demo\nVersion: 1.0", "torch", edit)
    assert text == "Name: demo\nVersion: 1.0\nRequires-Dist: torch>=2.10\n"


def test_unmatched_and_malformed_lines_are_not_handed_to_edit() -> None:
    got: list[list[str]] = []

    def edit(reqs: list[Requirement]) -> tuple[Mapping[int, str | None], str | None]:
        got.append([str(r) for r in reqs])
        return {}, None

    source = "Name: d\nRequires-Dist: torch>=>2\nRequires-Dist: torchvision\nRequires-Dist: TORCH\n"
    text, claimed = rewrite_requirements(source, "torch", edit)
    assert got == [["TORCH"]]
    assert (text, claimed) == (source, ["TORCH"])


def test_requirement_of_a_malformed_line_is_none() -> None:
    assert requirement("torch>=>2") is None
    assert str(requirement("torch >= 2.10")) == "torch>=2.10"


def test_verify_accepts_what_the_text_states() -> None:
    verify_requirements("Metadata-Version: 2.1\nName: d\nVersion: 1\nRequires-Dist: torch>=2.10\n", "torch",
                        ["torch >= 2.10"], "tag")  # fmt: skip


def test_verify_refuses_a_claim_the_text_does_not_make() -> None:
    text = "Metadata-Version: 2.1\nName: d\nVersion: 1\nRequires-Dist: torch>=2.9\n"
    with pytest.raises(InputError) as info:
        verify_requirements(text, "torch", ["torch>=2.10"], "tag")
    assert str(info.value) == (
        "tag: METADATA would state torch requirements ['torch>=2.9'], not the ['torch>=2.10'] "
        "torchwheel computed: refusing to write it"
    )
