"""GETs from a hosted index: pages, PEP 658 metadata files and wheels, bounded like every
input (``limits``: ``max-page-bytes``, ``max-metadata-bytes``, ``max-download-bytes``,
``http-timeout`` seconds without a byte, ``max-http-seconds`` for one whole response).

Standard library (``urllib``) on purpose: reading an index is a handful of GETs of static
files, and pip's stack (requests, cachecontrol, truststore, keyring) would be four
dependencies for nothing torchwheel does (no cache, no keyring). What ``urllib`` leaves to
its caller is done here: a body is read in chunks against its limit and deadline (never
trusting ``Content-Length``), a download streams to disk and is hashed as it comes and
checked against the page's digests before anyone reads it, a redirect may only lead to
http(s) (``urllib`` also follows one to ``ftp``), and credentials in an index URL
(``https://user:token@host/simple``) are sent to that host only and never printed.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlsplit, urlunsplit

from torchwheel import __version__
from torchwheel.errors import InputError
from torchwheel.limits import Limit, current

REMOTE_SCHEMES = ("http", "https")
# PEP 691 content negotiation: JSON preferred, then the HTML forms
PAGE_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
)
_CHUNK = 1 << 16


class NotFound(InputError):
    """The server answered 404 or 410: an answer (no such project), not a broken index."""


def is_remote(url: str) -> bool:
    return urlsplit(url).scheme.lower() in REMOTE_SCHEMES


def shown(url: str) -> str:
    """A URL as messages show it: without the password or token of its user part."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{name}:***@{host}" if ":" in user else f"***@{host}"))


@dataclass(frozen=True)
class Response:
    url: str  # after redirects: what relative links on a page resolve against
    content_type: str
    body: bytes


class _Redirects(urllib.request.HTTPRedirectHandler):
    """http(s) only; the index's credentials follow a redirect only to the same host."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not is_remote(newurl):
            raise InputError(f"{shown(req.full_url)}: redirected to {shown(newurl)}, which is not http(s)")
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            self.session.authorize(new)
        return new


@dataclass
class Session:
    """One command's requests: the credentials given in index URLs, by host."""

    _auth: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._opener = urllib.request.build_opener(_Redirects(self))

    def _request(self, url: str, accept: str) -> urllib.request.Request:
        parts = urlsplit(url)
        if parts.scheme.lower() not in REMOTE_SCHEMES:
            raise InputError(f"{shown(url)}: only http(s) links are followed from a hosted page")
        host = parts.netloc.rpartition("@")[2].lower()
        if "@" in parts.netloc:  # pip's convention: user:password@host, or a token as the user
            user, _, password = parts.netloc.rpartition("@")[0].partition(":")
            token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
            self._auth[host] = f"Basic {token}"
            url = urlunsplit(parts._replace(netloc=host))
        req = urllib.request.Request(
            url, headers={"Accept": accept, "User-Agent": f"torchwheel/{__version__}"}
        )
        self.authorize(req)
        return req

    def authorize(self, req: urllib.request.Request) -> None:
        auth = self._auth.get(urlsplit(req.full_url).netloc.lower())
        if auth is not None:
            req.add_unredirected_header("Authorization", auth)

    @contextmanager
    def _open(self, url: str, accept: str) -> Iterator[http.client.HTTPResponse]:
        timeout = current().http_timeout.value
        try:
            with self._opener.open(self._request(url, accept), timeout=timeout) as response:
                yield response
        except urllib.error.HTTPError as exc:
            kind = NotFound if exc.code in (404, 410) else InputError
            raise kind(f"{shown(url)}: HTTP {exc.code} {exc.reason}") from exc
        except urllib.error.URLError as exc:
            raise InputError(f"{shown(url)}: cannot connect ({exc.reason})") from exc
        except TimeoutError as exc:
            raise InputError(
                f"{shown(url)}: no answer for {timeout} s (the limit http-timeout: raise it with "
                f"{current().http_timeout.env})"
            ) from exc
        except (http.client.HTTPException, ConnectionError) as exc:
            raise InputError(f"{shown(url)}: a broken response ({type(exc).__name__}: {exc})") from exc

    def _chunks(self, response: http.client.HTTPResponse, url: str, limit: Limit) -> Iterator[bytes]:
        """The body in chunks, within ``limit`` bytes and ``max-http-seconds``; a body shorter
        than its ``Content-Length`` is an error, not a short file."""
        declared = response.headers.get("Content-Length")
        expected = int(declared) if declared and declared.isdigit() else None
        if expected is not None:
            limit.check(f"{shown(url)}: the response's Content-Length", expected)
        deadline = current().max_http_seconds
        start, got = time.monotonic(), 0
        try:
            while chunk := response.read(_CHUNK):
                got += len(chunk)
                limit.check(f"{shown(url)}: the response's bytes", got)
                deadline.check(f"{shown(url)}: seconds for one response", int(time.monotonic() - start))
                yield chunk
        except TimeoutError as exc:
            raise InputError(
                f"{shown(url)}: no data for {current().http_timeout.value} s after {got:,} bytes "
                f"(the limit http-timeout: raise it with {current().http_timeout.env})"
            ) from exc
        except (http.client.HTTPException, ConnectionError) as exc:
            raise InputError(f"{shown(url)}: the response broke off after {got:,} bytes ({exc})") from exc
        if expected is not None and got != expected:
            raise InputError(f"{shown(url)}: the response ended after {got:,} of {expected:,} bytes")

    def get(self, url: str, limit: Limit, accept: str = "*/*") -> Response:
        """A small document (a page, a metadata file), whole, in memory."""
        with self._open(url, accept) as response:
            body = b"".join(self._chunks(response, url, limit))
            return Response(response.geturl(), response.headers.get_content_type(), body)

    def download(self, url: str, dest: Path, hashes: Mapping[str, str], size: int | None) -> None:
        """Stream a file to ``dest``, hashing as it comes; it is renamed into place only when
        every digest the page gave (that ``hashlib`` knows) and the size agree."""
        algos = {a: v for a, v in hashes.items() if a in hashlib.algorithms_guaranteed}
        digests = {a: hashlib.new(a) for a in algos}
        partial = dest.with_name(dest.name + ".part")
        try:
            with self._open(url, "*/*") as response, partial.open("wb") as out:
                for chunk in self._chunks(response, url, current().max_download_bytes):
                    out.write(chunk)
                    for h in digests.values():
                        h.update(chunk)
            for algo, want in algos.items():
                if digests[algo].hexdigest() != want:
                    raise InputError(
                        f"{shown(url)}: {algo} differs from the index page's (a changed or corrupt file)"
                    )
            if size is not None and partial.stat().st_size != size:
                raise InputError(
                    f"{shown(url)}: {partial.stat().st_size:,} bytes, the index page says {size:,}"
                )
            os.replace(partial, dest)
        finally:
            partial.unlink(missing_ok=True)
