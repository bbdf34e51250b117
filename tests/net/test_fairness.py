"""``net.fairness`` held to a local server that throttles (tests/lib/index_server.py): a 429
with ``Retry-After`` is waited out and asked again, a 503 is retried with back-off, the
retries and every wait are bounded, and the caps on connections per host and on the
request rate are what the server sees."""

from __future__ import annotations

import email.utils
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from torchwheel import limits
from torchwheel.errors import InputError
from torchwheel.net import fairness, fetch

from ..lib.index_server import Behaviour, serve


@pytest.fixture
def files(tmp_path: Path) -> Iterator[Path]:
    for i in range(8):
        (tmp_path / f"f{i}.txt").write_bytes(b"x" * 100)
    yield tmp_path
    fairness.configure(fairness.FairnessPolicy())  # the next test starts from the defaults


def _get(url: str) -> bytes:
    return fetch.Session().get(url, limits.current().max_page_bytes).body


def test_a_429_is_waited_out_as_retry_after_says(files: Path) -> None:
    fairness.configure(fairness.FairnessPolicy(backoff=0.01))
    with serve(files, Behaviour(refuse={"/f0.txt": [(429, "1")]})) as (url, b):
        started = time.monotonic()
        assert _get(f"{url}/f0.txt") == b"x" * 100
        waited = time.monotonic() - started
    assert b.requests == ["/f0.txt", "/f0.txt"]
    assert waited >= 1.0  # the server's word, not the 0.01 s back-off


def test_a_503_is_retried_with_back_off_then_succeeds(files: Path) -> None:
    fairness.configure(fairness.FairnessPolicy(backoff=0.1))
    with serve(files, Behaviour(refuse={"/f0.txt": [(503, None), (502, None)]})) as (url, b):
        started = time.monotonic()
        assert _get(f"{url}/f0.txt") == b"x" * 100
        waited = time.monotonic() - started
    assert len(b.requests) == 3
    assert waited >= 0.1 + 0.2  # doubled at each retry


def test_the_retries_are_bounded_and_the_error_stands(files: Path) -> None:
    fairness.configure(fairness.FairnessPolicy(retries=2, backoff=0.01))
    refusing = Behaviour(refuse={"/f0.txt": [(503, None)] * 10})
    with serve(files, refusing) as (url, b), pytest.raises(fetch.HTTPFailure, match="HTTP 503") as caught:
        _get(f"{url}/f0.txt")
    assert caught.value.status == 503
    assert len(b.requests) == 3  # the first and two retries


def test_a_404_and_a_501_are_not_retried(files: Path) -> None:
    fairness.configure(fairness.FairnessPolicy(backoff=0.01))
    with serve(files, Behaviour(refuse={"/f0.txt": [(501, None)] * 3})) as (url, b):
        with pytest.raises(fetch.NotFound):
            _get(f"{url}/missing.txt")
        with pytest.raises(fetch.HTTPFailure, match="HTTP 501"):
            _get(f"{url}/f0.txt")
    assert b.requests == ["/missing.txt", "/f0.txt"]


def test_a_long_retry_after_is_capped_and_never_outlives_the_budget(
    files: Path, set_limits: Callable[..., None]
) -> None:
    fairness.configure(fairness.FairnessPolicy(max_wait=0.2))
    with serve(files, Behaviour(refuse={"/f0.txt": [(429, "86400")]})) as (url, _):
        started = time.monotonic()
        assert _get(f"{url}/f0.txt") == b"x" * 100
        assert time.monotonic() - started < 2
    fairness.configure(fairness.FairnessPolicy(max_wait=60))
    set_limits(MAX_HTTP_SECONDS="2")
    with serve(files, Behaviour(refuse={"/f1.txt": [(429, "30")]})) as (url, b):
        started = time.monotonic()
        with pytest.raises(fetch.HTTPFailure, match="HTTP 429"):
            _get(f"{url}/f1.txt")  # 30 s would pass the 2 s deadline: not waited
        assert time.monotonic() - started < 1.5
    assert len(b.requests) == 1


def test_retry_after_as_an_http_date() -> None:
    now = time.time()
    date = email.utils.formatdate(now + 5, usegmt=True)
    assert fairness.retry_after(date, now) == pytest.approx(5, abs=1)
    assert fairness.retry_after("7") == 7
    assert fairness.retry_after("soon") is None
    assert fairness.retry_after(email.utils.formatdate(now - 60, usegmt=True), now) == 0
    assert fairness.wait(fairness.FairnessPolicy(backoff=0.5, max_wait=3), 0, None) == 0.5
    assert fairness.wait(fairness.FairnessPolicy(backoff=0.5, max_wait=3), 4, None) == 3  # 8 s, capped


def _in_flight(url: str, cap: int) -> None:
    fairness.configure(fairness.FairnessPolicy(host_connections=cap))
    threads = [threading.Thread(target=_get, args=(f"{url}/f{i}.txt",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("cap", [2, 6])
def test_the_server_sees_at_most_the_connection_cap(files: Path, cap: int) -> None:
    with serve(files, Behaviour(slow={".txt": 0.3})) as (url, b):
        _in_flight(url, cap)
    assert len(b.requests) == 6
    assert b.max_in_flight == cap  # 6 threads at once: the cap, and no more


def test_the_request_rate_cap(files: Path) -> None:
    fairness.configure(fairness.FairnessPolicy(rate=10))
    with serve(files) as (url, b):
        started = time.monotonic()
        for i in range(6):
            _get(f"{url}/f{i}.txt")
        spent = time.monotonic() - started
    assert len(b.requests) == 6
    assert spent >= 0.5  # 6 requests at 10 per second: 5 gaps of 0.1 s


def test_a_policy_that_cannot_be_kept_is_refused() -> None:
    with pytest.raises(InputError, match="at least 1"):
        fairness.FairnessPolicy(host_connections=0)
    with pytest.raises(InputError, match="TORCHWHEEL_MAX_REQUEST_RATE"):
        fairness.from_env({"TORCHWHEEL_MAX_REQUEST_RATE": "fast"})
    assert fairness.from_env({"TORCHWHEEL_MAX_HOST_CONNECTIONS": "3"}).host_connections == 3
