"""``analysis.toplevel``: a file's top-level statements parsed from their lines alone are
the whole file's statements, positions included, or the parse says it cannot tell."""

from __future__ import annotations

import ast
from pathlib import Path

import torchwheel
from torchwheel.analysis.toplevel import Outline, sliceable, statements

SOURCES = Path(torchwheel.__file__).parent / "analysis"


def _same(data: bytes, wanted: list[int], tree: ast.Module | None = None) -> bool:
    tree = tree or ast.parse(data)
    got = statements(data, "m.py", Outline.of(tree), wanted)
    assert got is not None
    want = [tree.body[i] for i in sorted(wanted)]
    return [ast.dump(s, include_attributes=True) for s in got] == [
        ast.dump(s, include_attributes=True) for s in want
    ]


def test_each_statement_of_real_files_parses_alone_as_in_the_whole_file() -> None:
    """Every top-level statement of torchwheel's analysis sources (decorated functions,
    classes, docstrings, a BOM-less UTF-8 file), alone, every other one, and all."""
    for path in sorted(SOURCES.glob("*.py")):
        data = path.read_bytes()
        assert sliceable(data), path
        tree = ast.parse(data)
        count = len(tree.body)
        for wanted in ([i] for i in range(count)):
            assert _same(data, wanted, tree), (path, wanted)
        assert _same(data, list(range(0, count, 2)), tree) and _same(data, list(range(count)), tree), path


def test_statements_that_share_a_line_are_parsed_together() -> None:
    data = b"import os\na = 1; b = f(\n  2); c = g()\n\n@d\n# a comment\ndef h():\n    return 'x\xc3\xa9'\n"
    for wanted in ([1], [2], [3], [4], [2, 4], [0, 4]):
        assert _same(data, wanted), wanted


def test_lines_that_do_not_parse_alone_are_said_so() -> None:
    """A statement after a ``\\`` continuation starts indented: its lines alone do not
    parse, and the whole file is read instead."""
    data = b"a = 1; \\\n   b = f()\n"
    tree = ast.parse(data)
    assert tree.body[1].lineno == 2
    assert statements(data, "m.py", Outline.of(tree), [1]) is None


def test_a_text_cut_where_the_parser_would_not_is_not_sliceable() -> None:
    assert not sliceable(b"a = 1\rb = 2\n")  # a lone carriage return breaks a line
    assert not sliceable("# -*- coding: latin-1 -*-\nx = 'é'\n".encode("latin-1"))
    assert sliceable(b"a = 1\r\nb = 2\r\n")
