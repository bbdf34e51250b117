"""What every command shares: each option that more than one command takes is declared here,
once, and means one thing wherever it appears (``tests/cli/test_options.py`` walks the command
tree and holds that), as pip's ``cli/cmdoptions.py`` defines its options once and groups them.
The groups: how a command reports (``--format``, ``-q``, ``-v``), the tables and rules
(``--symbols``, ``--no-config``, ``--select``/``--ignore``), what it reads (inputs, ``--env``,
``--name``, the indexes, the network budgets), the target judged (``--python``, ``--torch``,
``--torch-backend``, ``--gpu``, ``--against``) and what it writes (``-o``, ``-w``,
``--overwrite``, ``--dry-run``, ``--build-tag``). A per-command help says what that command
does with the value; the value's shape and meaning are the option's. A renamed option keeps
its old spelling, hidden, with a warning (``renamed_flag``).

A failure is raised (``errors.InputError``, ``click.UsageError``), never exited on:
``cli.exits`` decides the code. The library is imported inside the functions: ``--help`` must
stay instant.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from torchwheel.report.textsafe import safe

if TYPE_CHECKING:
    from torchwheel.analysis.wheelfacts import WheelFacts
    from torchwheel.tables.tableset import Tables

F = TypeVar("F", bound=Callable[..., Any])

# ---- how a command reports ----

_FORMATS = {
    "text": "for people and CI logs",
    "json": "the versioned document (docs/reference/json.md)",
    "github": "workflow annotations for GitHub Actions",
    "markdown": "for a CI job summary",
}


def format_option(*choices: str) -> Callable[[F], F]:
    """``--format`` as every reporting command spells it (the command gets ``fmt``);
    ``--json`` stays accepted, hidden, as the old spelling of ``--format json``."""

    def apply(func: F) -> F:
        @functools.wraps(func)
        def command(*args: Any, fmt: str, as_json: bool, **kwargs: Any) -> Any:
            return func(*args, fmt="json" if as_json else fmt, **kwargs)

        described = "; ".join(f"{c}: {_FORMATS[c]}" for c in choices)
        with_alias = click.option(
            "--json", "as_json", is_flag=True, hidden=True, help="Same as --format json."
        )(command)
        return cast(
            F,
            click.option(
                "--format",
                "fmt",
                type=click.Choice(choices),
                default="text",
                show_default=True,
                help=f"{described}.",
            )(with_alias),
        )

    return apply


# ---- the tables and the rules ----

symbols_option = click.option(
    "--symbols",
    "symbols_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Judge shim symbols with this table (from `torchwheel symbols update -o FILE`); "
    "also TORCHWHEEL_SYMBOLS or [tool.torchwheel] symbols.",
)
no_config_option = click.option(
    "--no-config", is_flag=True, help="Ignore [tool.torchwheel] in pyproject.toml."
)
select_option = click.option(
    "--select",
    multiple=True,
    metavar="CODE[,CODE]",
    help="Only these codes, repeated or comma-separated (prefixes allowed: TW2); an unknown code is "
    "refused (`torchwheel rule --all`).",
)
ignore_option = click.option(
    "--ignore",
    multiple=True,
    metavar="CODE[,CODE]",
    help="Skip these codes, repeated or comma-separated (--ignore TW201,TW503; prefixes allowed); "
    "an unknown code is refused.",
)


# ---- what a command writes ----


def output_option(
    help_text: str, path_type: click.Path, metavar: str | None = None, required: bool = False
) -> Callable[[F], F]:
    """``-o/--output``, where a command writes its one result (``index``: a folder; ``scan``:
    its JSON Lines file; ``symbols update``: the tables file): one spelling for "write it here"."""
    return click.option("-o", "--output", required=required, type=path_type, metavar=metavar, help=help_text)


def overwrite_option(help_text: str) -> Callable[[F], F]:
    """``--overwrite``: replace an output of the same name, which is refused (exit 2) without it."""
    return click.option("--overwrite", is_flag=True, help=help_text)


def dry_run_option(help_text: str) -> Callable[[F], F]:
    """``--dry-run``: say what would be written, write nothing."""
    return click.option("--dry-run", is_flag=True, help=help_text)


def build_tag_option(help_text: str) -> Callable[[F], F]:
    """``--build-tag N``: the build tag of the wheel written (file name and WHEEL ``Build``)."""
    return click.option("--build-tag", metavar="N", help=help_text)


def wheel_dir_option(help_text: str, required: bool = False) -> Callable[[F], F]:
    """``-w/--wheel-dir``, where every rewriting command (``tag``, ``repair``, ``unlabel``)
    writes its wheels: one spelling, one type (a folder, created when missing)."""
    return click.option(
        "-w",
        "--wheel-dir",
        required=required,
        type=click.Path(file_okay=False, path_type=Path),
        help=help_text,
    )


def quiet_option(dropped: str, counted: bool = False) -> Callable[[F], F]:
    """``-q/--quiet`` on every command that prints more than its answer (``check`` counts it:
    ``-qq``, ``counted``; ``dropped`` is then the whole help). What it drops is said per command;
    errors and refusals are always said (stderr, and the findings a refusal rests on), and the
    exit code never changes."""
    if counted:
        return click.option("-q", "--quiet", count=True, help=dropped)
    return click.option("-q", "--quiet", is_flag=True, help=f"Quiet: {dropped}; errors are still said.")


def verbose_option(help_text: str) -> Callable[[F], F]:
    """``-v/--verbose``: more of the same report (what more is said per command)."""
    return click.option("-v", "--verbose", is_flag=True, help=help_text)


# ---- what a command reads ----

inputs_argument = click.argument("inputs", nargs=-1, type=click.Path(path_type=Path))
env_option = click.option(
    "--env", "env", multiple=True, metavar="DIST", help="Also read an installed distribution by name."
)
names_option = click.option(
    "--name",
    "names",
    multiple=True,
    metavar="NAME",
    help="Only this project's wheels (repeatable); with -i only its page is read.",
)


# ---- the target judged: which interpreter, torch, build and GPU ----

python_option = click.option(
    "--python",
    "python",
    metavar="PATH",
    help="The target environment's interpreter (default: the one running torchwheel); asked with "
    "`-I -S` in a subprocess: nothing of its environment is imported or executed ('' is refused).",
)


def torch_option(help_text: str, repeatable: bool = False) -> Callable[[F], F]:
    """``--torch X.Y[.Z]``: a torch named by its version (X.Y: every release of the minor),
    read by the one parser of that shape (``torchabi.torch_named``); ``repeatable`` (``index``,
    ``matrix``: more columns) passes a tuple as ``torches``, else one value as ``torch_version``."""
    return click.option(
        "--torch",
        "torches" if repeatable else "torch_version",
        multiple=repeatable,
        metavar="X.Y[.Z]",
        help=help_text,
    )


def torch_backend_option(help_text: str) -> Callable[[F], F]:
    """``--torch-backend NAME``: the torch build, by PyTorch's backend names (uv's)."""
    return click.option("--torch-backend", metavar="NAME", help=help_text)


gpu_option = click.option(
    "--gpu",
    metavar="sm_XY",
    help="The GPU (sm_90, 12.0) whose kernels the wheels must have; default: nvidia-smi's, when present.",
)


def against_option(help_text: str, required: bool = False) -> Callable[[F], F]:
    """``--against TORCH``: judge against a torch read from disk (a torch wheel, a folder
    holding torch/lib), its exports deciding."""
    return click.option("--against", "against", required=required, metavar="TORCH", help=help_text)


# the old spelling of a renamed option -> its new one: hidden, still accepted, warned about
RENAMED: dict[str, str] = {}


def renamed_flag(old: str, new: str, dest: str) -> Callable[[F], F]:
    """``old``, the spelling of the flag ``new`` (the command's ``dest``) before it was renamed
    (documented spellings keep working): hidden from the help, and a warning on stderr, once
    per run, when it is used. Apply it above ``new``'s option."""
    RENAMED[old] = new
    alias = "renamed_" + old.lstrip("-").replace("-", "_")

    def apply(func: F) -> F:
        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            if kwargs.pop(alias):
                click.echo(f"torchwheel: warning: {old} is now {new}; the old spelling will go", err=True)
                kwargs[dest] = True
            return func(*args, **kwargs)

        return cast(F, click.option(old, alias, is_flag=True, hidden=True, help=f"Same as {new}.")(command))

    return apply


def config_folder(inputs: Iterable[Path], no_config: bool) -> Path:
    """Where ``[tool.torchwheel]`` is looked for: from the inputs' folders upwards, as ruff
    looks (``config.config_start``); the current folder with ``--no-config`` or no input."""
    from torchwheel.cli.config import config_start

    return Path.cwd() if no_config else config_start(inputs)


def chosen_table(symbols_file: Path | None, no_config: bool, start: Path | None = None) -> Tables:
    """The tables of the run (``tables.tableset``): ``--symbols``, else ``TORCHWHEEL_SYMBOLS``, else ``symbols`` of the
    configuration found from ``start`` (default: the current folder), else the shipped one."""
    from torchwheel.cli.config import configured_symbols
    from torchwheel.tables.tablechoice import choose_tables

    chosen = choose_tables(symbols_file, configured_symbols(start or Path.cwd(), use_config=not no_config))
    if chosen.warning:  # the user tables file was unreadable and set aside: said once, on stderr
        click.echo(f"torchwheel: warning: {safe(chosen.warning)}", err=True)
    return chosen


def require_inputs(inputs: tuple[Path, ...], env: tuple[str, ...]) -> tuple[Path, ...]:
    """The inputs of a reading command: at least one, or it is a misuse."""
    if not inputs and not env:
        raise click.UsageError("give at least one wheel, directory or binary (or --env DIST)")
    return inputs


def load_inputs(
    inputs: tuple[Path, ...], env: tuple[str, ...], chosen: Tables, verify_hashes: bool = True
) -> list[WheelFacts]:
    from torchwheel.analysis.load import load_facts

    return list(load_facts(require_inputs(inputs, env), env, chosen, verify_hashes))


def _network_budget(field_name: str) -> Callable[[click.Context, click.Parameter, int | None], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
        from torchwheel import limits

        if value is not None:
            option = f"--{param.name}".replace("_", "-")
            ctx.with_resource(
                limits.applied(limits.network_option(limits.current(), field_name, option, value))
            )

    return callback


def network_options(func: F) -> F:
    """``--http-timeout`` and ``--max-http-seconds`` for every command that may fetch: two
    budgets of ``limits`` set alike, so one option shape."""
    for field_name, help_text in (
        (
            "max_http_seconds",
            "One deadline for all of the command's network work (default 3600; also "
            "TORCHWHEEL_MAX_HTTP_SECONDS).",
        ),
        (
            "http_timeout",
            "Longest wait for one read of a response (default 60; also TORCHWHEEL_HTTP_TIMEOUT).",
        ),
    ):
        func = click.option(
            "--" + field_name.replace("_", "-"),
            type=int,
            metavar="S",
            expose_value=False,
            callback=_network_budget(field_name),
            help=help_text,
        )(func)
    return func


def index_options(func: F) -> F:
    """``-i/--index-url`` and ``--extra-index-url``, as pip and uv spell them, on every
    command that reads an index (``select``, ``install``, ``matrix``, ``index``, ``scan``):
    both name an index root, read alike (the command gets them together as ``index_urls``,
    in the order given: ``-i`` first). pip keeps only the last ``-i``; here each is read,
    as every ``--extra-index-url`` is. Credentials in a URL and the network budgets are the
    session's, the same for every command (``net.fetch``)."""

    @functools.wraps(func)
    def command(
        *args: Any, index_urls: tuple[str, ...], extra_index_urls: tuple[str, ...], **kwargs: Any
    ) -> Any:
        return func(*args, index_urls=index_urls + extra_index_urls, **kwargs)

    with_extra = click.option(
        "--extra-index-url",
        "extra_index_urls",
        multiple=True,
        metavar="URL",
        help="Another index root, read beside -i (repeatable).",
    )(command)
    return cast(
        F,
        click.option(
            "-i",
            "--index-url",
            "index_urls",
            multiple=True,
            metavar="URL",
            help="An index root (https://, a path or file://; PEP 503 HTML or PEP 691 JSON), e.g. "
            "https://pypi.org/simple or a per-target .../torch-2.12/simple; with --name only that "
            "project's page is read (repeatable).",
        )(with_extra),
    )


def require_sources(sources: tuple[str, ...], index_urls: tuple[str, ...], *others: tuple[str, ...]) -> None:
    """A command that reads wheels needs some: positional sources or an index (or ``others``,
    such as ``-f``), else it is a misuse."""
    if not (sources or index_urls or any(others)):
        raise click.UsageError("give wheels, folders or index URLs, or -i INDEX")
