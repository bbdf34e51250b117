"""wheel/headers.py reads a header block field for field as the standard library's
``email.parser.HeaderParser`` (compat32) does: the parser pip and installer use is the
reference, as lief is for the binary readers."""

from __future__ import annotations

import itertools
import random
from email.parser import HeaderParser

import pytest

from torchwheel.wheel.headers import parse_headers

# every kind of line feedparser treats specially, in every line ending
_PIECES = [
    "Name: demo",
    "Version: 1.0",
    "Requires-Dist: torch>=2.10",
    "requires-dist:torch ; extra == 'x'",
    "Tag: cp39-abi3-linux_x86_64",
    " folded continuation",
    "\tTab continuation",
    "From someone@example",
    "From: a header named From",
    ": no field name",
    "no colon at all",
    "",
    "Empty:",
    "Spaces:   \t  padded  ",
    "Weird!#$%&'*+-.^_`|~: printable name",
    "Nämé: not ascii",
    "X:\x00nul in value",
]
_ENDS = ["\n", "\r\n", "\r"]


def _reference(text: str) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in HeaderParser().parsestr(text).items()]


def _texts() -> list[str]:
    rng = random.Random(803)  # fixed: the same cases every run, so a failure is repeatable
    texts = ["", "\n", "Name: x", "Name: x\n\nbody: not a header\n"]
    for a, b in itertools.product(_PIECES, repeat=2):
        texts.append(f"{a}\n{b}\n")
    for _ in range(3000):
        n = rng.randint(1, 8)
        texts.append("".join(rng.choice(_PIECES) + rng.choice(_ENDS) for _ in range(n)))
        texts[-1] += rng.choice(["", "tail without end", "\n\nDescription body\nKey: v\n"])
    return texts


@pytest.mark.parametrize("chunk", range(8))
def test_fields_match_the_standard_library(chunk: int) -> None:
    texts = _texts()[chunk::8]
    for text in texts:
        assert parse_headers(text).items() == _reference(text), repr(text)


def test_lookups_match_message() -> None:
    text = "Name: a\nname: b\nRequires-Dist: x\nREQUIRES-DIST: y\nVersion:\n 1.0\n"
    ours, theirs = parse_headers(text), HeaderParser().parsestr(text)
    for key in ("Name", "NAME", "Requires-Dist", "Version", "Missing"):
        assert ours.get(key) == theirs.get(key)
        assert ours[key] == theirs[key]
        assert ours.get_all(key) == theirs.get_all(key)
    assert list(ours) == list(theirs) == ours.keys()


def test_a_difference_is_caught() -> None:
    """The comparison can fail: a value that keeps its padding differs from the reference."""
    text = "Name:   padded\n"
    assert parse_headers(text).items() != [("Name", "  padded")]
    assert parse_headers(text).items() == _reference(text)
