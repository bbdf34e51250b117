"""A parsed file's top-level statements by their lines, so that a later reading parses only
the statements it reads (``reach``: a file read again at the next level of helpers).

``reach`` reads a file again when a helper it calls was found, and reads then only the
top-level statements whose lines spell a call it reacts to (``calltext``): on vLLM a third
of the text it read before. Holding the files' trees between levels cost 25-30 MB (a tree
is about fifteen times its text); parsing each file whole again cost 0.25 s. An
``Outline`` keeps each statement's position, and ``statements`` parses the lines of the
statements asked for, with as many line breaks before them as there were lines: the
parser then numbers lines and columns as in the whole file. A statement's lines hold it
alone where no other starts or ends on them (``a = 1; b = 2``): such neighbours are parsed
with it. Where the lines do not parse so, or parse into other statements than the whole
file's (a ``\\`` continuation before the statement), ``statements`` says so and the whole
file is parsed: the trees a reading gets are the whole file's either way.

It holds where the parser's lines are the lines split at ``\\n`` and the text is read as
UTF-8 wherever it is cut: ``calltext.narrow`` and no coding declaration (``sliceable``).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence

from torchwheel.analysis.calltext import narrow
from torchwheel.analysis.pyimports import parsed
from torchwheel.frozen import frozen

# a statement's (first line with its decorators, lineno, col_offset, end_lineno, end_col_offset)
Span = tuple[int, int, int, int, int]


def statement_span(node: ast.stmt) -> Span:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)])
    return first, node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0


@frozen
class Outline:
    """A parsed file's top-level statements' ``Span``s, in order."""

    spans: tuple[Span, ...]

    @classmethod
    def of(cls, tree: ast.Module) -> Outline:
        return cls(tuple(statement_span(s) for s in tree.body))


def sliceable(data: bytes) -> bool:
    """Are the text's lines the parser's lines, and is every cut of it read as the whole
    (module docstring)?"""
    return narrow(data) and not any(b"coding" in line for line in data.split(b"\n", 2)[:2])


def _groups(spans: Sequence[Span], wanted: Sequence[int]) -> list[tuple[int, int]]:
    """Runs of statement indexes, first and last, holding the wanted ones and the
    neighbours that share a line with them; wanted statements in a row share a run."""
    out: list[tuple[int, int]] = []
    for i in sorted(wanted):
        first = last = i
        while first > 0 and spans[first - 1][3] >= spans[first][0]:
            first -= 1
        while last + 1 < len(spans) and spans[last + 1][0] <= spans[last][3]:
            last += 1
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(last, out[-1][1]))
        else:
            out.append((first, last))
    return out


def statements(data: bytes, member: str, outline: Outline, wanted: Sequence[int]) -> list[ast.stmt] | None:
    """The top-level statements ``wanted`` (indexes into the outline), parsed from their
    lines alone, as the whole file's parse has them; None where their lines do not parse
    into the same statements (module docstring)."""
    spans = outline.spans
    if not wanted:
        return []
    lines = data.split(b"\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    out: list[ast.stmt] = []
    want = set(wanted)
    for first, last in _groups(spans, wanted):
        top, bottom = spans[first][0], spans[last][3]
        if bottom > len(lines):
            return None
        text = b"\n" * (top - 1) + data[starts[top - 1] : starts[bottom]]
        tree = parsed(text, member)
        if tree is None or [statement_span(s) for s in tree.body] != list(spans[first : last + 1]):
            return None
        out += [s for i, s in enumerate(tree.body, first) if i in want]
    return out
