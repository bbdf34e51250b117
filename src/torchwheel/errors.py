"""How a command ends: the exit codes every command shares (``Exit``; the table of
what each one means per command is ``cli/exits.py`` and ``docs/reference/exit-codes.md``), and the error
that ends a command with exit 2 and one line on stderr.

The codes live at the bottom of the layers because the library decides them too:
``api.CheckResult.exit_code`` and ``selection.outcome`` answer with the same values the
command line exits with, so a caller of the library and a CI job read one contract.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar, Literal


class Exit(IntEnum):
    """What a CI job reads from any command. A signal that ends a run (SIGTERM, SIGHUP) is
    not a member: the process then ends by that signal (128 + N in a shell)."""

    OK = 0  # done, and the answer is yes: clean, chosen, written, shown
    NO = 1  # done, and the answer is no: errors found, nothing fits, a refusal the wheel's content causes
    INPUT = 2  # not done: an input that cannot be read or used, a misuse, an interruption
    UNFINISHED = 3  # begun and not finished: what was left is said, and how to finish by hand


# What an error is, as a program tells errors apart: a stable kebab-case name per thing the
# user must do about it (pip's DiagnosticPipError ``reference``), never read out of the
# message. The JSON error document carries it (``cli.jsonout``), a scan line's error code is
# derived from it (``scan.scanline.error_code``), and docs/reference/exit-codes.md lists it
# (``tests/test_errors.py`` holds the two equal). A new reference is added here and there.
Reference = Literal[
    "misuse",
    "bad-option-value",
    "config-invalid",
    "not-found",
    "file-system-error",
    "not-a-wheel",
    "candidates-unusable",
    "bad-wheel-name",
    "archive-damaged",
    "wheel-invalid",
    "limit-exceeded",
    "network-error",
    "http-error",
    "network-budget-spent",
    "digest-mismatch",
    "index-invalid",
    "url-refused",
    "tables-file-invalid",
    "tables-outdated",
    "torch-unreadable",
    "interpreter-unusable",
    "output-refused",
    "input-changed",
    "rewrite-refused",
    "in-use",
    "install-failed",
    "journal-invalid",
    "unfinished",
    "repair-tool-failed",
    "interrupted",
    "out-of-memory",
    "internal-error",
]

REFERENCES: dict[Reference, str] = {
    "misuse": "the command (or the library call) is used wrongly: options that exclude each other, "
    "an input or option missing; read its `--help`",
    "bad-option-value": "a value given to an option, an environment variable or a library argument "
    "is not one (a torch version, a GPU, a backend, a rule code, a number); fix the value",
    "config-invalid": "`[tool.torchwheel]` in pyproject.toml cannot be read or used; fix it, or pass "
    "`--no-config`",
    "not-found": "a file, folder, URL (404/410), distribution or project named is not there",
    "file-system-error": "the system refused to read, list or write a file (permissions, a full "
    "disk, an I/O error)",
    "not-a-wheel": "an input of another kind than the command reads (not a wheel, a folder of "
    "wheels, a binary, an index page, a scan file)",
    "candidates-unusable": "a source or candidate wheel of `select`, `install`, `index` or `matrix` could "
    "not be read or used; its report lists each with the reason",
    "bad-wheel-name": "a file name that is not a wheel's (`name-version(-build)-py-abi-platform.whl`)",
    "archive-damaged": "the zip archive itself is damaged or uses what wheels cannot (truncated, "
    "corrupt, encrypted, a compression not read, overlapping members); rebuild the wheel",
    "wheel-invalid": "the wheel breaks the wheel format: its `.dist-info`, RECORD, METADATA, WHEEL "
    "fields, member paths or variant file; rebuild it",
    "limit-exceeded": "an input asks for more than an input budget allows; raise the limit named "
    "(docs/evidence/reliability.md) if the input is trusted",
    "network-error": "no connection, no answer in time, or a broken response; try again",
    "http-error": "the server answered an error status (other than 404/410), after the retries",
    "network-budget-spent": "the command's network budget (`max-http-seconds`, "
    "`max-http-requests`) is spent; raise it",
    "digest-mismatch": "the bytes or size of a file differ from what its index page says",
    "index-invalid": "an index page, or a server's answer to a request, that torchwheel cannot read",
    "url-refused": "a URL torchwheel does not request (another scheme, host or port; a redirect off http(s))",
    "tables-file-invalid": "a tables file (the user tables file, `--symbols`, an export index) is "
    "damaged or of another schema; write it again with `torchwheel symbols update`",
    "tables-outdated": "the wheel names a torch or symbols newer than this torchwheel's tables; run "
    "`torchwheel symbols update` or upgrade torchwheel",
    "torch-unreadable": "the torch named (`--against`, an installed torch) has no libraries or "
    "version torchwheel can read",
    "interpreter-unusable": "`--python` names no interpreter torchwheel can ask (a folder, not a "
    "Python, no answer to the probe)",
    "output-refused": "the output is there already (pass `--overwrite`), or is a link or something "
    "torchwheel did not write; choose another",
    "input-changed": "an input changed, was replaced or removed while it was read or rewritten; run again",
    "rewrite-refused": "the wheel or an option contradicts what honest metadata would say; the "
    "message says what to fix (the project, the option)",
    "in-use": "another torchwheel is at work on the same file or environment; try again when it has ended",
    "install-failed": "the install failed or was interrupted and was undone: nothing left behind",
    "journal-invalid": "the journal of a killed install is not replayed (nothing changed); the "
    "message says why",
    "unfinished": "a change begun could not finish (exit 3); the message says what was left and how "
    "to finish by hand",
    "repair-tool-failed": "the `--repair-with` tool failed, is missing, or left other than one wheel",
    "interrupted": "the command was interrupted (Ctrl-C, a signal) before the work was done",
    "out-of-memory": "a claim no input budget caught; lower the limits or report it",
    "internal-error": "a bug, or a platform torchwheel cannot run on; report it",
}


def _rebuilt(kind: type[InputError], args: tuple[Any, ...], state: dict[str, Any]) -> InputError:
    """An error unpickled (from a worker process) with its reference and fields, whatever
    the arguments its own class's constructor takes."""
    error = kind.__new__(kind, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class InputError(Exception):
    """The input could not be read or used; the message names the file and the problem.

    Where a standard exception says the same, the error is that too (``MissingInput`` is a
    ``FileNotFoundError``, ``UnreadableInput`` an ``OSError``, ``InvalidValue`` a
    ``ValueError``), so a caller of the library catches what it would catch anyway.

    Beside the message it carries data, as packaging's ``InvalidMetadata(field, message)``
    does: ``reference`` (one of ``REFERENCES``: what it is, for a program; every raise names
    one, or its class fixes it in ``fixed_reference``) and, where the raise knows them, the
    ``path`` it is about, the ``field`` (an option, a metadata field, a configuration key,
    an environment variable) and ``value`` given there, and the ``limit`` it exceeds."""

    # the reference of every error of a class that is one kind (``LimitExceeded``)
    fixed_reference: ClassVar[Reference | None] = None
    # the command-line input it is about, set where inputs are read (``analysis.load``): a CI
    # annotation points at that file; None for a misuse (an option, the configuration)
    input_path: str | None = None
    # the command's report names it already (``check`` and ``show``, which go on past an
    # unreadable input): no error document or annotation is printed for it a second time
    reported: bool = False

    def __init__(
        self,
        message: str,
        *,
        reference: Reference | None = None,
        path: object = None,
        field: str | None = None,
        value: object = None,
        limit: str | None = None,
    ) -> None:
        chosen = reference or self.fixed_reference
        if chosen is None:
            raise TypeError(f"{type(self).__name__} needs a reference (errors.REFERENCES)")
        super().__init__(message)
        self.reference: Reference = chosen
        self.path = None if path is None else str(path)
        self.field, self.value, self.limit = field, value, limit

    def restated(self, message: str, path: object = None) -> InputError:
        """This error said again where more is known (the file a member was read from):
        the same reference and fields, ``path`` given where it knew none."""
        return InputError(
            message,
            reference=self.reference,
            path=path if self.path is None else self.path,
            field=self.field,
            value=self.value,
            limit=self.limit,
        )

    def data(self) -> dict[str, str | int]:
        """The fields the raise set, for a program beside the message (the JSON error
        document): a value that is neither a number nor a string is given as its text; a
        raise deep in a reader that knew no ``path`` (a zip's central directory) gives the
        input it was reading (``input_path``)."""
        path = self.path if self.path is not None else self.input_path
        found = {"path": path, "field": self.field, "value": self.value, "limit": self.limit}
        return {
            key: v if isinstance(v, (int, str)) and not isinstance(v, bool) else str(v)
            for key, v in found.items()
            if v is not None
        }

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (type(self), self.args, self.__dict__))


