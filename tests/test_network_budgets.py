"""Issue 23, parts 1, 2 and 5 on a real server (tests/lib/index_server.py): one deadline and one
request budget per command, item budgets on pages, the URL's secret never shown, a page's
charset read as its Content-Type says, with torchwheel's own words when it cannot be.

The ``slow-drip`` and ``page-items`` families are data in the hostile corpus
(fixtures/hostile_net.py); this module serves them and holds each run to the corpus's
checks: the exit code and the one line it expects, no traceback, peak RSS (``os.wait4`` of
the child) under the budget, and a wall time that the budget, not the server, decides.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from torchwheel.limits import MEMORY_BUDGET_MB
from torchwheel.net.fetch import shown, split_credentials

from .lib.helpers import REPO, MeasuredRun, measured_run
from .lib.index_server import Behaviour, serve

sys.path.insert(0, str(REPO / "fixtures"))
import hostile
import hostile_net as hn

PLAN = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")
STARTUP = 3.0  # an interpreter's start and torchwheel's import, on a loaded 2-core machine
DRIPS = [c.name for c in hostile.CASES.values() if c.klass == "slow-drip"]
PAGES = [c.name for c in hostile.CASES.values() if c.klass == "page-items"]


def _run(args: list[str], tmp: Path, env: dict[str, str], timeout: float = 60) -> MeasuredRun:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TORCHWHEEL_")}
    (tmp / "tmp").mkdir(exist_ok=True)
    return measured_run(
        [sys.executable, "-m", "torchwheel", *args],
        cwd=tmp,
        env={**clean, **env, "TMPDIR": str(tmp / "tmp")},
        timeout=timeout,
        address_space=4 << 30,
    )


def _one_line(m: MeasuredRun, message: str) -> None:
    assert not m.timed_out, "killed: the command outlived its budget"
    assert m.code == 2, (m.code, m.stdout[-500:], m.stderr[-500:])
    assert m.stderr.count("\n") == 1 and message in m.stderr, m.stderr[-500:]
    assert "Traceback" not in m.stderr + m.stdout
    assert m.peak_mb <= MEMORY_BUDGET_MB, f"{m.peak_mb:.0f} MB"


@contextmanager
def _dripping_tls() -> Iterator[str]:
    """A "TLS server" that sends a handshake record header, then its body a byte every 0.5 s:
    ``ssl`` waits for the whole record, each byte restarts a socket timeout."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def drip() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                try:
                    conn.sendall(b"\x16\x03\x03\x40\x00")
                    while not stop.wait(0.5):
                        conn.sendall(b"\x00")
                except OSError:
                    continue

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        server.close()


@pytest.mark.parametrize("name", DRIPS)
def test_a_dripping_or_flooding_server_is_cut_by_the_command_budget(name: str, tmp_path: Path) -> None:
    """``--max-http-seconds 2``-style budgets hold against a byte every 0.5 s (headers, a
    Content-Length body, a chunked one, a download, a TLS handshake): the socket timeout
    (1 s) never fires, so only the command's deadline can end it. 3,000 links that all
    answer 404 end at the request budget."""
    case, drip = hostile.CASES[name], hn.DRIP[name]
    site = case.make(None, tmp_path)["site"]
    env = dict(drip.env)
    seconds = float(env.get("TORCHWHEEL_MAX_HTTP_SECONDS", 20))
    if drip.tls_handshake:
        with _dripping_tls() as url:
            m = _run(["select", *PLAN, "-i", f"{url}/simple/tw/"], tmp_path, env)
        requests = 1
    else:
        with serve(site, Behaviour(drip=dict(drip.drip))) as (url, server):
            m = _run(["select", *PLAN, "-i", f"{url}/simple/tw/"], tmp_path, env)
        requests = len(server.requests)
    _one_line(m, case.expect.message)
    assert m.seconds <= seconds + STARTUP, f"{m.seconds:.1f} s"
    assert requests <= 2000
    assert list((tmp_path / "tmp").iterdir()) == []  # no partial download left


