"""Rendering findings: text for people and CI logs, JSON for tools (GitHub annotations: ``github``)."""

from __future__ import annotations

import os
from typing import Any

from torchwheel import limits
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.report.textsafe import safe, safe_lines
from torchwheel.rules.codes import BY_CODE
from torchwheel.rules.registry import Findings, RuleFinding


def summary(findings: Findings) -> dict[str, int]:
    counts = findings.severities()
    return {"errors": counts["error"], "warnings": counts["warning"], "infos": counts["info"]}


def more_text(code: str, count: int) -> str:
    """What stands for the findings of one code that were counted, not kept (``Findings``)."""
    lim = limits.current().max_listed
    return (
        f"... and {count:,} more {code} findings, not listed ({lim.name} = {lim.value:,} per input "
        f"and code; raise it with {lim.env})"
    )


_LISTED = 5  # members named on a collapsed line


def _collapsed_line(group: list[RuleFinding]) -> str | None:
    """The one line that stands for ``group`` (one code in one wheel), or None when its
    findings are printed one per line (a single one, or not all about distinct members)."""
    members = sorted({g.member for g in group if g.member})
    if len(group) == 1 or len(members) < 2 or any(not g.member for g in group):
        return None
    f = group[0]
    shown = ", ".join(members[:_LISTED]) + (
        f", ... {len(members) - _LISTED} more" if len(members) > _LISTED else ""
    )
    return (
        f"{f.wheel}: {f.code} {f.severity} (x{len(group)} in {len(members)} files: {shown}): "
        f"{f.member}: {f.message}"
    )


def _each(findings: Findings) -> list[str]:
    """``check -v``: every finding on a line of its own, the whole lists its message cut
    (``Finding.detail``) indented under it, and what was counted but not kept."""
    lines: list[str] = []
    for f in findings:
        lines.append(f"{f.location}: {f.code} {f.severity}: {f.message}")
        if f.detail:
            lines.append(f"    {f.detail}")
    lines += [
        f"{wheel}: {code} {BY_CODE[code].severity}: {more_text(code, count)}"
        for (wheel, code), count in findings.omitted.items()
    ]
    return lines


def _collapsed(findings: Findings) -> list[str]:
    """One line per code and wheel when a code repeats across members.

    Every stable-ABI wheel published today lacks the marker, so TW101 would otherwise
    repeat once per library and bury the one finding that matters. The first message
    stands for all (they differ only in the member and architecture); JSON and the
    GitHub format keep every finding. Each group is summed up once (it used to be once
    per finding: 20,000 members missing from RECORD took 105 s).
    """
    groups: dict[tuple[str, str], list[RuleFinding]] = {}
    for f in findings:
        groups.setdefault((f.wheel, f.code), []).append(f)
    collapsed = {key: _collapsed_line(group) for key, group in groups.items()}
    last = {(f.wheel, f.code): i for i, f in enumerate(findings.kept)}
    lines: list[str] = []
    for i, f in enumerate(findings.kept):
        key = (f.wheel, f.code)
        line = collapsed[key]
        if line is None:
            lines.append(f"{f.location}: {f.code} {f.severity}: {f.message}")
        elif groups[key][0] is f:
            lines.append(line)
        if key in findings.omitted and (i == last[key] if line is None else groups[key][0] is f):
            lines.append(f"{f.wheel}: {f.code} {f.severity}: {more_text(f.code, findings.omitted[key])}")
    for (wheel, code), count in findings.omitted.items():
        if (wheel, code) not in groups:  # max-listed 0: every finding counted
            lines.append(f"{wheel}: {code} {BY_CODE[code].severity}: {more_text(code, count)}")
    return lines


def summary_line(wheels: list[WheelFacts], findings: Findings, unreadable: int = 0) -> str:
    """The last line: the inputs read and what was found, then how many could not be read."""
    s = summary(findings)
    n = len(wheels)
    tail = f"; {unreadable} input{'s' if unreadable != 1 else ''} could not be read" if unreadable else ""
    return (
        f"{n} input{'s' if n != 1 else ''} checked: {s['errors']} error(s), {s['warnings']} warning(s), "
        f"{s['infos']} info(s)" + tail + ("" if findings or unreadable else " - all clean")
    )