class _SystemInputError(InputError, OSError):
    """An ``OSError`` with the one-line message: ``str()`` is the message, not OSError's
    ``[Errno 2] ...`` form; ``errno``, ``strerror`` and ``filename`` are the system's."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingInput(_SystemInputError, FileNotFoundError):
    """An input that does not exist."""

    fixed_reference = "not-found"


class UnreadableInput(_SystemInputError):
    """An input the system will not let us read (permissions, an I/O error)."""

    fixed_reference = "file-system-error"


class InvalidValue(InputError, ValueError):
    """A value that is not one: a torch version, a rule code, a backend, a GPU, a wheel name."""

    fixed_reference: ClassVar[Reference | None] = "bad-option-value"


def system_error(where: object, exc: OSError, message: str | None = None) -> InputError:
    """The one-line error for ``exc`` on ``where``, keeping its kind: ``MissingInput`` for a
    file that is not there, else ``UnreadableInput``. ``message``: what follows ``where``
    (default: the system's words)."""
    kind = MissingInput if isinstance(exc, FileNotFoundError) else UnreadableInput
    error = kind(f"{where}: {message or exc.strerror or exc}", path=where)
    error.errno, error.strerror, error.filename = exc.errno, exc.strerror, str(where)
    return error


class Unfinished(InputError):
    """A change torchwheel began and could not finish (a rollback of a killed install that met
    a file it did not write): exit 3, not 2, since exit 2 promises nothing changed. The message
    says what was left and how to finish by hand."""

    fixed_reference = "unfinished"


def clipped(text: object, keep: int = 200) -> str:
    """``text`` for a one-line message, cut after ``keep`` characters: a requirement from
    METADATA may hold 10,000 clauses, and the message must stay a line a user reads."""
    s = str(text)
    return s if len(s) <= keep else f"{s[:keep]}... ({len(s):,} characters)"


def quoted(text: object, keep: int = 200) -> str:
    """``clipped``, in quotes."""
    s = str(text)
    return repr(s) if len(s) <= keep else f"{s[:keep]!r}... ({len(s):,} characters)"
