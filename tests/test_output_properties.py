"""The invariant of what a command writes, as a property: ``scan -o FILE`` and ``tag -w DIR``
on outputs drawn at random (every kind: missing, empty, a scan file, a scan file with a torn
or foreign tail, a line of another shape, random bytes, a wheel, a link, a FIFO, a folder),
run in this process. Either the output was of the kind the command writes there and it is
extended or replaced as documented, or the run is refused (exit 2, one line) and every file
is byte for byte what it was. ``fixtures/hostile_own.py`` holds one case of each kind; this
draws them at random, with random contents (short form: a few examples;
``TORCHWHEEL_HOSTILE_LONG=1``: many).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from .lib.helpers import REPO
from .lib.own_runner import changed, in_process, snapshot

sys.path.insert(0, str(REPO / "fixtures"))
import hostile_own

LONG = os.environ.get("TORCHWHEEL_HOSTILE_LONG") == "1"
EXAMPLES = 300 if LONG else 12


def _mutated(rng: random.Random) -> bytes:
    """A scan line with one field missing or of a shape no field has (docs/scan.md: no scan
    line): a float, a list, a string no field takes."""
    key = rng.choice(list(hostile_own.LINE))
    line = dict(hostile_own.LINE)
    if rng.random() < 0.3:
        del line[key]
    else:
        line[key] = rng.choice([1.5, [1], "x?"])
    return json.dumps(line, separators=(",", ":")).encode() + b"\n"


def _scan_output(rng: random.Random, path: Path, outside: Path) -> str:
    """Write one kind of existing output at ``path``; say whether scan may append to it."""
    whole = b"".join(hostile_own.line_bytes() for _ in range(rng.randint(1, 3)))
    kind = rng.choice(["missing", "empty", "scan", "torn", "foreign-tail", "mutated", "random", "wheel",
                       "link", "fifo", "folder"])  # fmt: skip
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "scan":
        path.write_bytes(whole)
    elif kind == "torn":
        opening = hostile_own.line_bytes()
        path.write_bytes(whole + opening[: rng.randint(1, len(opening) - 1)])
    elif kind == "foreign-tail":
        path.write_bytes(whole + b"my notes " + rng.randbytes(rng.randint(1, 64)).replace(b"\n", b" "))
    elif kind == "mutated":
        path.write_bytes(whole + _mutated(rng))
    elif kind == "random":
        path.write_bytes(rng.randbytes(rng.randint(1, 4096)))
    elif kind == "wheel":
        shutil.copy(hostile_own.DEMO, path)
    elif kind == "link":
        (outside / "target.jsonl").write_bytes(whole)
        path.symlink_to(outside / "target.jsonl")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    return kind


@pytest.mark.parametrize("seed", range(EXAMPLES))
def test_scan_o_on_an_output_of_any_kind(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    root, outside = tmp_path / "run", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    monkeypatch.chdir(root)
    hostile_own._wheels(root)
    out = root / "scan.jsonl"
    kind = _scan_output(rng, out, outside)
    old = out.read_bytes() if out.is_file() and not out.is_symlink() else None
    before, before_outside = snapshot(root), snapshot(outside)
    spec = hostile_own.Run(["scan", "wheels", "-o", "scan.jsonl"])
    code, _, err = in_process(spec, capsys, monkeypatch)
    where = f"seed {seed}, {kind}: exit {code}: {err.strip()[-300:]}"
    assert snapshot(outside) == before_outside, where
    assert "Traceback" not in err and "internal error" not in err, where
    if kind in ("missing", "empty", "scan", "torn"):
        assert code == 0, where
        new = out.read_bytes()
        kept = (old or b"")[: (old or b"").rfind(b"\n") + 1]  # a torn tail is cut, every whole line kept
        assert new.startswith(kept) and new.endswith(b"\n") and len(new) > len(kept), where
        assert changed(before, snapshot(root), ("scan.jsonl",)) == [], where
    else:
        assert code == 2 and err.count("\n") == 1, where
        assert snapshot(root) == before, f"{where}: a refused run changed the folder"


def _tag_output(rng: random.Random, path: Path, outside: Path) -> str:
    kind = rng.choice(["missing", "wheel", "empty-zip", "text", "random", "link", "fifo", "folder", "empty"])
    path.parent.mkdir(exist_ok=True)
    if kind == "wheel":
        shutil.copy(hostile_own.DEMO, path)
    elif kind == "empty-zip":
        path.write_bytes(b"PK\x05\x06" + bytes(18))
    elif kind == "text":
        path.write_text("my notes\n")
    elif kind == "random":
        path.write_bytes(rng.randbytes(rng.randint(1, 4096)).replace(b"PK", b"pk"))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "link":
        (outside / "mine.whl").write_bytes(hostile_own.DEMO.read_bytes())
        path.symlink_to(outside / "mine.whl")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    return kind


@pytest.mark.parametrize("seed", range(EXAMPLES))
def test_tag_w_on_an_output_of_any_kind(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(1000 + seed)
    root, outside = tmp_path / "run", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    monkeypatch.chdir(root)
    wheel = hostile_own._wheels(root)
    kind = _tag_output(rng, root / "out" / wheel.name, outside)
    before, before_outside = snapshot(root), snapshot(outside)
    overwrite = rng.random() < 0.5  # a wheel there is replaced only with --overwrite (issue 42)
    spec = hostile_own.Run(
        ["tag", "-w", "out", *(["--overwrite"] if overwrite else []), str(wheel.relative_to(root))]
    )
    code, _, err = in_process(spec, capsys, monkeypatch)
    where = f"seed {seed}, {kind}, overwrite={overwrite}: exit {code}: {err.strip()[-300:]}"
    assert snapshot(outside) == before_outside, where
    assert "Traceback" not in err and "internal error" not in err, where
    if kind == "missing" or (overwrite and kind in ("wheel", "empty-zip")):  # nothing, or a wheel, there
        assert code == 0, where
        assert changed(before, snapshot(root), (f"out/{wheel.name}",)) == [], where
    else:
        assert code == 2 and err.count("\n") == 1, where
        assert snapshot(root) == before, f"{where}: a refused run changed the folder"
