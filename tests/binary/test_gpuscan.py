"""binary/gpuscan.py: the streaming cursor's seam (an item that starts in one chunk and ends
in the next is handed over whole, once), and how a scan groups containers into runs within
``max-gpu-runs`` and keeps at most ``max-gpu-problems``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from torchwheel.binary.common import Buffer
from torchwheel.binary.gpuscan import Cursor, Run, Scan

_ITEM = 24  # fixed-size records at every multiple of _ITEM


class _Records(Cursor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, bytes]] = []

    def process(self, data: Buffer, base: int, stop: int) -> int | None:
        at = -(-base // _ITEM) * _ITEM  # the first record starting at or after base
        while at < stop:
            if at + _ITEM > base + len(data):
                return at  # it needs the next chunk's bytes
            self.seen.append((at, bytes(data[at - base : at - base + _ITEM])))
            at += _ITEM
        return None


@pytest.mark.parametrize("chunk", [1, 5, 23, 24, 25, 100, 4096])
def test_every_record_is_handed_over_whole_and_once(chunk: int) -> None:
    data = bytes(i % 251 for i in range(_ITEM * 40))
    cursor = _Records()
    for pos in range(0, len(data), chunk):
        cursor.feed(pos, data[pos : pos + chunk])
    assert cursor.seen == [(at, data[at : at + _ITEM]) for at in range(0, len(data), _ITEM)]


@pytest.fixture
def small_caps(set_limits: Callable[..., None]) -> None:
    set_limits(MAX_GPU_RUNS="2", MAX_GPU_PROBLEMS="2")


def test_containers_within_16_bytes_join_one_run(small_caps: None) -> None:
    scan = Scan()
    first = scan.run_at(100)
    assert first is not None
    first.hi, first.containers = 200, 1
    assert scan.run_at(208) is first  # nvcc's padding: the same run
    second = scan.run_at(216)  # 16 bytes past its end: a new run
    assert second is not None and second is not first
    assert [r.lo for r in scan.runs] == [100, 216]
    assert scan.run_at(5000) is None  # past max-gpu-runs = 2
    assert scan.problems == [(5000, "more than 2 separate fatbins (max-gpu-runs); the rest were not read")]


def test_cuda_end_is_the_end_of_the_run_that_holds_an_offset() -> None:
    scan = Scan()
    scan.runs = [Run(100, 200, containers=1), Run(300, 400, containers=0)]
    scan.los = [100, 300]
    assert scan.cuda_end(150) == 200
    assert scan.cuda_end(200) == 200  # the end itself is outside: itself
    assert scan.cuda_end(50) == 50
    assert scan.cuda_end(350) == 350  # a run of offload bundles, not CUDA containers


def test_problems_are_capped(small_caps: None) -> None:
    scan = Scan()
    for at in range(5):
        scan.problem(at, f"p{at}")
    assert scan.problems == [(0, "p0"), (1, "p1")]
