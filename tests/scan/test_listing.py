"""scan/listing.py: SOURCES -> the wheels a scan will read, none of them read yet. Folders,
local index pages (their sha256s, yanked files, project pages that are missing) and files that
list wheel URLs or paths one a line: ``#`` comments and blank lines skipped, a relative path
relative to the file, not to where the command runs. Every wheel is listed once, and what
cannot be listed is refused with a message that names it, before a line is written."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from torchwheel.errors import InputError
from torchwheel.scan.listing import list_sources
from torchwheel.scan.scanline import WheelSource

from ..lib.helpers import REPO

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
SIZE = DEMO.stat().st_size
MTIME = 1_700_000_000_000_000_000
DIGEST = "ab" * 32


def _wheel(folder: Path, name: str = DEMO.name) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = Path(shutil.copy(DEMO, folder / name))
    os.utime(path, ns=(MTIME, MTIME))
    return path


@pytest.fixture
def budget(set_limits: Callable[..., None]) -> None:
    """``max-page-bytes`` of 1 KiB, from the environment as a user sets it."""
    set_limits(MAX_PAGE_BYTES="1K")


def test_a_folder_lists_its_wheels_with_size_and_mtime(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    b = _wheel(folder, "b-1.0-py3-none-any.whl")
    a = _wheel(folder, "a-1.0-py3-none-any.whl")
    (folder / "notes.txt").write_text("not a wheel\n")
    listed = list_sources([str(folder)])
    assert listed.wheels == [
        WheelSource(str(a), None, SIZE, MTIME, str(folder)),
        WheelSource(str(b), None, SIZE, MTIME, str(folder)),
    ]
    assert (listed.unlisted, listed.yanked) == ([], 0)


@pytest.mark.parametrize("name", ["wheels.txt", "wheels", "WHEELS.LST"])
def test_a_file_of_wheels_relative_to_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    lists = tmp_path / "lists"
    one = _wheel(lists / "here", "one-1.0-py3-none-any.whl")
    two = _wheel(lists / "folder", "two-1.0-py3-none-any.whl")
    far = _wheel(tmp_path / "far", "far-1.0-py3-none-any.whl")
    listed = lists / name
    listed.write_text(
        "# wheels to scan\r\n"
        "\n"
        "   # an indented comment\n"
        "  here/one-1.0-py3-none-any.whl  \r\n"  # relative to the list
        "folder\n"  # a folder, relative too
        f"{far}\n"  # absolute: as written
        f"{DEMO.as_uri()}\n"  # a file:// URL
        "\t\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # not where the list is
    assert [(w.location, w.size) for w in list_sources([str(listed)]).wheels] == [
        (str(one), SIZE),
        (str(two), SIZE),
        (str(far), SIZE),
        (str(DEMO), SIZE),
    ]


def test_a_wheel_url_is_listed_with_its_digest_and_not_fetched(tmp_path: Path) -> None:
    listed = tmp_path / "urls.txt"
    listed.write_text(
        f"https://files.example/a/x-1.0-py3-none-any.whl#sha256={DIGEST}\n"
        "https://files.example/b/y%2B1-1.0-py3-none-any.whl\n"  # no server answers: none is asked
    )
    wheels = list_sources([str(listed)]).wheels
    assert [(w.location, w.sha256, w.size, w.mtime_ns, w.filename) for w in wheels] == [
        ("https://files.example/a/x-1.0-py3-none-any.whl", DIGEST, None, None, "x-1.0-py3-none-any.whl"),
        ("https://files.example/b/y%2B1-1.0-py3-none-any.whl", None, None, None, "y+1-1.0-py3-none-any.whl"),
    ]


def test_each_wheel_is_listed_once(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    wheel = _wheel(folder)
    listed = tmp_path / "urls.txt"
    listed.write_text(
        f"https://h/a/x-1.0-py3-none-any.whl#sha256={DIGEST}\n"
        f"https://h/b/x-1.0-py3-none-any.whl#sha256={DIGEST}\n"  # the same bytes elsewhere
        "https://h/c/z-1.0-py3-none-any.whl\n"
        "https://h/c/z-1.0-py3-none-any.whl\n"  # the same URL
    )
    wheels = list_sources([str(folder), str(wheel), str(listed), str(folder)]).wheels
    assert [w.location for w in wheels] == [
        str(wheel),
        "https://h/a/x-1.0-py3-none-any.whl",
        "https://h/c/z-1.0-py3-none-any.whl",
    ]


def test_a_local_index(tmp_path: Path) -> None:
    """A root page, a project page with sha256s and a yanked file, and a project the root
    links but that is not there: a line of its own later, not a refusal."""
    index = tmp_path / "simple"
    wheel = _wheel(index / "demo-stable")
    digest = hashlib.sha256(DEMO.read_bytes()).hexdigest()
    (index / "demo-stable" / "index.html").write_text(
        f'<a href="{DEMO.name}#sha256={digest}">{DEMO.name}</a>'
        '<a href="old-0.1-py3-none-any.whl" data-yanked="">old</a>'
    )
    (index / "index.html").write_text('<a href="demo-stable/">demo-stable</a><a href="gone/">gone</a>')
    for source in (index, index / "index.html"):
        listed = list_sources([str(source)])
        assert listed.wheels == [
            WheelSource(str(wheel), digest, SIZE, MTIME, str(index / "demo-stable" / "index.html"))
        ]
        assert listed.unlisted == [
            (f"{(index / 'gone').as_uri()}/", f"linked from {index / 'index.html'} but missing")
        ]
        assert listed.yanked == 1


def test_a_page_may_link_a_wheel_that_is_gone(tmp_path: Path) -> None:
    """Listed with no size, so the worker's line says it is missing; the listing goes on."""
    (tmp_path / "index.html").write_text(f'<a href="gone-1.0-py3-none-any.whl#sha256={DIGEST}">x</a>')
    assert list_sources([str(tmp_path / "index.html")]).wheels == [
        WheelSource(
            str(tmp_path / "gone-1.0-py3-none-any.whl"), DIGEST, None, None, str(tmp_path / "index.html")
        )
    ]


