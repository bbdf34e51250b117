"""The package's Python read for ``reach`` while the pool inflates the members
(``collect``: ``reach.read_python`` ahead), held to the read in its turn: used only when the
compiled members it assumed are the ones that read, else read again; a failure ahead is
raised in its turn, as without it."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest

from torchwheel import api
from torchwheel.analysis import collect, reach
from torchwheel.analysis.memberpool import ALONE, INLINE_BYTES
from torchwheel.errors import InputError
from torchwheel.wheel.archive import WheelArchive

from ..lib.helpers import REPO

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
LOADER = b"""import glob, os, torch
try:
    torch.ops.load_library(glob.glob(os.path.join(os.path.dirname(__file__), "_ops*.so"))[0])
except OSError:
    pass
from . import elf_marker_2_10
"""


def _wheel(tmp_path: Path, unreadable: bool) -> Path:
    """The demo wheel (a real extension built from ``fixtures/``), a loader in its
    ``__init__.py``, an op library (the extension again, or bytes no reader takes), and a
    stored random file that makes it big enough for the pool."""
    with zipfile.ZipFile(DEMO) as src:
        files = {i.filename: src.read(i) for i in src.infolist() if not i.filename.endswith("/RECORD")}
    so = files["demo_stable/elf_marker_2_10.abi3.so"]
    files["demo_stable/__init__.py"] = LOADER
    files["demo_stable/_ops.abi3.so"] = so[:64] + bytes(200) if unreadable else so
    files["demo_stable/blob.bin"] = os.urandom(max(INLINE_BYTES, ALONE) + (1 << 20))
    record = "demo_stable-1.0.0.dist-info/RECORD"
    rows = "".join(
        f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n"
        for n, d in files.items()
    )
    out = tmp_path / DEMO.name
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for n, d in files.items():
            dst.writestr(n, d, zipfile.ZIP_STORED if n.endswith(".bin") else zipfile.ZIP_DEFLATED)
        dst.writestr(record, rows + f"{record},,\n")
    return out


def _counted(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[reach.Reaching]]:
    """Calls of ``read_python``, and what each ``read_reach`` found."""
    calls: list[int] = []
    found: list[reach.Reaching] = []
    read_python, read_reach = reach.read_python, reach.read_reach

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return read_python(*args, **kwargs)

    def kept(*args, **kwargs):  # type: ignore[no-untyped-def]
        found.append(read_reach(*args, **kwargs))
        return found[-1]

    monkeypatch.setattr(reach, "read_python", counting)
    monkeypatch.setattr(reach, "read_reach", kept)
    return calls, found


@pytest.mark.parametrize("unreadable", [False, True])
def test_the_reading_ahead_is_used_only_for_the_members_it_assumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unreadable: bool
) -> None:
    """Every compiled member reads: the reading ahead is the one used (read once). One does
    not (no reader takes the op library): the modules differ, so it is read again. Either
    way the report is the one of a wheel read without the pool (nothing ahead)."""
    wheel = _wheel(tmp_path, unreadable)
    calls, found = _counted(monkeypatch)
    pooled = api.check(wheel, unreadable="report").to_json()
    assert len(calls) == (2 if unreadable else 1)
    monkeypatch.setattr(collect, "INLINE_BYTES", 1 << 40)  # read on this thread: nothing ahead
    calls.clear()
    assert api.check(wheel, unreadable="report").to_json() == pooled
    assert len(calls) == 1
    assert ("TW406" in json.dumps(pooled)) == unreadable
    ahead, inline = found
    assert ahead == inline
    ops = inline.of("demo_stable/_ops.abi3.so")
    assert (ops.how, ops.when) == (("unreached", "import") if unreadable else ("library", "optional"))


def test_a_reading_ahead_that_fails_is_raised_in_its_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``.py`` files do not read ahead (here: the read itself fails): the same error as
    a wheel read without the pool, from the reading in its turn."""
    wheel = _wheel(tmp_path, unreadable=False)
    real = WheelArchive.read

    def failing(self: WheelArchive, name: str) -> bytes:
        if name.endswith("__init__.py"):
            raise InputError(f"{name}: does not inflate", reference="wheel-invalid")
        return real(self, name)

    monkeypatch.setattr(WheelArchive, "read", failing)
    with pytest.raises(InputError) as pooled:
        api.check(wheel)
    monkeypatch.setattr(collect, "INLINE_BYTES", 1 << 40)
    with pytest.raises(InputError) as inline:
        api.check(wheel)
    assert str(pooled.value) == str(inline.value)
