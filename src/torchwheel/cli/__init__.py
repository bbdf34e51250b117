"""The command line: parse, call the library, render. Nothing else lives here.

One module per command group (``read``, ``tag``, ``install``, ``publish``, ``symbols``);
shared options in ``options``; ``jsonout`` prints the JSON document of a ``--format json``
run that fails. Exit codes are a contract CI jobs rely on: 0 fine, 1 findings (check/repair),
2 the input could not be read or the command was misused. Any failure is one line on
stderr; ``TORCHWHEEL_DEBUG=1`` shows the traceback for bug reports.
"""

from __future__ import annotations

import os
import signal
import sys

import click

from torchwheel import __version__
from torchwheel.cli import install as _install
from torchwheel.cli import publish as _publish
from torchwheel.cli import read as _read
from torchwheel.cli import rule as _rule
from torchwheel.cli import symbols as _symbols
from torchwheel.cli import tag as _tag
from torchwheel.cli.options import fail
from torchwheel.errors import InputError


def _max_member_size(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    from torchwheel import limits

    limits.reset()  # each invocation starts from the defaults and the environment
    if value is not None:
        limits.set_max_member_size(value)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="torchwheel")
@click.option(
    "--max-member-size",
    metavar="SIZE",
    callback=_max_member_size,
    expose_value=False,
    help="Largest inflated member read (default 8G; K/M/G/T); also TORCHWHEEL_MAX_MEMBER_SIZE. "
    "The other limits: docs/reliability.md.",
)
def cli() -> None:
    """Read, check and tag PyTorch-extension wheels by their LibTorch stable-ABI target."""


for _command in (
    _read.inspect,
    _read.show,
    _read.check,
    _tag.tag,
    _tag.repair,
    _read.compat,
    _symbols.include,
    _symbols.symbols,
    _rule.rule_command,
    _install.select,
    _install.install,
    _publish.index_command,
    _publish.matrix_command,
    _publish.unlabel_command,
):
    cli.add_command(_command)


class _Terminated(BaseException):
    """SIGTERM or SIGHUP (a CI job cancelled, a closed terminal): unwinds like Ctrl-C, so
    every ``except BaseException`` cleanup runs (the writer's temp file is removed)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_termination(signum: int, frame: object) -> None:
    for name in _TERMINATING:  # a second signal must not interrupt the cleanup
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    raise _Terminated(signum)


_TERMINATING = [name for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]


def _die_by(signum: int) -> None:
    """After the cleanup, end by the same signal: the parent sees the usual status (143)."""
    click.echo(f"torchwheel: error: terminated by {signal.Signals(signum).name}", err=True)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # pragma: no cover - only if the signal did not end us


def main() -> None:
    for name in _TERMINATING:
        signal.signal(getattr(signal, name), _on_termination)
    try:
        _main()
    except _Terminated as exc:
        _die_by(exc.signum)


def _main() -> None:
    try:
        code = cli.main(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except click.exceptions.NoArgsIsHelpError as exc:  # `torchwheel` alone: the help, as ruff and pip
        click.echo(exc.ctx.get_help() if exc.ctx else cli.get_help(click.Context(cli)))
    except click.exceptions.Abort:
        fail("aborted")
    except click.exceptions.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "torchwheel"
        fail(f"{exc.format_message()} (see: {command} --help)")
    except click.exceptions.ClickException as exc:
        fail(exc.format_message())
    except OSError as exc:  # a destination we cannot write, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or exc}")
    except InputError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted")
    except MemoryError:  # the budget's last line: a claim no limit caught
        from torchwheel import limits

        fail(f"out of memory: {limits.describe()}")
    except Exception as exc:  # the promise is one line, never a traceback
        if os.environ.get("TORCHWHEEL_DEBUG"):
            raise
        fail(f"internal error: {type(exc).__name__}: {exc} (TORCHWHEEL_DEBUG=1 shows where)")
