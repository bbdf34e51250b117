"""GETs from a hosted index: pages, PEP 658 metadata files, wheels and byte ranges of them
(``ranged``), bounded like every input (``limits``: ``max-page-bytes``, ``max-metadata-bytes``,
``max-download-bytes``, ``http-timeout`` s without a byte, for the whole command
``max-http-seconds`` and ``max-http-requests``).

Standard library (``urllib``) on purpose: reading an index is a handful of GETs of static
files, and pip's stack (requests, cachecontrol, truststore, keyring) would be four
dependencies for nothing torchwheel does (no cache, no keyring). What ``urllib`` leaves to
its caller is done here: a body is read in chunks against its limit (never trusting
``Content-Length``), a download streams to disk and is hashed as it comes and checked against
the page's digests before anyone reads it, a redirect may only lead to http(s) (``urllib``
also follows one to ``ftp``), and credentials in an index URL
(``https://user:token@host/simple``) are sent to that host only and never printed.

Time is one budget per command (``Session``), not a timeout per socket call: a socket
timeout restarts with every byte, so a server that drips one byte every half second would
hold a command for ever. Every read from the socket (status line, headers, body, chunk
sizes) first checks the command's deadline and sets the socket's timeout to what is left of
it (``http-timeout`` at most); a connect and a TLS handshake (which ``ssl`` bounds as a
whole by that timeout) get the same. Every request also passes ``fairness``: a connection
slot and the rate per host, and the retries of a 429 or a 5xx (``Retry-After`` honoured).
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import io
import itertools
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any, ClassVar
from urllib.parse import unquote, urlsplit

from torchwheel import __version__
from torchwheel.errors import InputError, Reference
from torchwheel.frozen import frozen
from torchwheel.limits import Limit, current
from torchwheel.net import fairness
from torchwheel.net.urls import HOST_PORT, REMOTE_SCHEMES, carried_credentials
from torchwheel.net.urls import is_remote as is_remote  # re-exported: fetch.shown is the old home
from torchwheel.net.urls import shown as shown
from torchwheel.net.urls import split_credentials as split_credentials

# PEP 691 content negotiation: JSON preferred, then the HTML forms
PAGE_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
)
_CHUNK = 1 << 16


class HTTPFailure(InputError):
    """The server answered with an error status (after the retries a 429 or 5xx gets)."""

    fixed_reference: ClassVar[Reference | None] = "http-error"

    def __init__(self, message: str, status: int, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


class NotFound(HTTPFailure):
    """The server answered 404 or 410: an answer (no such project), not a broken index."""

    fixed_reference = "not-found"


class Unreachable(InputError):
    """No connection, no answer in time, or a broken response: the network, not the file."""

    fixed_reference = "network-error"


class DigestMismatch(InputError):
    """A download whose digest or size differs from what its index page says."""

    fixed_reference = "digest-mismatch"


class Exhausted(InputError):
    """The command's network budget (``max-http-seconds``, ``max-http-requests``) is spent: it
    ends the command, where a failed request would only skip one file."""

    fixed_reference = "network-budget-spent"


@frozen
class Response:
    url: str  # after redirects: what relative links on a page resolve against
    content_type: str
    body: bytes
    charset: str | None = None  # the Content-Type's charset, when it names one


class _Budget:
    """One command's network budget: its deadline (from its first request on) and its
    request count. ``left`` is what every socket read and connect may still wait."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.requests = 0

    def left(self) -> float:
        if self.started is None:
            return float(current().max_http_seconds.value)
        return self.started + current().max_http_seconds.value - time.monotonic()

    def spent(self) -> bool:
        return self.left() <= 0

    def timeout(self) -> float:
        """The socket timeout for the next wait: ``http-timeout``, or less near the deadline."""
        return max(0.001, min(float(current().http_timeout.value), self.left()))

    def out_of_time(self, url: str) -> Exhausted:
        lim = current().max_http_seconds
        many = f"{self.requests:,} request" + ("s" if self.requests != 1 else "")
        return Exhausted(
            f"{shown(url)}: unfinished when the command's network time ran out, after {many} (the "
            f"limit max-http-seconds = {lim.value:,} s for all of them: raise it with {lim.env})",
            limit=lim.name,
        )

    def check(self, url: str) -> None:
        if self.spent():
            raise self.out_of_time(url)

    def request(self, url: str) -> None:
        """Count one request (a redirect is one more) and start the clock at the first."""
        lim = current().max_http_requests
        if self.requests >= lim.value:
            raise Exhausted(
                f"{shown(url)}: one request more than the command may make (the limit "
                f"max-http-requests = {lim.value:,}: raise it with {lim.env})",
                value=self.requests + 1,
                limit=lim.name,
            )
        self.requests += 1
        if self.started is None:
            self.started = time.monotonic()
        self.check(url)


