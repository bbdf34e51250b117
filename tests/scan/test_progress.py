"""scan/progress.py: what a running scan says on stderr. On a terminal a bar redrawn in place
(carriage return, erase the line), in a log a plain line every 30 seconds and one at the end,
so a four-hour scan logs a few hundred lines. The rate and the time left are arithmetic a
person plans by, so each is checked against numbers worked out by hand; the clock is a
fake one the test moves (no test sleeps)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from torchwheel.scan import progress
from torchwheel.scan.progress import Progress


class Clock:
    """``time.monotonic`` as the test sets it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress, "time", fake)  # the module's clock, nothing else
    return fake


def _line(fetched: int | None = 0, error: bool = False) -> dict[str, Any]:
    return {"fetched_bytes": fetched, "error": {"code": "network", "message": "x"} if error else None}


def test_the_status_line(clock: Clock) -> None:
    p = Progress(1000, 0, io.StringIO(), tty=False)
    for i in range(250):
        p.add(_line(6_000, error=i % 50 == 0))
    assert p.status(clock.now + 100) == (
        "scan: 250/1,000 wheels, 5 with errors, 1.5 MB fetched, 2.5 wheels/s, 5:00 left"
    )  # 250 in 100 s: 2.5 a second, 750 left: 300 s


@pytest.mark.parametrize(
    ("spent", "left"),
    [
        (59, "0:59"),
        (61, "1:01"),
        (600, "10:00"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (3725, "1:02:05"),
        (90061, "25:01:01"),
    ],
)
def test_time_left(clock: Clock, spent: int, left: str) -> None:
    p = Progress(2, 0, io.StringIO(), tty=False)
    p.add(_line())  # one of two done in `spent` seconds: as long again to go
    assert p.status(clock.now + spent).endswith(f", {left} left")


@pytest.mark.parametrize(
    ("fetched", "shown"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.0 kB"),
        (1_250, "1.2 kB"),
        (999_000, "999.0 kB"),
        (1_234_567, "1.2 MB"),
        (5_000_000_000, "5.0 GB"),
        (2_500_000_000_000, "2.5 TB"),
        (1_000_000_000_000_000, "1000.0 TB"),
    ],
)
def test_bytes_fetched(clock: Clock, fetched: int, shown: str) -> None:
    p = Progress(10, 0, io.StringIO(), tty=False)
    p.add(_line(fetched))
    assert f", {shown} fetched, " in p.status(clock.now + 1)


def test_fetched_bytes_add_up_and_a_missing_count_is_zero(clock: Clock) -> None:
    p = Progress(10, 0, io.StringIO(), tty=False)
    for fetched in (400, None, 600):
        p.add(_line(fetched))
    assert (p.done, p.fetched, p.errors) == (3, 1000, 0)


def test_the_rate(clock: Clock) -> None:
    p = Progress(100, 0, io.StringIO(), tty=False)
    for _ in range(3):
        p.add(_line())
    assert ", 0.3 wheels/s, 5:23 left" in p.status(clock.now + 10)  # 97 / 0.3 = 323.3 s


def test_a_status_at_the_start_divides_by_no_zero(clock: Clock) -> None:
    p = Progress(5, 0, io.StringIO(), tty=False)
    p.add(_line())
    assert p.status(clock.now).startswith("scan: 1/5 wheels, 0 with errors, 0 B fetched, ")


def test_a_log_gets_a_line_every_30_seconds_and_at_the_end(clock: Clock) -> None:
    stream = io.StringIO()
    p = Progress(100, 0, stream, tty=False)
    for _ in range(100):  # a wheel a second
        clock.now += 1
        p.add(_line(1000))
    assert stream.getvalue() == (
        "scan: 30/100 wheels, 0 with errors, 30.0 kB fetched, 1.0 wheels/s, 1:10 left\n"
        "scan: 60/100 wheels, 0 with errors, 60.0 kB fetched, 1.0 wheels/s, 0:40 left\n"
        "scan: 90/100 wheels, 0 with errors, 90.0 kB fetched, 1.0 wheels/s, 0:10 left\n"
        "scan: 100/100 wheels, 0 with errors, 100.0 kB fetched, 1.0 wheels/s, 0:00 left\n"
    )


def test_a_terminal_is_redrawn_in_place_at_most_five_times_a_second(clock: Clock) -> None:
    stream = io.StringIO()
    p = Progress(20, 0, stream, tty=True)
    for _ in range(20):  # a wheel every 0.125 s: every other one redraws
        clock.now += 0.125
        p.add(_line())
    text = stream.getvalue()
    assert "\n" not in text
    draws = text.split("\r\x1b[2K")
    assert draws[0] == ""
    assert len(draws) - 1 == 10
    assert draws[-1] == "scan: 20/20 wheels, 0 with errors, 0 B fetched, 8.0 wheels/s, 0:00 left"


def test_finish_on_a_terminal_ends_the_bar_with_a_newline(clock: Clock) -> None:
    stream = io.StringIO()
    p = Progress(3, 40, stream, tty=True)
    for error in (False, True, False):
        p.add(_line(500_000, error=error))
    clock.now += 3725
    p.finish()
    assert stream.getvalue().endswith(
        "\r\x1b[2Kscan: 3 wheels scanned (1 with errors, 40 already in the file), 1.5 MB fetched in 1:02:05\n"
    )


def test_finish_in_a_log(clock: Clock) -> None:
    stream = io.StringIO()
    p = Progress(12_345, 0, stream, tty=False)
    for _ in range(1_234):
        p.add(_line())
    clock.now += 59.9
    p.finish()
    assert stream.getvalue() == "scan: 1,234 wheels scanned (0 with errors), 0 B fetched in 0:59\n"


def test_a_resume_with_nothing_left_says_so(clock: Clock) -> None:
    stream = io.StringIO()
    Progress(0, 7, stream, tty=False).finish()
    assert (
        stream.getvalue()
        == "scan: 0 wheels scanned (0 with errors, 7 already in the file), 0 B fetched in 0:00\n"
    )


def test_every_count_is_grouped_by_thousands(clock: Clock) -> None:
    p = Progress(1_000_000, 0, io.StringIO(), tty=False)
    for _ in range(1_500):
        p.add(_line(error=True))
    assert re.match(r"scan: 1,500/1,000,000 wheels, 1,500 with errors, ", p.status(clock.now + 1))
