"""``torchwheel scan --partial``: hosted wheels read through HTTP ranges from 127.0.0.1
(``install.partial``), held to the whole read on every axis the partial line reports: every
fixture wheel (ELF members partial, Mach-O and PE whole), the Linux wheels of the corpus, a
server that ignores ``Range`` (then the wheel is read whole, with the same answer), and a
member the need does not touch, which is never fetched."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from torchwheel import api
from torchwheel.binary import marker_record
from torchwheel.errors import InputError
from torchwheel.install import partial_member, ranged
from torchwheel.install.partial import AXES, GPU_AXES, partial_line
from torchwheel.install.scanline import WheelSource
from torchwheel.version import FeatureVersion

from .helpers import REPO, load_script, torchwheel
from .index_server import Behaviour, serve

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
corpus = load_script("torchwheel_corpus", REPO / "benchmarks" / "corpus.py")
_LINUX = [e for e in corpus.load_corpus() if any("linux" in p for p in e.platforms)]


def _whole(path: Path, axes: tuple[str, ...]) -> dict[str, Any] | str:
    """What the whole read's line says of the need (``api.need``, as ``scan_line`` asks it)."""
    try:
        need = api.need(path).to_json()["need"]
    except InputError as exc:
        return f"error: {exc}"
    return {k: [a for a in need[k] if a in axes] if k == "unknown" else need[k] for k in (*axes, "unknown")}


def _partial(line: dict[str, Any]) -> dict[str, Any] | str:
    if line["error"] is not None:
        return f"error: {line['error']['message']}"
    if "error" in line["need"]:
        return f"error: {line['need']['error']['message']}"
    assert line["read"] == "partial" and line["hashes_verified"] is False
    need = line["need"]["need"]
    return {k: need[k] for k in (*line["partial"]["axes"], "unknown")}


def _read(folder: Path, name: str, behaviour: Behaviour | None = None, gpu: bool = False) -> dict[str, Any]:
    with serve(folder, behaviour) as (base, _):
        return partial_line(WheelSource(f"{base}/{name}"), api.check, api.need, gpu=gpu)


