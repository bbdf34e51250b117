"""The commands that read and judge: ``inspect``, ``show``, ``check``, ``compat``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from torchwheel.cli.jsonout import failure_object, json_failures, print_document
from torchwheel.cli.options import (
    against_option,
    chosen_table,
    config_folder,
    env_option,
    format_option,
    ignore_option,
    inputs_argument,
    load_inputs,
    no_config_option,
    quiet_option,
    require_inputs,
    select_option,
    symbols_option,
    verbose_option,
)
from torchwheel.errors import Exit, InputError
from torchwheel.report.textsafe import safe, safe_lines

if TYPE_CHECKING:
    from torchwheel.analysis.memberpool import EarlyRead
    from torchwheel.results import CheckResult, Unreadable


@click.command(short_help="Show the torch and CPython facts of single compiled files.")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@format_option("text", "json")
@json_failures("inspect")
@symbols_option
@no_config_option
@quiet_option("no line naming the symbol table used")
def inspect(
    files: tuple[Path, ...], fmt: str, symbols_file: Path | None, no_config: bool, quiet: bool
) -> Exit:
    """Show the torch and CPython facts of single compiled files (.so, .dylib, .pyd, .dll)."""
    from torchwheel.analysis.member import analyze_binary
    from torchwheel.binary import BinaryError
    from torchwheel.binary.memberscan import scan_file
    from torchwheel.report.facts_document import binary_text, inspect_json

    chosen = chosen_table(symbols_file, no_config, config_folder(files, no_config))
    results = []
    for path in files:
        _, facts = scan_file(path, str(path))  # OSError (a FIFO, a device) is one line in main
        if isinstance(facts, BinaryError):
            raise InputError(f"{path}: {facts}", reference="not-a-wheel")
        results.append(analyze_binary(facts, chosen.shims))
    if fmt == "json":
        print_document(inspect_json(results, chosen.to_json()))
    else:
        click.echo("\n\n".join(binary_text(r) for r in results))
        if chosen.origin != "shipped" and not quiet:
            click.echo(f"\nsymbol table: {safe(chosen.label)}")
    return Exit.OK


@click.command(short_help="Show the facts of wheels and of every compiled file in them.")
@inputs_argument
@env_option
@format_option("text", "json")
@json_failures("show")
@symbols_option
@no_config_option
@quiet_option(
    "each wheel's summary lines alone (no table of compiled files, no symbols, no symbol-table line)"
)
def show(
    inputs: tuple[Path, ...],
    env: tuple[str, ...],
    fmt: str,
    symbols_file: Path | None,
    no_config: bool,
    quiet: bool,
) -> Exit:
    """Show the torch and CPython facts of wheels and every compiled file in them."""
    with _early(inputs, verify_hashes=True) as early:
        from torchwheel import api
        from torchwheel.report.show_text import wheel_text

        chosen = chosen_table(symbols_file, no_config, config_folder(inputs, no_config))
        facts = api.inspect_wheel(
            require_inputs(inputs, env), env=env, symbols=chosen, unreadable="report", early=early
        )
    failure = _unreadable_failure(facts.unreadable)
    if fmt == "json":
        doc = facts.to_json()
        print_document(doc | ({"error": failure_object(failure)} if failure else {}))
    else:
        parts = [wheel_text(w, quiet) for w in facts.facts]
        if facts.unreadable:
            parts.append(safe_lines(_unreadable_lines(facts.unreadable)))
        click.echo(("\n" if quiet else "\n\n").join(parts))
        if not quiet:
            click.echo(f"\nsymbol table: {safe(chosen.label)}")
    if failure is not None:
        raise failure
    return Exit.OK


def _unreadable_lines(unreadable: tuple[Unreadable, ...]) -> list[str]:
    from torchwheel.report.findings import unreadable_line

    return [unreadable_line(u.path, u.message) for u in unreadable]


def _unreadable_failure(unreadable: tuple[Unreadable, ...]) -> InputError | None:
    """The one stderr line of an exit 2 that read the other inputs: the first input that
    could not be read, and how many more (the report names each)."""
    if not unreadable:
        return None
    more = len(unreadable) - 1
    failure = InputError(
        unreadable[0].message
        + (
            f" (and {more:,} more input{'s' if more != 1 else ''} that could not be read: see the report)"
            if more
            else ""
        ),
        reference=unreadable[0].reference,
        path=unreadable[0].path,
        value=unreadable[0].value,
        limit=unreadable[0].limit,
    )
    failure.input_path, failure.reported = unreadable[0].path, True
    return failure


@click.command("check", short_help="Run the rules on wheels: exit 1 on errors, 2 on unreadable input.")
@inputs_argument
@env_option
@format_option("text", "json", "github")
@json_failures("check")
@select_option
@ignore_option
@no_config_option
@symbols_option
@click.option(
    "--skip-hashes",
    is_flag=True,
    help="Fast mode: no sha256 of members (RECORD presence and sizes, and zip CRCs of what is read, "
    "are still checked); only compiled members are inflated",
)
@quiet_option(
    "-q: the findings only, no summary line; -qq: nothing on stdout (the exit code says it).", counted=True
)
@verbose_option("Every finding on a line of its own, with the whole lists a message cuts to a few names.")
@click.option(
    "--exit-zero",
    is_flag=True,
    help="Exit 0 even when errors are found (2 still means an input could not be read).",
)
@click.option(
    "--statistics",
    is_flag=True,
    help="Instead of the findings, how many of each code (as ruff's --statistics); text or json.",
)
def check_command(
    inputs: tuple[Path, ...],
    env: tuple[str, ...],
    fmt: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    no_config: bool,
    symbols_file: Path | None,
    skip_hashes: bool,
    quiet: int,
    verbose: bool,
    exit_zero: bool,
    statistics: bool,
) -> Exit:
    """Check wheels; exit 1 when any error is found, 2 when an input cannot be read."""
    if statistics and fmt == "github":
        raise click.UsageError("--statistics is for --format text or json")
    with _early(inputs, verify_hashes=not skip_hashes) as early:
        from torchwheel import api  # the rules and what they import load while the members are read
        from torchwheel.cli.config import load_policy

        start = config_folder(inputs, no_config)
        policy = load_policy(start, select, ignore, use_config=not no_config)
        chosen = chosen_table(symbols_file, no_config, start)
        result = api.check(
            require_inputs(inputs, env),
            env=env,
            symbols=chosen,
            verify_hashes=not skip_hashes,
            policy=policy,
            unreadable="report",
            early=early,
        )
    failure = _unreadable_failure(result.unreadable)
    _show_check(result, fmt, quiet, statistics, failure, verbose)
    if failure is not None:  # every readable input judged and shown; still exit 2 (--exit-zero too)
        raise failure
    return Exit.OK if exit_zero else result.exit_code


@contextmanager
def _early(inputs: tuple[Path, ...], verify_hashes: bool) -> Iterator[EarlyRead | None]:
    """The first wheel opened and its members' reads started before the rest of the command
    is imported (``analysis.memberpool``): the cores are busy from the first byte, and the
    imports the rules need (a sixth of a big check) run meanwhile. Closed on the way out
    unless the command took it over."""
    from torchwheel.analysis.memberpool import start

    early = start(inputs, verify_hashes)
    if early is None:
        yield None
        return
    with early:
        yield early


def _show_check(
    result: CheckResult,
    fmt: str,
    quiet: int,
    statistics: bool,
    failure: InputError | None,
    verbose: bool = False,
) -> None:
    """``check``'s report: a document for tools (``--quiet`` does not thin it), annotations
    with a summary for the log, or text: the findings (or ``--statistics``), a line for each
    input that could not be read, and the summary, the summary dropped by ``-q`` and
    everything by ``-qq``; ``verbose`` (``-v``): every finding on its own line, its whole
    lists under it. With ``failure`` (an input could not be read) the document carries its
    ``error`` and the annotations one ``input error`` for each such input."""
    from torchwheel.cli import colour
    from torchwheel.report.findings import check_text, statistics_json, statistics_text, summary_line
    from torchwheel.report.github import check_github
    from torchwheel.report.github import failure as input_error
    from torchwheel.results import with_unreadable

    wheels, findings, unreadable = list(result.facts.facts), result.found, result.unreadable
    if fmt == "json":
        doc = (
            with_unreadable(statistics_json(wheels, findings), unreadable) if statistics else result.to_json()
        )
        print_document(doc | ({"error": failure_object(failure)} if failure else {}))
    elif fmt == "github":
        out = "\n".join(
            [check_github(findings), *(input_error(u.message, u.path) for u in unreadable)]
        ).strip("\n")
        if out and quiet < 2:
            click.echo(out)
        if not quiet:
            click.echo(summary_line(wheels, findings, len(unreadable)))  # for the log
    elif quiet < 2:
        lines = _unreadable_lines(unreadable)
        text = (
            statistics_text(wheels, findings, lines)
            if statistics
            else check_text(wheels, findings, lines, verbose)
        )
        if quiet:  # the findings alone: drop the summary, the last line
            text = text.rpartition("\n")[0]
        if text:
            colour.echo(text)


@click.command(short_help="Would these wheels load on TORCH? Imports against its exports.")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@against_option(
    "A torch wheel, a directory holding torch/lib (site-packages, torch, torch/lib), or 'installed'.",
    required=True,
)
@format_option("text", "json")
@json_failures("compat")
@symbols_option
@no_config_option
@quiet_option("one line per input, its verdict (no torch line, no per-library lines, no summary)")
def compat(
    inputs: tuple[Path, ...],
    against: str,
    fmt: str,
    symbols_file: Path | None,
    no_config: bool,
    quiet: bool,
) -> Exit:
    """Would these wheels load on TORCH? Exit 1 when a torch symbol they import is missing.

    Compares each compiled file's torch imports (stable shim and unstable C++) with the
    symbols torch's libraries export; nothing is installed or imported.
    """
    from torchwheel.analysis.torchcompat import compare, torch_imports
    from torchwheel.report.compat import compat_json, compat_text
    from torchwheel.torchabi.torchlibs import read_torch

    chosen = chosen_table(symbols_file, no_config, config_folder(inputs, no_config))
    wheels = load_inputs(inputs, (), chosen, verify_hashes=False)
    # only the exports the inputs ask for are kept: libtorch exports ~100k names
    torch = read_torch(against, torch_imports(wheels, chosen.shims))
    results = [compare(w, torch, chosen.shims) for w in wheels]
    if fmt == "json":
        print_document(compat_json(torch, results))
    else:
        click.echo(compat_text(torch, results, brief=quiet))
    return Exit.OK if all(r.loads for r in results) else Exit.NO
