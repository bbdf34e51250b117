"""net/urls.py: the user part of an index URL (RFC 3986 userinfo) split off for the
request and hidden in everything shown, even when a raw password holds "/", "?", "#" or "@"."""

from __future__ import annotations

import pytest

from torchwheel.net.urls import has_credentials, is_remote, shown, split_credentials


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://host/simple", "https://host/simple"),
        ("https://user:token@host/simple", "https://***@host/simple"),
        ("https://token@host:8443/simple/", "https://***@host:8443/simple/"),
        ("https://user:p#a/s?s@host/simple", "https://***@host/simple"),  # a raw password
        ("https://a@b:pw@host/x", "https://***@host/x"),  # the last "@" a host follows
        ("https://u:p@[::1]:8080/simple", "https://***@[::1]:8080/simple"),
        # "@" in a path that a host-like segment follows: more hidden than needed, never a secret shown
        ("https://host/path@v1/x", "https://***@v1/x"),
        ("https://host/path@/x", "https://***@/x"),  # no host after the "@": hidden all the same
        ("/local/dir", "/local/dir"),
        ("wheels/a@b/x.whl", "wheels/a@b/x.whl"),  # a relative path: its first segment no user part
        ("./u:p@h/x", "./u:p@h/x"),
        # issue 47: valid or not, everything before the last "@" of the authority is hidden
        ("host:pw@x", "***@x"),  # no scheme: a user part all the same
        ("user:p/w@host/simple/", "***@host/simple/"),
        ("token@host/simple", "***@host/simple"),
        ("//user:pw@host/simple", "//***@host/simple"),
        ("http://user:pw@host:99x/simple/", "http://***@host:99x/simple/"),  # a bad port
        ("http://user:pw@host:99999999/simple/", "http://***@host:99999999/simple/"),
        ("http://user:pw@/simple/", "http://***@/simple/"),  # no host
        ("http://user:pw@ho st/simple/", "http://***@ho st/simple/"),  # a space
        ("http://user:pw@host:\u0668\u0660/", "http://***@host:\u0668\u0660/"),  # non-ASCII digits
        ("http://user:pw@[::1/simple/", "http://***@[::1/simple/"),  # an unclosed "["
        ("http://user:p#a/s?s@host:99x/", "http://***@host:99x/"),  # a raw password and a bad port
        ("ftp://user:pw@host/x", "ftp://***@host/x"),
    ],
)
def test_shown_hides_the_whole_user_part(url: str, expected: str) -> None:
    assert shown(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://host/simple", ("https://host/simple", None)),
        ("https://user:token@host/simple", ("https://host/simple", "user:token")),
        ("https://token@host:8443/", ("https://host:8443/", "token")),
        ("https://user:p#a/s?s@host/simple", ("https://host/simple", "user:p#a/s?s")),
        ("https://host/a@b/simple", ("https://host/a@b/simple", None)),  # RFC: "@" in the path
        ("file:///x", ("file:///x", None)),
        ("plain", ("plain", None)),
    ],
)
def test_split_credentials(url: str, expected: tuple[str, str | None]) -> None:
    assert split_credentials(url) == expected


@pytest.mark.parametrize(
    ("url", "remote"),
    [
        ("https://host/simple", True),
        ("HTTP://host/simple", True),
        ("https://u:p#x@host/simple", True),
        ("file:///srv/simple", False),
        ("ftp://host/simple", False),
        ("/srv/simple", False),
    ],
)
def test_is_remote(url: str, remote: bool) -> None:
    assert is_remote(url) is remote


def test_is_remote_reads_the_scheme_alone() -> None:
    """``urlsplit`` raises on an unclosed "[" (the internal error of issue 47); the scheme
    says it is hosted, and the request refuses it in one line, its user part hidden."""
    assert is_remote("http://user:pw@[::1/simple/")


@pytest.mark.parametrize(
    ("url", "has"),
    [("https://host/simple", False), ("https://u:p@host/", True), ("u:p@host/", True), ("a/b@c", False)],
)
def test_has_credentials(url: str, has: bool) -> None:
    assert has_credentials(url) is has