@pytest.fixture(scope="module")
def served(fixture_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every fixture wheel in one folder, as an index's file store holds them."""
    out = tmp_path_factory.mktemp("partial-served")
    for path in fixture_wheels.values():
        shutil.copy(path, out / path.name)
    return out


@pytest.mark.parametrize("steps", ["default", "tiny"])
def test_every_fixture_wheel_agrees_with_the_whole_read(
    served: Path, steps: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``default``: a fixture wheel is smaller than the first request, which holds it all.
    ``tiny``: a first request of 64 bytes, then more ranges (the end record's search window
    holds the rest), and each member inflated 97 compressed bytes at a time from a 64-byte
    head, so its prefix grows as the reader names more."""
    if steps == "tiny":
        for module, name, value in ((ranged, "_TAIL", 64), (ranged, "_READAHEAD", 64)):
            monkeypatch.setattr(module, name, value)
        monkeypatch.setattr(ranged, "_FIRST_STEP", 97)
        monkeypatch.setattr(partial_member, "_HEAD", 64)
    wheels = sorted(served.glob("*.whl"))
    assert len(wheels) > 20
    partial_members = whole_formats = requests = 0
    with serve(served) as (base, behaviour):
        for wheel in wheels:
            line = partial_line(WheelSource(f"{base}/{wheel.name}"), api.check, api.need)
            assert _partial(line) == _whole(wheel, AXES), wheel.name
            members = (line.get("partial") or {}).get("members", {})
            partial_members += sum(m["read"] == "partial" for m in members.values())
            whole_formats += sum(m["why"] == "format" for m in members.values())
            requests = max(requests, (line.get("partial") or {}).get("requests", 0))
    assert partial_members >= 50 and whole_formats >= 4  # ELF read partially, Mach-O/PE whole
    assert len(behaviour.ranged) >= len(wheels) and (requests > 2) == (steps == "tiny")


def test_with_gpu_the_build_and_gpu_code_agree_too(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    cuda = [p for name, p in fixture_wheels.items() if "cuda" in name or "gpu" in name]
    assert cuda, "no CUDA fixture wheel"
    for wheel in cuda:
        shutil.copy(wheel, tmp_path / wheel.name)
        line = _read(tmp_path, wheel.name, gpu=True)
        assert line["partial"]["axes"] == [*AXES, *GPU_AXES]
        assert _partial(line) == _whole(wheel, AXES + GPU_AXES), wheel.name


def test_a_server_without_range_gives_the_whole_read(served: Path) -> None:
    wheel = next(p for p in sorted(served.glob("*.whl")) if "clean" in p.name or "stable" in p.name)
    behaviour = Behaviour(ranges=False)
    line = _read(served, wheel.name, behaviour)
    assert line["read"] == "whole" and line["error"] is None, line["error"]
    assert line["fetched_bytes"] == wheel.stat().st_size and line["hashes_verified"]["record"] is True
    assert behaviour.ranged == ["bytes=-262144"]  # asked once, then downloaded whole
    assert line["need"]["need"] == api.need(wheel).to_json()["need"]


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _demo_with(folder: Path, members: dict[str, bytes]) -> Path:
    """The demo wheel with ``members`` added or replaced (first in the archive), RECORD anew."""
    wheel = folder / DEMO.name
    with zipfile.ZipFile(DEMO) as src:
        old = {i.filename: src.read(i) for i in src.infolist()}
    record = next(name for name in old if name.endswith("/RECORD"))
    rows: list[str] = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in {**members, **{k: v for k, v in old.items() if k not in members}}.items():
            if name != record:
                dst.writestr(name, data)
                rows.append(f"{name},{_record_hash(data)},{len(data)}")
        dst.writestr(record, "\n".join([*rows, f"{record},,"]) + "\n")
    return wheel


def test_a_member_the_need_does_not_touch_is_never_fetched(tmp_path: Path) -> None:
    """The demo wheel plus 16 MB of incompressible data: the line costs a few kB."""
    wheel = _demo_with(tmp_path, {"demo_stable/weights.bin": os.urandom(16 << 20)})
    line = _read(tmp_path, wheel.name)
    assert _partial(line) == _whole(wheel, AXES)
    assert line["need"]["need"]["kind"] == "stable"
    assert line["fetched_bytes"] < 400_000 < (16 << 20) < wheel.stat().st_size, line["fetched_bytes"]
    assert line["partial"]["requests"] <= 6


def test_a_hidden_marker_record_is_found_as_the_whole_read_finds_it(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """A stable library without an exported marker, a 2.14 record in its bytes (what a
    version script leaves of the marker): the record sets the floor, so the member is
    inflated to its end and scanned; its prefix is not fetched twice."""
    library = built_fixtures["elf_nomarker_stable"].read_bytes()
    hidden = library + marker_record.encode(FeatureVersion.parse("2.14"))
    wheel = _demo_with(tmp_path, {"demo_stable/elf_marker_2_10.abi3.so": hidden})
    line = _read(tmp_path, wheel.name)
    assert _partial(line) == _whole(wheel, AXES)
    assert line["need"]["need"]["floor"] == "2.14.0"
    (member,) = line["partial"]["members"].values()
    assert member["why"] == "marker" and member["compressed_bytes"] < wheel.stat().st_size


def test_the_command_writes_partial_lines_and_refuses_gpu_alone(tmp_path: Path) -> None:
    shutil.copy(DEMO, tmp_path / DEMO.name)
    out = tmp_path / "scan.jsonl"
    with serve(tmp_path) as (base, _):
        done = torchwheel("scan", f"{base}/{DEMO.name}", "--partial", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert line["read"] == "partial" and line["hashes_verified"] is False and line["fetched_bytes"] > 0
    assert line["need"]["need"]["floor"] == "2.10.0" and line["need"]["need"]["torch_build"] == "not read"
    report = torchwheel("scan", "--report", str(out), cwd=tmp_path)
    assert report.returncode == 0 and "not read" in report.stdout, report.stdout
    refused = torchwheel("scan", f"{base}/{DEMO.name}", "--gpu", "-o", str(out), cwd=tmp_path)
    assert refused.returncode == 2 and "--gpu is for --partial" in refused.stderr


def _corpus_case(entry: Any, path: Path, tmp_path: Path) -> None:
    shutil.copy(path, tmp_path / path.name)
    line = _read(tmp_path, path.name)
    assert _partial(line) == _whole(path, AXES)


@pytest.mark.parametrize("entry", [e for e in _LINUX if e.ci], ids=lambda e: e.filename)
def test_ci_corpus_wheel(entry: Any, tmp_path: Path) -> None:
    """As ``test_corpus``: the CI wheels are fetched (a failure fails), never skipped."""
    try:
        path = corpus.ensure(entry, download=True)
    except corpus.CorpusError as exc:
        pytest.fail(str(exc))
    assert path is not None
    _corpus_case(entry, path, tmp_path)


# As ``test_corpus``: the rest only when ``benchmarks/corpus.py --download`` cached them, and
# not collected otherwise (an empty parametrize would report a skip).
_CACHED = [e for e in _LINUX if not e.ci and corpus.ensure(e, download=False) is not None]

if _CACHED:

    @pytest.mark.parametrize("entry", _CACHED, ids=lambda e: e.filename)
    def test_cached_corpus_wheel(entry: Any, tmp_path: Path) -> None:
        path = corpus.ensure(entry, download=False)
        assert path is not None
        _corpus_case(entry, path, tmp_path)
