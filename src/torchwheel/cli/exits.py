"""The exit codes of every command, decided in one place.

A command function returns its answer as an ``errors.Exit`` (0 yes, 1 no) or raises, and
only the entry point (``torchwheel.cli.main``) exits: ``run`` turns what the command
returned, or the exception that ended it, into the code, with one line on stderr for an
exit 2. A deep ``sys.exit`` would skip the ``--format json`` error document, the cleanups
above it and this one decision.

``EXITS`` says what each code means for each command; ``docs/reference/exit-codes.md`` prints the same
table and ``tests/cli/test_exits.py`` holds the two equal and every command to a row. A new
command adds its row here and in that table (``None``: the command never exits 1).
"""

from __future__ import annotations

import os
import sys

import click

from torchwheel.errors import Exit, InputError, Reference, Unfinished
from torchwheel.frozen import frozen


@frozen
class ExitRow:
    """One command's meaning of each exit code; ``no`` is None when it never exits 1,
    ``unfinished`` None when it never exits 3 (only a command that changes an environment can
    begin what it cannot finish)."""

    command: str
    ok: str
    no: str | None
    input: str
    unfinished: str | None = None


EXITS: tuple[ExitRow, ...] = (
    ExitRow(
        "torchwheel",
        "the help (no command, `--help`) or the version (`-V`)",
        None,
        "an unknown command or option",
    ),
    ExitRow("inspect", "the facts shown", None, "a file that is no readable binary; a misuse"),
    ExitRow(
        "show",
        "the facts shown",
        None,
        "an input that cannot be read (the facts of every other input still shown, each unreadable "
        "one named); a misuse",
    ),
    ExitRow(
        "check",
        "no error found (warnings and info do not count), or `--exit-zero`",
        "an error found (`docs/reference/rules.md`)",
        "an input that cannot be read, `--exit-zero` or not (every other input still judged and its "
        "findings shown, each unreadable one named); an unknown code in `--select`/`--ignore`; a misuse",
    ),
    ExitRow(
        "compat",
        "every input loads on TORCH",
        "a torch symbol an input imports is missing from TORCH",
        "an input or TORCH that cannot be read; a misuse",
    ),
    ExitRow(
        "doctor",
        "every installed distribution with compiled torch code imports on the torch judged, "
        "each loading whole or partly (optional parts that do not load: a warning) "
        "(`--explain`: the file's distribution imports)",
        "one does not load, loads only against its own Requires-Dist (excluded), or cannot be judged "
        "(unknown: it says why); one whose files cannot be known is listed as not read and does not count; "
        "one whose RECORD lists a compiled file that is no regular file (a FIFO, a folder, a device) or a path with a NUL is unknown and counts",
        "an environment that cannot be read (`--python` not a Python, or `''`; an answer to the probe past 4 MiB or not the probe's; "
        "a torch version past `max-version-length`); a TORCH that cannot be read; "
        "an `--explain` that names nothing found; a misuse",
    ),
    ExitRow(
        "tag",
        "written (`--dry-run`: the diff shown)",
        "refused, nothing written: findings that make any rewrite dishonest (shown)",
        "nothing written: an input that cannot be read; an option that contradicts the wheel "
        "(`--local-label`, `--build-torch`, a pin no torch it loads on meets); an output that "
        "exists (without `--overwrite`); a misuse",
    ),
    ExitRow(
        "repair",
        "tagged into WHEEL_DIR",
        "refused, nothing written: errors the rewrite cannot fix, or no honest rewrite "
        "(a pin, an unknown build torch)",
        "an input that cannot be read; `--repair-with` failed or its tool is not installed; an "
        "output that exists (without `--overwrite`); a misuse",
    ),
    ExitRow(
        "unlabel",
        "written (`--dry-run`: what would be)",
        "refused, nothing written: the archive is broken (its findings shown)",
        "refused, nothing written: no local label, two builds of one PyPI file, an output that "
        "exists; an input that cannot be read; a misuse",
    ),
    ExitRow("rule", "the code explained", None, "an unknown code; a misuse"),
    ExitRow("include", "the flag printed", None, "a misuse"),
    ExitRow("symbols update", "the table written or printed", None, "a source that cannot be read; a misuse"),
    ExitRow(
        "select",
        "every project has a choice",
        "a project: nothing fits; a `--name` the sources hold no wheel of",
        "a source, or a candidate that cannot be read or verified (corrupt, a digest that differs "
        "from its page, what `check` calls broken); a `--python` that is not a Python; a misuse",
    ),
    ExitRow(
        "install",
        "every project installed (or that very build already there); `--repair-env`: repaired "
        "or nothing to repair",
        "refused: as `select` (without `--force`); another version installed "
        "without `--upgrade`; an installed version that cannot be replaced safely",
        "nothing installed: as `select`; several projects without `--name`; torch itself; an "
        "install that failed and was undone; a journal of a killed install that is not replayed "
        "(another format, a path outside the environment, through a link or in another "
        "distribution's `.dist-info`, over a limit): nothing changed",
        "a rollback of a killed install that could not finish (a file it did not write where an old "
        "file goes back, a file that is no longer the one it wrote (another installer's, even with "
        "the same bytes, or changed since) or that another distribution lists, a file system "
        "error): what was left and how to finish by hand on stderr",
    ),
    ExitRow(
        "index",
        "written",
        "a project has no wheel that loads on a `--torch` asked for (still written)",
        "nothing written: a source or a wheel that cannot be read or is broken; a misuse",
    ),
    ExitRow(
        "matrix",
        "shown",
        "a project has no wheel that loads on a `--torch` asked for (still shown)",
        "an input that cannot be read (the readable wheels still shown); a misuse",
    ),
    ExitRow(  # provisional, until `scan` is built: its engineer owns this row
        "scan",
        "the JSON Lines written",
        None,
        "an input that cannot be read; a misuse",
    ),
)

