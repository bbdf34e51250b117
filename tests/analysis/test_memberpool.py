"""analysis/memberpool.py: a wheel's members read on a pool started before the command is
imported, handed to ``load`` and read on (not opened again), and stopped when the command
ends first."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from torchwheel import api
from torchwheel.analysis import load
from torchwheel.analysis.memberpool import ALONE, INLINE_BYTES, MemberPool, start
from torchwheel.wheel.archive import WheelArchive

from ..lib.helpers import REPO


def _big_wheel(tmp_path: Path) -> Path:
    """A wheel over the threads' threshold: the demo wheel and a stored incompressible file."""
    import hashlib
    import os
    import zipfile

    demo = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
    out = tmp_path / demo.name
    blob = os.urandom(max(INLINE_BYTES, ALONE) + (1 << 20))
    with zipfile.ZipFile(demo) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        rows = []
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/RECORD"):
                record = info.filename
                continue
            dst.writestr(info.filename, data)
            rows.append(info.filename)
        dst.writestr("demo_stable/blob.bin", blob, zipfile.ZIP_STORED)
        text = "".join(
            f"{name},sha256={_b64(hashlib.sha256(src.read(name)).digest())},{src.getinfo(name).file_size}\n"
            for name in rows
        )
        text += f"demo_stable/blob.bin,sha256={_b64(hashlib.sha256(blob).digest())},{len(blob)}\n{record},,\n"
        dst.writestr(record, text)
    return out


def _b64(digest: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_a_started_wheel_is_read_on_not_opened_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _big_wheel(tmp_path)
    alone = api.check(wheel).to_json()
    early = start((wheel,), verify_hashes=True)
    assert early is not None and early.pool is not None

    def no_second_open(*_: object, **__: object) -> None:
        raise AssertionError("the wheel was opened again")

    monkeypatch.setattr(load, "_open", no_second_open)
    with early:
        got = api.check(wheel, early=early).to_json()
    assert got == alone
    assert early.taken
    assert early.source.fd == -1  # closed by load once read


def test_only_the_same_wheel_read_the_same_way_is_taken(tmp_path: Path) -> None:
    wheel = _big_wheel(tmp_path)
    with start((wheel,), verify_hashes=True) as early:  # type: ignore[union-attr]
        assert early.take(tmp_path / "other.whl", True) is None
        taken = early.take(wheel, False)  # --skip-hashes reads differently: the pool is dropped
        assert taken is not None and taken[1] is None
        assert early.take(wheel, False) is None  # once
        taken[0].close()


def test_what_start_leaves_to_load(tmp_path: Path) -> None:
    assert start((), True) is None
    assert start((tmp_path,), True) is None  # a directory
    (tmp_path / "x.whl").write_bytes(b"not a zip")
    assert start((tmp_path / "x.whl",), True) is None  # load says what is wrong with it
    assert start((tmp_path / "missing.whl",), True) is None
    demo = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
    small = start((demo,), True)
    assert small is not None and small.pool is None  # opened, but too small for threads
    with small:
        pass
    assert small.source.fd == -1


def test_a_pool_closed_early_stops_at_the_next_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that ends before it reads (a usage error) does not wait for the members:
    each thread stops at its next chunk."""
    wheel = _big_wheel(tmp_path)
    slow = threading.Event()
    original = WheelArchive.stream

    def crawl(self: WheelArchive, name: str, stop: int | None = None):  # type: ignore[no-untyped-def]
        for chunk in original(self, name, stop):
            slow.set()
            time.sleep(0.2)
            yield chunk

    monkeypatch.setattr(WheelArchive, "stream", crawl)
    source = WheelArchive(wheel)
    pool = MemberPool(source, verify_hashes=True)  # the blob hashed alone, streamed
    slow.wait(5)
    began = time.monotonic()
    pool.close()
    assert time.monotonic() - began < 1.5  # the 9 MB blob would take 7 s at this pace
    source.close()
