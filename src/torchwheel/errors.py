"""Errors that end a command with exit code 2 and one line on stderr."""

from __future__ import annotations


class InputError(Exception):
    """The input could not be read or used; the message names the file and the problem."""
