"""URLs as torchwheel requests and shows them: the user part of an index URL
(``https://user:token@host/simple``) split off for the request and hidden in everything
printed, and which URLs are hosted (http(s)) at all."""

from __future__ import annotations

import re

REMOTE_SCHEMES = ("http", "https")

# The user part of a URL, found the way that hides the most: RFC 3986 ends the authority at
# the first "/", "?" or "#", but a password typed raw ("p#a/s?s") holds those too, and
# ``urlsplit`` then takes the password for a port or a path and prints it. So what is shown
# hides everything from the start of the authority to the last "@" of the URL, whatever
# follows it (a host, or a bad port, no host, a space, non-ASCII digits, an unclosed "["): a
# URL whose path holds "@" is shown with more hidden than needed, never with a secret.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[^\s/?#@\[\]:]+)"
_HOST_AFTER = re.compile(_HOST + r"(?::[0-9]*)?(?=[/?#]|\Z)")
HOST_PORT = re.compile(_HOST + r"(?::[0-9]{1,5})?")
HIDDEN = "***"
_DELIMITER = re.compile(r"[/?#]")


def _authority_start(url: str) -> int | None:
    """Where the authority of ``url`` begins: after ``scheme://`` or ``//``; in a string
    without either, at its start when its first segment reads as a user part (``user:pw@host``,
    ``token@host``: what a user meant as an index URL and left the scheme off); else None (a
    path: ``wheels/a@b/`` keeps its "@")."""
    head = _SCHEME.match(url)
    if head is not None:
        return head.end()
    if url.startswith("//"):
        return 2
    first = re.split(r"[/\\]", url, maxsplit=1)[0]
    return 0 if "@" in first or (":" in first and "@" in url) else None


def shown(url: str) -> str:
    """A URL as messages, JSON, pages and logs show it, valid or not: everything before the
    last "@" of its authority (its user part, whatever characters it holds) replaced by
    ``***``. The one place a URL is made fit to print or write."""
    start = _authority_start(url)
    if start is None:
        return url
    at = url.rfind("@", start)
    return url if at == -1 else url[:start] + HIDDEN + url[at:]


def has_credentials(url: str) -> bool:
    """Whether ``url`` holds a user part ``shown`` would hide."""
    return shown(url) != url


def _user_span(url: str) -> tuple[int, int] | None:
    """Where the user part of ``url`` is (without its "@") when a valid host follows it: the
    last "@" that a host (and port) follows, for the request."""
    head = _SCHEME.match(url)
    if head is None:
        return None
    at = len(url)
    while (at := url.rfind("@", head.end(), at)) != -1:
        if _HOST_AFTER.match(url, at + 1):
            return head.end(), at
    return None


def split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its user part, and that part (None without one), for a request.

    The RFC's reading wins when it gives a valid host and port, so an "@" in a path stays in
    the path; a user part holding a raw "/", "?" or "#" makes the RFC's host invalid
    (``user:p#a@host`` would be host "user", port "p"), and then the last "@" that a host
    follows ends it, as ``shown`` reads it."""
    head = _SCHEME.match(url)
    if head is None:
        return url, None
    start = head.end()
    found = _DELIMITER.search(url, start)
    end = found.start() if found else len(url)
    user, at, host = url[start:end].rpartition("@")
    if HOST_PORT.fullmatch(host):
        return (url[:start] + url[start + len(user) + 1 :], user) if at else (url, None)
    span = _user_span(url)
    if span is None:
        return url, None
    return url[: span[0]] + url[span[1] + 1 :], url[span[0] : span[1]]


def is_remote(url: str) -> bool:
    """An http(s) URL, by its scheme alone: ``urlsplit`` raises on some malformed authorities
    (an unclosed "[") that must still read as hosted, and be refused with their user part
    hidden."""
    head = _SCHEME.match(url)
    return head is not None and url[: head.end() - 3].lower() in REMOTE_SCHEMES


# The credentials a command's index URLs gave (host -> Authorization), carried to the worker
# processes of ``scan``: a worker's sessions fetch the wheels that the parent's pages listed,
# and the URLs a scan line records carry no user part.
_carried: dict[str, str] = {}


def carry_credentials(auth: dict[str, str]) -> None:
    """Every session made from now on in this process starts with these credentials."""
    _carried.clear()
    _carried.update(auth)


def carried_credentials() -> dict[str, str]:
    return dict(_carried)
