"""``torchwheel scan --partial``: the need of a hosted wheel from the bytes it takes, read
through HTTP ranges (``ranged``), and its line (``docs/scan.md``).

What is read is what ``api.need`` reads of a downloaded wheel, step by step and by the same
code: the archive and its metadata (``RangedWheel`` is a ``WheelArchive``), the ``WHEEL``
fields ``tag`` writes (then no binary is read at all, and every axis is WHEEL's), else every
compiled member's facts (``partial_member``: ELF from the prefix its reader names, the rest
whole).

A wheel that the first request holds whole (a small one), or whose compiled members are
nearly all of it, is read whole instead: the rest of its bytes in one request, then the
whole read's line (``scanline.scan_line``), which costs its size and answers every axis.

The line says, in ``partial.axes``, which axes the bytes read decided and which they did
not (``"not read"``; the need's value of such an axis reads so too): ``gpu_code`` needs
every compiled member read whole (``--gpu-code``); ``marker``, a marker record no symbol
exports, is looked for only in members read whole (it could add a stable floor, so the
floor and kind stand as the bytes read say, and ``check`` of the download has the last
word). ``"read": "partial"``, the bytes fetched, and ``"hashes_verified": false``: no
member was hashed against RECORD and the file not against its index's sha256.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchwheel.analysis.collect import package_code
from torchwheel.analysis.member import BinaryAnalysis, MemberBinary, UnreadableBinary, analyze_binary
from torchwheel.analysis.wheelfacts import WheelFacts, torch_need_of
from torchwheel.binary import BinaryError
from torchwheel.errors import InputError
from torchwheel.net import fetch, ranged
from torchwheel.net.ranged import NoRanges, RangedWheel, RemoteFile
from torchwheel.report.facts_document import SCHEMA_VERSION as DOCUMENT_VERSION
from torchwheel.report.facts_document import need_json
from torchwheel.scan import scanline
from torchwheel.scan.partial_member import PARTIAL, read_member
from torchwheel.selection.candidates import declared
from torchwheel.tables.tablechoice import choose_tables
from torchwheel.tables.tableset import Tables
from torchwheel.torchabi.need import TorchNeed
from torchwheel.wheel.contents import is_compiled_name
from torchwheel.wheel.metadata import TORCH_ABI_FIELD, TORCH_BUILD_FIELD, parse_metadata

AXES = ("kind", "floor", "releases", "releases_from", "requirements", "torch_build", "gpu_code")
MARKER = "marker"  # a marker record no symbol exports: not an axis of the need, but it could set one
DECIDED, NOT_READ = "decided", "not read"
UNKNOWN_AXIS = {"version": "releases", "build": "torch_build", "gpu": "gpu_code"}  # need.unknown_axes
_NEAR = 0.9  # an untagged wheel whose compiled members are this much of it is read whole
# What one more request is worth in bytes: a round trip on a real link (tens of ms at tens of
# MB/s). A wheel its listing says is small is downloaded whole in one plain request, before any
# range, when a partial read could leave out less than its requests cost: a compiled wheel of
# at most WHOLE_AT_ONCE (a partial read takes a range for the end of the zip, one for the
# metadata, one or more per compiled member, to leave out its few non-compiled MB: torchao's
# compiled wheels are 2-7 MB, 70-90 % compiled), a pure one of at most PURE_AT_ONCE (the end
# of the zip alone is 256 KiB, and older builds put the metadata elsewhere: three more ranges).
REQUEST_BYTES = 1 << 20
WHOLE_AT_ONCE = 8 * REQUEST_BYTES
PURE_AT_ONCE = REQUEST_BYTES


def _unmarked(analysis: BinaryAnalysis) -> bool:
    """Whether some slice has no marker the loader sees (a hidden record may then exist)."""
    return any(s.facts.marker is None or s.facts.marker.record is None for s in analysis.slices)


def _facts(wheel: RangedWheel, tables: Tables, gpu: bool) -> tuple[WheelFacts, dict[str, Any]]:
    """The wheel's facts as ``collect`` gathers them for a need, and how each compiled member
    was read."""
    c = wheel.contents
    results: dict[str, BinaryAnalysis | UnreadableBinary] = {}
    how: dict[str, Any] = {}
    compiled = [m for m in c.members if is_compiled_name(m)]
    for member in compiled:
        got, how[member] = read_member(wheel, member, "gpu" if gpu else None)
        results[member] = (
            UnreadableBinary(member, str(got))
            if isinstance(got, BinaryError)
            else analyze_binary(got, tables.shims)
        )
    binaries = [MemberBinary(m, r) for m in compiled if isinstance(r := results[m], BinaryAnalysis)]
    unreadable = [r for m in compiled if isinstance(r := results[m], UnreadableBinary)]
    code = package_code(c, binaries, wheel.member_size, wheel.read, tables.releases)
    facts = WheelFacts(
        c,
        parse_metadata(c.metadata_text),
        binaries=tuple(binaries),
        unreadable=tuple(unreadable),
        hashes_verified=False,
        loader_prefers=code.loader_prefers,
        loader_fallbacks=code.loader_fallbacks,
        device_code=code.device_code,
        reach=code.reach,
        version_locks=code.version_locks,
        tables=tables,
    )
    return facts, how


def _axes(facts: WheelFacts | None, how: dict[str, Any]) -> dict[str, str]:
    """Which axes the bytes read decided: every one for a tagged wheel (``facts`` None, its
    need is WHEEL's); else ``gpu_code`` when every compiled member was read whole, and the
    marker when every member without an exported marker was (or the wheel is unstable, whose
    need no marker changes)."""
    axes = dict.fromkeys((*AXES, MARKER), DECIDED)
    if facts is None:
        return axes
    partly = {m for m, h in how.items() if h["read"] == PARTIAL}
    if partly:
        axes["gpu_code"] = NOT_READ
    unstable = any(s.torch.usage == "unstable" for b in facts.binaries for s in b.analysis.slices)
    if not unstable and any(b.member in partly and _unmarked(b.analysis) for b in facts.binaries):
        axes[MARKER] = NOT_READ
    return axes


def wheel_need(
    wheel: RangedWheel, tables: Tables, gpu: bool
) -> tuple[TorchNeed, dict[str, Any], dict[str, str]]:
    """``api.need``'s answer (``candidates.read_candidate``), step by step, over the ranges,
    how each compiled member was read, and which axes that decided: a wheel ``check`` calls
    broken raises ``InputError`` with the same message."""
    _, _, need = declared(wheel.contents, wheel.path.name, wheel.member_size, releases=tables.releases)
    if need is not None:
        return need, {}, _axes(None, {})
    facts, how = _facts(wheel, tables, gpu)
    return torch_need_of(facts), how, _axes(facts, how)


def _near_whole(wheel: RangedWheel) -> bool:
    """An untagged wheel a partial read cannot pay for: its compiled members, with what was
    fetched already, are nearly all of it (``_NEAR``), or what it could leave out (every byte
    but theirs: a member may have to be read to its end, as vLLM's libraries keep their tables
    there) is worth less than the requests its compiled members would take through ranges
    (``REQUEST_BYTES`` each, the steps of ``ranged.Inflating`` counted as if each member were
    read whole). Then the rest is fetched in one request and the whole read's line made:
    vLLM's wheel once took 92 ranges to leave out 15 % of it, in more time than the download."""
    fields = wheel.contents.wheel_fields
    if fields.get(TORCH_ABI_FIELD) and fields.get(TORCH_BUILD_FIELD):
        return False  # tagged: WHEEL says it all (``need_from_fields``)
    members = [i.compress_size for name, i in wheel.infos.items() if is_compiled_name(name)]
    if not members:
        return False  # pure Python: its need is in the metadata read already
    compiled, fetched, size = sum(members), wheel.remote.fetched, wheel.remote.size
    if fetched + compiled >= _NEAR * size:
        return True
    requests = sum(_steps(n) for n in members)  # each member's, as if read whole
    return max(0, size - fetched - compiled) < requests * REQUEST_BYTES


def _steps(compressed: int) -> int:
    """The ranges ``ranged.Inflating`` takes to fetch a member of ``compressed`` bytes whole:
    doubling from its first step to its largest, then the largest at a time."""
    steps, step, done = 0, ranged._FIRST_STEP, 0
    while done < compressed:
        done += step
        steps += 1
        step = min(2 * step, ranged._MAX_STEP)
    return steps


def _tables(symbols: object) -> Tables:
    """The tables as ``api`` chooses them (this layer lies below ``api``)."""
    if isinstance(symbols, Tables):
        return symbols
    return choose_tables(Path(symbols) if isinstance(symbols, str | Path) else None, None)


def _reported(need: TorchNeed, axes: dict[str, str], url: str) -> dict[str, Any]:
    """``api.need(...).to_json()`` with only the axes the bytes decided; the others read
    ``"not read"``, and so does the summary unless every axis was decided."""
    doc = need_json(need)
    kept = {k: (v if axes.get(k, DECIDED) == DECIDED else NOT_READ) for k, v in doc.items()}
    kept["unknown"] = [a for a in doc["unknown"] if axes[UNKNOWN_AXIS[a]] == DECIDED]
    if any(state != DECIDED for state in axes.values()):
        kept["summary"] = NOT_READ
    return {"schema_version": DOCUMENT_VERSION, "path": url, "need": kept}


def whole_at_once(source: scanline.WheelSource) -> bool:
    """Whether a hosted wheel is read whole in one request before any range is asked for:
    its listing says it is small, ``PURE_AT_ONCE`` for a pure one (its file name says the
    platform ``any``: its need is in its metadata), else ``WHOLE_AT_ONCE``."""
    if not source.hosted or source.size is None:
        return False
    pure = source.filename.removesuffix(".whl").endswith("-any")
    return source.size <= (PURE_AT_ONCE if pure else WHOLE_AT_ONCE)


def _first_range(source: scanline.WheelSource) -> int | None:
    """The first request's bytes: the default, or of a wheel its listing says is big, 1/64 of
    it up to 4 MiB, so that one request holds its central directory and the metadata files
    written last (vLLM's: 0.6 MB of directory for 5,800 members and as much of RECORD took
    six requests after a first of 256 KiB); None when the listing gives no size."""
    if source.size is None:
        return None
    return max(ranged._TAIL, min(source.size // 64, 4 << 20))


def whole_line(
    source: scanline.WheelSource,
    got: scanline.Read,
    api: tuple[Callable[..., Any], Callable[..., Any], object],
) -> dict[str, Any]:
    """The line of a wheel ``whole_at_once`` downloaded (``got``: one plain request): the
    whole read's line, with ``partial.whole`` saying ``small``."""
    check, need, symbols = api
    line = scanline.scan_line(source, check, need, symbols, reader=lambda _, __: got)
    if line["error"] is None:
        axes = dict.fromkeys((*AXES, MARKER), DECIDED)
        line["partial"] = {"axes": axes, "members": {}, "wheel_bytes": got.fetched, "requests": 1}
        line["partial"]["whole"] = "small"
    return line


def _whole(
    source: scanline.WheelSource,
    remote: RemoteFile,
    scratch: Path,
    why: str,
    api: tuple[Callable[..., Any], Callable[..., Any], object],
) -> dict[str, Any]:
    """The whole read's line, of the bytes held and the rest fetched in one request (each
    stretch between the spans held): the wheel costs its size, no byte twice."""
    path = scratch / "whole" / (source.filename or "wheel.whl")
    path.parent.mkdir()
    digest = remote.write_whole(path)  # hashed as written, checked as a download is

    def held(_: scanline.WheelSource, __: Path) -> scanline.Read:
        if source.sha256 and digest != source.sha256:
            raise fetch.DigestMismatch(
                f"{fetch.shown(source.location)}: sha256 differs from the one its index gives"
            )
        return scanline.Read(path, scanline.WHOLE, remote.fetched, digest, True if source.sha256 else None)

    check, need, symbols = api
    line = scanline.scan_line(source, check, need, symbols, reader=held)
    axes = dict.fromkeys((*AXES, MARKER), DECIDED)
    line["partial"] = {"axes": axes, "members": {}, "wheel_bytes": remote.size, "requests": remote.requests}
    line["partial"]["whole"] = why
    return line


def partial_line(
    value: object,
    check: Callable[..., Any],
    need: Callable[..., Any],
    symbols: object = None,
    gpu: bool = False,
) -> dict[str, Any]:
    """The line of one source read through ranges; a local file, or a server that ignores
    ``Range``, gives the whole read's line (``scanline.scan_line``), and so does a wheel read
    whole (``_whole``: small, or nearly all compiled)."""
    try:
        source = scanline.as_source(value)
    except InputError as exc:
        return scanline.empty_line(None, scanline.error_json(exc))
    if not source.hosted:
        return scanline.scan_line(source, check, need, symbols)
    if whole_at_once(source):
        with tempfile.TemporaryDirectory(prefix="torchwheel-partial-") as scratch:
            try:
                got = scanline.read_whole(source, Path(scratch))
            except InputError as exc:
                return scanline.empty_line(source, scanline.error_json(exc))
            return whole_line(source, got, (check, need, symbols))
    line = scanline.empty_line(source)
    line |= {"read": PARTIAL, "sha256": source.sha256, "hashes_verified": False}
    remote: RemoteFile | None = None
    try:
        remote = RemoteFile(fetch.Session(), source.location, _first_range(source))
        if source.size is not None and remote.size != source.size:  # as a download is refused
            raise fetch.DigestMismatch(
                f"{fetch.shown(source.location)}: {remote.size:,} bytes, the index page says {source.size:,}"
            )
        with tempfile.TemporaryDirectory(prefix="torchwheel-partial-") as scratch:
            if remote.holds_all:
                return _whole(source, remote, Path(scratch), "small", (check, need, symbols))
            wheel = RangedWheel(remote, source.filename or "wheel.whl", Path(scratch))
            with wheel:
                if not gpu and _near_whole(wheel):
                    return _whole(source, remote, Path(scratch), "compiled", (check, need, symbols))
                try:
                    found, how, axes = wheel_need(wheel, _tables(symbols), gpu)
                    line["need"] = _reported(found, axes, fetch.shown(source.location))
                except InputError as exc:
                    if remote.changed is not None:  # not the wheel's defect: the line's error
                        raise remote.changed from exc
                    how, axes = {}, dict.fromkeys((*AXES, MARKER), NOT_READ)
                    line["need"] = {"schema_version": DOCUMENT_VERSION, "error": scanline.error_json(exc)}
        line["partial"] = {
            "axes": axes,
            "members": how,
            "wheel_bytes": remote.size,
            "requests": remote.requests,
        }
    except NoRanges:
        return scanline.scan_line(source, check, need, symbols)
    except InputError as exc:  # a change of the file, however deep it was met, is what the line says
        changed = remote.changed if remote is not None else None
        line["error"] = scanline.error_json(changed or exc)
    line["fetched_bytes"] = remote.fetched if remote is not None else 0
    return line
