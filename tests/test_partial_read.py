"""``torchwheel scan --partial``: hosted wheels read through HTTP ranges from 127.0.0.1
(``scan.partial``), held to the whole read on every axis the partial line reports as
decided (``partial.axes``): every fixture wheel (ELF members partial, Mach-O and PE whole;
small ones read whole in one request), tagged copies of them (every axis from WHEEL), the
Linux wheels of the corpus, a server that ignores ``Range`` (then the wheel is read whole,
with the same answer), and a member the need does not touch, which is never fetched."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from torchwheel import api
from torchwheel.binary import marker_record
from torchwheel.errors import InputError
from torchwheel.net import ranged
from torchwheel.scan import partial, partial_member
from torchwheel.scan.partial import AXES, DECIDED, MARKER, UNKNOWN_AXIS, partial_line
from torchwheel.scan.scanline import WheelSource
from torchwheel.version import FeatureVersion

from .lib.helpers import REPO, load_script, torchwheel
from .lib.index_server import Behaviour, serve

sys.path.insert(0, str(REPO / "fixtures"))
import hostile_partial

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
corpus = load_script("torchwheel_corpus", REPO / "benchmarks" / "corpus.py")
_LINUX = [e for e in corpus.load_corpus() if any("linux" in p for p in e.platforms)]


def _decided(line: dict[str, Any]) -> tuple[str, ...]:
    """The need's axes the line reports as decided (every one for a wheel read whole)."""
    return tuple(a for a in AXES if line["partial"]["axes"][a] == DECIDED)


def _whole(path: Path, axes: tuple[str, ...]) -> dict[str, Any] | str:
    """What the whole read's line says of the need (``api.need``, as ``scan_line`` asks it)."""
    try:
        need = api.need(path).to_json()["need"]
    except InputError as exc:
        return f"error: {exc}"
    return {k: _known(need[k], axes) if k == "unknown" else need[k] for k in (*axes, "unknown")}


def _known(unknown: list[str], axes: tuple[str, ...]) -> list[str]:
    """The unknown axes (``version``, ``build``, ``gpu``) of those asked about."""
    return [a for a in unknown if UNKNOWN_AXIS[a] in axes]


def _partial(line: dict[str, Any]) -> dict[str, Any] | str:
    if line["error"] is not None:
        return f"error: {line['error']['message']}"
    if "error" in line["need"]:
        return f"error: {line['need']['error']['message']}"
    need = line["need"]["need"]
    if line["read"] == "whole":  # small, or nearly all compiled: the whole read's line
        assert line["partial"]["whole"] in ("small", "compiled") and line["hashes_verified"]["record"]
        return {k: _known(need[k], AXES) if k == "unknown" else need[k] for k in (*AXES, "unknown")}
    assert line["read"] == "partial" and line["hashes_verified"] is False
    return {k: need[k] for k in (*_decided(line), "unknown")}


def _agrees(line: dict[str, Any], wheel: Path) -> None:
    """Same need on every axis decided; a wheel the whole read refuses is refused too (the
    defect named first may differ: a partial read checks only the local headers of the
    members it reads, so a ratio or a size may be what it meets first)."""
    axes = AXES if line["read"] == "whole" or line["error"] or "error" in line["need"] else _decided(line)
    whole, part = _whole(wheel, axes), _partial(line)
    if isinstance(whole, str):
        assert isinstance(part, str) and part.startswith("error: "), (wheel.name, part)
    else:
        assert part == whole, wheel.name


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
    """``default``: a fixture wheel is smaller than the first request, which holds it all:
    the whole read's line, from one request. ``tiny``: a first request of 64 bytes, then
    more ranges (the end record's search window holds the rest), no wheel read whole for
    its compiled share, and each member inflated 97 compressed bytes at a time from a
    64-byte head, so its prefix grows as the reader names more."""
    if steps == "tiny":
        for module, name, value in ((ranged, "_TAIL", 64), (ranged, "_READAHEAD", 64)):
            monkeypatch.setattr(module, name, value)
        monkeypatch.setattr(ranged, "_FIRST_STEP", 97)
        monkeypatch.setattr(partial_member, "_HEAD", 64)
        monkeypatch.setattr(partial, "_NEAR", 2.0)
        monkeypatch.setattr(partial, "REQUEST_BYTES", 0)  # nor for what its requests would cost
    wheels = sorted(served.glob("*.whl"))
    assert len(wheels) > 20
    partial_members = whole_formats = whole_lines = 0
    not_read: set[str] = set()
    with serve(served) as (base, behaviour):
        for wheel in wheels:
            line = partial_line(WheelSource(f"{base}/{wheel.name}"), api.check, api.need)
            _agrees(line, wheel)
            members = (line.get("partial") or {}).get("members", {})
            partial_members += sum(m["read"] == "partial" for m in members.values())
            whole_formats += sum(m["why"] == "format" for m in members.values())
            whole_lines += line["read"] == "whole"
            if line["read"] == "partial" and not isinstance(_partial(line), str):
                not_read |= {a for a, state in line["partial"]["axes"].items() if state != DECIDED}
                assert "torch_build" in _decided(line)  # from DT_NEEDED, without --gpu
    if steps == "tiny":
        assert partial_members >= 50 and whole_formats >= 4  # ELF read partially, Mach-O/PE whole
        assert not_read == {"gpu_code", MARKER}
    else:
        assert whole_lines == len(wheels) and behaviour.ranged == ["bytes=-262144"] * len(wheels)


