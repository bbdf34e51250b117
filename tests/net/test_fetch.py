"""net/fetch.py's connection pool (issue 49): requests to one host reuse an idle keep-alive
connection, a kept connection the server closed is replaced without a failed request, an
answer not read to its end never leaves its connection in the pool, and a forked child
starts with none of its parent's connections."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from torchwheel.limits import current
from torchwheel.net import fetch


@contextmanager
def _keep_alive(root: Path, close_after: int = 0) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """An HTTP/1.1 server of ``root`` that keeps connections open; yields its URL and each
    request's client address. ``close_after``: each connection is closed by the server after
    that many answers, without saying so (what an idle timeout does to a kept connection)."""
    seen: list[tuple[str, int]] = []

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __init__(self, *args: object, **kwargs: object) -> None:
            self.answered = 0
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.client_address)
            super().do_GET()
            self.answered += 1
            if close_after and self.answered >= close_after:
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        fetch._POOL.forget()


def test_requests_to_one_host_share_a_connection(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"a" * 100_000)
    with _keep_alive(tmp_path) as (url, seen):
        session = fetch.Session()
        for _ in range(3):
            assert session.get(f"{url}/a.txt", current().max_page_bytes).body == b"a" * 100_000
        fetch.Session().download(f"{url}/a.txt", tmp_path / "copy", {}, 100_000)  # another session too
        with fetch.Session().ranged(f"{url}/a.txt", "bytes=0-9") as (_response, chunks):
            assert b"".join(chunks) == b"a" * 100_000  # http.server ignores Range: the whole body
        assert len(seen) == 5 and len(set(seen)) == 1  # five requests, one connection


def test_a_kept_connection_the_server_closed_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abc")
    with _keep_alive(tmp_path, close_after=1) as (url, seen):
        session = fetch.Session()
        for _ in range(3):
            assert session.get(f"{url}/a.txt", current().max_page_bytes).body == b"abc"
        assert len(seen) == 3 and len(set(seen)) == 3  # each answer's connection closed: a new one each
        assert session.budget.requests == 3  # and no request counted twice


def test_an_answer_not_read_to_its_end_closes_its_connection(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(bytes(1 << 20))
    with _keep_alive(tmp_path) as (url, _seen):
        with pytest.raises(fetch.NotFound):
            fetch.Session().get(f"{url}/missing", current().max_page_bytes)
        assert fetch._POOL._idle == {}  # the 404's body was not read: not kept
        with fetch.Session().ranged(f"{url}/big.bin", "bytes=0-9") as (_, chunks):
            next(chunks)  # a first chunk, then the caller leaves
        assert fetch._POOL._idle == {}
        fetch.Session().get(f"{url}/big.bin", current().max_page_bytes)
        assert sum(map(len, fetch._POOL._idle.values())) == 1  # read to its end: kept


def _child_pool_is_empty(out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    out.put(sum(map(len, fetch._POOL._idle.values())))


def test_a_forked_child_starts_without_its_parents_connections(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"abc")
    with _keep_alive(tmp_path) as (url, seen):
        fetch.Session().get(f"{url}/a.txt", current().max_page_bytes)
        assert sum(map(len, fetch._POOL._idle.values())) == 1
        context = multiprocessing.get_context("fork")
        out = context.Queue()
        child = context.Process(target=_child_pool_is_empty, args=(out,))
        child.start()
        assert out.get(timeout=30) == 0
        child.join()
        assert sum(map(len, fetch._POOL._idle.values())) == 1  # the parent's is still there
        fetch.Session().get(f"{url}/a.txt", current().max_page_bytes)
        assert len(set(seen)) == 1  # and still works