def test_the_deadline_is_one_for_all_the_requests(tmp_path: Path) -> None:
    """Each download answers within http-timeout and well within max-http-seconds; their
    sum does not, and the command ends at the sum's limit, not after all of them."""
    site = hn.site(6)(None, tmp_path)["site"]
    for i in range(6):
        (site / "files" / f"tw-1.0.{i}-py3-none-any.whl").write_bytes(b"not a wheel")
    env = {"TORCHWHEEL_MAX_HTTP_SECONDS": "2", "TORCHWHEEL_HTTP_TIMEOUT": "2"}
    with serve(site, Behaviour(slow={".whl": 0.8})) as (url, server):
        m = _run(["matrix", f"{url}/simple/tw/"], tmp_path, env)
    _one_line(m, "max-http-seconds")
    assert len(server.downloads()) < 6
    assert m.seconds <= 2 + STARTUP


@pytest.mark.parametrize("command", ["matrix", "index"])
def test_the_budgets_are_options_too(command: str, tmp_path: Path) -> None:
    """``--max-http-seconds 2 --http-timeout 2`` on the command line, as the fuzzer gave them,
    mean what the environment variables mean (and win over them)."""
    site = hn.site(6)(None, tmp_path)["site"]
    for i in range(6):
        (site / "files" / f"tw-1.0.{i}-py3-none-any.whl").write_bytes(b"not a wheel")
    env = {"TORCHWHEEL_MAX_HTTP_SECONDS": "600"}
    flags = ["--max-http-seconds", "2", "--http-timeout", "2"]
    extra = ["-o", str(tmp_path / "out")] if command == "index" else []
    with serve(site, Behaviour(slow={".whl": 0.8})) as (url, server):
        m = _run([command, *flags, f"{url}/simple/tw/", *extra], tmp_path, env)
    _one_line(m, "max-http-seconds")
    assert len(server.downloads()) < 6
    assert m.seconds <= 2 + STARTUP


def test_the_request_budget_ends_the_command_in_one_line(tmp_path: Path) -> None:
    site = hn.site(10)(None, tmp_path)["site"]
    with serve(site) as (url, server):
        m = _run(
            ["matrix", "--format", "json", f"{url}/simple/tw/"],
            tmp_path,
            {"TORCHWHEEL_MAX_HTTP_REQUESTS": "5"},
        )
    _one_line(m, "max-http-requests = 5")
    assert len(server.requests) == 5  # the sixth is refused before it is sent


def test_files_per_project_are_counted_over_every_page(tmp_path: Path) -> None:
    one, two = hn.site(3)(None, tmp_path / "a")["site"], tmp_path / "b"
    two.mkdir()
    (two / "index.html").write_text("".join(f'<a href="tw-2.0.{i}-py3-none-any.whl">x</a>' for i in range(3)))
    env = {"TORCHWHEEL_MAX_PROJECT_FILES": "5"}
    with serve(one) as (url, _):
        m = _run(["select", *PLAN, "-i", f"{url}/simple/tw/", "-i", str(two / "index.html")], tmp_path, env)
    _one_line(m, "the number of wheels of the project tw (6) exceeds the limit max-project-files = 5")


@pytest.mark.parametrize("name", PAGES)
def test_a_page_costs_its_items_within_the_budget(name: str, tmp_path: Path) -> None:
    """The fuzzer's pages served over HTTP (today 624 MB, 918 MB, 524 MB accepted, 277 MB):
    refused in one line, fast, under the budget; the page just under max-page-links is read
    whole within it (one request allowed after the page: its cost is the parse and judging)."""
    case = hostile.CASES[name]
    filename, data = hn.page_bytes(name)
    page = tmp_path / "site" / "simple" / "tw"
    page.mkdir(parents=True)
    (page / filename).write_bytes(data)
    near = not case.expect.message
    with serve(tmp_path / "site") as (url, _):
        m = _run(
            ["select", *PLAN, "-i", f"{url}/simple/tw/"], tmp_path, {"TORCHWHEEL_MAX_HTTP_REQUESTS": "2"}
        )
    _one_line(m, "max-http-requests" if near else case.expect.message)
    assert m.seconds <= (30 if near else 10), f"{m.seconds:.1f} s"


