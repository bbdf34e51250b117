"""Every rule explained, from one source: the prose (What, Why, Fix and the other labelled
paragraphs, the page's preamble and each group's introduction) lives in the package data file
``torchwheel/data/rules.toml``, the name, severity, summary and fixing commands in
``codes.CODES``. ``torchwheel rule`` prints from here, and ``docs/reference/rules.md`` is written from
here by ``scripts/rules_doc.py`` (``tests/test_rules_doc.py`` fails when the page is stale):
to change what a rule's documentation says, edit ``rules.toml`` or ``codes.py``, then run the
script.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from torchwheel.frozen import frozen
from torchwheel.rules.codes import BY_CODE, CODES, Code, FixedBy

DATA = "rules.toml"
SOURCE = f"src/torchwheel/data/{DATA}"
SCHEMA_VERSION = 1  # of the JSON document of `torchwheel rule --format json`
_LABELS = {"what": "What", "why": "Why", "fix": "Fix"}  # the keys every rule may have


@frozen
class RuleDoc:
    code: Code
    sections: tuple[tuple[str, str], ...]  # (label, Markdown text) in the file's order

    def text(self, label: str) -> str:
        return next((t for lab, t in self.sections if lab == label), "")


@frozen
class Group:
    prefix: str  # TW1
    title: str
    intro: str


@frozen
class RuleBook:
    preamble: str
    groups: tuple[Group, ...]
    rules: dict[str, RuleDoc]


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{SOURCE}: {where} must be a non-empty string")
    return value.strip("\n")


@cache
def book() -> RuleBook:
    """The shipped explanations joined with ``codes.CODES``; a code without What or Fix, or
    prose for a code that does not exist, is a packaging bug (ValueError)."""
    doc = tomllib.loads((Path(__file__).resolve().parents[1] / "data" / DATA).read_text("utf-8"))
    codes: dict[str, Any] = doc.get("codes", {})
    strays = sorted(set(codes) - set(BY_CODE))
    if strays:
        raise ValueError(f"{SOURCE}: prose for codes no rule has: {', '.join(strays)}")
    rules: dict[str, RuleDoc] = {}
    for c in CODES:
        table = codes.get(c.code)
        if not isinstance(table, dict) or "what" not in table or "fix" not in table:
            raise ValueError(f"{SOURCE}: [codes.{c.code}] needs at least what and fix")
        sections = tuple(
            (_LABELS.get(key) or key, _text(value, f"[codes.{c.code}] {key}")) for key, value in table.items()
        )
        rules[c.code] = RuleDoc(c, sections)
    groups = tuple(
        Group(prefix, _text(g.get("title"), f"[groups.{prefix}] title"), str(g.get("intro", "")).strip("\n"))
        for prefix, g in doc.get("groups", {}).items()
    )
    homeless = sorted(c.code for c in CODES if not any(c.code.startswith(g.prefix) for g in groups))
    if homeless:
        raise ValueError(f"{SOURCE}: no [groups.TWn] for {', '.join(homeless)}")
    return RuleBook(_text(doc.get("preamble"), "preamble"), groups, rules)


def fixed_by_text(fixed: FixedBy) -> str:
    """``torchwheel tag`` and ``torchwheel repair`` (when ...), as the page and ``rule`` say it."""
    commands = ", ".join(f"`{c}`" for c in fixed.commands)
    return commands + (f" ({fixed.when})" if fixed.when else "")


def _short(command: str) -> str:
    """A fixing command as the page's table names it: ``tag --relax-pin``, ``repair --repair-with``."""
    return command.removeprefix("torchwheel ").split(" '")[0].split(" -w ")[0]


def as_json(r: RuleDoc) -> dict[str, Any]:
    c = r.code
    return {
        "code": c.code,
        "name": c.name,
        "severity": c.severity,
        "summary": c.summary,
        "fixed_by": (
            {"commands": list(c.fixed_by.commands), "when": c.fixed_by.when} if c.fixed_by else None
        ),
        "blocks_rewrite": c.blocks_rewrite,
        "what": r.text("What"),
        "why": r.text("Why"),
        "fix": r.text("Fix"),
        "sections": [{"label": label, "text": text} for label, text in r.sections],
    }


def _section(r: RuleDoc) -> list[str]:
    c = r.code
    lines = [f"### {c.code} {c.name} ({c.severity})"]
    for label, text in r.sections:
        lines.append(f"**{label}**: {text}")
        if label == "Fix" and c.fixed_by is not None:
            lines.append(f"**Fixed by**: {fixed_by_text(c.fixed_by)}.")
    return lines


def rules_page() -> str:
    """``docs/reference/rules.md``, whole."""
    b = book()
    out = [
        f"<!-- Written by scripts/rules_doc.py from {SOURCE} (the prose) and "
        "src/torchwheel/rules/codes.py (names, severities, summaries, fixing commands): edit those, "
        "then run `python scripts/rules_doc.py`. -->",
        "",
        b.preamble,
        "",
        "## Every code",
        "",
        "| code | name | severity | summary | fixed by |",
        "|---|---|---|---|---|",
    ]
    for c in CODES:
        fixed = ", ".join(f"`{_short(x)}`" for x in c.fixed_by.commands) if c.fixed_by else ""
        out.append(f"| {c.code} | {c.name} | {c.severity} | {c.summary.replace('|', '/')} | {fixed} |")
    for g in b.groups:
        out += ["", f"## {g.prefix}xx: {g.title}"]
        if g.intro:
            out += ["", g.intro]
        for r in b.rules.values():
            if r.code.code.startswith(g.prefix):
                out += ["", *_section(r)]
    return "\n".join(out) + "\n"
