"""cli/options.py: the options every command spells once: ``--format`` with its hidden
``--json`` alias, the inputs a reading command needs, and the network budgets that win over
the environment."""

from __future__ import annotations

from collections.abc import Callable
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
