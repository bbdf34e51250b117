"""cli/colour.py: the no-color.org / force-color.org convention (a non-empty NO_COLOR wins,
a non-empty FORCE_COLOR colours a pipe, else only a terminal that is not TERM=dumb), and
which parts of a ``check`` report get which colour."""

from __future__ import annotations

import pytest

from torchwheel.cli.colour import enabled, findings

_BOLD, _RED, _YELLOW, _CYAN, _GREEN, _END = (
    "\x1b[1m",
    "\x1b[31m",
    "\x1b[33m",
    "\x1b[36m",
    "\x1b[32m",
    "\x1b[0m",
)


@pytest.mark.parametrize(
    ("no_color", "force_color", "expected"),
    [
        (None, None, False),  # TERM=dumb (and pytest's captured output is no terminal)
        ("1", None, False),
        (None, "1", True),
        ("1", "1", False),  # NO_COLOR wins
        ("", "1", True),  # an empty NO_COLOR is no request
        (None, "", False),  # nor an empty FORCE_COLOR
    ],
)
def test_enabled_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, no_color: str | None, force_color: str | None, expected: bool
) -> None:
    monkeypatch.setenv("TERM", "dumb")
    for name, value in (("NO_COLOR", no_color), ("FORCE_COLOR", force_color)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert enabled() is expected
    assert enabled(err=True) is expected


def test_a_finding_line_gets_its_code_bold_and_its_severity_coloured() -> None:
    line = "demo.whl: lib.so: TW101 error the marker is missing"
    assert findings(line) == (
        f"demo.whl: lib.so: {_BOLD}TW101{_END} {_RED}{_BOLD}error{_END} the marker is missing"
    )
    assert findings("x: TW202 warning y") == f"x: {_BOLD}TW202{_END} {_YELLOW}{_BOLD}warning{_END} y"
    assert findings("x: TW303 info y") == f"x: {_BOLD}TW303{_END} {_CYAN}{_BOLD}info{_END} y"


def test_a_code_not_after_a_colon_is_left_alone() -> None:
    assert findings("TW101 error at the start of a line") == "TW101 error at the start of a line"
    assert findings("x: TW1010 error") == "x: TW1010 error"


def test_the_summary_colours_only_counts_that_are_not_zero() -> None:
    assert findings("2 inputs checked: 0 error(s), 0 warning(s), clean") == (
        f"2 inputs checked: 0 error(s), 0 warning(s){_GREEN}, clean{_END}"
    )
    assert findings("1 input checked: 3 error(s), 1 warning(s)") == (
        f"1 input checked: {_RED}{_BOLD}3 error(s){_END}, {_YELLOW}1 warning(s){_END}"
    )
    assert findings("1 input checked: 0 error(s), 0 warning(s), 0 info(s) - all clean") == (
        f"1 input checked: 0 error(s), 0 warning(s), 0 info(s){_GREEN} - all clean{_END}"
    )
    assert findings("1 input checked: 0 error(s), 1 warning(s), 2 info(s)") == (
        f"1 input checked: 0 error(s), {_YELLOW}1 warning(s){_END}, {_CYAN}2 info(s){_END}"
    )
