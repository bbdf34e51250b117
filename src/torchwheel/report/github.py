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


def _command(level: str, title: str, message: str, file: str | None = None) -> str:
    where = f"file={escape_property(file)}," if file is not None else ""
    return f"::{level} {where}title={escape_property(title)}::{escape_data(message)}"


def title(code: str) -> str:
    """What a job's summary page shows above each annotation, as ruff's ``Ruff (F401)``."""
    return f"torchwheel ({code})"


INPUT_ERROR, USAGE_ERROR = title("input error"), title("usage error")


def failure(message: str, input_path: str | None = None, usage: bool = False) -> str:
    """The exit-2 failure as an annotation: a job whose check could not read a wheel shows
    why on its summary page, not only in the raw log. ``input_path``: the input it is about
    (``file=``); ``usage``: the command line or configuration was refused, no input read."""
    if input_path is not None:
        return _command("error", INPUT_ERROR, message, input_path)
    return _command("error", USAGE_ERROR if usage else "torchwheel", message)


def check_github(findings: Findings) -> str:
    """One annotation per finding kept (its member first in the message), and one per (input,
    code) for those only counted."""
    lines = [
        _command(
            _LEVEL[f.severity], title(f.code), f"{f.member}: {f.message}" if f.member else f.message, f.wheel
        )
        for f in findings
    ]
    lines += [
        _command(_LEVEL[BY_CODE[code].severity], title(code), more_text(code, count), wheel)
        for (wheel, code), count in findings.omitted.items()
    ]
    return "\n".join(lines)
