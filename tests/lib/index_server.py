"""A real HTTP(S) server on 127.0.0.1 for hosted-index tests: the standard library's
``http.server`` serving a folder in a thread, as a static file host serves an index, with
PEP 691 content negotiation (``index.json`` for a client that asks for JSON), an optional
Basic-auth token, a log of every path requested, and a few misbehaviours a real network
has (a slow answer, a body shorter than its Content-Length, a redirect elsewhere, a server
that drips its answer a byte at a time, a page in a charset it declares or does not), and
HTTP ``Range`` requests answered as a static host does, or ignored (``Behaviour.ranges``)."""

from __future__ import annotations

import base64
import hashlib
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


@dataclass
class Behaviour:
    """What the server does besides serving files (tests change it between requests)."""

    token: str | None = None  # Basic auth: user "user", password this
    slow: dict[str, float] = field(default_factory=dict)  # path suffix -> seconds before answering
    short: set[str] = field(default_factory=set)  # path suffixes whose body is cut in half
    redirects: dict[str, str] = field(default_factory=dict)  # path -> Location
    # path suffix -> what is dripped, one byte every ``drip_every`` s: "headers" (the status
    # line and headers), "length" (a body with Content-Length), "chunked" (a chunked body)
    drip: dict[str, str] = field(default_factory=dict)
    drip_every: float = 0.5
    content_types: dict[str, str] = field(default_factory=dict)  # path suffix -> Content-Type
    requests: list[str] = field(default_factory=list)  # every path asked for, unquoted
    # throttling: path suffix -> the answers given before the file, one per request, as
    # (status, Retry-After or None): a 429 or 503 the client must wait out and ask again
    refuse: dict[str, list[tuple[int, str | None]]] = field(default_factory=dict)
    ranges: bool = True  # honour ``Range: bytes=...`` (206); False: answer every GET whole (200)
    # a file that changes while it is read: path suffix -> the bytes of each request in turn
    # (the last repeated), each answered with its validator (``validator``: the header that
    # carries it, "ETag" or "Last-Modified", or "" for none)
    versions: dict[str, list[bytes]] = field(default_factory=dict)
    validator: str = "ETag"
    ranged: list[str] = field(default_factory=list)  # every Range header received, in order
    in_flight: int = 0  # requests waiting for their answer to start, and the most there ever were at once
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refused(self, path: str) -> tuple[int, str | None] | None:
        with self.lock:
            for suffix, answers in self.refuse.items():
                if path.endswith(suffix) and answers:
                    return answers.pop(0)
        return None

    def downloads(self) -> list[str]:
        return [Path(p).name for p in self.requests if p.endswith(".whl")]


