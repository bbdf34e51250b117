"""cli/jsonout.py: a ``--format json`` command that fails with exit 2 before printing its
document prints one carrying the error (docs/reference/json.md); ``--format github`` prints the error
as an annotation; text output and a failure after the document print nothing more."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from torchwheel.cli.jsonout import error_object, json_failures, print_document
from torchwheel.errors import InputError


def _command(printed_first: bool) -> click.Command:
    @click.command()
    @click.option("--format", "fmt", default="text")
    @json_failures("demo")
    def demo(fmt: str) -> None:
        if printed_first:
            print_document({"schema_version": 1, "command": "demo"})
        raise InputError("x.whl: not a zip archive", reference="archive-damaged")

    return demo


def _run(printed_first: bool, fmt: str) -> tuple[str, BaseException | None]:
    result = CliRunner().invoke(_command(printed_first), ["--format", fmt])
    return result.stdout, result.exception


def test_json_failure_prints_the_error_document_and_lets_the_error_go_on() -> None:
    out, exc = _run(False, "json")
    assert json.loads(out) == {
        "schema_version": 1,
        "command": "demo",
        "error": {"message": "x.whl: not a zip archive", "reference": "archive-damaged", "exit": 2},
    }
    assert isinstance(exc, InputError)


def test_a_document_already_printed_is_not_followed_by_another() -> None:
    out, exc = _run(True, "json")
    assert json.loads(out) == {"schema_version": 1, "command": "demo"}
    assert isinstance(exc, InputError)


def test_github_failure_is_an_annotation() -> None:
    """An InputError no input was named in is the command line's or the configuration's: a
    usage error (``analysis.load`` names the input of the errors it reads)."""
    out, _ = _run(False, "github")
    assert out == "::error title=torchwheel (usage error)::x.whl: not a zip archive\n"


def test_github_failure_of_an_input_names_its_file() -> None:
    from torchwheel.report.github import failure

    assert (
        failure("x.whl: junk", "dist/x.whl")
        == "::error file=dist/x.whl,title=torchwheel (input error)::x.whl: junk"
    )
    assert failure("out of memory") == "::error title=torchwheel::out of memory"


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_other_formats_print_nothing(fmt: str) -> None:
    out, exc = _run(False, fmt)
    assert out == ""
    assert isinstance(exc, InputError)


def test_error_object() -> None:
    assert error_object("why", "misuse") == {"message": "why", "reference": "misuse", "exit": 2}
    fields = {"path": "x.whl", "value": 7, "limit": "max-members"}
    assert error_object("why", "limit-exceeded", fields) == {
        "message": "why",
        "reference": "limit-exceeded",
        "path": "x.whl",
        "value": 7,
        "limit": "max-members",
        "exit": 2,
    }


def test_print_document_is_ascii_only(capsys: pytest.CaptureFixture[str]) -> None:
    print_document({"name": "na\u00efve\u202e"})
    assert capsys.readouterr().out == '{\n  "name": "na\\u00efve\\u202e"\n}\n'


def test_the_error_document_carries_the_fields_the_error_knew() -> None:
    @click.command()
    @click.option("--format", "fmt", default="text")
    @json_failures("demo")
    def demo(fmt: str) -> None:
        raise InputError("x.whl: not a zip archive", reference="archive-damaged", path="dist/x.whl")

    out = CliRunner().invoke(demo, ["--format", "json"]).stdout
    assert json.loads(out)["error"] == {
        "message": "x.whl: not a zip archive",
        "reference": "archive-damaged",
        "path": "dist/x.whl",
        "exit": 2,
    }
