"""``torchwheel scan --report FILE.jsonl``: what a scan found, counted from its lines alone
(no wheel is read again): stable or unstable, the stable floors, the torch builds, the
codes of the errors ``check`` found and of the wheels that could not be read; and of a
``--partial`` scan, per axis how many wheels the bytes read decided and how many not, and
the bytes and requests fetched against the wheels' sizes.

The newest line of each source counts (a resume may have asked a wheel again after a
network error); a line that does not parse is counted as such, never guessed at.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwheel.errors import InputError
from torchwheel.report.textsafe import markdown_cell, safe
from torchwheel.safejson import ANY, Either, Int, List, Null, Object, Str
from torchwheel.scan import jsonl

# What the counts read of a line, and nothing more: a line of another shape (another tool's,
# or edited by hand) is counted as not a scan line instead of stopping the report.
_NEED = Object({"kind": ANY, "floor": ANY, "torch_build": Either((Str(), List(Str()), Null()))}, other=ANY)
_LINE = Object(
    {
        "error": Either((Null(), Object(other=ANY))),
        "need": Either((Null(), Object({"need": Either((Null(), _NEED))}, other=ANY))),
        "show": Either(
            (
                Null(),
                Object({"wheels": List(Object({"need": Either((Null(), _NEED))}, other=ANY))}, other=ANY),
            )
        ),
        "check": Either((Null(), Object({"findings": List(Object(other=ANY))}, other=ANY))),
        "fetched_bytes": Either((Null(), Int(0))),
        # a --partial line: each axis decided or "not read" (a list: the axes decided)
        "partial": Either(
            (
                Null(),
                Object(
                    {
                        "axes": Either((Object(other=Str()), List(Str()))),
                        "wheel_bytes": Either((Null(), Int(0))),
                        "requests": Either((Null(), Int(0))),
                    },
                    other=ANY,
                ),
            )
        ),
    },
    other=ANY,
)
_AXES = ("kind", "floor", "releases", "releases_from", "requirements", "torch_build", "gpu_code", "marker")


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
    need = (line.get("need") or {}).get("need")
    if isinstance(need, dict):
        return need
    wheels = (line.get("show") or {}).get("wheels") or [{}]
    found = wheels[0].get("need")
    return found if isinstance(found, dict) else None


def _count_partial(summary: Summary, line: dict[str, Any], part: dict[str, Any]) -> None:
    """A --partial line's axes (an older line lists the axes it decided) and its cost."""
    summary.partial += 1
    summary.fetched += line.get("fetched_bytes") or 0
    summary.requests += part.get("requests") or 0
    summary.wheel_bytes += part.get("wheel_bytes") or 0
    axes = part["axes"]
    for axis in _AXES:
        state = (
            axes.get(axis, "not read")
            if isinstance(axes, dict)
            else ("decided" if axis in axes else "not read")
        )
        summary.axes.setdefault(axis, Counter())["decided" if state == "decided" else "not read"] += 1


def _count(summary: Summary, line: dict[str, Any]) -> None:
    summary.wheels += 1
    error = line.get("error")
    if isinstance(line.get("partial"), dict):
        _count_partial(summary, line, line["partial"])
    if isinstance(error, dict):
        summary.errors[str(error.get("code"))] += 1
        return
    summary.read += 1
    need = _need(line)
    kind = str(need.get("kind")) if need else "unknown"
    summary.kinds[kind] += 1
    if need and kind == "stable" and need.get("floor"):
        summary.floors[str(need["floor"])] += 1
    if need:
        builds = need.get("torch_build") or ["none"]  # "not read" on a partial line without --gpu
        summary.builds[builds if isinstance(builds, str) else ", ".join(builds)] += 1
    findings = (line.get("check") or {}).get("findings") or []
    for code in sorted({f.get("code") for f in findings if f.get("severity") == "error"}):
        summary.findings[str(code)] += 1


def summarize(path: Path) -> Summary:
    if not path.is_file():
        raise InputError(f"{path}: no such scan file")
    newest: dict[str, dict[str, Any]] = {}
    summary = Summary()
    try:
        for line in jsonl.whole_lines(path):
            if line is None or _LINE.problem(line, "line") is not None:
                summary.not_lines += 1
                continue
            key = jsonl.identity(line)
            newest.pop(key, None)  # the newest line of a source keeps its place at the end
            newest[key] = line
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    for line in newest.values():
        _count(summary, line)
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


def render(summary: Summary, fmt: str) -> str:
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
