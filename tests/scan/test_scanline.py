"""scan/scanline.py: one wheel as ``torchwheel scan`` records it (docs/scan.md): its
source named exactly, a stable error code per failure (the resume asks again only for the
network's), and every key of a line present even when nothing was reached."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from torchwheel.errors import InputError
from torchwheel.limits import Limit, LimitExceeded
from torchwheel.net.fetch import DigestMismatch, Exhausted, HTTPFailure, NotFound, Unreachable
from torchwheel.scan.scanline import (
    TRANSIENT,
    Gone,
    WheelSource,
    as_source,
    empty_line,
    error_code,
    error_json,
    read_whole,
)
from torchwheel.wheel.contents import InvalidWheelName


def test_a_sources_file_name() -> None:
    assert WheelSource("/srv/w/demo-1.0-py3-none-any.whl").filename == "demo-1.0-py3-none-any.whl"
    url = "https://files.example/packages/ab/demo%2B1-1.0-py3-none-any.whl"
    assert WheelSource(url).filename == "demo+1-1.0-py3-none-any.whl"  # the path unquoted
    assert WheelSource("https://files.example/get?id=7", name="demo-1.0-py3-none-any.whl").filename == (
        "demo-1.0-py3-none-any.whl"
    )


def test_a_source_as_json() -> None:
    assert WheelSource(
        "https://h/d-1.0-py3-none-any.whl", "ab" * 32, 10, origin="https://h/simple/d/"
    ).to_json() == {
        "url": "https://h/d-1.0-py3-none-any.whl",
        "filename": "d-1.0-py3-none-any.whl",
        "sha256": "ab" * 32,
        "size": 10,
        "mtime_ns": None,
        "origin": "https://h/simple/d/",
    }
    assert next(iter(WheelSource("w.whl").to_json())) == "path"


def test_as_source_of_each_kind() -> None:
    src = WheelSource("a.whl")
    assert as_source(src) is src
    assert as_source(Path("dir/a.whl")) == WheelSource("dir/a.whl")
    assert as_source(
        {"url": "https://h/a.whl", "sha256": "", "size": "10", "mtime_ns": 5, "filename": "b.whl"}
    ) == (WheelSource("https://h/a.whl", None, None, 5, None, "b.whl"))


@pytest.mark.parametrize("value", [None, 7, {}, {"path": ""}, {"url": 3}])
def test_as_source_refuses_anything_else(value: object) -> None:
    with pytest.raises(
        InputError, match=r"^a scan source is a path, a URL or a mapping with url or path, not "
    ):
        as_source(value)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (NotFound("404", 404), "not-found"),
        (Gone("gone"), "not-found"),
        (HTTPFailure("500", 500), "http"),
        (Exhausted("spent"), "budget"),
        (Unreachable("down"), "network"),
        (DigestMismatch("differs"), "digest"),
        (LimitExceeded("members", 2, Limit("max-members", 1)), "limit"),
        (InvalidWheelName("x.whl", "bad"), "name"),
        (InputError("anything", reference="archive-damaged"), "unreadable"),
        (InputError("a link", reference="network-error"), "network"),  # by the reference, not the class
    ],
)
def test_error_codes(exc: InputError, code: str) -> None:
    assert error_code(exc) == code
    assert error_json(exc) == {"code": code, "message": str(exc)}


def test_only_the_networks_failures_are_transient() -> None:
    assert frozenset({"network", "http", "budget"}) == TRANSIENT


def test_an_empty_line_has_every_key() -> None:
    line = empty_line(WheelSource("w.whl"), {"code": "unreadable", "message": "m"})
    assert list(line) == [
        "schema_version", "source", "read", "fetched_bytes", "sha256", "hashes_verified", "show", "check", "need",
        "error",
    ]  # fmt: skip
    assert line["schema_version"] == 1
    assert line["source"]["path"] == "w.whl"
    assert line["hashes_verified"] == {"file": None, "record": False}
    assert empty_line()["source"] is None


def test_read_whole_of_a_local_file(tmp_path: Path) -> None:
    wheel = tmp_path / "d-1.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a zip")
    digest = hashlib.sha256(b"not really a zip").hexdigest()
    got = read_whole(WheelSource(str(wheel)), tmp_path)
    assert (got.path, got.how, got.fetched, got.sha256, got.file_verified) == (
        wheel,
        "whole",
        0,
        digest,
        None,
    )
    assert read_whole(WheelSource(str(wheel), digest), tmp_path).file_verified is True
    with pytest.raises(DigestMismatch, match=r"sha256 differs from the one its index gives$"):
        read_whole(WheelSource(str(wheel), "0" * 64), tmp_path)


def test_read_whole_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(Gone) as info:
        read_whole(WheelSource(str(tmp_path / "gone.whl")), tmp_path)
    assert str(info.value) == f"{tmp_path / 'gone.whl'}: no such file (gone since it was listed)"
    assert error_code(info.value) == "not-found"
