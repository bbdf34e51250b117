"""How a command ends: the exit codes every command shares (``Exit``; the table of
what each one means per command is ``cli/exits.py`` and ``docs/reference/exit-codes.md``), and the error
that ends a command with exit 2 and one line on stderr.

The codes live at the bottom of the layers because the library decides them too:
``api.CheckResult.exit_code`` and ``selection.outcome`` answer with the same values the
command line exits with, so a caller of the library and a CI job read one contract.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    """What a CI job reads from any command. A signal that ends a run (SIGTERM, SIGHUP) is
    not a member: the process then ends by that signal (128 + N in a shell)."""

    OK = 0  # done, and the answer is yes: clean, chosen, written, shown
    NO = 1  # done, and the answer is no: errors found, nothing fits, a refusal the wheel's content causes
    INPUT = 2  # not done: an input that cannot be read or used, a misuse, an interruption
    UNFINISHED = 3  # begun and not finished: what was left is said, and how to finish by hand


class InputError(Exception):
    """The input could not be read or used; the message names the file and the problem.

    Where a standard exception says the same, the error is that too (``MissingInput`` is a
    ``FileNotFoundError``, ``UnreadableInput`` an ``OSError``, ``InvalidValue`` a
    ``ValueError``), so a caller of the library catches what it would catch anyway."""

    # the command-line input it is about, set where inputs are read (``analysis.load``): a CI
    # annotation points at that file; None for a misuse (an option, the configuration)
    input_path: str | None = None
    # the command's report names it already (``check`` and ``show``, which go on past an
    # unreadable input): no error document or annotation is printed for it a second time
    reported: bool = False


class _SystemInputError(InputError, OSError):
    """An ``OSError`` with the one-line message: ``str()`` is the message, not OSError's
    ``[Errno 2] ...`` form; ``errno``, ``strerror`` and ``filename`` are the system's."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingInput(_SystemInputError, FileNotFoundError):
    """An input that does not exist."""


class UnreadableInput(_SystemInputError):
    """An input the system will not let us read (permissions, an I/O error)."""


class InvalidValue(InputError, ValueError):
    """A value that is not one: a torch version, a rule code, a backend, a GPU, a wheel name."""


def system_error(where: object, exc: OSError, message: str | None = None) -> InputError:
    """The one-line error for ``exc`` on ``where``, keeping its kind: ``MissingInput`` for a
    file that is not there, else ``UnreadableInput``. ``message``: what follows ``where``
    (default: the system's words)."""
    kind = MissingInput if isinstance(exc, FileNotFoundError) else UnreadableInput
    error = kind(f"{where}: {message or exc.strerror or exc}")
    error.errno, error.strerror, error.filename = exc.errno, exc.strerror, str(where)
    return error


class Unfinished(InputError):
    """A change torchwheel began and could not finish (a rollback of a killed install that met
    a file it did not write): exit 3, not 2, since exit 2 promises nothing changed. The message
    says what was left and how to finish by hand."""


def clipped(text: object, keep: int = 200) -> str:
    """``text`` for a one-line message, cut after ``keep`` characters: a requirement from
    METADATA may hold 10,000 clauses, and the message must stay a line a user reads."""
    s = str(text)
    return s if len(s) <= keep else f"{s[:keep]}... ({len(s):,} characters)"


def quoted(text: object, keep: int = 200) -> str:
    """``clipped``, in quotes."""
    s = str(text)
    return repr(s) if len(s) <= keep else f"{s[:keep]!r}... ({len(s):,} characters)"
