"""Findings as GitHub Actions workflow commands (``check --format github``): one annotation
per finding, escaped so that no text from a wheel can end the command or start another."""

from __future__ import annotations

from torchwheel.report.findings import more_text
from torchwheel.rules.codes import BY_CODE
from torchwheel.rules.registry import Findings


def _escape(text: str, prop: bool = False) -> str:
    """GitHub workflow-command escaping (actions/toolkit ``issueCommand``)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _command(severity: str, wheel: str, title: str, message: str) -> str:
    return (
        f"::{_LEVEL[severity]} file={_escape(wheel, True)},title={_escape(title, True)}::{_escape(message)}"
    )


def check_github(findings: Findings) -> str:
    """One annotation per finding kept, and one per (input, code) for those only counted."""
    lines = [_command(f.severity, f.wheel, f.code + " " + (f.member or ""), f.message) for f in findings]
    lines += [
        _command(BY_CODE[code].severity, wheel, code, more_text(code, count))
        for (wheel, code), count in findings.omitted.items()
    ]
    return "\n".join(lines)
