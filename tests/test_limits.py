"""limits.py: the input budget is one immutable value, applied where it is built (the command
line) and handed to a pool's threads and processes; never switched for the process."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from torchwheel import limits
from torchwheel.analysis.memberpool import MemberPool
from torchwheel.binary.facts import BinaryError
from torchwheel.wheel.archive import WheelArchive


def _with(**values: int) -> limits.Limits:
    base = limits.Limits()
    return dataclasses.replace(
        base, **{name: dataclasses.replace(getattr(base, name), value=v) for name, v in values.items()}
    )


def test_two_limits_applied_in_two_threads_each_hold() -> None:
    """Both threads inside their block at once: each lists by its own value."""
    both = threading.Barrier(2)

    def listed_under(budget: limits.Limits) -> list[int]:
        with limits.applied(budget):
            both.wait(timeout=30)
            kept, _ = limits.listed(range(5))
            both.wait(timeout=30)
            return kept

    with ThreadPoolExecutor(2) as pool:
        one, five = pool.map(listed_under, [_with(max_listed=1), _with(max_listed=5)])
    assert (one, five) == ([0], [0, 1, 2, 3, 4])
    assert limits.current().max_listed.value == limits.from_environment().max_listed.value


def test_a_pool_reads_with_the_limits_of_the_command_that_started_it(fixture_wheels: dict[str, Path]) -> None:
    """A thread starts with no limits applied: ``MemberPool`` hands its tasks the value in
    force where it was made, so a budget the command lowered holds on every thread."""
    wheel = fixture_wheels["clean"]

    def scans(budget: limits.Limits | None) -> list[object]:
        with WheelArchive(wheel) as source:
            if budget is None:
                pool = MemberPool(source, False)
            else:
                with limits.applied(budget):
                    pool = MemberPool(source, False)
            try:
                return [f.result()[1] for f in pool.scans.values()]
            finally:
                pool.close()

    tight = scans(_with(max_needed=0))
    assert tight and all(isinstance(r, BinaryError) and "max-needed" in str(r) for r in tight), tight
    assert not any(isinstance(r, BinaryError) for r in scans(None))
