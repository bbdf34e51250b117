"""``torchwheel rule TWnnn``: one code explained, as ``docs/reference/rules.md`` explains it (both come
from ``rules.explain``: ``data/rules.toml`` and ``rules/codes.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from torchwheel.cli.jsonout import json_failures, print_document
from torchwheel.cli.options import format_option
from torchwheel.errors import Exit

if TYPE_CHECKING:
    from torchwheel.rules.codes import Code
    from torchwheel.rules.explain import RuleDoc


def _line(c: Code) -> str:
    fixed = ""
    if c.fixed_by is not None:
        fixed = " (fixed by: " + ", ".join(x.removeprefix("torchwheel ") for x in c.fixed_by.commands) + ")"
    return f"{c.code} {c.severity:<7} {c.name}: {c.summary}{fixed}"


def _text(r: RuleDoc) -> str:
    from torchwheel.rules.explain import fixed_by_text

    c = r.code
    out = [f"{c.code} {c.name} ({c.severity}): {c.summary}"]
    if c.fixed_by is not None:
        out.append(f"Fixed by: {fixed_by_text(c.fixed_by)}")
    else:
        out.append("Fixed by: no torchwheel command; the build or the project must change")
    if c.blocks_rewrite:
        out.append("tag and repair refuse to rewrite a wheel with this finding")
    for label, text in r.sections:
        out += ["", f"{label}: {text}"]
    return "\n".join(out)


def _find(text: str) -> tuple[list[str], bool]:
    """The codes ``text`` names, and whether it named one rule: a code or a rule's name (any
    case), or a prefix (``TW5``: every code of the group)."""
    from torchwheel.errors import InputError
    from torchwheel.rules.codes import BY_CODE, BY_NAME, CODES, is_selector, unknown_code

    upper, lower = text.strip().upper(), text.strip().lower()
    if upper in BY_CODE:
        return [upper], True
    if lower in BY_NAME:
        return [BY_NAME[lower].code], True
    if len(upper) > 2 and is_selector(upper):
        return [c.code for c in CODES if c.code.startswith(upper)], False
    raise InputError(unknown_code(text), reference="bad-option-value")


@click.command("rule", short_help="Explain a finding code: what, why, and how to fix it.")
@click.argument("code", required=False)
@click.option("--all", "every", is_flag=True, help="List every code, one line each.")
@format_option("text", "json")
@json_failures("rule")
def rule_command(code: str | None, every: bool, fmt: str) -> Exit:
    """Explain a finding code (TW503, or its name) as docs/reference/rules.md does: name, severity,
    summary, whether `tag`/`repair` fix it, and What/Why/Fix. A prefix (TW5) lists a group."""
    from torchwheel.rules.codes import CODES
    from torchwheel.rules.explain import SCHEMA_VERSION, as_json, book

    if every == (code is not None):
        raise click.UsageError("give one CODE, or --all")
    codes, one = ([c.code for c in CODES], False) if code is None else _find(code)
    rules = book().rules
    if fmt == "json":
        docs: list[dict[str, Any]] = [as_json(rules[c]) for c in codes]
        print_document({"schema_version": SCHEMA_VERSION, **(docs[0] if one else {"rules": docs})})
    elif one:
        click.echo(_text(rules[codes[0]]))
    else:
        click.echo("\n".join(_line(rules[c].code) for c in codes))
    return Exit.OK
