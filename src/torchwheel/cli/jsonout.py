"""``--format json`` keeps its promise on failure: a command that ends in exit 2 before its
document was printed prints one that carries the error (``docs/reference/json.md``); ``--format
github`` prints the error as an annotation.

A CI step that parses stdout must get a document whatever happened; an empty stdout makes
it fail on the parse and hides the one line on stderr that says why. The document is
``{"schema_version": 1, "command": ..., "error": {"message": ..., "reference": ..., "exit": 2}}``,
its message the same text as the stderr line, its ``reference`` what the error is
(``errors.REFERENCES``, from the exception: ``cli.exits.failure_reference``) and beside it the
fields the error knew (``path``, ``field``, ``value``, ``limit``: ``cli.exits.failure_data``) (``cli.exits.run`` still prints that line, and the entry
point exits 2). A command that printed its own document on an exit 2 puts the same ``error``
object in it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import click

from torchwheel.cli.exits import failure_data, failure_message, failure_reference, hinted
from torchwheel.errors import Exit, InputError, Reference
from torchwheel.report.textsafe import documents_rendered, json_text

F = TypeVar("F", bound=Callable[..., Any])
SCHEMA_VERSION = 1


def error_object(
    message: str, reference: Reference, data: Mapping[str, str | int] | None = None
) -> dict[str, Any]:
    """The ``error`` member every exit-2 document carries; ``data``: the fields the error
    knew (``InputError.data``: ``path``, ``field``, ``value``, ``limit``), each present only
    when known."""
    return {"message": message, "reference": reference, **(data or {}), "exit": int(Exit.INPUT)}


def failure_object(exc: InputError) -> dict[str, Any]:
    """The ``error`` member for ``exc``, a command that printed its own document raises:
    the message as its stderr line says it (``cli.exits.hinted``), its reference, its fields."""
    return error_object(hinted(str(exc), exc.reference), exc.reference, exc.data())


def print_document(document: dict[str, Any]) -> None:
    """Print a command's JSON document (ASCII only: ``textsafe.json_text``)."""
    click.echo(json_text(document))


def json_failures(command: str) -> Callable[[F], F]:
    """Decorate a command callback below ``format_option`` (it receives ``fmt``): with
    ``--format json``, an exit-2 failure before the document was printed prints the error
    document (``--format github``: the annotation), then lets the failure go on to ``cli.main``
    for the stderr line and the exit."""

    def wrap(func: F) -> F:
        @functools.wraps(func)
        def run(*args: Any, fmt: str, **kwargs: Any) -> Any:
            if fmt not in ("json", "github"):
                return func(*args, fmt=fmt, **kwargs)
            before = documents_rendered()
            try:
                return func(*args, fmt=fmt, **kwargs)
            except BaseException as exc:
                message = failure_message(exc)
                if getattr(exc, "reported", False):  # the report named it, and carries the error
                    raise
                if message is not None and fmt == "github":
                    from torchwheel.report.github import failure

                    path = exc.input_path if isinstance(exc, InputError) else None
                    usage = isinstance(exc, click.UsageError) or (
                        isinstance(exc, InputError) and path is None
                    )
                    click.echo(failure(message, path, usage))
                elif message is not None and documents_rendered() == before:
                    document = {"schema_version": SCHEMA_VERSION, "command": command}
                    error = error_object(message, failure_reference(exc), failure_data(exc))
                    print_document(document | {"error": error})
                raise

        return cast(F, run)

    return wrap
