"""What a running scan says on stderr: a bar redrawn in place on a terminal (wheels done,
bytes fetched, rate, time left), and in a log (CI, ``nohup``) a plain line now and then,
so a log of a four-hour scan is a few hundred lines, not a million carriage returns."""

from __future__ import annotations

import time
from typing import Any, TextIO

_REDRAW = 0.2  # seconds between redraws on a terminal
_LOG_EVERY = 30.0  # seconds between lines in a log


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Counts the lines as they come and says so on ``stream``."""

    def __init__(self, total: int, skipped: int, stream: TextIO, tty: bool) -> None:
        self.total, self.skipped, self.stream, self.tty = total, skipped, stream, tty
        self.done = self.errors = self.fetched = 0
        self.started = self._shown = time.monotonic()

    def add(self, line: dict[str, Any]) -> None:
        self.done += 1
        self.errors += line.get("error") is not None
        self.fetched += int(line.get("fetched_bytes") or 0)
        now = time.monotonic()
        if now - self._shown >= (_REDRAW if self.tty else _LOG_EVERY) or self.done == self.total:
            self._shown = now
            self._say(self.status(now), final=False)

    def status(self, now: float) -> str:
        spent = max(now - self.started, 1e-9)
        rate = self.done / spent
        left = (self.total - self.done) / rate if rate else 0.0
        return (
            f"scan: {self.done:,}/{self.total:,} wheels, {self.errors:,} with errors, "
            f"{_size(self.fetched)} fetched, {rate:.1f} wheels/s, {_duration(left)} left"
        )

    def _say(self, text: str, final: bool) -> None:
        if self.tty:
            self.stream.write(f"\r\x1b[2K{text}" + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        spent = time.monotonic() - self.started
        again = f", {self.skipped:,} already in the file" if self.skipped else ""
        self._say(
            f"scan: {self.done:,} wheels scanned ({self.errors:,} with errors{again}), "
            f"{_size(self.fetched)} fetched in {_duration(spent)}",
            final=True,
        )
