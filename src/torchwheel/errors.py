"""Errors that end a command with exit code 2 and one line on stderr."""

from __future__ import annotations


class InputError(Exception):
    """The input could not be read or used; the message names the file and the problem."""


def clipped(text: object, keep: int = 200) -> str:
    """``text`` for a one-line message, cut after ``keep`` characters: a requirement from
    METADATA may hold 10,000 clauses, and the message must stay a line a user reads."""
    s = str(text)
    return s if len(s) <= keep else f"{s[:keep]}... ({len(s):,} characters)"


def quoted(text: object, keep: int = 200) -> str:
    """``clipped``, in quotes."""
    s = str(text)
    return repr(s) if len(s) <= keep else f"{s[:keep]!r}... ({len(s):,} characters)"
