"""binary/capture.py: the byte ranges a streaming scan keeps, as sorted disjoint intervals
cut out of each chunk as it passes, their total held to ``max-binary-tables``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from torchwheel.binary.capture import Capture, covered, merge
from torchwheel.binary.sparse import SparseBuffer
from torchwheel.limits import LimitExceeded


@pytest.fixture
def small_budget(set_limits: Callable[..., None]) -> None:
    set_limits(MAX_BINARY_TABLES="100")


def _intervals(c: Capture) -> list[tuple[int, int]]:
    return list(zip(c.los, c.his, strict=True))


def test_wanted_ranges_merge_into_disjoint_intervals() -> None:
    c = Capture([(10, 20), (30, 40), (0, 0), (50, 45)])  # empty and reversed ranges are nothing
    assert _intervals(c) == [(10, 20), (30, 40)]
    assert c.want(15, 35) is True  # bridges both
    assert _intervals(c) == [(10, 40)]
    assert c.want(12, 18) is False  # nothing new
    assert c.want(40, 41) is True  # touching: one interval
    assert _intervals(c) == [(10, 41)]
    assert c.total == 11  # only the counted (later) wants: 10 bridged bytes, then 1


def test_the_constructors_ranges_are_not_counted(small_budget: None) -> None:
    assert Capture([(0, 1000)]).total == 0


def test_the_total_kept_is_held_to_the_limit(small_budget: None) -> None:
    c = Capture([], label="lib.so")
    c.want(0, 60)
    c.want(50, 100)  # 40 more: 100 in all, at the limit
    with pytest.raises(LimitExceeded) as info:
        c.want(200, 201)
    assert str(info.value) == (
        "lib.so: bytes of binary tables to keep (101) exceeds the limit max-binary-tables = 100: "
        "raise it with TORCHWHEEL_MAX_BINARY_TABLES"
    )


def test_feed_cuts_the_wanted_bytes_out_of_each_chunk() -> None:
    data = bytes(range(100))
    c = Capture([(5, 15), (40, 42), (95, 200)])
    for pos in range(0, 100, 10):
        c.feed(pos, data[pos : pos + 10])
    assert c.pieces == {5: data[5:10], 10: data[10:15], 40: data[40:42], 95: data[95:100]}
    view = SparseBuffer.from_ranges(100, c.pieces)
    assert covered(view, 5, 15) is True
    assert covered(view, 40, 42) is True
    assert covered(view, 4, 15) is False
    assert covered(view, 41, 43) is False


def test_merge_keeps_the_longer_piece_at_one_offset() -> None:
    pieces = {0: b"abcdef", 10: b"x"}
    merge(pieces, {0: b"ab", 10: b"xyz", 20: b"new"})
    assert pieces == {0: b"abcdef", 10: b"xyz", 20: b"new"}
