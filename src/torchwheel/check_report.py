"""Rendering findings: text for people and CI logs, JSON for tools, GitHub annotations."""

from __future__ import annotations

from collections import Counter
from typing import Any

from torchwheel.findings import Finding
from torchwheel.report import SCHEMA_VERSION
from torchwheel.wheelfacts import WheelFacts, wheel_torch_abi


def summary(findings: list[Finding]) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    return {"errors": counts["error"], "warnings": counts["warning"], "infos": counts["info"]}


def check_text(wheels: list[WheelFacts], findings: list[Finding]) -> str:
    lines = [f"{f.location}: {f.code} {f.severity}: {f.message}" for f in findings]
    s = summary(findings)
    n = len(wheels)
    lines.append(
        f"{n} input{'s' if n != 1 else ''} checked: {s['errors']} error(s), {s['warnings']} warning(s)"
        + ("" if findings else " - all clean")
    )
    return "\n".join(lines)


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


def _escape(text: str, prop: bool = False) -> str:
    """GitHub workflow-command escaping (actions/toolkit ``issueCommand``)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def check_github(findings: list[Finding]) -> str:
    level = {"error": "error", "warning": "warning", "info": "notice"}
    return "\n".join(
        f"::{level[f.severity]} file={_escape(f.wheel, True)},title={_escape(f.code + ' ' + (f.member or ''), True)}"
        f"::{_escape(f.message)}"
        for f in findings
    )
