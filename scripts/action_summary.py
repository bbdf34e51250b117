"""The job summary of the GitHub Action (``action.yml``): what ``torchwheel check`` found, one
table row per finding (wheel, code with its rule's link, severity, message), an input it
could not read or the usage error it refused, and the ``torchwheel matrix`` of the same wheels
with each wheel that has errors marked.

Run by the action's summary step with the Python of torchwheel's own environment; everything
it reads comes in files and environment variables the earlier steps wrote:

- ``CHECK_OUT``: check's ``--format github`` output (the annotations and the summary line),
  with the annotation the action made of a failure check did not annotate itself (click's own
  parse errors, an older torchwheel);
- ``MATRIX``, ``MATRIX_CODE``: ``matrix --format markdown`` and its exit code (no file: none);
- ``EXIT_CODE``, ``ERRORS``, ``WARNINGS``, ``COUNT``: check's exit code, counts and the inputs
  (an input check could not read leaves the others judged: their counts, and an exit 2);
- ``RULES_URL``: ``docs/reference/rules.md`` of the action's repository and ref (empty where the runner
  does not say them: then each code names ``torchwheel rule TWnnn``).

The annotations are read back as check wrote them (``report/github.py``): the workflow-command
escapes undone, nothing else assumed. Standard library only.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ANNOTATION = re.compile(r"^::(error|warning|notice) (?:file=([^,]*),)?title=([^:]*)::(.*)$")
SEVERITY = {"error": "error", "warning": "warning", "notice": "info"}
CODE = re.compile(r"^torchwheel \((TW\d{3})\)$")


@dataclass
class Annotation:
    severity: str  # error, warning, info
    file: str | None
    title: str
    message: str

    @property
    def code(self) -> str | None:
        m = CODE.match(self.title)
        return m[1] if m else None


def _unescape(text: str) -> str:
    """actions/toolkit's escapes undone (``%25`` last: it stands for the others' ``%``)."""
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, char)
    return text


def annotations(text: str) -> list[Annotation]:
    found = []
    for line in text.splitlines():
        m = ANNOTATION.match(line)
        if m:
            file = _unescape(m[2]) if m[2] is not None else None
            found.append(Annotation(SEVERITY[m[1]], file, _unescape(m[3]), _unescape(m[4])))
    return found


def cell(text: str) -> str:
    """Text in a table cell: ``|`` would end it, a line break the row, HTML would render, and
    ``_``/``*`` pairs (``__torch_stable_abi_marker_v1``) turn bold; code spans stay code."""
    parts = html.escape(" ".join(text.split()), quote=False).split("`")
    if len(parts) % 2 == 0:  # an odd backtick opens no span
        parts[-2:] = [parts[-2] + "'" + parts[-1]]
    return "`".join(
        part.replace("|", "\\|") if i % 2 else re.sub(r"([\\*_\[\]~|])", r"\\\1", part)
        for i, part in enumerate(parts)
    )


def code_span(text: str) -> str:
    return "`" + " ".join(text.split()).replace("`", "'").replace("|", "\\|") + "`"


def _rule_anchors() -> dict[str, str]:
    """Code -> the heading anchor of ``docs/reference/rules.md`` (``### TW201 target-too-old (error)``)."""
    result = subprocess.run(
        [sys.executable, "-m", "torchwheel", "rule", "--all", "--format", "json"],
        capture_output=True,
        text=True,
    )
    try:
        rules = json.loads(result.stdout)["rules"]
    except (ValueError, KeyError, TypeError):
        return {}
    return {r["code"]: f"{r['code']}-{r['name']}-{r['severity']}".lower() for r in rules}


def rule_link(code: str, url: str, anchors: dict[str, str]) -> str:
    if url and code in anchors:
        return f"[{code}]({url}#{anchors[code]})"
    return f"{code} (`torchwheel rule {code}`)"


def findings_table(found: list[Annotation], url: str) -> list[str]:
    rows = [a for a in found if a.code is not None]
    if not rows:
        return []
    anchors = _rule_anchors() if url else {}
    lines = ["| wheel | code | severity | message |", "|---|---|---|---|"]
    for a in rows:
        assert a.code is not None
        wheel = code_span(a.file) if a.file else ""
        lines.append(f"| {wheel} | {rule_link(a.code, url, anchors)} | {a.severity} | {cell(a.message)} |")
    return [*lines, ""]


def headline(env: dict[str, str], found: list[Annotation]) -> list[str]:
    code, count = env.get("EXIT_CODE", ""), env.get("COUNT", "")
    counts = (
        f"{env['ERRORS']} error(s), {env.get('WARNINGS', '')} warning(s) in " if env.get("ERRORS") else ""
    )
    if code == "0":
        return [f"`torchwheel check` passed: {counts}{count} input(s).", ""]
    if code == "1":
        return [f"`torchwheel check` failed: errors found: {counts}{count} input(s).", ""]
    usage = [a.message for a in found if a.title == "torchwheel (usage error)"]
    if usage:
        return [
            f"`torchwheel check` failed: a usage error (exit {code}), no wheel was checked: {cell(usage[0])}",
            "",
        ]
    inputs = [a for a in found if a.title == "torchwheel (input error)"]
    which = f"{len(inputs)} inputs" if len(inputs) > 1 else "an input"
    if counts:  # check judged the others all the same: their findings are in the table below
        lines = [
            f"`torchwheel check` failed: {which} could not be read (exit {code}); the others: {counts}{count} input(s).",
            "",
        ]
    else:
        lines = [
            f"`torchwheel check` failed: {which} could not be read (exit {code}) ({count} input(s)).",
            "",
        ]
    if inputs:
        lines += ["| input | error |", "|---|---|"]
        lines += [f"| {code_span(a.file or '')} | {cell(a.message)} |" for a in inputs]
    else:  # an older torchwheel's stderr line, made the annotation by the action
        lines += [cell(a.message) for a in found if a.title == "torchwheel"]
    return [*lines, ""]


def marked_matrix(table: str, found: list[Annotation]) -> list[str]:
    """The matrix with every wheel that has errors marked in its row (``⛔ errors: TW201``)."""
    failing: dict[str, list[str]] = {}
    for a in found:
        if a.code is not None and a.severity == "error" and a.file:
            codes = failing.setdefault(Path(a.file).name, [])
            if a.code not in codes:
                codes.append(a.code)
    lines = []
    for line in table.splitlines():
        m = re.match(r"^\| `([^`]*)` \|", line)
        if m and m[1].replace("\\|", "|") in failing:
            codes = ", ".join(failing[m[1].replace("\\|", "|")])
            line = f"| ⛔ `{m[1]}` (errors: {codes}) |" + line[m.end() :]
        lines.append(line)
    return lines


def summary(env: dict[str, str]) -> str:
    out = Path(env["CHECK_OUT"]).read_text("utf-8") if Path(env.get("CHECK_OUT", "")).is_file() else ""
    found = annotations(out)
    lines = [
        "### torchwheel",
        "",
        *headline(env, found),
        *findings_table(found, env.get("RULES_URL", "")),
    ]
    matrix = Path(env.get("MATRIX", ""))
    if env.get("MATRIX") and matrix.is_file():
        lines += marked_matrix(matrix.read_text("utf-8"), found)
        if env.get("MATRIX_CODE", "0") != "0" and env.get("EXIT_CODE") != "2":  # else: check's failure, above
            lines += ["", f"`torchwheel matrix` exited with {env['MATRIX_CODE']}: see the job log."]
    return "\n".join(lines).rstrip("\n") + "\n\n"


if __name__ == "__main__":
    sys.stdout.write(summary(dict(os.environ)))
