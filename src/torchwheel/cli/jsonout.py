"""``--format json`` keeps its promise on failure: a command that ends in exit 2 before its
document was printed prints one that carries the error (``docs/json.md``).

A CI step that parses stdout must get a document whatever happened; an empty stdout makes
it fail on the parse and hides the one line on stderr that says why. The document is
``{"schema_version": 1, "command": ..., "error": {"message": ..., "exit": 2}}``, its message
the same text as the stderr line (``cli.main`` still prints that line and exits 2). A
command that printed its own document on an exit 2 puts the same ``error`` object in it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from torchwheel.errors import InputError
from torchwheel.report.textsafe import documents_rendered, json_text

F = TypeVar("F", bound=Callable[..., Any])
SCHEMA_VERSION = 1
EXIT_INPUT = 2


def error_object(message: str) -> dict[str, Any]:
    """The ``error`` member every exit-2 document carries."""
    return {"message": message, "exit": EXIT_INPUT}


def failure_message(exc: BaseException) -> str | None:
    """What ``cli.main`` prints after ``torchwheel: error: `` for an exception that ends the
    command with exit 2; None for one that does not (an exit 0 or 1, Ctrl-C)."""
    if isinstance(exc, InputError):
        return str(exc)
    if isinstance(exc, click.exceptions.Abort):
        return "aborted"
    if isinstance(exc, click.exceptions.Exit):
        return None  # click's own exit (its code is the command's)
    if isinstance(exc, click.exceptions.UsageError):
        # raised in a callback, the error gets its context only on its way out of click's
        # invoke, after this decorator: the running command's is the same one
        ctx = exc.ctx or click.get_current_context(silent=True)
        command = ctx.command_path if ctx else "torchwheel"
        return f"{exc.format_message()} (see: {command} --help)"
    if isinstance(exc, click.exceptions.ClickException):
        return exc.format_message()
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if isinstance(exc, MemoryError):
        from torchwheel import limits

        return f"out of memory: {limits.describe()}"
    if isinstance(exc, Exception):
        return f"internal error: {type(exc).__name__}: {exc} (TORCHWHEEL_DEBUG=1 shows where)"
    return None


def print_document(document: dict[str, Any]) -> None:
    """Print a command's JSON document (ASCII only: ``textsafe.json_text``)."""
    click.echo(json_text(document))


def json_failures(command: str) -> Callable[[F], F]:
    """Decorate a command callback below ``format_option`` (it receives ``fmt``): with
    ``--format json``, an exit-2 failure before the document was printed prints the error
    document, then lets the failure go on to ``cli.main`` for the stderr line and the exit."""

    def wrap(func: F) -> F:
        @functools.wraps(func)
        def run(*args: Any, fmt: str, **kwargs: Any) -> Any:
            if fmt != "json":
                return func(*args, fmt=fmt, **kwargs)
            before = documents_rendered()
            try:
                return func(*args, fmt=fmt, **kwargs)
            except BaseException as exc:
                message = failure_message(exc)
                if message is not None and documents_rendered() == before:
                    document = {"schema_version": SCHEMA_VERSION, "command": command}
                    print_document(document | {"error": error_object(message)})
                raise

        return cast(F, run)

    return wrap
