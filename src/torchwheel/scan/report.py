"""``torchwheel scan --report FILE.jsonl``: what a scan found, counted from its lines alone
(no wheel is read again): stable or unstable, the stable floors, the torch builds, the
codes of the errors ``check`` found and of the wheels that could not be read.

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
from torchwheel.safejson import ANY, Either, List, Null, Object, Str
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
    },
    other=ANY,
)


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

    def to_json(self) -> dict[str, Any]:
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


def _count(summary: Summary, line: dict[str, Any]) -> None:
    summary.wheels += 1
    error = line.get("error")
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


def render(summary: Summary, fmt: str) -> str:
    """The summary as text tables or markdown (JSON is ``to_json``)."""
    doc = summary.to_json()
    head = f"{summary.wheels:,} wheels, {summary.read:,} read, {summary.wheels - summary.read:,} unreadable"
    if summary.not_lines:
        head += f"; {summary.not_lines:,} line(s) of the file are no scan line"
    out = [f"**{head}**" if fmt == "markdown" else head]
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
