"""net/urls.py: the user part of an index URL (RFC 3986 userinfo) split off for the
request and hidden in everything shown, even when a raw password holds "/", "?", "#" or "@"."""

from __future__ import annotations

import pytest

from torchwheel.net.urls import is_remote, shown, split_credentials


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
        ("https://host/path@/x", "https://host/path@/x"),  # no host after the "@"
        ("/local/dir", "/local/dir"),
        ("host:pw@x", "host:pw@x"),  # no scheme: not a URL with a user part
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