def test_a_list_exactly_at_max_page_bytes_is_read(tmp_path: Path, budget: None) -> None:
    wheel = _wheel(tmp_path / "w")
    listed = tmp_path / "wheels.txt"
    entry = f"w/{DEMO.name}\n"
    listed.write_text("#" * (1024 - len(entry) - 1) + "\n" + entry)
    assert listed.stat().st_size == 1024
    assert [w.location for w in list_sources([str(listed)]).wheels] == [str(wheel)]


# what is refused, and how it is named


def _refusal(tmp_path: Path, source: str) -> str:
    with pytest.raises(InputError) as caught:
        list_sources([source])
    return str(caught.value)


def test_a_list_past_max_page_bytes_is_refused(tmp_path: Path, budget: None) -> None:
    listed = tmp_path / "wheels.txt"
    listed.write_text("#" * 1999 + "\n")
    assert _refusal(tmp_path, str(listed)) == (
        f"{listed}: the size of a list of wheels (2,000) exceeds the limit max-page-bytes = 1,024: "
        "raise it with TORCHWHEEL_MAX_PAGE_BYTES"
    )


def test_a_list_that_is_not_utf8_is_refused_at_its_byte(tmp_path: Path) -> None:
    listed = tmp_path / "wheels.txt"
    listed.write_bytes(b"# caf\xc3\xa9\nhttps://h/x.whl\n\xff\n")
    assert _refusal(tmp_path, str(listed)) == f"{listed}: not a UTF-8 list of wheel URLs (byte 24)"


def test_a_list_entry_of_another_scheme_is_refused(tmp_path: Path) -> None:
    listed = tmp_path / "wheels.txt"
    listed.write_text("ftp://h/x-1.0-py3-none-any.whl\n")
    assert _refusal(tmp_path, str(listed)) == (
        "ftp://h/x-1.0-py3-none-any.whl: only paths, file:// and http(s):// URLs are read"
    )


def test_a_list_is_not_followed_into_another_list(tmp_path: Path) -> None:
    listed = tmp_path / "wheels.txt"
    listed.write_text("wheels.txt\n")  # itself: no loop, a refusal
    assert _refusal(tmp_path, str(listed)) == f"{listed}: not a wheel, a folder of wheels or an index page"


def test_a_folder_without_wheels_or_a_page_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert _refusal(tmp_path, str(tmp_path / "empty")) == (
        f"{tmp_path / 'empty'}: neither wheels nor an index page (index.html or index.json)"
    )


def test_a_source_that_is_not_there_is_refused(tmp_path: Path) -> None:
    assert (
        _refusal(tmp_path, str(tmp_path / "nowhere")) == f"{tmp_path / 'nowhere'}: no such file or directory"
    )


# what the module promises and does not yet do


def test_a_list_may_name_a_wheel_that_is_gone(tmp_path: Path) -> None:
    """As a page's link to a wheel that is gone: listed, with the list as its origin and no
    size, so the worker's line says it is missing and the scan goes on (a missing SOURCE on
    the command line is still refused: test_a_source_that_does_not_exist)."""
    _wheel(tmp_path / "w")
    listed = tmp_path / "wheels.txt"
    listed.write_text(f"w/gone-1.0-py3-none-any.whl\nw/{DEMO.name}\n")
    wheels = list_sources([str(listed)]).wheels
    assert [(Path(w.location).name, w.size is None, w.origin) for w in wheels] == [
        ("gone-1.0-py3-none-any.whl", True, str(listed)),
        (DEMO.name, False, str(listed)),
    ]


def test_the_same_file_through_a_list_and_a_folder_is_listed_once(tmp_path: Path) -> None:
    """``list_sources``: "every wheel of sources, once each". A list entry ``../wheels/x.whl``
    is kept as ``lists/../wheels/x.whl``, so the folder's ``wheels/x.whl`` does not match it:
    the wheel is scanned twice and the report counts it twice (the resume's fingerprint,
    ``os.path.abspath``, already calls the two one file)."""
    wheel = _wheel(tmp_path / "wheels")
    listed = tmp_path / "lists" / "wheels.txt"
    listed.parent.mkdir()
    listed.write_text(f"../wheels/{DEMO.name}\n")
    wheels = list_sources([str(tmp_path / "wheels"), str(listed)]).wheels
    assert len(wheels) == 1, [w.location for w in wheels]
    assert os.path.samefile(wheels[0].location, wheel)


def test_a_wheel_found_through_a_list_names_the_list_as_its_origin(tmp_path: Path) -> None:
    """``WheelSource.origin`` is "the folder, page or list it was found through" (and
    docs/scan.md: ``origin`` (folder, page, list)); a list's entries get the wheel's own
    folder, or the wheel's own URL with its ``#sha256=`` fragment, instead."""
    _wheel(tmp_path / "w")
    listed = tmp_path / "wheels.txt"
    listed.write_text(f"w/{DEMO.name}\nhttps://h/x-1.0-py3-none-any.whl#sha256={DIGEST}\n")
    assert [w.origin for w in list_sources([str(listed)]).wheels] == [str(listed), str(listed)]
