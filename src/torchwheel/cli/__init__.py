"""The command line: parse, call the library, render. Nothing else lives here.

One module per command group (``read``, ``tag``, ``install``, ``publish``, ``symbols``);
shared options in ``options``; ``jsonout`` prints the JSON document of a ``--format json``
run that fails. Exit codes are a contract CI jobs rely on: 0 fine, 1 findings (check/repair),
2 the input could not be read or the command was misused. Any failure is one line on
stderr; ``TORCHWHEEL_DEBUG=1`` shows the traceback for bug reports.
"""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys

import click

from torchwheel import __version__

# command name -> "module:object" under torchwheel.cli. A command's module is imported when
# the command runs (or when --help lists them all): `check` on a small wheel must not pay for
# the installer, the index writer and the rewrite (docs/evidence/performance.md, "Start-up").
COMMANDS = {
    "inspect": "read:inspect",
    "show": "read:show",
    "check": "read:check_command",
    "tag": "tag:tag_command",
    "repair": "tag:repair",
    "compat": "read:compat",
    "doctor": "doctor:doctor_command",
    "include": "symbols:include",
    "symbols": "symbols:symbols",
    "rule": "rule:rule_command",
    "select": "install:select",
    "install": "install:install",
    "index": "publish:index_command",
    "matrix": "publish:matrix_command",
    "unlabel": "publish:unlabel_command",
    "scan": "scan:scan_command",
}


class _LazyGroup(click.Group):
    """click's documented pattern for lazily loaded subcommands (click docs, "Lazily Loading
    Subcommands"): ``list_commands`` names them, ``get_command`` imports one."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return None
        module, name = where.split(":")
        command = getattr(importlib.import_module(f"torchwheel.cli.{module}"), name)
        assert isinstance(command, click.Command)
        return command


def _max_member_size(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    from torchwheel import limits

    budget = limits.from_environment()  # each invocation: the defaults and the environment now
    if value is not None:
        budget = limits.member_size_option(budget, value)
    ctx.with_resource(limits.applied(budget))  # for the command, until its context closes


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="torchwheel")
@click.option(
    "--max-member-size",
    metavar="SIZE",
    callback=_max_member_size,
    expose_value=False,
    help="Largest inflated member read (default 8G; K/M/G/T); also TORCHWHEEL_MAX_MEMBER_SIZE. "
    "The other limits: docs/evidence/reliability.md.",
)
def cli() -> None:
    """Read, check and tag PyTorch-extension wheels by their LibTorch stable-ABI target."""


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
    # Imports make some 25,000 objects and next to no garbage, and collecting every 700 new
    # objects (the default) walks them 40 times in a small `check`: 3-4 % of its time. One
    # collection per 10,000 still bounds what cycles can hold to a few MB.
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    for name in _TERMINATING:
        signal.signal(getattr(signal, name), _on_termination)
    try:
        _main()
    except _Terminated as exc:
        _die_by(exc.signum)


def _main() -> None:
    from torchwheel.cli.exits import pipe_closed, run  # the one decision of every command's exit code

    try:
        code = run(cli)
    except SystemExit:  # click's own exit on a closed standard output (EPIPE): one line, exit 2
        closed = pipe_closed()
        if closed is None:
            raise
        code = closed
    # The interpreter's last collection would walk every object alive only to free it with
    # the process: 10-20 ms of a 0.1 s `check`. Frozen objects are skipped.
    gc.freeze()
    if code:
        sys.exit(int(code))  # the only exit of a command: commands return their code