# what ends a command with the one line and exit 2 without a traceback, even with
# TORCHWHEEL_DEBUG=1 (that shows the traceback of anything else: a bug)
_EXPECTED = (click.exceptions.ClickException, click.exceptions.Abort, OSError, InputError, MemoryError)


# What the user of the command line does about an error, by its reference: said here, at the
# edge, and not in the message the library raises, since the remedy is a command or a wait
# that only the command line's user has (a library caller reads ``reference``). It follows the
# message on the one line, in parentheses (``hinted``), as ``--format json``'s message does.
HINTS: dict[Reference, str] = {
    "tables-file-invalid": "write one with `torchwheel symbols update`",
    "in-use": "try again when it has ended",
}


def hinted(message: str, reference: Reference) -> str:
    """``message`` with the command line's hint for ``reference`` (``HINTS``), if it has one."""
    hint = HINTS.get(reference)
    return f"{message} ({hint})" if hint else message


def failure_message(exc: BaseException) -> str | None:
    """What follows ``torchwheel: error: `` for an exception that ends the command with
    exit 2; None for one that does not (click's own exit, Ctrl-C, a signal)."""
    if isinstance(exc, InputError):
        return hinted(str(exc), exc.reference)
    if isinstance(exc, click.exceptions.Exit) or not isinstance(exc, Exception):
        return None
    if isinstance(exc, click.exceptions.Abort):
        return "aborted"
    if isinstance(exc, click.exceptions.UsageError):
        # raised in a callback, the error gets its context only on its way out of click's
        # invoke, after the command's own code: the running command's is the same one
        ctx = exc.ctx or click.get_current_context(silent=True)
        command = ctx.command_path if ctx else "torchwheel"
        return f"{exc.format_message()} (see: {command} --help)"
    if isinstance(exc, click.exceptions.ClickException):
        return exc.format_message()
    if isinstance(exc, OSError):  # a destination we cannot write, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if isinstance(exc, MemoryError):  # the budget's last line: a claim no limit caught
        from torchwheel import limits

        return f"out of memory: {limits.describe()}"
    return f"internal error: {type(exc).__name__}: {exc} (TORCHWHEEL_DEBUG=1 shows where)"


def failure_reference(exc: BaseException) -> Reference:
    """What an exit-2 failure is (``errors.REFERENCES``): an ``InputError`` carries its own;
    the others are told apart by their kind, as ``failure_message`` words them."""
    if isinstance(exc, InputError):
        return exc.reference
    if isinstance(exc, click.exceptions.Abort):
        return "interrupted"
    if isinstance(exc, click.exceptions.ClickException):
        return "misuse"
    if isinstance(exc, OSError):
        return "file-system-error"
    if isinstance(exc, MemoryError):
        return "out-of-memory"
    return "internal-error"


def failure_data(exc: BaseException) -> dict[str, str | int]:
    """The fields an exit-2 failure carries beside its message (``InputError.data``: the
    path, field, value or limit the raise knew); none for the others."""
    return exc.data() if isinstance(exc, InputError) else {}


_MESSAGE_CHARS = 4000  # a message quoting a 100,000-character path is still read as one line


def _failed(message: str, code: Exit = Exit.INPUT) -> Exit:
    from torchwheel.report.textsafe import safe

    if len(message) > _MESSAGE_CHARS:  # the start says what, the end what to do
        cut = len(message) - _MESSAGE_CHARS
        message = f"{message[: _MESSAGE_CHARS // 2]}... ({cut:,} characters left out) ...{message[-_MESSAGE_CHARS // 2 :]}"
    click.echo(f"torchwheel: error: {safe(message)}", err=True)  # messages quote member names
    return code


def pipe_closed() -> Exit | None:
    """After click ended a command on EPIPE (it then swaps standard output for a wrapper that
    drops what is left, and exits 1 saying nothing): the one line and exit 2 instead; None
    when that was not how the command ended. The entry point asks, on such an exit."""
    if type(sys.stdout).__name__ != "_PacifyFlushWrapper":
        return None
    return _failed("standard output: Broken pipe (its reader closed it before the report was written)")


def _stdout_broken(exc: OSError) -> bool:
    """Whether ``exc`` was standard output failing (a full disk, ``/dev/full``): raised
    where ``click.echo`` writes the report. Standard output is then set aside, so that the
    interpreter's last flush does not fail once more, on stderr."""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "echo" and frame.f_globals.get("__name__") == "click.utils":
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
            return True
        tb = tb.tb_next
    return False


def run(group: click.Group, args: list[str] | None = None) -> int:
    """Run the command line and decide its exit code: what the command returned (None is
    0), or for what it raised one line on stderr and 2. A signal's unwinding (not an
    ``Exception``) passes through to the entry point, which ends by that signal."""
    try:
        code = group.main(args, standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # `torchwheel` alone: the help, as ruff and pip
        click.echo(exc.ctx.get_help() if exc.ctx else group.get_help(click.Context(group)))
        return Exit.OK
    except KeyboardInterrupt:
        return _failed("interrupted")
    except Exception as exc:  # the promise is one line, never a traceback
        if os.environ.get("TORCHWHEEL_DEBUG") and not isinstance(exc, _EXPECTED):
            raise
        if isinstance(exc, OSError) and exc.filename is None and _stdout_broken(exc):
            return _failed(f"standard output: {exc.strerror or exc} (writing the report)")
        code = Exit.UNFINISHED if isinstance(exc, Unfinished) else Exit.INPUT
        return _failed(failure_message(exc) or f"internal error: {type(exc).__name__}", code)
    return int(code) if isinstance(code, int) else Exit.OK
