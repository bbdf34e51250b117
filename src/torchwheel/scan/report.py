"""``torchwheel scan --report FILE.jsonl``: what a scan found, counted from its lines alone
(no wheel is read again): stable or unstable, the stable floors, the torch builds, the
codes of the errors ``check`` found and of the wheels that could not be read; and of a
``--partial`` scan, per axis how many wheels the bytes read decided and how many not, and
the bytes and requests fetched against the wheels' sizes.

The newest line of each source counts (a resume may have asked a wheel again after a
network error); a line that does not parse is counted as such, never guessed at.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.report.textsafe import markdown_cell, safe
from torchwheel.safeopen import open_regular
from torchwheel.scan import jsonl

_AXES = ("kind", "floor", "releases", "releases_from", "requirements", "torch_build", "gpu_code", "marker")


@frozen
class _Partial:
    """A --partial line's cost and the axes its bytes decided."""

    fetched: int
    requests: int
    wheel_bytes: int
    decided: frozenset[str]


@frozen
class _Counted:
    """What the counts read of one line (``jsonl.LINE`` checked its shape): a file of
    100,000 lines keeps 100,000 of these, not 100,000 parsed documents."""

    error: str | None
    kind: str
    floor: str | None
    builds: str | None
    findings: tuple[str, ...]
    partial: _Partial | None = None


@dataclass
class Summary:
    wheels: int = 0
    read: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    floors: Counter[str] = field(default_factory=Counter)
    builds: Counter[str] = field(default_factory=Counter)
    findings: Counter[str] = field(default_factory=Counter)  # error codes, wheels with each
    errors: Counter[str] = field(default_factory=Counter)  # why a wheel could not be read
    not_lines: int = 0  # whole lines that are no scan line: counted, never guessed at
    partial: int = 0  # lines of a --partial scan (read partially, or whole for their size)
    axes: dict[str, Counter[str]] = field(default_factory=dict)  # axis -> decided / not read
    fetched: int = 0  # bytes fetched, requests and wheel bytes of the --partial lines
    requests: int = 0
    wheel_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        doc = self._counts()
        if self.partial:
            doc["partial"] = {
                "wheels": self.partial,
                "fetched_bytes": self.fetched,
                "requests": self.requests,
                "wheel_bytes": self.wheel_bytes,
                "axes": {a: {k: self.axes[a][k] for k in ("decided", "not read")} for a in self.axes},
            }
        return doc

    def _counts(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "wheels": self.wheels,
            "read": self.read,
            "kind": dict(self.kinds.most_common()),
            "stable_floor": dict(sorted(self.floors.items())),
            "torch_build": dict(self.builds.most_common()),
            "error_findings": dict(sorted(self.findings.items())),
            "input_errors": dict(sorted(self.errors.items())),
            "not_scan_lines": self.not_lines,
        }


def _need(line: dict[str, Any]) -> dict[str, Any] | None:
    need = (line["need"] or {}).get("need")
    if need is not None:
        return dict(need)
    wheels = (line["show"] or {}).get("wheels") or [{}]
    found = wheels[0].get("need")
    return dict(found) if found is not None else None


def _partial(line: dict[str, Any]) -> _Partial | None:
    """A --partial line's axes (an older line lists the axes it decided) and its cost."""
    part = line.get("partial")
    if part is None:
        return None
    axes = part["axes"]
    decided = {a for a, state in axes.items() if state == "decided"} if isinstance(axes, dict) else set(axes)
    fetched = line["fetched_bytes"]
    return _Partial(fetched, part.get("requests") or 0, part.get("wheel_bytes") or 0, frozenset(decided))


def _counted(line: dict[str, Any]) -> _Counted:
    error = line["error"]
    if error is not None:
        return _Counted(str(error["code"]), "", None, None, (), _partial(line))
    need = _need(line)
    kind = str(need.get("kind")) if need else "unknown"
    floor = str(need["floor"]) if need and kind == "stable" and need.get("floor") else None
    builds = None
    if need:
        found = need.get("torch_build") or ["none"]  # "not read" on a partial line without --gpu-code
        builds = found if isinstance(found, str) else ", ".join(found)
    findings = (line["check"] or {}).get("findings") or []
    codes = tuple(sorted({str(f["code"]) for f in findings if f["severity"] == "error"}))
    return _Counted(None, kind, floor, builds, codes, _partial(line))


