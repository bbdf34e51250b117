"""cli/options.py: the options every command spells once: ``--format`` with its hidden
``--json`` alias, the inputs a reading command needs, and the network budgets that win over
the environment."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from torchwheel import limits
from torchwheel.cli.options import format_option, network_options, require_inputs


@click.command()
@format_option("text", "json", "markdown")
def _report(fmt: str) -> None:
    click.echo(fmt)


@pytest.mark.parametrize(
    ("args", "out"),
    [
        ([], "text\n"),
        (["--format", "markdown"], "markdown\n"),
        (["--json"], "json\n"),
        (["--format", "text", "--json"], "json\n"),
    ],
)
def test_format_and_its_json_alias(args: list[str], out: str) -> None:
    result = CliRunner().invoke(_report, args)
    assert (result.exit_code, result.stdout) == (0, out)


def test_a_format_the_command_does_not_offer_is_a_usage_error() -> None:
    result = CliRunner().invoke(_report, ["--format", "github"])
    assert result.exit_code == 2
    assert "'github' is not one of 'text', 'json', 'markdown'" in result.stderr


def test_the_help_names_each_format_and_hides_the_alias() -> None:
    out = CliRunner().invoke(_report, ["--help"]).stdout
    assert (
        "text: for people and CI logs; json: the versioned document (docs/reference/json.md); markdown: for a CI job"
        in " ".join(out.split())
    )
    assert "--json" not in out


def test_require_inputs() -> None:
    assert require_inputs((Path("a.whl"),), ()) == (Path("a.whl"),)
    assert require_inputs((), ("demo",)) == ()
    with pytest.raises(
        click.UsageError, match=r"^give at least one wheel, directory or binary \(or --env DIST\)$"
    ):
        require_inputs((), ())


@pytest.fixture
def fresh_limits(set_limits: Callable[..., None]) -> None:
    set_limits()  # the defaults, and again after the options set them


@click.command()
@network_options
def _fetching() -> None:
    click.echo(f"{limits.current().http_timeout.value} {limits.current().max_http_seconds.value}")


def test_network_budgets_are_set_by_the_options(fresh_limits: None) -> None:
    """The options apply to the command they were given to, and to nothing after it."""
    before = limits.current()
    result = CliRunner().invoke(_fetching, ["--http-timeout", "5", "--max-http-seconds", "30"])
    assert (result.exit_code, result.stdout) == (0, "5 30\n")
    assert limits.current() is before


def test_a_budget_that_is_not_positive_is_refused(fresh_limits: None) -> None:
    result = CliRunner().invoke(_fetching, ["--http-timeout", "0"])
    assert str(result.exception) == "--http-timeout 0: expected a positive number of seconds"


def _commands() -> Iterator[tuple[str, click.Command]]:
    """Every command of the tree, by its path (``symbols update``), loaded as ``--help`` does."""
    from torchwheel.cli import cli

    ctx = click.Context(cli)

    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, f"{path} {name}".strip())

    yield from walk(cli, "")


def _shape(param: click.Option) -> str:
    """What an option's value is, whatever the command: a flag (counted or not) or a value of
    one type (a path, a string, a number)."""
    return "flag" if param.is_flag or param.count else type(param.type).__name__


def test_every_option_name_means_one_thing_across_commands() -> None:
    """``--gpu`` names a GPU wherever it is taken, ``--torch`` a torch version, ``--name`` a
    project: one shape per spelling (a renamed option's hidden old spelling aside)."""
    from torchwheel.cli.options import RENAMED

    seen: dict[str, dict[str, list[str]]] = {}
    for path, command in _commands():
        for param in command.params:
            if not isinstance(param, click.Option) or (param.hidden and param.opts[0] in RENAMED):
                continue
            for spelling in param.opts + param.secondary_opts:
                seen.setdefault(spelling, {}).setdefault(_shape(param), []).append(path)
    differ = {name: shapes for name, shapes in seen.items() if len(shapes) > 1}
    assert not differ
    assert {"--gpu", "--torch", "--name", "--python", "-o"} <= set(seen)


def test_every_shared_option_is_declared_once() -> None:
    """An option is declared in one module, and one that commands of several modules take
    in ``cli/options.py``."""
    import ast

    import torchwheel.cli as package

    declared: dict[str, set[str]] = {}
    for module in sorted(Path(package.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "option":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("-"):
                        declared.setdefault(str(arg.value), set()).add(module.name)
    twice = {name: where for name, where in declared.items() if len(where) > 1}
    assert not twice
    users: dict[str, set[str]] = {}  # option -> the modules of the commands that take it
    for _, command in _commands():
        for param in command.params:
            if isinstance(param, click.Option) and command.callback is not None:
                for spelling in param.opts:
                    users.setdefault(spelling, set()).add(command.callback.__module__)
    shared = {name for name, modules in users.items() if len(modules) > 1 and name in declared}
    elsewhere = {name: declared[name] for name in shared if declared[name] != {"options.py"}}
    assert not elsewhere
    assert {"--name", "--torch", "--gpu", "--python", "--overwrite", "--output"} <= shared


def test_a_renamed_flag_keeps_its_old_spelling_with_a_warning() -> None:
    from torchwheel.cli.scan import scan_command

    runner = CliRunner()
    old = runner.invoke(scan_command, ["x.whl", "-o", "out.jsonl", "--gpu"])
    new = runner.invoke(scan_command, ["x.whl", "-o", "out.jsonl", "--gpu-code"])
    warning = "torchwheel: warning: --gpu is now --gpu-code; the old spelling will go\n"
    assert old.stderr.startswith(warning) and old.stderr.count("warning") == 1
    assert "warning" not in new.stderr
    for result in (old, new):  # the same refusal: the flag is for --partial
        assert result.exit_code == 2 and "--gpu-code is for --partial" in result.stderr
    assert "--gpu " not in runner.invoke(scan_command, ["--help"]).stdout