class _TimedReader(io.RawIOBase):
    """The socket as ``http.client`` reads it, each read within the command's deadline."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, budget: _Budget, url: str) -> None:
        super().__init__()
        self.raw, self.sock, self.budget, self.url = raw, sock, budget, url

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self.budget.check(self.url)
        self.sock.settimeout(self.budget.timeout())
        return self.raw.readinto(buffer)

    def close(self) -> None:
        self.raw.close()
        super().close()


class _TimedResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: Any, budget: _Budget, where: str, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        raw = self.fp.detach()
        assert isinstance(raw, io.RawIOBase)
        self.fp = io.BufferedReader(_TimedReader(raw, sock, budget, where))
        self.release: Callable[[bool], None] | None = None  # the pool's, once the response is handed out

    def close(self) -> None:
        """Closed, and its connection handed back to the pool when the body was read to its
        end and the server keeps it open; else the connection is closed too."""
        complete = self.fp is None  # http.client lets go of the socket's file at the body's end
        super().close()
        release, self.release = self.release, None
        if release is not None:
            release(complete and not self.will_close)


class _TimedConnection(http.client.HTTPConnection):
    """A connection whose connect and every read keep to the command's deadline."""

    def __init__(self, *args: Any, budget: _Budget, where: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.budget, self.url = budget, where
        self.response_class = partial(_TimedResponse, budget=budget, where=where)  # type: ignore[assignment]

    def connect(self) -> None:
        self.timeout = self.budget.timeout()
        try:
            super().connect()
        except OSError as exc:
            if self.budget.spent():
                raise self.budget.out_of_time(self.url) from exc
            raise
        self.budget.check(self.url)


class _TimedHTTPSConnection(_TimedConnection, http.client.HTTPSConnection):
    """The TLS handshake needs nothing more: ``ssl`` bounds a whole handshake by the socket's
    timeout (one deadline, not one per read), and ``connect`` sets it to what is left."""


class _Charged(urllib.request.AbstractHTTPHandler):
    """http's and https's handler alike: a request counts against the budget, opens on its deadline."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def _open(
        self, kind: type[_TimedConnection], req: urllib.request.Request, **kw: Any
    ) -> http.client.HTTPResponse:
        self.session.budget.request(req.full_url)
        return self._pooled(kind, req, **kw)

    def _pooled(self, kind: type[_TimedConnection], req: urllib.request.Request, **kw: Any) -> _TimedResponse:
        """``AbstractHTTPHandler.do_open`` without its ``Connection: close``: the request goes
        out on an idle connection to the host when the pool has one (``_POOL``), else on a new
        one, and the connection goes back to the pool once its answer was read to the end. A
        kept connection the server closed meanwhile fails before any answer: the request is
        sent once more on a new one (a GET: nothing happened on the server)."""
        if not req.host:
            raise urllib.error.URLError("no host given")
        key = (req.type, req.host, req._tunnel_host or "")  # type: ignore[attr-defined]
        headers = dict(req.unredirected_hdrs)
        headers.update({k: v for k, v in req.headers.items() if k not in headers})
        headers = {name.title(): value for name, value in headers.items()}
        tunnel: dict[str, str] = {}
        if "Proxy-Authorization" in headers:  # for the proxy, never the origin (as do_open)
            tunnel["Proxy-Authorization"] = headers.pop("Proxy-Authorization")
        budget, where = self.session.budget, req.full_url
        for kept in (_POOL.take(key), None):
            if kept is not None:
                conn = kept
                conn.budget, conn.url = budget, where
                conn.response_class = partial(_TimedResponse, budget=budget, where=where)  # type: ignore[assignment]
            else:
                conn = kind(req.host, timeout=req.timeout, budget=budget, where=where, **kw)
                if req._tunnel_host:  # type: ignore[attr-defined]
                    conn.set_tunnel(req._tunnel_host, headers=tunnel)  # type: ignore[attr-defined]
            try:
                try:
                    conn.request(req.get_method(), req.selector, req.data, headers)
                except OSError as err:
                    raise urllib.error.URLError(err) from err
                response = conn.getresponse()
            except (urllib.error.URLError, http.client.RemoteDisconnected, ConnectionError) as exc:
                conn.close()
                if kept is not None and _stale(exc):
                    continue  # the server had closed it: once more, on a new connection
                raise
            except BaseException:
                conn.close()
                raise
            assert isinstance(response, _TimedResponse)
            response.url = req.get_full_url()
            response.msg = response.reason  # type: ignore[assignment]  # as do_open: urllib's callers read it
            response.release = partial(_POOL.give, key, conn)
            return response
        raise AssertionError("unreachable: the second attempt opens a new connection")


def _stale(exc: BaseException) -> bool:
    """A kept connection that the server closed while it was idle: it fails on the request's
    first bytes or before the status line, never after an answer began."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, http.client.RemoteDisconnected | ConnectionError)


class _Pool:
    """Idle keep-alive connections by (scheme, host:port, proxy tunnel): a scan's downloads and
    ranges to one index reuse a few connections instead of a TCP (and TLS) handshake each, as
    pip's requests and uv do (an index's server or CDN answers HTTP/1.1 and keeps them open;
    a server that closes each one, HTTP/1.0 like ``http.server``'s, just gets new ones). At
    most the per-host connection cap idle per host (``fairness``: no more are ever in flight);
    a forked child (``scan --jobs``) starts empty: its parent's sockets are not its to use."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str, str], list[_TimedConnection]] = {}
        self._lock = threading.Lock()

    def take(self, key: tuple[str, str, str]) -> _TimedConnection | None:
        with self._lock:
            idle = self._idle.get(key)
            return idle.pop() if idle else None

    def give(self, key: tuple[str, str, str], conn: _TimedConnection, reusable: bool) -> None:
        if reusable and conn.sock is not None:
            with self._lock:
                idle = self._idle.setdefault(key, [])
                if len(idle) < fairness.gate().policy.host_connections:
                    idle.append(conn)
                    return
        conn.close()

    def forget(self) -> None:
        """Drop every idle connection (in a forked child: its own descriptor of each closed,
        which leaves the parent's connection as it was)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()


_POOL = _Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.forget)


class _HTTP(_Charged, urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self._open(_TimedConnection, req)


class _HTTPS(_Charged, urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self._open(_TimedHTTPSConnection, req, context=self._context)  # type: ignore[attr-defined]


class _Redirects(urllib.request.HTTPRedirectHandler):
    """http(s) only; the index's credentials follow a redirect only to the same host, and a
    user part in the new location is dropped (a server hands out no credentials)."""

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
            raise InputError(
                f"{shown(req.full_url)}: redirected to {shown(newurl)}, which is not http(s)",
                reference="url-refused",
            )
        new = super().redirect_request(req, fp, code, msg, headers, split_credentials(newurl)[0])
        if new is not None:
            self.session.authorize(new)
        return new


def _netloc(url: str, bare: str) -> str:
    """The authority of ``bare`` (``url`` without its user part), or the one-line refusal of
    a URL ``urlsplit`` cannot read (an unclosed "[": ``ValueError``), its user part hidden."""
    try:
        return urlsplit(bare).netloc
    except ValueError:
        raise InputError(
            f"{shown(url)}: not a URL torchwheel can request (its host or port)", reference="url-refused"
        ) from None


@dataclass
class Session:
    """One command's requests: the credentials given in index URLs, by host (``credentials``,
    and those carried into a scan worker), and the command's network budget (``_Budget``)."""

    credentials: dict[str, str] = field(default_factory=carried_credentials)

    def __post_init__(self) -> None:
        self.budget = _Budget()
        self._opener = urllib.request.build_opener(_Redirects(self), _HTTP(self), _HTTPS(self))

    def remember(self, url: str, keep: bool = False) -> str:
        """``url`` without its user part, whose credentials are kept for its host: a source
        given on the command line is stripped here, before anything joins, parses or shows
        it (``urljoin`` too reads a raw "#" in a password as the start of a fragment); so is
        a page's link to a wheel, so no line, document or page written holds its user part.
        ``keep``: credentials already kept for that host stay (a page's link never replaces
        what the user gave)."""
        bare, user = split_credentials(url)
        netloc = _netloc(url, bare)
        if not HOST_PORT.fullmatch(netloc):  # refused before it is joined or parsed any further:
            # with a user part before no valid host, its password would be read as the host
            raise InputError(
                f"{shown(url)}: not a URL torchwheel can request (its host or port)", reference="url-refused"
            )
        if user is not None:  # pip's convention: user:password@host, or a token as the user
            name, _, password = user.partition(":")
            token = base64.b64encode(f"{unquote(name)}:{unquote(password)}".encode()).decode()
            if not (keep and netloc.lower() in self.credentials):
                self.credentials[netloc.lower()] = f"Basic {token}"
        return bare

    def _request(self, url: str, accept: str, span: str | None = None) -> urllib.request.Request:
        bare = self.remember(url)
        parts = urlsplit(bare)  # remember() saw that it splits
        if parts.scheme.lower() not in REMOTE_SCHEMES:
            raise InputError(
                f"{shown(url)}: only http(s) links are followed from a hosted page", reference="url-refused"
            )
        if not HOST_PORT.fullmatch(parts.netloc):
            raise InputError(
                f"{shown(url)}: not a URL torchwheel can request (its host or port)", reference="url-refused"
            )
        headers = {"Accept": accept, "User-Agent": f"torchwheel/{__version__}"}
        req = urllib.request.Request(bare, headers=headers | ({"Range": span} if span else {}))
        self.authorize(req)
        return req

    def authorize(self, req: urllib.request.Request) -> None:
        auth = self.credentials.get(urlsplit(req.full_url).netloc.lower())
        if auth is not None:
            req.add_unredirected_header("Authorization", auth)

    def _timed_out(self, url: str, what: str, exc: BaseException) -> InputError:
        if self.budget.spent():
            return self.budget.out_of_time(url)
        lim = current().http_timeout
        return Unreachable(
            f"{shown(url)}: {what} for {lim.value:,} s (the limit http-timeout: raise it with {lim.env})",
            limit=lim.name,
        )

    @contextmanager
    def _open(self, url: str, accept: str, span: str | None = None) -> Iterator[http.client.HTTPResponse]:
        """The response, its host's connection slot held while the caller reads it; a 429
        or 5xx is asked again after the wait ``fairness`` gives, while the budget lasts."""
        request = self._request(url, accept, span)
        netloc, policy = urlsplit(request.full_url).netloc.lower(), fairness.gate().policy
        for attempt in itertools.count():
            with fairness.gate().slot(netloc, self.budget.left, partial(self.budget.out_of_time, url)):
                try:
                    response = self._response(request, url)
                except HTTPFailure as exc:
                    delay = fairness.wait(policy, attempt, exc.retry_after)
                    if not fairness.retryable(exc.status) or attempt >= policy.retries:
                        raise
                    if delay >= self.budget.left():
                        raise
                else:
                    with response:
                        yield response
                    return
            time.sleep(delay)

    def _response(self, request: urllib.request.Request, url: str) -> http.client.HTTPResponse:
        try:
            response: http.client.HTTPResponse = self._opener.open(request, timeout=self.budget.timeout())
            return response
        except Exhausted:
            raise
        except urllib.error.HTTPError as exc:
            exc.close()  # the connection goes back, whatever the status
            kind = NotFound if exc.code in (404, 410) else HTTPFailure
            after = exc.headers.get("Retry-After") if exc.headers else None
            raise kind(f"{shown(url)}: HTTP {exc.code} {exc.reason}", exc.code, after) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError) or self.budget.spent():
                raise self._timed_out(url, "no connection", exc) from exc
            raise Unreachable(f"{shown(url)}: cannot connect ({exc.reason})") from exc
        except TimeoutError as exc:
            raise self._timed_out(url, "no answer", exc) from exc
        except (http.client.HTTPException, ConnectionError) as exc:
            if self.budget.spent():
                raise self.budget.out_of_time(url) from exc
            raise Unreachable(f"{shown(url)}: a broken response ({type(exc).__name__}: {exc})") from exc
        except ValueError as exc:  # urllib's own refusals of a URL it cannot request
            raise InputError(
                f"{shown(url)}: not a URL torchwheel can request", reference="url-refused"
            ) from exc

    def _chunks(self, response: http.client.HTTPResponse, url: str, limit: Limit) -> Iterator[bytes]:
        """The body in chunks, within ``limit`` bytes and the command's deadline; a body
        shorter than its ``Content-Length`` is an error, not a short file."""
        declared = response.headers.get("Content-Length")
        expected = int(declared) if declared and declared.isdigit() else None
        if expected is not None:
            limit.check(f"{shown(url)}: the response's Content-Length", expected)
        got = 0
        try:
            while chunk := response.read(_CHUNK):
                got += len(chunk)
                limit.check(f"{shown(url)}: the response's bytes", got)
                self.budget.check(url)
                yield chunk
        except TimeoutError as exc:
            raise self._timed_out(url, f"no data after {got:,} bytes", exc) from exc
        except (http.client.HTTPException, ConnectionError) as exc:
            if self.budget.spent():
                raise self.budget.out_of_time(url) from exc
            raise Unreachable(f"{shown(url)}: the response broke off after {got:,} bytes ({exc})") from exc
        if expected is not None and got != expected:
            raise Unreachable(f"{shown(url)}: the response ended after {got:,} of {expected:,} bytes")

    def get(self, url: str, limit: Limit, accept: str = "*/*") -> Response:
        """A small document (a page, a metadata file), whole, in memory."""
        with self._open(url, accept) as response:
            body, h = b"".join(self._chunks(response, url, limit)), response.headers
            return Response(response.geturl(), h.get_content_type(), body, h.get_content_charset())

    @contextmanager
    def ranged(self, url: str, span: str) -> Iterator[tuple[http.client.HTTPResponse, Iterator[bytes]]]:
        """``Range: span``: the response (206, or 200 where it is ignored) and its body's chunks."""
        with self._open(url, "*/*", span) as r:
            yield r, self._chunks(r, url, current().max_download_bytes)

    def download(self, url: str, dest: Path, hashes: Mapping[str, str], size: int | None) -> None:
        """Stream a file to ``dest``, hashing as it comes; it is renamed into place only when
        every digest the page gave (that ``hashlib`` knows) and the size agree."""
        algos = {a: v for a, v in hashes.items() if a in hashlib.algorithms_guaranteed}
        digests = {a: hashlib.new(a) for a in algos}
        partial_file = dest.with_name(dest.name + ".part")
        try:
            with self._open(url, "*/*") as response, partial_file.open("wb") as out:
                for chunk in self._chunks(response, url, current().max_download_bytes):
                    out.write(chunk)
                    for h in digests.values():
                        h.update(chunk)
            for algo, want in algos.items():
                if digests[algo].hexdigest() != want:
                    raise DigestMismatch(
                        f"{shown(url)}: {algo} differs from the index page's (a changed or corrupt file)"
                    )
            if size is not None and partial_file.stat().st_size != size:
                raise DigestMismatch(
                    f"{shown(url)}: {partial_file.stat().st_size:,} bytes, the index page says {size:,}"
                )
            os.replace(partial_file, dest)
        finally:
            partial_file.unlink(missing_ok=True)