def statistics(findings: Findings) -> list[dict[str, Any]]:
    """``check --statistics``, as ruff's: each code found, with how many times (omitted ones
    counted), most first; ``fixed_by`` the commands whose rewrite fixes it."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    for (_, code), more in findings.omitted.items():
        counts[code] = counts.get(code, 0) + more
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        c = BY_CODE[code]
        fixed = list(c.fixed_by.commands) if c.fixed_by is not None else []
        rows.append({"code": code, "name": c.name, "severity": c.severity, "count": count, "fixed_by": fixed})
    return rows


def statistics_text(wheels: list[WheelFacts], findings: Findings, unreadable: list[str] | None = None) -> str:
    """One line a code (count, code, severity, ``[*]`` when a rewrite fixes it: ``tag``,
    ``repair`` or ``unlabel``, name), a legend when a ``[*]`` is shown, then the summary line."""
    rows = statistics(findings)
    width = max((len(str(r["count"])) for r in rows), default=1)
    lines = [
        f"{r['count']:>{width}}  {r['code']}  {r['severity']:<7}  {'[*] ' if r['fixed_by'] else ''}{r['name']}"
        for r in rows
    ]
    if any(r["fixed_by"] for r in rows):
        lines.append("[*] a torchwheel rewrite fixes it (`torchwheel rule CODE` names the command)")
    unreadable = unreadable or []
    return "\n".join([*lines, *map(safe, unreadable), summary_line(wheels, findings, len(unreadable))])


def statistics_json(wheels: list[WheelFacts], findings: Findings) -> dict[str, Any]:
    from torchwheel.report.facts_document import SCHEMA_VERSION  # deferred: 2 ms at start-up for one number

    return {
        "schema_version": SCHEMA_VERSION,
        "inputs": [w.contents.path for w in wheels],
        "statistics": statistics(findings),
        "summary": summary(findings),
    }


def check_text(
    wheels: list[WheelFacts],
    findings: Findings,
    unreadable: list[str] | None = None,
    verbose: bool = False,
) -> str:
    """One line a finding (a code repeated over members: one line for all), then a line for
    each input that could not be read (``unreadable_line``), then the summary; ``verbose``:
    every finding, with the whole lists (``_each``)."""
    unreadable = unreadable or []
    body = _each(findings) if verbose else _collapsed(findings)
    return safe_lines(
        [*body, *unreadable, summary_line(wheels, findings, len(unreadable))]
    )  # input text escaped (textsafe)


def unreadable_line(path: str | None, message: str) -> str:
    """An input that could not be read, as a line of a report: where, then why (its message
    without the name it begins with)."""
    if path is not None:
        for name in (path, os.path.basename(path)):
            if message.startswith(f"{name}: "):
                message = message[len(name) + 2 :]
                break
        return f"{path}: not read: {message}"
    return f"not read: {message}"


def check_json(wheels: list[WheelFacts], findings: Findings, verified_hashes: bool) -> dict[str, Any]:
    from torchwheel.report.facts_document import SCHEMA_VERSION  # deferred: 2 ms at start-up for one number

    return {
        "schema_version": SCHEMA_VERSION,
        "record_hashes_verified": verified_hashes,
        "inputs": [{"path": w.contents.path, "torch_abi": w.torch_need.label} for w in wheels],
        "findings": [
            {
                "code": f.code,
                "severity": f.severity,
                "path": f.wheel,
                "member": f.member or None,
                "message": f.message,
                "detail": f.detail or None,
            }
            for f in findings
        ],
        "findings_omitted": [
            {"path": wheel, "code": code, "severity": BY_CODE[code].severity, "count": count}
            for (wheel, code), count in findings.omitted.items()
        ],
        "summary": summary(findings),
    }
