"""Text output that a wheel cannot forge: control characters from the input are escaped.

A member name, a path from a directory listing, a requirement string or a symbol name is
chosen by whoever built the wheel. Printed raw, a newline in it starts a new log line,
and a line like ``::error ...::`` is a GitHub workflow command; terminal escapes (ESC)
rewrite what a person sees. Every text renderer builds its output from lines that are
single lines by construction, so escaping each line escapes exactly what came from the
input. The escapes are ``repr``-style (``\\n``, ``\\x1b``, ``\\u2028``) so nothing is lost
for a human reading the log. JSON output needs none of this (``json.dumps`` escapes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# C0 controls except TAB, DEL, C1 controls, and the Unicode line and paragraph separators
# (str.splitlines and some log viewers break lines there), plus the bidi overrides that
# make a line read differently from what it contains (CVE-2021-42574, "Trojan Source").
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x00": "\\0"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str) -> str:
    """One line of output: control characters of ``text`` shown as escapes, and a line that
    would start with ``::`` (a GitHub workflow command, e.g. from a path named so) defused."""
    line = _UNSAFE.sub(_escape, text)
    stripped = line.lstrip()
    if stripped.startswith("::"):
        at = len(line) - len(stripped)
        line = line[:at] + "\\x3a" + line[at + 1 :]
    return line


def safe_lines(lines: Iterable[str]) -> str:
    """Lines joined by newlines, each escaped: the only newlines left are ours."""
    return "\n".join(safe(line) for line in lines)
