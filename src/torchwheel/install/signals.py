"""The signals that end a run mid-install (SIGINT, SIGTERM, SIGHUP): caught so that the
rollback runs, and held back while it does, so that no second Ctrl-C cuts a rollback in two
and the process still ends the way the signal meant.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP during an install: unwinds to the rollback, which then runs
    with further signals held back."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class SignalGuard:
    """While an install runs: the first SIGINT/SIGTERM/SIGHUP raises ``Interrupted`` (so the
    rollback runs), and every later one, or any during a rollback or the cleanup after the
    commit (``hold``), is only remembered: a second Ctrl-C must not cut a rollback in two.
    ``resend`` then hands the signal to the handler that was there before, so the process
    ends the way it would have (the CLI dies by SIGTERM with status 143)."""

    _NAMES = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.caught: list[int] = []
        self.holding = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is threading.main_thread():
            for name in self._NAMES:
                signum = getattr(signal, name, None)
                if signum is None or signal.getsignal(signum) is signal.SIG_IGN:  # nohup: stays ignored
                    continue
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.caught.append(signum)
        if not self.holding:
            self.holding = True
            raise Interrupted(signum)

    def hold(self) -> None:
        self.holding = True

    def release(self) -> None:
        """Arm again; a signal held meanwhile is raised now (before the next step starts)."""
        self.holding = False
        if self.caught:
            self.holding = True
            raise Interrupted(self.caught[0])

    def resend(self, signum: int) -> None:
        previous = self._previous.get(signum)
        self.__exit__()
        if previous is not None and previous is not signal.SIG_IGN:
            signal.raise_signal(signum)