def _count_partial(summary: Summary, part: _Partial) -> None:
    summary.partial += 1
    summary.fetched += part.fetched
    summary.requests += part.requests
    summary.wheel_bytes += part.wheel_bytes
    for axis in _AXES:
        summary.axes.setdefault(axis, Counter())["decided" if axis in part.decided else "not read"] += 1


def _count(summary: Summary, line: _Counted) -> None:
    summary.wheels += 1
    if line.partial is not None:
        _count_partial(summary, line.partial)
    if line.error is not None:
        summary.errors[line.error] += 1
        return
    summary.read += 1
    summary.kinds[line.kind] += 1
    if line.floor is not None:
        summary.floors[line.floor] += 1
    if line.builds is not None:
        summary.builds[line.builds] += 1
    for code in line.findings:
        summary.findings[code] += 1


def summarize(path: Path) -> Summary:
    """The counts of the scan file ``path`` (a regular file: a FIFO or device is refused
    before it is opened), in memory bounded by its lines' counts, not their documents."""
    newest: dict[str, _Counted] = {}
    summary = Summary()
    try:
        fd = open_regular(path)
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such scan file", reference="not-found") from exc
    except OSError as exc:
        raise InputError(
            f"{path}: {exc.strerror or exc} (reading the scan file)", reference="file-system-error"
        ) from exc
    try:
        with open(fd, "rb", closefd=False) as fh:
            for line, _ in jsonl.whole_lines(fh, str(path)):
                if line is None:
                    summary.not_lines += 1
                    continue
                key = jsonl.identity(line)
                newest.pop(key, None)  # the newest line of a source keeps its place at the end
                newest[key] = _counted(line)
    except OSError as exc:
        raise InputError(
            f"{path}: {exc.strerror or exc} (reading the scan file)", reference="file-system-error"
        ) from exc
    finally:
        os.close(fd)
    for counted in newest.values():
        _count(summary, counted)
    return summary


_TABLES = (
    ("kind", "need"),
    ("stable_floor", "stable floor (torch >=)"),
    ("torch_build", "torch build"),
    ("error_findings", "error found (wheels)"),
    ("input_errors", "unreadable (code)"),
)


def _partial_lines(summary: Summary, fmt: str) -> list[str]:
    """A --partial scan's cost against the wheels' sizes, and per axis what was decided."""
    share = f" ({summary.fetched / summary.wheel_bytes:.1%})" if summary.wheel_bytes else ""
    head = (
        f"partial reads: {summary.partial:,} wheels, {summary.fetched:,} bytes fetched in "
        f"{summary.requests:,} requests, of {summary.wheel_bytes:,} bytes of wheels{share}"
    )
    rows = [(axis, f"{c['decided']:,}", f"{c['not read']:,}") for axis, c in summary.axes.items()]
    if fmt == "markdown":
        table = [
            "| axis | decided | not read |",
            "|---|---:|---:|",
            *(f"| `{a}` | {d} | {n} |" for a, d, n in rows),
        ]
        return ["", head, "", *table]
    width = max(len("axis (partial reads)"), *(len(a) for a, _, _ in rows))
    table = [f"{'axis (partial reads)':<{width}}  decided  not read"]
    table += [f"{a:<{width}}  {d:>7}  {n:>8}" for a, d, n in rows]
    return ["", head, "", *table]


def render_summary(summary: Summary, fmt: str) -> str:
    """The summary as text tables or markdown (JSON is ``to_json``)."""
    doc = summary.to_json()
    head = f"{summary.wheels:,} wheels, {summary.read:,} read, {summary.wheels - summary.read:,} unreadable"
    if summary.not_lines:
        head += f"; {summary.not_lines:,} line(s) of the file are no scan line"
    out = [f"**{head}**" if fmt == "markdown" else head]
    if summary.partial:
        out += _partial_lines(summary, fmt)
    for key, title in _TABLES:
        shown = markdown_cell if fmt == "markdown" else safe
        rows = [(shown(str(k)), f"{v:,}") for k, v in doc[key].items()]
        if not rows:
            continue
        out.append("")
        if fmt == "markdown":
            out += [f"| {title} | wheels |", "|---|---:|", *(f"| `{k}` | {v} |" for k, v in rows)]
            continue
        width = max(len(title), *(len(k) for k, _ in rows))
        out += [f"{title:<{width}}  wheels", *(f"{k:<{width}}  {v:>6}" for k, v in rows)]
    return "\n".join(out)