class _Handler(SimpleHTTPRequestHandler):
    behaviour: Behaviour

    def log_message(self, format: str, *args: object) -> None:  # quiet: the test reads .requests
        pass

    def do_GET(self) -> None:
        b = self.behaviour
        with b.lock:
            b.in_flight += 1
            b.max_in_flight = max(b.max_in_flight, b.in_flight)
        self._waiting = True
        try:
            self._get(b)
        finally:
            self._answered()

    def send_response(self, code: int, message: str | None = None) -> None:
        self._answered()
        super().send_response(code, message)

    def _answered(self) -> None:
        """A request is in flight until the server starts its answer (after any ``slow``
        wait): a client that holds its slot until it has read the answer then never overlaps
        the next request, while clients that ignore a cap overlap for the whole wait. (Counting
        until the handler returned raced with a fast client that had already let go.)"""
        if getattr(self, "_waiting", False):
            self._waiting = False
            with self.behaviour.lock:
                self.behaviour.in_flight -= 1

    def _get(self, b: Behaviour) -> None:
        path = unquote(urlsplit(self.path).path)
        b.requests.append(path)
        refused = b.refused(path)
        if refused is not None:
            status, after = refused
            self.send_response(status)
            if after is not None:
                self.send_header("Retry-After", after)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if b.token is not None:
            want = "Basic " + base64.b64encode(f"user:{b.token}".encode()).decode()
            if self.headers.get("Authorization") != want:
                self.send_error(401, "Unauthorized")
                return
        if path in b.redirects:
            self.send_response(302)
            self.send_header("Location", b.redirects[path])
            self.end_headers()
            return
        for suffix, seconds in b.slow.items():
            if path.endswith(suffix):
                time.sleep(seconds)
        folder = Path(self.translate_path(self.path))
        page = folder / "index.html" if folder.is_dir() else folder
        for suffix, mode in b.drip.items():
            if path.endswith(suffix) and page.is_file():
                self._drip(page.read_bytes(), mode)
                return
        for suffix, content_type in b.content_types.items():
            if path.endswith(suffix) and page.is_file():
                self._send(page, content_type)
                return
        if (
            folder.is_dir()
            and JSON_TYPE in self.headers.get("Accept", "")
            and (folder / "index.json").is_file()
        ):
            self._send(folder / "index.json", JSON_TYPE)
            return
        if any(path.endswith(s) for s in b.short) and folder.is_file():
            data = folder.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            return
        asked = self.headers.get("Range")
        for suffix, versions in b.versions.items():
            if path.endswith(suffix):
                with b.lock:
                    data = versions[0] if len(versions) == 1 else versions.pop(0)
                validators = _validator(b.validator, data)
                if asked is None:  # a whole download
                    self.send_response(200)
                    for name, value in validators:
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                b.ranged.append(asked)
                self._range_of(len(data), partial(_slice, data), asked, validators)
                return
        if asked is not None and folder.is_file():
            b.ranged.append(asked)
            if b.ranges:
                self._range(folder, asked)
                return
        super().do_GET()

    def _range(self, file: Path, asked: str) -> None:
        """One ``bytes=first-last``, ``bytes=first-`` or ``bytes=-suffix`` range (RFC 9110
        14.1.2), as a static file host answers it: 206 with Content-Range, or 416."""

        def read(first: int, last: int) -> bytes:
            with file.open("rb") as fh:
                fh.seek(first)
                return fh.read(last - first + 1)

        self._range_of(file.stat().st_size, read, asked, ())

    def _range_of(
        self,
        size: int,
        read: Callable[[int, int], bytes],
        asked: str,
        validators: tuple[tuple[str, str], ...],
    ) -> None:
        first_text, _, last_text = asked.removeprefix("bytes=").partition("-")
        if not first_text:
            first, last = max(0, size - int(last_text)), size - 1
        else:
            first, last = int(first_text), min(size - 1, int(last_text) if last_text else size - 1)
        if first > last or first >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = read(first, last)
        self.send_response(206)
        for name, value in validators:
            self.send_header(name, value)
        self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _drip(self, data: bytes, mode: str) -> None:
        """The answer to a GET, sent a byte at a time (until the client hangs up)."""
        if mode == "chunked":
            head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            body = b"".join(b"1\r\n" + data[i : i + 1] + b"\r\n" for i in range(len(data))) + b"0\r\n\r\n"
        else:
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            body = data
        slow, fast = (head + body, b"") if mode == "headers" else (body, head)
        try:
            self.wfile.write(fast)
            self.wfile.flush()
            for i in range(len(slow)):
                self.wfile.write(slow[i : i + 1])
                self.wfile.flush()
                time.sleep(self.behaviour.drip_every)
        except OSError:  # the client gave up: what the test wants
            pass
        self.close_connection = True

    def _send(self, file: Path, content_type: str) -> None:
        data = file.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _slice(data: bytes, first: int, last: int) -> bytes:
    return data[first : last + 1]


def _validator(header: str, data: bytes) -> tuple[tuple[str, str], ...]:
    """The validator a static host sends with these bytes: an ETag of their digest, or a
    Last-Modified that differs with them (a time derived from the digest)."""
    digest = hashlib.sha256(data).digest()
    if header == "ETag":
        return (("ETag", f'"{digest[:8].hex()}"'),)
    if header == "Last-Modified":
        return (("Last-Modified", formatdate(1_700_000_000 + int.from_bytes(digest[:3]), usegmt=True)),)
    return ()


@contextmanager
def serve(
    root: Path, behaviour: Behaviour | None = None, tls: Path | None = None
) -> Iterator[tuple[str, Behaviour]]:
    """Serve ``root``; yields the base URL and the behaviour (with its request log).
    ``tls``: a folder holding ``cert.pem`` and ``key.pem`` (``self_signed``): https."""
    b = behaviour or Behaviour()
    handler = partial(type("Handler", (_Handler,), {"behaviour": b}), directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True  # a dripping answer ends when its client hangs up, not before
    server.block_on_close = False
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls / "cert.pem", tls / "key.pem")
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}", b
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


_PEM: dict[str, bytes] = {}  # one key pair per test process: an RSA key costs 0.1-0.5 s


def self_signed(folder: Path) -> Path:
    """A certificate for 127.0.0.1 made by the openssl command line (clients trust it through
    ``SSL_CERT_FILE``), written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    if not _PEM:
        with tempfile.TemporaryDirectory() as made:
            subprocess.run(
                [
                    "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", f"{made}/key.pem", "-out", f"{made}/cert.pem",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                ],
                check=True,
                capture_output=True,
            )  # fmt: skip
            _PEM.update({name: Path(made, name).read_bytes() for name in ("key.pem", "cert.pem")})
    for name, data in _PEM.items():
        (folder / name).write_bytes(data)
    return folder
