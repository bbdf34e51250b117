"""tagging/naming.py: a build tag (PEP 427: starts with a digit, in the file name and WHEEL
``Build``) and a local version label (PEP 440 ``+label``) written everywhere the version is:
the file name, METADATA ``Version`` and the ``.dist-info`` / ``.data`` directories."""

from __future__ import annotations

import pytest

from torchwheel.errors import InputError
from torchwheel.limits import LimitExceeded
from torchwheel.tagging.naming import naming, renamed_dist_info
from torchwheel.tagging.tag_options import TagOptions

_FILE = "demo_ext-1.0-cp39-abi3-manylinux_2_28_x86_64.whl"
_META = "Metadata-Version: 2.1\r\nName: demo_ext\r\nVersion: 1.0\r\n\r\nVersion: in the body\r\n"
_WHEEL = "Wheel-Version: 1.0\nGenerator: bdist_wheel\nTag: cp39-abi3-manylinux_2_28_x86_64\n"


def test_no_options_change_nothing() -> None:
    assert naming(_FILE, _META, _WHEEL, TagOptions()) == (_FILE, _META, _WHEEL, [])


def test_a_local_label_goes_into_the_file_name_and_the_version_header_only() -> None:
    filename, meta, wheel, notes = naming(_FILE, _META, _WHEEL, TagOptions(local_label="torch2.12"))
    assert filename == "demo_ext-1.0+torch2.12-cp39-abi3-manylinux_2_28_x86_64.whl"
    assert meta == _META.replace("Version: 1.0\r", "Version: 1.0+torch2.12\r")  # CRLF kept, body untouched
    assert wheel == _WHEEL
    assert notes == [
        "version 1.0+torch2.12 (local label; file name and METADATA): PyPI refuses local versions, "
        "serve this wheel from your own index (docs/authors.md)"
    ]


def test_a_local_label_replaces_the_old_one_and_is_normalised() -> None:
    filename, meta, _, _ = naming(
        "demo-1.0+cu128-py3-none-any.whl",
        "Version: 1.0+cu128\n",
        _WHEEL,
        TagOptions(local_label="Torch-2_13"),
    )
    assert filename == "demo-1.0+torch.2.13-py3-none-any.whl"  # PEP 440: "-" and "_" become ".", lower case
    assert meta == "Version: 1.0+torch.2.13\n"


def test_the_same_local_label_again_is_no_change() -> None:
    assert naming("d-1.0+torch2.12-py3-none-any.whl", "Version: 1.0+torch2.12\n", _WHEEL,
                  TagOptions(local_label="torch2.12"))[3] == []  # fmt: skip


@pytest.mark.parametrize("label", ["", "torch 2.12", "a+b", "-x"])
def test_an_invalid_local_label_is_refused(label: str) -> None:
    with pytest.raises(InputError, match=r"^--local-label .*: not a valid local version label$"):
        naming(_FILE, _META, _WHEEL, TagOptions(local_label=label))


def test_a_local_label_needs_a_version_header() -> None:
    with pytest.raises(InputError, match=r"^METADATA has no Version to add a local label to$"):
        naming(_FILE, "Name: demo\n\nVersion: 1.0 in the body\n", _WHEEL, TagOptions(local_label="x"))


def test_a_build_tag_goes_into_the_file_name_and_wheel_build() -> None:
    filename, meta, wheel, notes = naming(
        _FILE, _META, _WHEEL + "Build: 1\n\n", TagOptions(build_tag="2torch213")
    )
    assert filename == "demo_ext-1.0-2torch213-cp39-abi3-manylinux_2_28_x86_64.whl"
    assert meta == _META
    assert wheel == _WHEEL + "Build: 2torch213\n"
    assert notes == ["build tag 2torch213 (file name and WHEEL Build)"]


def test_a_build_tag_replaces_the_file_names_and_is_kept_when_equal() -> None:
    built = "demo-1.0-1-py3-none-any.whl"
    assert naming(built, _META, _WHEEL, TagOptions(build_tag="7"))[0] == "demo-1.0-7-py3-none-any.whl"
    assert naming(built, _META, _WHEEL, TagOptions(build_tag="1"))[3] == []


@pytest.mark.parametrize(
    "tag", ["a1", "1-2", "1 2", "", "1/../../../x", "1\\..\\x", "1\x00", "1\n", "1+x", "1é"]
)
def test_a_build_tag_is_what_the_binary_distribution_format_allows(tag: str) -> None:
    """A digit, then letters, digits, "_" and ".": "1/../../../x" made `tag -w A/B/out` write its
    temporary wheel two folders above the output folder."""
    with pytest.raises(InputError) as info:
        naming(_FILE, _META, _WHEEL, TagOptions(build_tag=tag))
    assert str(info.value) == (
        f"--build-tag {tag!r}: a digit, then letters, digits, '_' and '.' only (the binary distribution format)"
    )


@pytest.mark.parametrize("option", ["build_tag", "local_label"])
def test_a_build_tag_or_label_past_max_version_length_is_refused_before_packaging_reads_it(
    option: str,
) -> None:
    """5,000 digits: packaging's int() raised ValueError (an internal error)."""
    with pytest.raises(
        LimitExceeded, match="'s length in characters \\(5,000\\) exceeds the limit max-version-length"
    ):
        naming(_FILE, _META, _WHEEL, TagOptions(**{option: "1" * 5000}))
    assert naming(_FILE, _META, _WHEEL, TagOptions(build_tag="1" * 200))[0].count("1" * 200) == 1


def test_both_at_once() -> None:
    filename, _, _, notes = naming(_FILE, _META, _WHEEL, TagOptions(build_tag="1", local_label="cu130"))
    assert filename == "demo_ext-1.0+cu130-1-cp39-abi3-manylinux_2_28_x86_64.whl"
    assert len(notes) == 2


def test_the_dist_info_and_data_directories_follow_the_version() -> None:
    members = [
        "demo/__init__.py",
        "demo-1.0.dist-info/METADATA",
        "demo-1.0.dist-info/RECORD",
        "demo-1.0.data/scripts/run",
        "demo-1.0.dist-info-not/x",
    ]
    new, renames = renamed_dist_info("demo-1.0.dist-info", members, "demo-1.0+torch2.12-py3-none-any.whl")
    assert new == "demo-1.0+torch2.12.dist-info"
    assert renames == {
        "demo-1.0.dist-info/METADATA": "demo-1.0+torch2.12.dist-info/METADATA",
        "demo-1.0.dist-info/RECORD": "demo-1.0+torch2.12.dist-info/RECORD",
        "demo-1.0.data/scripts/run": "demo-1.0+torch2.12.data/scripts/run",
    }


def test_a_dist_info_that_matches_is_not_renamed() -> None:
    assert renamed_dist_info(
        "demo-1.0.dist-info", ["demo-1.0.dist-info/METADATA"], "demo-1.0-7-py3-none-any.whl"
    ) == (
        None,
        {},
    )
