"""The command line: parse, call the library, render. Nothing else lives here.

Exit codes are a contract CI jobs rely on: 0 fine, 1 findings (check/repair), 2 the
input could not be read or the command was misused. Any failure is one line on stderr;
``TORCHWHEEL_DEBUG=1`` shows the traceback for bug reports.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from torchwheel import __version__
from torchwheel.errors import InputError

if TYPE_CHECKING:  # the CLI imports the library lazily: `--help` must stay instant
    from torchwheel.findings import Policy
    from torchwheel.retag import TagOptions
    from torchwheel.symbolsource import ChosenTable
    from torchwheel.tagging import TagResult
    from torchwheel.wheelfacts import WheelFacts
    from torchwheel.wheelfile import WheelArchive

F = TypeVar("F", bound=Callable[..., Any])
EXIT_INPUT = 2


def _fail(message: str) -> None:
    from torchwheel.textsafe import safe

    click.echo(f"torchwheel: error: {safe(message)}", err=True)  # messages quote member names
    sys.exit(EXIT_INPUT)


def _max_member_size(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    from torchwheel import limits

    limits.reset()  # each invocation starts from the defaults and the environment
    if value is not None:
        limits.set_max_member_size(value)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="torchwheel")
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


_SYMBOLS = click.option(
    "--symbols",
    "symbols_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Judge shim symbols with this table (from `torchwheel symbols update -o FILE`); "
    "also TORCHWHEEL_SYMBOLS or [tool.torchwheel] symbols.",
)
_NO_CONFIG = click.option("--no-config", is_flag=True, help="Ignore [tool.torchwheel] in pyproject.toml.")


def _format_option(choices: tuple[str, ...]) -> Callable[[F], F]:
    """``--format`` on every reporting command; ``--json`` stays as the old spelling."""

    def apply(func: F) -> F:
        func = click.option("--json", "as_json", is_flag=True, hidden=True, help="Same as --format json.")(
            func
        )
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(choices),
            default="text",
            show_default=True,
            help="json: the versioned document (docs/json.md)"
            + ("; github: workflow annotations for GitHub Actions." if "github" in choices else "."),
        )(func)

    return apply


def _table(symbols_file: Path | None, no_config: bool) -> ChosenTable:
    from torchwheel.config import configured_symbols
    from torchwheel.symbolsource import choose

    return choose(symbols_file, configured_symbols(Path.cwd(), use_config=not no_config))


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@_format_option(("text", "json"))
@_SYMBOLS
@_NO_CONFIG
def inspect(
    files: tuple[Path, ...], fmt: str, as_json: bool, symbols_file: Path | None, no_config: bool
) -> None:
    """Show the torch and CPython facts of single compiled files (.so, .dylib, .pyd, .dll)."""
    from torchwheel.analysis import analyze_binary
    from torchwheel.binary import BinaryError
    from torchwheel.memberscan import scan_file
    from torchwheel.report import binary_text, inspect_json

    chosen = _table(symbols_file, no_config)
    results = []
    for path in files:
        _, facts = scan_file(path, str(path))  # OSError (a FIFO, a device) is one line in main
        if isinstance(facts, BinaryError):
            raise InputError(f"{path}: {facts}")
        results.append(analyze_binary(facts, chosen.table))
    if as_json or fmt == "json":
        click.echo(json.dumps(inspect_json(results, chosen.to_json()), indent=2))
    else:
        click.echo("\n\n".join(binary_text(r) for r in results))
        if chosen.origin != "shipped":
            click.echo(f"\nsymbol table: {chosen.label}")


_SELECT = click.option(
    "--select", multiple=True, metavar="CODE", help="Only these codes (prefixes allowed: TW2)."
)
_IGNORE = click.option("--ignore", multiple=True, metavar="CODE", help="Skip these codes (prefixes allowed).")
_INPUTS = click.argument("inputs", nargs=-1, type=click.Path(path_type=Path))
_ENV = click.option(
    "--env", "env", multiple=True, metavar="DIST", help="Also read an installed distribution by name."
)


def _load(
    inputs: tuple[Path, ...], env: tuple[str, ...], chosen: ChosenTable, verify_hashes: bool = True
) -> list[WheelFacts]:
    from torchwheel.inputs import load

    if not inputs and not env:
        raise click.UsageError("give at least one wheel, directory or binary (or --env DIST)")
    return list(load(inputs, env, chosen.table, verify_hashes))


@cli.command()
@_INPUTS
@_ENV
@_format_option(("text", "json"))
@_SYMBOLS
@_NO_CONFIG
def show(
    inputs: tuple[Path, ...],
    env: tuple[str, ...],
    fmt: str,
    as_json: bool,
    symbols_file: Path | None,
    no_config: bool,
) -> None:
    """Show the torch and CPython facts of wheels and every compiled file in them."""
    from torchwheel.report import show_json, wheel_text

    chosen = _table(symbols_file, no_config)
    wheels = _load(inputs, env, chosen)
    if as_json or fmt == "json":
        click.echo(json.dumps(show_json(wheels, chosen.to_json()), indent=2))
    else:
        click.echo("\n\n".join(wheel_text(w) for w in wheels))
        click.echo(f"\nsymbol table: {chosen.label}")


@cli.command()
@_INPUTS
@_ENV
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="github prints workflow annotations for GitHub Actions.",
)
@_SELECT
@_IGNORE
@_NO_CONFIG
@_SYMBOLS
@click.option(
    "--skip-hashes",
    is_flag=True,
    help="Fast mode: no sha256 of members (RECORD presence and sizes, and zip CRCs of what is read, "
    "are still checked); only compiled members are inflated",
)
def check(
    inputs: tuple[Path, ...],
    env: tuple[str, ...],
    fmt: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    no_config: bool,
    symbols_file: Path | None,
    skip_hashes: bool,
) -> None:
    """Check wheels; exit 1 when any error is found, 2 when an input cannot be read."""
    from torchwheel import rules
    from torchwheel.check_report import check_github, check_json, check_text
    from torchwheel.config import load_policy

    policy = load_policy(Path.cwd(), select, ignore, use_config=not no_config)
    chosen = _table(symbols_file, no_config)
    wheels = _load(inputs, env, chosen, verify_hashes=not skip_hashes)
    findings = rules.run_all(wheels, policy)
    if fmt == "json":
        document = check_json(wheels, findings, not skip_hashes)
        document["symbol_table"] = chosen.to_json()
        click.echo(json.dumps(document, indent=2))
    elif fmt == "github":
        out = check_github(findings)
        if out:
            click.echo(out)
        click.echo(check_text(wheels, findings).splitlines()[-1])  # the summary line for the log
    else:
        click.echo(check_text(wheels, findings))
    if any(f.severity == "error" for f in findings):
        sys.exit(1)


def _tag_options(
    upper_bound: str | None, keep: bool, build_torch: str | None, relax_pin: bool | None, use_config: bool
) -> TagOptions:
    from torchwheel.config import configured_relax_pin
    from torchwheel.retag import TagOptions
    from torchwheel.version import FeatureVersion

    if build_torch == "installed":  # right after a build: the torch it compiled against
        from importlib.metadata import PackageNotFoundError, version

        try:
            build_torch = version("torch").split("+", 1)[0]
        except PackageNotFoundError as exc:
            raise InputError("--build-torch installed: no torch is installed in this environment") from exc
    if build_torch is not None:
        try:
            FeatureVersion.parse(build_torch)
        except ValueError as exc:
            raise InputError(f"--build-torch {build_torch!r}: expected X.Y (or 'installed')") from exc
    if relax_pin is None:  # the command line wins over [tool.torchwheel] relax-pin
        relax_pin = configured_relax_pin(Path.cwd(), use_config)
    return TagOptions(
        upper_bound=upper_bound, keep_correct=keep, build_torch=build_torch, relax_pin=relax_pin
    )


_TAG_OPTIONS = [
    click.option(
        "--upper-bound", metavar="VERSION", help="Also cap a stable torch requirement: torch>=T,<VERSION."
    ),
    click.option(
        "--keep-correct/--rewrite-requirement",
        default=True,
        show_default=True,
        help="Keep the project's torch requirement when it already matches the binaries.",
    ),
    click.option(
        "--build-torch", metavar="X.Y", help="The torch an unstable wheel was built with (pin torch==X.Y.*)."
    ),
    click.option(
        "--relax-pin/--keep-pin",
        default=None,
        help="Widen the project's torch pin to what the stable ABI allows (default: keep it, only "
        "narrow; also [tool.torchwheel] relax-pin).",
    ),
]


def _with_tag_options(func: F) -> F:
    for option in reversed(_TAG_OPTIONS):
        func = option(func)
    return func


def _refuse_untrustworthy(wheels: list[WheelFacts]) -> None:
    """Facts that make a rewrite dishonest: a RECORD that disagrees with the files or
    METADATA that does not parse (which bytes are right is not ours to guess), and a marker
    this torchwheel cannot read (the target it would write could be wrong)."""
    from torchwheel import rules
    from torchwheel.check_report import check_text
    from torchwheel.findings import Policy

    findings = rules.run_all(wheels, Policy(select=frozenset({"TW103", "TW106", "TW402", "TW403", "TW407"})))
    if findings:
        click.echo(check_text(wheels, findings))
        click.echo(
            "torchwheel: refusing to rewrite: the facts above make the new metadata untrustworthy", err=True
        )
        sys.exit(1)


def _report_tag(result: TagResult) -> None:
    from torchwheel.textsafe import safe, safe_lines

    if result.target is None:
        diff = safe_lines(result.diff.split("\n"))  # only "\n": splitlines() breaks at \x1c, \u2028
        click.echo(diff or safe(f"{result.source.name}: nothing would change"), nl=not result.diff)
        return
    status = "wrote" if result.changed else "unchanged"
    click.echo(safe_lines([f"{status} {result.target}", *(f"  - {change}" for change in result.changes)]))


@cli.command()
@click.argument("wheels", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-w",
    "--wheel-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write here (default: next to the input).",
)
@click.option("--in-place", is_flag=True, help="Replace the input wheel (atomically).")
@click.option("--dry-run", is_flag=True, help="Print the metadata diff (WHEEL, METADATA); write nothing.")
@click.option("-v", "--verbose", is_flag=True, help="With --dry-run: also the facts side file's diff.")
@click.option(
    "--variant",
    is_flag=True,
    help="Also write the wheel-variant copy (DRAFT standard, PEP 817/825): variant.json and a "
    "labelled name beside the plain wheel, which stays the fallback (docs/installers.md).",
)
@click.option(
    "--release/--no-release",
    default=None,
    help="One identical torch requirement set for all wheels of one release, with sys_platform "
    "markers where floors differ (default: on when several wheels of one release are given).",
)
@click.option("--build-tag", metavar="N", help="Add this build tag to the file name (and WHEEL Build).")
@click.option("--local-label", metavar="LABEL", help="Version 1.0 -> 1.0+LABEL (e.g. torch2.12): file name and METADATA.")
@_SYMBOLS
@_NO_CONFIG
@_with_tag_options
def tag(
    wheels: tuple[Path, ...],
    wheel_dir: Path | None,
    in_place: bool,
    dry_run: bool,
    verbose: bool,
    variant: bool,
    release: bool | None,
    build_tag: str | None,
    local_label: str | None,
    symbols_file: Path | None,
    no_config: bool,
    upper_bound: str | None,
    keep_correct: bool,
    build_torch: str | None,
    relax_pin: bool | None,
) -> None:
    """Write the torch ABI into wheels: WHEEL Torch-ABI and Tag lines, the torch requirement,
    a facts side file and RECORD; the file name follows the tags."""
    import dataclasses

    from torchwheel import releasetag, tagging

    if in_place and wheel_dir is not None:
        raise click.UsageError("--in-place and -w/--wheel-dir exclude each other")
    from torchwheel.inputs import opened

    lock = tagging.lock_input if in_place and not dry_run else None
    with opened(wheels, _table(symbols_file, no_config).table, lock) as loaded:  # written from these fds
        _refuse_untrustworthy([w for w, _ in loaded])
        opts = _tag_options(upper_bound, keep_correct, build_torch, relax_pin, not no_config)
        opts = dataclasses.replace(opts, build_tag=build_tag, local_label=local_label)
        shared = releasetag.release_sets([w for w, _ in loaded], opts, release)
        for w, fd in loaded:
            opts = dataclasses.replace(opts, release_requirements=shared.get(id(w)))
            if variant:  # first, while the input is still where it was (--in-place replaces it)
                _report_tag(
                    tagging.tag(w, opts, wheel_dir, False, dry_run, with_facts=verbose, archive=fd, variant=True)
                )
            _report_tag(tagging.tag(w, opts, wheel_dir, in_place, dry_run, with_facts=verbose, archive=fd))


@cli.command()
@click.argument("wheel", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-w",
    "--wheel-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="cibuildwheel's {dest_dir}.",
)
@_NO_CONFIG
@_SELECT
@_IGNORE
@_SYMBOLS
@click.option(
    "--repair-with",
    metavar="COMMAND",
    help="Run this repair tool first, writing to {repair_dir} (a fresh temp dir), then check and tag its wheel.",
)
@_with_tag_options
def repair(
    wheel: Path,
    wheel_dir: Path,
    no_config: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    symbols_file: Path | None,
    repair_with: str | None,
    upper_bound: str | None,
    keep_correct: bool,
    build_torch: str | None,
    relax_pin: bool | None,
) -> None:
    """cibuildwheel's repair-wheel-command: check, refuse (exit 1) on errors that the
    rewrite cannot fix, else tag into WHEEL_DIR, leaving exactly one wheel there."""
    from torchwheel.chain import first_stage
    from torchwheel.config import load_policy

    policy = load_policy(Path.cwd(), select, ignore, use_config=not no_config)
    chosen = _table(symbols_file, no_config)
    opts = _tag_options(upper_bound, keep_correct, build_torch, relax_pin, not no_config)
    if repair_with is None:
        _repair(wheel, wheel_dir, policy, chosen, opts)
        return
    with first_stage(repair_with, wheel) as repaired:
        _repair(repaired, wheel_dir, policy, chosen, opts)


def _repair(wheel: Path, wheel_dir: Path, policy: Policy, chosen: ChosenTable, opts: TagOptions) -> None:
    """Judge the wheel as the rewrite will leave it: what ``tag`` fixes is no reason to refuse."""
    from torchwheel.inputs import opened

    with opened((wheel,), chosen.table) as loaded:  # the output is copied from this descriptor
        _repair_loaded([w for w, _ in loaded], loaded[0][1], wheel_dir, policy, opts)


def _repair_loaded(
    facts: list[WheelFacts], archive: WheelArchive | None, wheel_dir: Path, policy: Policy, opts: TagOptions
) -> None:
    from torchwheel import rules, tagging
    from torchwheel.check_report import check_text
    from torchwheel.retag import plan, planned_facts

    findings = rules.run_all(facts, policy)
    after = rules.run(planned_facts(facts[0], plan(facts[0], opts)), policy)
    remaining = [f for f in after if f.severity == "error"]
    if findings:
        click.echo(check_text(facts, findings), err=not remaining)
    fixed = sorted({f.code for f in findings if f.severity == "error"} - {f.code for f in remaining})
    if remaining:
        codes = ", ".join(sorted({f.code for f in remaining}))
        click.echo(
            f"torchwheel: repair refused: the rewrite cannot fix {codes}; fix them in the build", err=True
        )
        sys.exit(1)
    if fixed:
        click.echo(f"torchwheel: the rewrite fixes {', '.join(fixed)}", err=True)
    _report_tag(tagging.tag(facts[0], opts, wheel_dir, False, False, archive=archive))


@cli.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--against",
    "against",
    required=True,
    metavar="TORCH",
    help="A torch wheel, a directory holding torch/lib (site-packages, torch, torch/lib), or 'installed'.",
)
@_format_option(("text", "json"))
@_SYMBOLS
@_NO_CONFIG
def compat(
    inputs: tuple[Path, ...],
    against: str,
    fmt: str,
    as_json: bool,
    symbols_file: Path | None,
    no_config: bool,
) -> None:
    """Would these wheels load on TORCH? Exit 1 when a torch symbol they import is missing.

    Compares each compiled file's torch imports (stable shim and unstable C++) with the
    symbols torch's libraries export; nothing is installed or imported.
    """
    from torchwheel.compat import compare, compat_json, compat_text, read_torch, torch_imports

    chosen = _table(symbols_file, no_config)
    wheels = _load(inputs, (), chosen, verify_hashes=False)
    # only the exports the inputs ask for are kept: libtorch exports ~100k names
    torch = read_torch(against, torch_imports(wheels, chosen.table))
    results = [compare(w, torch, chosen.table) for w in wheels]
    if as_json or fmt == "json":
        click.echo(json.dumps(compat_json(torch, results), indent=2))
    else:
        click.echo(compat_text(torch, results))
    if not all(r.loads for r in results):
        sys.exit(1)


@cli.command()
def include() -> None:
    """Print the compiler flag that puts torchwheel's marker header on the include path.

    Use as: CFLAGS="$(torchwheel include)" and #include <torchwheel/stable_abi_marker.h>.
    """
    here = Path(__file__).resolve().parent / "include"
    click.echo(f"-I{here}")


@cli.group()
def symbols() -> None:
    """The table of stable shim symbols and the torch release that introduced each."""


@symbols.command("update")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the table here (default: print it).",
)
@click.option("--replace", is_flag=True, help="Build from SOURCES only, not on top of the shipped table.")
def symbols_update(sources: tuple[Path, ...], output: Path | None, replace: bool) -> None:
    """Extend the shim table from torch wheels or installations (offline: headers only)."""
    from torchwheel.symtable_cli import regenerate

    table = regenerate(list(sources), output, extend=not replace)
    if output is None:
        click.echo(table.to_json())
    else:
        click.echo(f"wrote {output}: {len(table.symbols)} symbols", err=True)


def _register_installer_side() -> None:
    """select/install live in torchwheel.install.cli (imports only click at this point)."""
    from torchwheel.install.cli import install, select

    cli.add_command(select)
    cli.add_command(install)


_register_installer_side()


def _register_publishing() -> None:
    """index/matrix live in torchwheel.install.index_cli (imports only click at this point)."""
    from torchwheel.install.index_cli import index_command, matrix_command

    cli.add_command(index_command)
    cli.add_command(matrix_command)


_register_publishing()


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
    except click.exceptions.Abort:
        _fail("aborted")
    except click.exceptions.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "torchwheel"
        _fail(f"{exc.format_message()} (see: {command} --help)")
    except click.exceptions.ClickException as exc:
        _fail(exc.format_message())
    except OSError as exc:  # a destination we cannot write, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}")
    except InputError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted")
    except MemoryError:  # the budget's last line: a claim no limit caught
        from torchwheel import limits

        _fail(f"out of memory: {limits.describe()}")
    except Exception as exc:  # the promise is one line, never a traceback
        if os.environ.get("TORCHWHEEL_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (TORCHWHEEL_DEBUG=1 shows where)")
