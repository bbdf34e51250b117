"""wheel/metadata.py: the WHEEL fields and the METADATA facts torchwheel judges, and the one
reading of a ``Torch-ABI`` value. Expected values follow the binary distribution format
(PEP 427: ``Wheel-Version`` 1.x, one ``Tag`` per tag) and the core metadata spec (fields
that may appear once)."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from torchwheel.version import FeatureVersion
from torchwheel.wheel.metadata import (
    check_torch_abi_lines,
    parse_metadata,
    parse_wheel_fields,
    torch_abi_floor,
    wheel_problems,
)

_GOOD_WHEEL = (
    "Wheel-Version: 1.0\nGenerator: bdist_wheel\nRoot-Is-Purelib: false\nTag: cp39-abi3-linux_x86_64\n"
)


def test_wheel_field_names_get_one_spelling_whatever_the_case() -> None:
    text = "wheel-version: 1.0\nTAG: cp39-abi3-linux_x86_64\ntag: cp39-abi3-manylinux_2_28_x86_64\ntorch-abi:  2.10 \n"
    assert parse_wheel_fields(text) == {
        "Wheel-Version": ["1.0"],
        "Tag": ["cp39-abi3-linux_x86_64", "cp39-abi3-manylinux_2_28_x86_64"],
        "Torch-ABI": ["2.10"],
    }


def test_unknown_wheel_fields_keep_their_own_spelling() -> None:
    assert parse_wheel_fields("X-Custom: yes\n") == {"X-Custom": ["yes"]}


def test_a_good_wheel_file_has_no_problems() -> None:
    assert wheel_problems(_GOOD_WHEEL) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Tag: py3-none-any\n", "WHEEL has no Wheel-Version: installers refuse it"),
        ("Wheel-Version:\nTag: py3-none-any\n", "WHEEL has no Wheel-Version: installers refuse it"),
        (
            "Wheel-Version: 1.0\nWheel-Version: 1.0\nTag: py3-none-any\n",
            "WHEEL has 2 Wheel-Version fields: a field that may appear once",
        ),
        ("Wheel-Version: 2.0\nTag: py3-none-any\n", "Wheel-Version 2.0 is not 1.x: installers refuse it"),
        ("Wheel-Version: 1.0\n", "WHEEL has no Tag lines: add one per tag in the file name"),
        ("Wheel-Version: 1.0\nTag: py3-none\n", "WHEEL Tag 'py3-none' is not interpreter-abi-platform"),
        ("Wheel-Version: 1.0\nTag: py3--any\n", "WHEEL Tag 'py3--any' is not interpreter-abi-platform"),
    ],
)
def test_wheel_problems_name_what_installers_refuse(text: str, problem: str) -> None:
    assert wheel_problems(text) == [problem]


def test_a_folded_wheel_field_is_a_problem() -> None:
    problems = wheel_problems("Wheel-Version:\n 1.0\nTag: py3-none-any\n")
    assert problems[0] == "WHEEL field 'Wheel-Version' is folded over several lines: installer refuses it"


@pytest.mark.parametrize(
    ("value", "floor"),
    [
        ("2.10", FeatureVersion(2, 10, 0)),
        (" 2.10.1 ", FeatureVersion(2, 10, 1)),
        ("0.0", FeatureVersion(0, 0, 0)),
        ("255.255.255", FeatureVersion(255, 255, 255)),
    ],
)
def test_torch_abi_floor_reads_what_tag_writes(value: str, floor: FeatureVersion) -> None:
    assert torch_abi_floor(value) == floor


@pytest.mark.parametrize(
    "value", ["-1", "2", "2.10+x", "v2.10", "2.10.1.1", "1234.0", "\uff12.10", "unstable"]
)
def test_torch_abi_floor_refuses_anything_else(value: str) -> None:
    with pytest.raises(ValueError, match="is neither a version"):
        torch_abi_floor(value)


def test_torch_abi_floor_refuses_a_release_past_one_byte() -> None:
    with pytest.raises(ValueError, match="minor 256 does not fit in one byte"):
        torch_abi_floor("2.256")


@pytest.mark.parametrize("values", [[], ["2.10"], ["2.10", " 2.10 "], ["unstable"], ["any"], ["none"]])
def test_torch_abi_lines_that_say_one_thing(values: list[str]) -> None:
    check_torch_abi_lines(values)  # no error is the assertion


def test_torch_abi_lines_that_disagree() -> None:
    with pytest.raises(
        ValueError, match=r"^WHEEL has 2 Torch-ABI lines that disagree \('2.10', 'unstable'\)$"
    ):
        check_torch_abi_lines(["unstable", "2.10"])


def test_a_torch_abi_line_that_is_no_floor() -> None:
    with pytest.raises(ValueError, match="is neither a version"):
        check_torch_abi_lines(["stable"])


def test_parse_metadata_reads_the_torch_facts() -> None:
    text = (
        "Metadata-Version: 2.1\nName: Demo_Ext\nVersion: 1.0 \nRequires-Python: >=3.9\n"
        "Requires-Dist: numpy\nRequires-Dist: Torch>=2.10; sys_platform == 'linux'\n"
        "Requires-Dist: torchvision\n\nbody\n"
    )
    facts = parse_metadata(text)
    assert facts.name == "Demo_Ext"
    assert facts.version == "1.0"
    assert facts.requires_python == SpecifierSet(">=3.9")
    assert [str(r) for r in facts.torch_requirements] == ['Torch>=2.10; sys_platform == "linux"']
    assert [r.name for r in facts.requirements] == ["numpy", "Torch", "torchvision"]
    assert facts.problems == ()


def test_parse_metadata_collects_problems_instead_of_failing() -> None:
    text = (
        "Name: a\nName: b\nRequires-Python: >=three\nRequires-Dist: torch>=>2\n"
        "Requires-Dist: torch==2.10.*\nSummary: one\nsummary: two\n"
    )
    facts = parse_metadata(text)
    assert facts.problems == (
        "Requires-Python '>=three' is not a valid specifier",
        "Requires-Dist 'torch>=>2' is not a valid requirement",
        "METADATA has no Metadata-Version",
        "METADATA has no Version",
        "METADATA has 2 Name fields: a field that may appear once",
        "METADATA has 2 Summary fields: a field that may appear once",
    )
    assert facts.requires_python is None
    assert [str(r) for r in facts.torch_requirements] == ["torch==2.10.*"]
    assert facts.name == "a"  # the first Name field
    assert facts.version is None


def test_parse_metadata_of_nothing() -> None:
    facts = parse_metadata("")
    assert facts.problems == (
        "METADATA has no Metadata-Version",
        "METADATA has no Name",
        "METADATA has no Version",
    )
    assert (facts.name, facts.version, facts.requires_python, facts.requirements) == (None, None, None, ())
