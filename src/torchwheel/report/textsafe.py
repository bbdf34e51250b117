"""Output that a wheel cannot forge: control characters from the input are escaped, in
every renderer.

A member name, a path from a directory listing, a requirement string, a URL or a symbol name
is chosen by whoever built the wheel. Printed raw, a newline in it starts a new log line,
and a line like ``::error ...::`` is a GitHub workflow command; terminal escapes (ESC, and
the C1 CSI) rewrite what a person sees, BEL rings, and the bidi overrides make a line read
differently from what it holds (CVE-2021-42574, "Trojan Source"). One pattern (``_UNSAFE``)
and one escape decide what is unsafe for every format, so the renderers cannot drift:

- text (``safe``, ``safe_lines``): ``repr``-style escapes (``\\n``, ``\\x1b``, ``\\u202e``),
  so nothing is lost for a human reading the log;
- GitHub annotations (``escape_data``, ``escape_property``: ``check``'s and ``doctor``'s):
  the same escapes, then the workflow-command escaping on top;
- markdown cells (``markdown_cell``) and index HTML (``html_text``): the same escapes, then
  their own quoting;
- JSON (``json_text``): every document is ASCII (``ensure_ascii``), so C0, DEL, C1 and bidi
  characters are ``\\u`` sequences: a terminal showing the document shows them as text,
  and a parser gets the exact value back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

# C0 controls except TAB, DEL, C1 controls, and the Unicode line and paragraph separators
# (str.splitlines and some log viewers break lines there), plus the bidi embeddings,
# overrides and isolates that make a line read differently from what it contains.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x00": "\\0"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def defuse(text: str) -> str:
    """``text`` with every unsafe character shown as its escape: the one rule every renderer
    starts from (a line of it may still start with ``::``; ``safe`` handles lines)."""
    return _UNSAFE.sub(_escape, text)


def safe(text: str) -> str:
    """One line of output: control characters of ``text`` shown as escapes, and a line that
    would start with ``::`` (a GitHub workflow command, e.g. from a path named so) defused."""
    line = defuse(text)
    stripped = line.lstrip()
    if stripped.startswith("::"):
        at = len(line) - len(stripped)
        line = line[:at] + "\\x3a" + line[at + 1 :]
    return line


def safe_lines(lines: Iterable[str]) -> str:
    """Lines joined by newlines, each escaped: the only newlines left are ours."""
    return "\n".join(safe(line) for line in lines)


def escape_data(text: str) -> str:
    """A GitHub workflow command's message: the control characters defused (``textsafe``), then the
    workflow-command escaping (actions/toolkit ``escapeData``). ``defuse`` already shows CR
    and LF as ``\\r``/``\\n``; they are escaped here too so this stays right on its own."""
    return defuse(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (``file=``, ``title=``): also ``:`` and ``,``, which would end it
    (actions/toolkit ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def markdown_cell(text: str) -> str:
    """Text inside a table cell's code span: ``|`` would end the cell (GFM unescapes ``\\|``
    even in code spans) and a backtick the span, so neither survives as itself."""
    return defuse(text).replace("|", "\\|").replace("`", "'")


def markdown_code(text: str) -> str:
    """A line inside a fenced code block: three backticks would close the fence."""
    return safe(text).replace("`", "'")


def html_text(text: str) -> str:
    """Text or an attribute value of index HTML: escaped for HTML (quotes too), after the
    controls, which ``html.escape`` leaves alone and a character reference cannot carry
    (``&#x9b;`` reads as U+203A in HTML: the C1 range is remapped)."""
    import html  # deferred: html and html.entities cost 1.5 ms at start-up; only `index` writes HTML

    return html.escape(defuse(text), quote=True)


class _Rendered:
    """How many documents ``json_text`` rendered in this process: the command line's
    exit-2 path (``cli.jsonout``) prints an error document only when the command did not
    get as far as rendering its own, whichever layer rendered it (``select``'s is built
    in ``selection.reasons``)."""

    count = 0


def json_text(document: Any, indent: int | None = 2) -> str:
    """A JSON document as printed: ASCII only, so no character of the input reaches the
    terminal raw (``json.dumps`` escapes C0 itself but passes C1 and bidi characters through
    without ``ensure_ascii``). Every ``--format json`` document is rendered here, and only
    to be printed."""
    _Rendered.count += 1
    return json.dumps(document, indent=indent, ensure_ascii=True)


def documents_rendered() -> int:
    """``json_text`` calls so far (see ``_Rendered``)."""
    return _Rendered.count
