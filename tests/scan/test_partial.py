"""scan/partial.py, the choice of whole or partial (issue 49): a wheel its listing says is small
is downloaded whole in one plain request before any range, because a partial read of it
would cost more requests than the bytes it leaves out; the rest starts with its ranges."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from torchwheel import api
from torchwheel.scan import partial
from torchwheel.scan.partial import PURE_AT_ONCE, WHOLE_AT_ONCE, partial_line, whole_at_once
from torchwheel.scan.scanline import WheelSource

from ..lib.helpers import REPO
from ..lib.index_server import serve

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"


def test_which_wheels_are_read_whole_at_once() -> None:
    compiled, pure = "https://h/a-1.0-cp39-abi3-manylinux_2_28_x86_64.whl", "https://h/a-1.0-py3-none-any.whl"
    assert whole_at_once(WheelSource(compiled, size=WHOLE_AT_ONCE))
    assert not whole_at_once(WheelSource(compiled, size=WHOLE_AT_ONCE + 1))  # ranges may pay: start with them
    assert whole_at_once(WheelSource(pure, size=PURE_AT_ONCE))
    assert not whole_at_once(WheelSource(pure, size=PURE_AT_ONCE + 1))  # its metadata, at its end
    assert not whole_at_once(WheelSource(compiled))  # the listing gave no size: the first range tells
    assert not whole_at_once(WheelSource("/local/a-1.0-cp39-abi3-manylinux_2_28_x86_64.whl", size=10))


def test_a_listed_small_wheel_costs_one_request_and_its_line_is_the_whole_reads(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(DEMO, files / DEMO.name)
    digest = hashlib.sha256(DEMO.read_bytes()).hexdigest()
    with serve(files) as (url, b):
        source = WheelSource(f"{url}/{DEMO.name}", digest, DEMO.stat().st_size)
        line = partial_line(source, api.check, api.need)
        assert b.requests == [f"/{DEMO.name}"] and b.ranged == []  # one plain GET, no range
        whole = api.scan_one(source)
    assert line["partial"] == {
        "axes": dict.fromkeys((*partial.AXES, partial.MARKER), partial.DECIDED),
        "members": {},
        "wheel_bytes": DEMO.stat().st_size,
        "requests": 1,
        "whole": "small",
    }
    assert {k: v for k, v in line.items() if k != "partial"} == whole
    assert line["fetched_bytes"] == DEMO.stat().st_size and line["hashes_verified"] == {
        "file": True,
        "record": True,
    }


def test_a_small_wheel_that_cannot_be_fetched_is_a_line(tmp_path: Path) -> None:
    with serve(tmp_path) as (url, _):
        line = partial_line(WheelSource(f"{url}/{DEMO.name}", size=100), api.check, api.need)
    assert line["error"]["code"] == "not-found" and "partial" not in line


def _fake(size: int, compiled: list[int], fetched: int = 1 << 18, tagged: bool = False) -> Any:
    """What ``_near_whole`` reads of a ``RangedWheel``: its members' compressed sizes, WHEEL's
    fields, and what the file cost so far."""
    infos = {f"pkg/lib{i}.so": SimpleNamespace(compress_size=n) for i, n in enumerate(compiled)}
    infos["pkg/data.bin"] = SimpleNamespace(compress_size=size - sum(compiled))
    fields = {"Torch-ABI": ["2.10"], "Torch-Build": ["cpu"]} if tagged else {}
    return SimpleNamespace(
        contents=SimpleNamespace(wheel_fields=fields),
        infos=infos,
        remote=SimpleNamespace(fetched=fetched, size=size),
    )


def test_ranges_are_read_only_where_they_pay() -> None:
    mb = 1 << 20
    assert partial._steps(1) == 1
    assert partial._steps(3 * (1 << 16)) == 2  # 64 KiB, then 128 KiB
    assert partial._steps(100 * mb) == 9 + 5  # doubling to 16 MiB (about 32 MiB), then 16 MiB steps
    # vLLM's shape: 13 libraries, 87 % of 336 MB: leaving out 45 MB would take about 80 ranges
    vllm = [130, 66, 43, 39, 7, 3, 2, 2, 1, 1, 1, 1, 1]
    assert partial._near_whole(_fake(336 * mb, [n * mb for n in vllm]))
    # one 40 MB library in a 100 MB wheel of data: 60 MB left out for 11 ranges at most
    assert not partial._near_whole(_fake(100 * mb, [40 * mb]))
    # a 3 MB wheel, 70 % compiled in 5 libraries: 0.9 MB left out for a dozen ranges
    assert partial._near_whole(_fake(3 * mb, [420_000] * 5))
    assert not partial._near_whole(_fake(3 * mb, [420_000] * 5, tagged=True))  # WHEEL says it all
    assert not partial._near_whole(_fake(1 * mb, []))  # pure: its metadata says it all


def test_a_big_wheels_first_range_holds_its_directory_and_metadata() -> None:
    url = "https://h/a-1.0-cp39-abi3-manylinux_2_28_x86_64.whl"
    assert partial._first_range(WheelSource(url)) is None  # no size listed: the default
    assert partial._first_range(WheelSource(url, size=10 << 20)) == partial.ranged._TAIL
    assert partial._first_range(WheelSource(url, size=64 << 20)) == 1 << 20
    assert partial._first_range(WheelSource(url, size=336 << 20)) == 4 << 20  # vLLM's: at most 4 MiB


def test_a_wheel_read_whole_for_its_compiled_share_is_hashed_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 5 (``compiled``): the first range, then the rest in one request. The file is
    hashed in its order as the rest is written (``RemoteFile.write_whole``), so the line's
    sha256 is the file's and is held to the index's, as a download's is."""
    from torchwheel.net import ranged

    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(DEMO, files / DEMO.name)
    digest = hashlib.sha256(DEMO.read_bytes()).hexdigest()
    monkeypatch.setattr(ranged, "_TAIL", 1024)  # the demo's end, not all of it
    with serve(files) as (url, b):
        line = partial_line(WheelSource(f"{url}/{DEMO.name}", digest), api.check, api.need)
        assert len(b.ranged) == 2 and b.ranged[0] == "bytes=-1024"  # its end, then the rest
        wrong = partial_line(WheelSource(f"{url}/{DEMO.name}", "0" * 64), api.check, api.need)
    assert line["error"] is None and line["partial"]["whole"] == "compiled", line
    assert line["sha256"] == digest and line["hashes_verified"] == {"file": True, "record": True}
    assert (
        wrong["error"]["code"] == "digest"
        and "differs from the one its index gives" in wrong["error"]["message"]
    )
