"""Findings as GitHub Actions workflow commands (``check --format github``): one annotation
per finding, escaped so that no text from a wheel can end the command or start another, and
none can reach the log raw: the runner prints an annotation's message into the job log,
where ESC, BEL or a bidi override would act as they do in a terminal."""

from __future__ import annotations

from torchwheel.report.findings import more_text
from torchwheel.report.textsafe import escape_data, escape_property
from torchwheel.rules.codes import BY_CODE
from torchwheel.rules.registry import Findings

__all__ = ["check_github", "escape_data", "escape_property", "failure"]


_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _command(severity: str, wheel: str, title: str, message: str) -> str:
    return (
        f"::{_LEVEL[severity]} file={escape_property(wheel)},title={escape_property(title)}"
        f"::{escape_data(message)}"
    )


def failure(message: str) -> str:
    """The exit-2 failure as an annotation: a job whose check could not read a wheel shows
    why on its summary page, not only in the raw log."""
    return f"::error title=torchwheel::{escape_data(message)}"


def check_github(findings: Findings) -> str:
    """One annotation per finding kept, and one per (input, code) for those only counted."""
    lines = [_command(f.severity, f.wheel, f.code + " " + (f.member or ""), f.message) for f in findings]
    lines += [
        _command(BY_CODE[code].severity, wheel, code, more_text(code, count))
        for (wheel, code), count in findings.omitted.items()
    ]
    return "\n".join(lines)