def test_a_page_in_its_declared_charset_and_the_refusals_in_our_words(tmp_path: Path) -> None:
    page = tmp_path / "site" / "simple" / "tw"
    page.mkdir(parents=True)
    (page / "index.html").write_bytes('<a href="tw-1.0-py3-none-any.whl">caf\u00e9</a>'.encode("latin-1"))
    latin = Behaviour(content_types={"/tw/": "text/html; charset=ISO-8859-1"})
    unknown = Behaviour(content_types={"/tw/": "text/html; charset=x-no-such"})
    with serve(tmp_path / "site", latin) as (url, _):
        read = _run(["select", *PLAN, "-i", f"{url}/simple/tw/"], tmp_path, {})
    assert "unreadable" not in read.stderr and "tw-1.0-py3-none-any.whl" in read.stdout + read.stderr
    with serve(tmp_path / "site", unknown) as (url, _):
        named = _run(["select", *PLAN, "-i", f"{url}/simple/tw/"], tmp_path, {})
    with serve(tmp_path / "site") as (url, _):
        undeclared = _run(["select", *PLAN, "-i", f"{url}/simple/tw/"], tmp_path, {})
    _one_line(named, "names the charset 'x-no-such', which is not a text encoding torchwheel knows")
    _one_line(undeclared, "unreadable index page (byte 37 is not valid UTF-8, and no charset is declared)")
    for m in (named, undeclared):
        assert not any(w in m.stderr for w in ("codec", "invalid continuation", "unknown encoding"))


def test_a_pep_691_filename_that_is_a_path_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "index.json"
    page.write_text(
        '{"meta": {"api-version": "1.1"}, "name": "tw", "files": [{"filename": "../tw-1.0-py3-none-any.whl",'
        ' "url": "blob/1", "hashes": {}}]}'
    )
    m = _run(["select", *PLAN, "-i", str(page)], tmp_path, {})
    _one_line(m, "$.files[0].filename")


SECRET_URLS = [
    (f"https://user:{hn.SECRET}@127.0.0.1:8080/simple/", "https://***@127.0.0.1:8080/simple/"),
    ("https://user:p@ss@host/simple/", "https://***@host/simple/"),
    ("https://tok/en@host:1/x", "https://***@host:1/x"),
    ("https://user:%23pw@host/simple/", "https://***@host/simple/"),
    ("https://host/simple/", "https://host/simple/"),
    ("/local/path@x", "/local/path@x"),
]


@pytest.mark.parametrize(("url", "want"), SECRET_URLS)
def test_shown_hides_the_user_part_whatever_it_holds(url: str, want: str) -> None:
    assert shown(url) == want


def test_credentials_split_as_the_user_meant_them() -> None:
    """The RFC's reading when it gives a valid host (an "@" in a path stays there), else the
    last "@" before a host: the password typed raw is sent whole, to the right host."""
    assert split_credentials(f"https://user:{hn.SECRET}@127.0.0.1:8080/simple/") == (
        "https://127.0.0.1:8080/simple/",
        f"user:{hn.SECRET}",
    )
    assert split_credentials("https://u:p@host/a@b/") == ("https://host/a@b/", "u:p")
    assert split_credentials("https://host/pkg@2/x.whl") == ("https://host/pkg@2/x.whl", None)


def test_a_drip_is_measured_against_its_own_limit_lifted(tmp_path: Path) -> None:
    """The budget, not the drip, ends a run: with max-http-seconds lifted the same dripped
    page is still unfinished after 4 s (what issue 23 measured as 45 s and killed)."""
    case = hostile.CASES["drip_page_length"]
    site = case.make(None, tmp_path)["site"]
    start = time.monotonic()
    with serve(site, Behaviour(drip={"/tw/": "length"})) as (url, _):
        m = _run(
            ["select", *PLAN, "-i", f"{url}/simple/tw/"],
            tmp_path,
            {"TORCHWHEEL_HTTP_TIMEOUT": "1"},
            timeout=4,
        )
    assert m.timed_out and time.monotonic() - start >= 4
