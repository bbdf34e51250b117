"""``selection.discovery``: where candidates come from (folders, local pages, ``file://``),
the same bytes kept once, a bad file a ``Skipped`` of its project; real tagged wheels."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torchwheel.errors import InputError
from torchwheel.selection import discovery

from .made import tagged_wheel


def test_source_path_reads_paths_and_file_urls(tmp_path: Path) -> None:
    assert discovery.source_path(str(tmp_path)) == tmp_path
    assert discovery.source_path((tmp_path / "a b").as_uri()) == tmp_path / "a b"
    with pytest.raises(InputError, match="only paths, file:// and http"):
        discovery.source_path("ftp://host/x.whl")


def test_the_same_bytes_twice_are_one_candidate_and_a_duplicate(tmp_path: Path) -> None:
    first = tagged_wheel(tmp_path / "a")
    (tmp_path / "b").mkdir()
    shutil.copy2(first, tmp_path / "b")
    got = discovery.gather([str(tmp_path / "a"), str(tmp_path / "b")])
    assert [c.path for c in got.candidates] == [first]
    (dup,) = got.duplicates
    assert dup.location == str(tmp_path / "b" / first.name) and dup.reason == f"the same file as {first}"


def test_the_same_name_with_other_bytes_is_kept_twice(tmp_path: Path) -> None:
    a = tagged_wheel(tmp_path / "a", abi="2.10")
    b = tagged_wheel(tmp_path / "b", abi="2.12")
    assert a.name == b.name
    got = discovery.gather([str(a), str(b)])
    assert [c.path for c in got.candidates] == [a, b] and not got.duplicates
    assert got.candidates[0].sha256 != got.candidates[1].sha256


def test_a_yanked_link_is_never_opened(tmp_path: Path) -> None:
    wheel = tagged_wheel(tmp_path)
    page = tmp_path / "index.html"
    page.write_text(f'<html><body><a href="{wheel.name}" data-yanked="">{wheel.name}</a></body></html>')
    got = discovery.gather([str(page)])
    assert not got.candidates
    (unopened,) = got.unopened
    assert unopened.reason == f"yanked on {page}" and unopened.name == "twunit"


def test_names_filter_and_remember_the_others(tmp_path: Path) -> None:
    tagged_wheel(tmp_path)
    got = discovery.gather([str(tmp_path)], ["other-project"])
    assert not got.candidates and got.other_names == {"twunit"}


def test_a_folder_without_wheels_or_page_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="neither wheels nor an index page"):
        discovery.gather([str(tmp_path)])
    with pytest.raises(InputError, match="no such file or directory"):
        discovery.gather([str(tmp_path / "gone")])
