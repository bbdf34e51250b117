"""Being fair to the servers torchwheel reads from: a cap on concurrent connections per host,
a cap on the request rate per host, and retries of the answers that mean "later" (429 and
the 5xx that a busy or restarting server gives), with ``Retry-After`` honoured.

A mirror or a kernel hub serves many clients; ``torchwheel scan --jobs 8`` over a 10,000-wheel
index must not look like an attack, and a 503 from a server that restarts must cost a retry,
not a wheel. Everything is bounded: a few retries, each wait capped (a ``Retry-After: 86400``
waits ``max_wait`` at most), and no wait outlives the command's network deadline
(``fetch._Budget``): a wait that would is not made and the error stands.

``fetch.Session`` asks ``gate()`` for every request. The caps are per process by default
(threads share them); ``torchwheel scan`` hands its worker processes shared primitives
(``shared_hosts``) so that ``--jobs N`` is held to one cap per host, not N.
"""

from __future__ import annotations

import email.utils
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from torchwheel.errors import InputError, quoted
from torchwheel.frozen import frozen

# 501 (not implemented) and 505 (HTTP version) will not change on a retry
_NOT_RETRIED = frozenset((501, 505))


@frozen
class FairnessPolicy:
    """``host_connections``: requests in flight to one host; ``rate``: requests per second
    to one host (None: no cap); ``retries`` after the first attempt; ``backoff``: the first
    wait, doubled at each retry; ``max_wait``: the cap of any one wait, ``Retry-After``'s
    included."""

    host_connections: int = 4
    rate: float | None = None
    retries: int = 4
    backoff: float = 0.5
    max_wait: float = 60.0

    def __post_init__(self) -> None:
        if self.host_connections < 1:
            raise InputError(
                f"host connections {self.host_connections}: expected at least 1", reference="bad-option-value"
            )
        if self.rate is not None and self.rate <= 0:
            raise InputError(
                f"request rate {self.rate}: expected a positive number per second",
                reference="bad-option-value",
            )


def from_env(env: Mapping[str, str] = os.environ) -> FairnessPolicy:
    """The policy of a command that sets none: ``TORCHWHEEL_MAX_HOST_CONNECTIONS`` and
    ``TORCHWHEEL_MAX_REQUEST_RATE`` (requests per second per host), else the defaults."""
    connections, rate = env.get("TORCHWHEEL_MAX_HOST_CONNECTIONS"), env.get("TORCHWHEEL_MAX_REQUEST_RATE")
    if connections and not (
        connections.isascii() and connections.strip().isdigit() and len(connections) <= 6
    ):
        raise InputError(
            f"TORCHWHEEL_MAX_HOST_CONNECTIONS={quoted(connections, 40)}: expected a whole number",
            reference="bad-option-value",
        )
    try:
        per_second = float(rate) if rate else None
    except ValueError:
        per_second = math.nan
    if per_second is not None and not math.isfinite(per_second):
        raise InputError(
            f"TORCHWHEEL_MAX_REQUEST_RATE={quoted(rate, 40)}: expected a number of requests per second",
            reference="bad-option-value",
        )
    return FairnessPolicy(
        host_connections=int(connections) if connections else FairnessPolicy.host_connections, rate=per_second
    )


def retryable(status: int) -> bool:
    return status == 429 or (500 <= status <= 599 and status not in _NOT_RETRIED)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` in seconds from now: a number of seconds or an HTTP date (RFC 9110
    10.2.3); None when absent or unreadable (then the back-off decides)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def wait(policy: FairnessPolicy, attempt: int, header: str | None) -> float:
    """Seconds before retry number ``attempt`` (0 for the first retry): what the server asked
    for, else the exponential back-off; capped by ``max_wait`` either way."""
    asked = retry_after(header)
    return min(policy.max_wait, asked if asked is not None else policy.backoff * (2**attempt))


class _Slots(Protocol):
    def acquire(self, block: bool = ..., timeout: float | None = ...) -> bool: ...

    def release(self) -> None: ...


class _Clock(Protocol):
    """When the next request to a host may start (``multiprocessing.Value("d")`` shape)."""

    value: float

    def get_lock(self) -> Any: ...


class _LocalClock:
    def __init__(self) -> None:
        self.value = 0.0
        self._lock = threading.Lock()

    def get_lock(self) -> threading.Lock:
        return self._lock


@frozen
class Host:
    slots: _Slots
    clock: _Clock


class Gate:
    """The caps of one process: per host, its connection slots and its rate clock (shared
    across processes when ``shared`` names the host)."""

    def __init__(self, policy: FairnessPolicy, shared: Mapping[str, Host] | None = None) -> None:
        self.policy = policy
        self._hosts: dict[str, Host] = dict(shared or {})
        self._lock = threading.Lock()

    def host(self, netloc: str) -> Host:
        with self._lock:
            found = self._hosts.get(netloc)
            if found is None:
                found = Host(threading.BoundedSemaphore(self.policy.host_connections), _LocalClock())
                self._hosts[netloc] = found
            return found

    def _pace(self, host: Host, left: float) -> bool:
        """Wait for this host's next request time; False when it lies past ``left``."""
        if self.policy.rate is None:
            return True
        with host.clock.get_lock():
            now = time.time()
            start = max(now, host.clock.value)
            if start - now > left:
                return False
            host.clock.value = start + 1.0 / self.policy.rate
        time.sleep(start - now)
        return True

    @contextmanager
    def slot(
        self, netloc: str, left: Callable[[], float], refused: Callable[[], Exception]
    ) -> Iterator[None]:
        """One request to ``netloc``: a connection slot held for the whole response, taken
        after the rate allows it; ``refused()`` is raised when the deadline (``left()``
        seconds) comes first."""
        host = self.host(netloc)
        if not self._pace(host, left()) or not host.slots.acquire(True, max(0.0, left())):
            raise refused()
        try:
            yield
        finally:
            host.slots.release()


_gate: Gate | None = None


def gate() -> Gate:
    """The caps in force: ``configure``'s, else the environment's."""
    global _gate
    if _gate is None:
        _gate = Gate(from_env())
    return _gate


def configure(policy: FairnessPolicy, shared: Mapping[str, Host] | None = None) -> None:
    """Set this process's caps (``torchwheel scan``'s options; its workers get ``shared``)."""
    global _gate
    _gate = Gate(policy, shared)


def shared_hosts(netlocs: set[str], policy: FairnessPolicy, context: Any) -> dict[str, Host]:
    """Per host, slots and a clock that ``context``'s (``multiprocessing``) worker processes
    share, so the caps hold for all of them together."""
    return {
        n: Host(context.BoundedSemaphore(policy.host_connections), context.Value("d", 0.0))
        for n in sorted(netlocs)
    }