def test_with_gpu_the_gpu_code_is_decided_too(
    fixture_wheels: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranged, "_TAIL", 64)  # not small: read through ranges
    cuda = [p for name, p in fixture_wheels.items() if "cuda" in name or "gpu" in name]
    assert cuda, "no CUDA fixture wheel"
    for wheel in cuda:
        shutil.copy(wheel, tmp_path / wheel.name)
        line = _read(tmp_path, wheel.name, gpu=True)
        assert line["read"] == "partial" and set(_decided(line)) == set(AXES)
        _agrees(line, wheel)


def test_a_tagged_wheel_reports_every_axis_of_its_wheel_file(
    fixture_wheels: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tag`` writes every axis into WHEEL (``Torch-Build``, ``Torch-GPU`` included): the
    partial line reads them and no compiled member, and says what the whole read says."""
    monkeypatch.setattr(ranged, "_TAIL", 64)
    names = [n for n in fixture_wheels if "cuda" in n or "clean" in n][:4]
    for name in names:
        done = torchwheel("tag", "-w", str(tmp_path), str(fixture_wheels[name]))
        assert done.returncode == 0, done.stderr
    tagged = sorted(tmp_path.glob("*.whl"))
    assert len(tagged) == len(names)
    for wheel in tagged:
        line = _read(tmp_path, wheel.name)
        assert line["read"] == "partial" and line["partial"]["members"] == {}
        assert set(_decided(line)) == set(AXES) and line["partial"]["axes"][MARKER] == DECIDED
        _agrees(line, wheel)


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
    """The demo wheel plus 16 MB of incompressible data: the line costs a few kB, and the
    local headers of the members it does not read are not read either."""
    wheel = _demo_with(tmp_path, {"demo_stable/weights.bin": os.urandom(16 << 20)})
    line = _read(tmp_path, wheel.name)
    _agrees(line, wheel)
    assert line["read"] == "partial" and line["need"]["need"]["kind"] == "stable"
    assert line["need"]["need"]["torch_build"] == ["any"]  # decided from DT_NEEDED, without --gpu
    assert line["partial"]["axes"]["gpu_code"] == "not read"
    assert line["partial"]["axes"][MARKER] == DECIDED  # its library exports the marker
    assert line["fetched_bytes"] < 400_000 < (16 << 20) < wheel.stat().st_size, line["fetched_bytes"]
    assert line["partial"]["requests"] <= 4


def test_a_hidden_marker_record_is_not_looked_for(
    built_fixtures: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stable library without an exported marker, a 2.14 record past the bytes the loader
    reads (what a version script leaves of the marker): finding it would inflate the member
    to its end, so the partial line says the marker was not read, and the floor stands as
    its symbols give it; the whole read (``check`` of the download) finds the record."""
    monkeypatch.setattr(ranged, "_TAIL", 64)  # neither small
    monkeypatch.setattr(partial, "_NEAR", 2.0)  # nor read whole for its compiled share
    monkeypatch.setattr(partial, "REQUEST_BYTES", 0)  # nor for what its requests would cost
    library = built_fixtures["elf_nomarker_stable"].read_bytes()
    hidden = library + marker_record.encode(FeatureVersion.parse("2.14"))
    wheel = _demo_with(tmp_path, {"demo_stable/elf_marker_2_10.abi3.so": hidden})
    line = _read(tmp_path, wheel.name)
    assert line["partial"]["axes"][MARKER] == "not read" and line["need"]["need"]["summary"] == "not read"
    assert line["need"]["need"]["floor"] == "2.10.0" != _whole(wheel, ("floor",))["floor"] == "2.14.0"  # type: ignore[index]
    (member,) = line["partial"]["members"].values()
    assert member["read"] == "partial" and member["compressed_bytes"] < wheel.stat().st_size


def test_the_command_writes_partial_lines_and_refuses_gpu_alone(tmp_path: Path) -> None:
    """The demo wheel is small: read whole, from its one request."""
    shutil.copy(DEMO, tmp_path / DEMO.name)
    out = tmp_path / "scan.jsonl"
    with serve(tmp_path) as (base, _):
        done = torchwheel("scan", f"{base}/{DEMO.name}", "--partial", "-o", str(out), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        refused = torchwheel("scan", f"{base}/{DEMO.name}", "--gpu-code", "-o", str(out), cwd=tmp_path)
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert (
        line["read"] == "whole" and line["partial"]["whole"] == "small" and line["partial"]["requests"] == 1
    )
    assert line["fetched_bytes"] == DEMO.stat().st_size and line["hashes_verified"]["record"] is True
    assert line["need"]["need"]["floor"] == "2.10.0" and line["check"] is not None
    assert refused.returncode == 2 and "--gpu-code is for --partial" in refused.stderr


def _corpus_case(entry: Any, path: Path, tmp_path: Path) -> None:
    shutil.copy(path, tmp_path / path.name)
    line = _read(tmp_path, path.name)
    _agrees(line, path)


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


# The real wheels of ``benchmarks/partial_bench.py`` (torchao, torchcodec, xformers; Linux,
# Windows, macOS, pure Python) when its ``--download`` cached them, and not collected
# otherwise; the biggest (vLLM, xformers' CUDA builds) are the bench's alone.
_BENCH = sorted(p for p in (REPO / ".cache" / "bench" / "real").glob("*.whl") if p.stat().st_size < 50 << 20)

if _BENCH:

    @pytest.mark.parametrize("path", _BENCH, ids=lambda p: p.name)
    def test_cached_bench_wheel(path: Path, tmp_path: Path) -> None:
        shutil.copy(path, tmp_path / path.name)
        line = _read(tmp_path, path.name)
        _agrees(line, path)
        assert line["fetched_bytes"] <= path.stat().st_size


# -- issue 47: what the central directory alone shows, and a file that changes -----------------


@pytest.mark.parametrize("name", sorted(hostile_partial.WHEELS))
def test_the_central_directory_is_checked_whole(name: str, tmp_path: Path) -> None:
    """Overlapping entries, an entry beyond the file, two entries over one local header, all
    on a member the need never reads: the whole read refuses them, and so does the partial
    read, from the central directory alone (nothing of that member is fetched)."""
    _, make, message = hostile_partial.WHEELS[name]
    wheel = tmp_path / hostile_partial.DEMO.name
    wheel.write_bytes(make())
    whole = _whole(wheel, AXES)
    assert isinstance(whole, str) and message in whole, whole
    line = _read(tmp_path, wheel.name)
    assert line["error"] is not None and message in line["error"]["message"], line
    assert line["error"]["code"] == "unreadable" and line["need"] is None
    assert line["fetched_bytes"] < 300_000  # the tail: the member itself is not fetched


def test_a_plain_copy_of_those_wheels_reads_partially(tmp_path: Path) -> None:
    """The control: the same wheel without the defect is read through ranges, not refused."""
    wheel = tmp_path / hostile_partial.DEMO.name
    wheel.write_bytes(hostile_partial.plain())
    line = _read(tmp_path, wheel.name)
    assert line["error"] is None and line["read"] == "partial", line["error"]
    _agrees(line, wheel)


@pytest.mark.parametrize("name", sorted(hostile_partial.CHANGES))
def test_a_file_that_changes_between_requests_is_an_error(name: str, tmp_path: Path) -> None:
    """The first request reads one wheel's central directory, the next ones get another file
    (its ETag, its Last-Modified or its size differs): the line's error says so, never a need
    read from two files."""
    _, versions, header, message = hostile_partial.CHANGES[name]
    (tmp_path / hostile_partial.DEMO.name).write_bytes(b"")
    behaviour = Behaviour(versions={hostile_partial.DEMO.name: versions()}, validator=header)
    line = _read(tmp_path, hostile_partial.DEMO.name, behaviour)
    assert line["error"] is not None and message in line["error"]["message"], line
    assert line["error"]["code"] == "digest" and line["need"] is None
    assert len(behaviour.ranged) == 2  # refused at the second answer


def test_the_index_size_is_held_to_the_file(tmp_path: Path) -> None:
    """A page that gives the file's size (PEP 691 ``size``): a partial read whose file has
    another size is refused as the download is (``digest``)."""
    wheel = tmp_path / hostile_partial.DEMO.name
    wheel.write_bytes(hostile_partial.plain())
    with serve(tmp_path) as (base, _):
        source = WheelSource(f"{base}/{wheel.name}", size=wheel.stat().st_size + 1)
        line = partial_line(source, api.check, api.need)
    assert line["error"]["code"] == "digest" and "the index page says" in line["error"]["message"], line


def test_the_command_says_the_file_changed(tmp_path: Path) -> None:
    """``scan --partial`` as users run it: the line's error, the scan itself done (exit 0)."""
    _, versions, header, message = hostile_partial.CHANGES["partial_changed_etag"]
    behaviour = Behaviour(versions={hostile_partial.DEMO.name: versions()}, validator=header)
    out = tmp_path / "scan.jsonl"
    with serve(tmp_path, behaviour) as (base, _):
        done = torchwheel(
            "scan", "--partial", f"{base}/{hostile_partial.DEMO.name}", "-o", str(out), cwd=tmp_path
        )
    assert done.returncode == 0, done.stderr
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert line["error"]["code"] == "digest" and message in line["error"]["message"]


def test_the_partial_read_family_of_the_hostile_corpus_runs_here() -> None:
    """``fixtures/hostile_partial.py`` lists its cases as the corpus's ``partial-read`` class;
    each is one of the parametrized cases above."""
    import hostile

    family = {n for n, c in hostile.CASES.items() if c.klass == "partial-read"}
    assert family == set(hostile_partial.WHEELS) | set(hostile_partial.CHANGES)
