"""``torchwheel scan --partial``: the need of a hosted wheel from the bytes it takes, read
through HTTP ranges (``ranged``), and its line (``docs/scan.md``).

What is read is what ``api.need`` reads of a downloaded wheel, step by step and by the same
code: the archive and its metadata (``RangedWheel`` is a ``WheelArchive``), the ``WHEEL``
fields ``tag`` writes (then no binary is read at all), else every compiled member's facts
(``partial_member``: ELF from the prefix its reader names, the rest whole).

In a wheel that is not unstable, a member without an exported marker is finished
(``partial_member.finish``: inflated to its end, every byte scanned): a marker record the
loader cannot see is found only by a scan of every byte, and it sets a stable floor. An
unstable wheel's need does not depend on one, so its members stay partial.

The line reports the axes it answers as the full read does (``AXES``; with ``--gpu`` also
``GPU_AXES``), says ``"read": "partial"``, the bytes fetched, and ``"hashes_verified":
false``: no member was hashed against RECORD and the file not against its index's sha256.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchwheel.analysis import loaders
from torchwheel.analysis.buildunits import flavour_pair_dirs
from torchwheel.analysis.member import BinaryAnalysis, MemberBinary, UnreadableBinary, analyze_binary
from torchwheel.analysis.wheelfacts import WheelFacts, torch_need_of
from torchwheel.binary import BinaryError, BinaryFacts
from torchwheel.errors import InputError
from torchwheel.install import fetch, scanline
from torchwheel.install.candidates import declared
from torchwheel.install.partial_member import PARTIAL, Pass, finish, read_member
from torchwheel.install.ranged import NoRanges, RangedWheel, RemoteFile
from torchwheel.report.facts import SCHEMA_VERSION as DOCUMENT_VERSION
from torchwheel.report.facts import need_json
from torchwheel.torchabi.need import TorchNeed
from torchwheel.torchabi.symtable import SymbolTable
from torchwheel.torchabi.tablechoice import ChosenTable, activate, choose_table
from torchwheel.wheel.contents import is_compiled_name
from torchwheel.wheel.metadata import parse_metadata

AXES = ("kind", "floor", "releases", "releases_from", "requirements")
GPU_AXES = ("torch_build", "gpu_code")


def _unmarked(analysis: BinaryAnalysis) -> bool:
    """Whether some slice has no marker the loader sees (a hidden record may then exist)."""
    return any(s.facts.marker is None or s.facts.marker.record is None for s in analysis.slices)


def _facts(wheel: RangedWheel, table: SymbolTable, gpu: bool) -> tuple[WheelFacts, dict[str, Any]]:
    """The wheel's facts as ``collect`` gathers them for a need, and how each compiled member
    was read."""
    c = wheel.contents
    results: dict[str, BinaryAnalysis | UnreadableBinary] = {}
    how: dict[str, Any] = {}
    passes: dict[str, Pass] = {}

    def analysed(member: str, got: BinaryFacts | BinaryError) -> None:
        results[member] = (
            UnreadableBinary(member, str(got)) if isinstance(got, BinaryError) else analyze_binary(got, table)
        )

    compiled = [m for m in c.members if is_compiled_name(m)]
    for member in compiled:
        got, how[member], kept = read_member(wheel, member, "gpu" if gpu else None)
        analysed(member, got)
        if kept is not None:
            passes[member] = kept
    readable = [r for r in results.values() if isinstance(r, BinaryAnalysis)]
    if not any(s.torch.usage == "unstable" for r in readable for s in r.slices):
        for member, kept in passes.items():
            result = results[member]
            if isinstance(result, BinaryAnalysis) and _unmarked(result):
                got, how[member] = finish(kept, wheel)  # a hidden record would set the floor
                analysed(member, got)
    passes.clear()
    binaries = [MemberBinary(m, r) for m in compiled if isinstance(r := results[m], BinaryAnalysis)]
    unreadable = [r for m in compiled if isinstance(r := results[m], UnreadableBinary)]
    prefers = loaders.preferred_flavours(
        c.members, wheel.member_size, wheel.read, flavour_pair_dirs(binaries)
    )
    facts = WheelFacts(
        c,
        parse_metadata(c.metadata_text),
        binaries=tuple(binaries),
        unreadable=tuple(unreadable),
        hashes_verified=False,
        loader_prefers=prefers,
    )
    return facts, how


def wheel_need(wheel: RangedWheel, table: SymbolTable, gpu: bool) -> tuple[TorchNeed, dict[str, Any]]:
    """``api.need``'s answer (``candidates.read_candidate``), step by step, over the ranges:
    a wheel ``check`` calls broken raises ``InputError`` with the same message."""
    _, _, need = declared(wheel.contents, wheel.path.name, wheel.member_size)
    if need is not None:
        return need, {}
    facts, how = _facts(wheel, table, gpu)
    return torch_need_of(facts), how


def _table(symbols: object) -> SymbolTable:
    """The shim table as ``api`` chooses it (this layer lies below ``api``)."""
    if isinstance(symbols, ChosenTable):
        return activate(symbols).table
    return choose_table(Path(symbols) if isinstance(symbols, str | Path) else None, None).table


def _reported(need: TorchNeed, axes: tuple[str, ...], url: str) -> dict[str, Any]:
    """``api.need(...).to_json()`` with only the axes a partial read answers; the others
    (and the summary, made of every axis) are ``"not read"``."""
    doc = need_json(need)
    kept = {k: (v if k in axes or k in ("unknown", "source") else "not read") for k, v in doc.items()}
    kept["unknown"] = [a for a in doc["unknown"] if a in axes]
    return {"schema_version": DOCUMENT_VERSION, "path": url, "need": kept}


def partial_line(
    value: object,
    check: Callable[..., Any],
    need: Callable[..., Any],
    symbols: object = None,
    gpu: bool = False,
) -> dict[str, Any]:
    """The line of one source read through ranges; a local file, or a server that ignores
    ``Range``, gives the whole read's line (``scanline.scan_line``)."""
    try:
        source = scanline.as_source(value)
    except InputError as exc:
        return scanline.empty_line(None, scanline.error_json(exc))
    if not source.hosted:
        return scanline.scan_line(source, check, need, symbols)
    line = scanline.empty_line(source)
    line |= {"read": PARTIAL, "sha256": source.sha256, "hashes_verified": False}
    axes = AXES + (GPU_AXES if gpu else ())
    remote: RemoteFile | None = None
    try:
        remote = RemoteFile(fetch.Session(), source.location)
        with tempfile.TemporaryDirectory(prefix="torchwheel-partial-") as scratch:
            wheel = RangedWheel(remote, source.filename or "wheel.whl", Path(scratch))
            with wheel:
                try:
                    found, how = wheel_need(wheel, _table(symbols), gpu)
                    line["need"] = _reported(found, axes, fetch.shown(source.location))
                except InputError as exc:
                    how = {}
                    line["need"] = {"schema_version": DOCUMENT_VERSION, "error": scanline.error_json(exc)}
        line["partial"] = {
            "axes": list(axes),
            "members": how,
            "wheel_bytes": remote.size,
            "requests": remote.requests,
        }
    except NoRanges:
        return scanline.scan_line(source, check, need, symbols)
    except InputError as exc:
        line["error"] = scanline.error_json(exc)
    line["fetched_bytes"] = remote.fetched if remote is not None else 0
    return line
