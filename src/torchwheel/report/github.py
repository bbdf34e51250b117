"""Findings as GitHub Actions workflow commands (``check --format github``): one annotation
per finding, escaped so that no text from a wheel can end the command or start another."""

from __future__ import annotations

from torchwheel.rules.registry import Finding


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
