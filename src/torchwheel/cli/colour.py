"""Colour for people at a terminal, plain text for logs, pipes and files.

The convention most tools share (no-color.org, force-color.org): a non-empty ``NO_COLOR``
turns colour off, a non-empty ``FORCE_COLOR`` turns it on even in a pipe (CI services that
render ANSI), else colour goes only to a terminal that is not ``TERM=dumb``. NO_COLOR wins.

Colour is added after rendering: the text has had every control character of the input
defused (``report.textsafe``), so the only escapes in it are these.
"""

from __future__ import annotations

import os
import re
import sys

import click

_SEVERITY = {"error": "red", "warning": "yellow", "info": "cyan"}
# a finding line's "TW503 error" (and a collapsed line's "TW101 warning (x12 ...")
_FINDING = re.compile(r"(?<=: )(TW\d{3}) (error|warning|info)\b")
_SUMMARY = re.compile(
    r"^(\d+ inputs? checked: )(\d+) error\(s\), (\d+) warning\(s\)(?:, (\d+) info\(s\))?(.*)$", re.MULTILINE
)


def enabled(err: bool = False) -> bool:
    """Should output to stdout (stderr with ``err``) be coloured?"""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = sys.stderr if err else sys.stdout
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def _severity(match: re.Match[str]) -> str:
    code, severity = match.group(1), match.group(2)
    return f"{click.style(code, bold=True)} {click.style(severity, fg=_SEVERITY[severity], bold=True)}"


def _summary(match: re.Match[str]) -> str:
    head, errors, warnings, infos, rest = match.groups()
    e = f"{errors} error(s)"
    w = f"{warnings} warning(s)"
    e = click.style(e, fg="red", bold=True) if errors != "0" else e
    w = click.style(w, fg="yellow") if warnings != "0" else w
    i = (
        ""
        if infos is None
        else f", {click.style(f'{infos} info(s)', fg='cyan') if infos != '0' else f'{infos} info(s)'}"
    )
    return f"{head}{e}, {w}{i}" + (click.style(rest, fg="green") if "clean" in rest else rest)


def findings(text: str) -> str:
    """A ``check`` report with its codes, severities and summary coloured."""
    return _SUMMARY.sub(_summary, _FINDING.sub(_severity, text))


def echo(text: str, err: bool = False) -> None:
    """``click.echo`` of a report, coloured when ``enabled``; click itself would strip the
    escapes from a pipe, so FORCE_COLOR passes ``color=True``."""
    if enabled(err):
        click.echo(findings(text), err=err, color=True)
    else:
        click.echo(text, err=err, color=False)
