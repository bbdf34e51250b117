"""The exit codes: one table (``cli/exits.py``) that every command has a row in and that
``docs/reference/exit-codes.md`` prints, commands that return their code, and only the entry point
exiting."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import click
import pytest

from torchwheel.cli import cli
from torchwheel.cli.exits import EXITS, ExitRow, run
from torchwheel.errors import Exit, InputError, Unfinished
from torchwheel.selection import outcome

from ..lib.helpers import REPO

SRC = REPO / "src" / "torchwheel"
ENTRY_POINT = SRC / "cli" / "__init__.py"


def _exits_in(source: str) -> list[str]:
    """Every way ``source`` ends the process by itself: ``sys.exit``, ``os._exit``,
    ``exit``/``quit``, ``ctx.exit``/``click.Context.exit``, ``SystemExit`` raised or named."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("exit", "_exit"):
                found.append(f"line {node.lineno}: {ast.unparse(f)}()")
            elif isinstance(f, ast.Name) and f.id in ("exit", "quit"):
                found.append(f"line {node.lineno}: {f.id}()")
        elif isinstance(node, ast.Name) and node.id == "SystemExit":
            found.append(f"line {node.lineno}: SystemExit")
    return found


def test_the_scan_finds_each_way_to_exit() -> None:
    for source in (
        "import sys\nsys.exit(1)",
        "import os\nos._exit(2)",
        "exit(1)",
        "def f(ctx):\n    ctx.exit(1)",
        "raise SystemExit(2)",
    ):
        assert _exits_in(source), source
    assert not _exits_in("def f(result):\n    return result.exit_code\nwith x:\n    x.__exit__()")


def test_only_the_entry_point_exits() -> None:
    offenders = {
        str(path.relative_to(SRC)): hits
        for path in sorted(SRC.rglob("*.py"))
        if path != ENTRY_POINT and (hits := _exits_in(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "return the code from the command instead (docs/reference/exit-codes.md)"


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    """Every command as a user types it (``symbols update``), through nested groups."""
    ctx = click.Context(group)
    out: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            out |= _commands(command, f"{prefix}{name} ")
        else:
            out[f"{prefix}{name}"] = command
    return out


def test_every_command_has_one_row_and_every_row_a_command() -> None:
    rows = [r.command for r in EXITS]
    assert len(rows) == len(set(rows))
    missing = sorted(set(_commands(cli)) - set(rows))
    assert missing == [], "add a row to EXITS in cli/exits.py and to docs/reference/exit-codes.md"
    assert sorted(set(rows) - set(_commands(cli))) == ["torchwheel"]  # the group itself


@pytest.mark.parametrize("name", sorted(_commands(cli)))
def test_every_command_returns_its_code(name: str) -> None:
    callback = _commands(cli)[name].callback
    assert callback is not None
    hints = typing.get_type_hints(inspect.unwrap(callback))
    assert hints["return"] is Exit, f"{name} must return an errors.Exit (only the entry point exits)"


def _doc_table() -> list[ExitRow]:
    """The exit-code table of ``docs/reference/exit-codes.md``, parsed."""
    lines = (REPO / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8").splitlines()
    head = lines.index("| command | 0 | 1 | 2 | 3 |")
    assert lines[head + 1] == "|---|---|---|---|---|"
    rows = []
    for line in lines[head + 2 :]:
        if not line.startswith("|"):
            break
        command, ok, no, unusable, unfinished = (cell.strip() for cell in line.strip("|").split(" | "))
        rows.append(
            ExitRow(
                command.strip("`"),
                ok,
                None if no == "-" else no,
                unusable,
                None if unfinished == "-" else unfinished,
            )
        )
    return rows


def test_the_docs_table_is_the_code_table() -> None:
    assert _doc_table() == list(EXITS)


def test_the_codes_are_the_library_codes() -> None:
    assert [int(e) for e in Exit] == [0, 1, 2, 3]
    assert set(outcome.EXIT.values()) == set(Exit) - {Exit.UNFINISHED}  # per project: a choice, no change
    assert [r.command for r in EXITS if r.unfinished] == ["install"]  # only it changes an environment
    assert outcome.EXIT["chosen"] is Exit.OK and outcome.EXIT["unreadable"] is Exit.INPUT


@click.group()
def _demo() -> None:
    """A group whose commands end in each way a command can."""


@_demo.command("no")
def _answer_no() -> Exit:
    return Exit.NO


@_demo.command("unreadable")
def _unreadable() -> Exit:
    raise InputError("x.whl: not a zip\nsecond line", reference="archive-damaged")


@_demo.command("unfinished")
def _unfinished() -> Exit:
    raise Unfinished("rolled back only in part: left x.py")


@_demo.command("bug")
def _bug() -> Exit:
    raise RuntimeError("boom")


@_demo.command("silent")
def _silent() -> None:
    """A command that returns nothing has succeeded."""


def test_run_decides_the_code(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHWHEEL_DEBUG", raising=False)
    assert run(_demo, ["no"]) == 1
    assert run(_demo, ["silent"]) == 0
    assert capsys.readouterr().err == ""
    assert run(_demo, ["unreadable"]) == 2
    assert capsys.readouterr().err == "torchwheel: error: x.whl: not a zip\\nsecond line\n"  # one line
    assert run(_demo, ["nope"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert run(_demo, ["unfinished"]) == 3  # begun, not finished: exit 2 would promise nothing changed
    assert capsys.readouterr().err == "torchwheel: error: rolled back only in part: left x.py\n"
    assert run(_demo, ["bug"]) == 2
    assert "internal error: RuntimeError: boom" in capsys.readouterr().err
    assert run(_demo, []) == 0  # no command: the help, on stdout
    assert "Commands:" in capsys.readouterr().out


def test_debug_shows_a_bug_but_not_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHWHEEL_DEBUG", "1")
    with pytest.raises(RuntimeError):
        run(_demo, ["bug"])
    assert run(_demo, ["unreadable"]) == 2


def test_the_real_commands_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cli, ["rule", "TW503"]) == 0
    assert run(cli, ["rule", "TW999"]) == 2
    assert run(cli, ["rule"]) == 2  # a misuse: neither a code nor --all
    assert run(cli, ["show", str(tmp_path / "absent.whl")]) == 2
    assert run(cli, ["--version"]) == 0
    capsys.readouterr()


def test_the_hint_is_the_command_lines_and_follows_the_message_on_its_line() -> None:
    """A reference in ``HINTS`` gets its remedy at the edge, after the message the library
    raised (which names none); the others are their message alone."""
    from torchwheel.cli.exits import HINTS, failure_message
    from torchwheel.errors import REFERENCES

    assert set(HINTS) <= set(REFERENCES)
    damaged = InputError("symbol table t.json: not JSON", reference="tables-file-invalid")
    assert (
        failure_message(damaged)
        == "symbol table t.json: not JSON (write one with `torchwheel symbols update`)"
    )
    busy = InputError("another torchwheel install is running in /v", reference="in-use")
    assert (
        failure_message(busy) == "another torchwheel install is running in /v (try again when it has ended)"
    )
    assert failure_message(InputError("x.whl: no", reference="not-a-wheel")) == "x.whl: no"
