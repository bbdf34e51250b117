"""Rendering findings: text for people and CI logs, JSON for tools (GitHub annotations: ``github``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from torchwheel.analysis.wheelfacts import WheelFacts, wheel_torch_abi
from torchwheel.report.facts import SCHEMA_VERSION
from torchwheel.report.textsafe import safe_lines
from torchwheel.rules.registry import Finding


def summary(findings: list[Finding]) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    return {"errors": counts["error"], "warnings": counts["warning"], "infos": counts["info"]}


_LISTED = 5  # members named on a collapsed line


def _collapsed(findings: list[Finding]) -> list[str]:
    """One line per code and wheel when a code repeats across members.

    Every stable-ABI wheel published today lacks the marker, so TW101 would otherwise
    repeat once per library and bury the one finding that matters. The first message
    stands for all (they differ only in the member and architecture); JSON and the
    GitHub format keep every finding.
    """
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.wheel, f.code), []).append(f)
    lines: list[str] = []
    done: set[tuple[str, str]] = set()
    for f in findings:
        key = (f.wheel, f.code)
        group = groups[key]
        members = sorted({g.member for g in group if g.member})
        if len(group) == 1 or len(members) < 2 or any(not g.member for g in group):
            lines.append(f"{f.location}: {f.code} {f.severity}: {f.message}")
            continue
        if key in done:
            continue
        done.add(key)
        shown = ", ".join(members[:_LISTED]) + (
            f", ... {len(members) - _LISTED} more" if len(members) > _LISTED else ""
        )
        lines.append(
            f"{f.wheel}: {f.code} {f.severity} (x{len(group)} in {len(members)} files: {shown}): "
            f"{f.member}: {f.message}"
        )
    return lines


def check_text(wheels: list[WheelFacts], findings: list[Finding]) -> str:
    lines = _collapsed(findings)
    s = summary(findings)
    n = len(wheels)
    lines.append(
        f"{n} input{'s' if n != 1 else ''} checked: {s['errors']} error(s), {s['warnings']} warning(s)"
        + ("" if findings else " - all clean")
    )
    return safe_lines(lines)  # input-derived text escaped (textsafe)


def check_json(wheels: list[WheelFacts], findings: list[Finding], verified_hashes: bool) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "record_hashes_verified": verified_hashes,
        "inputs": [{"path": w.contents.path, "torch_abi": str(wheel_torch_abi(w))} for w in wheels],
        "findings": [
            {
                "code": f.code,
                "severity": f.severity,
                "path": f.wheel,
                "member": f.member or None,
                "message": f.message,
            }
            for f in findings
        ],
        "summary": summary(findings),
    }
