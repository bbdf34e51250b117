"""Email-style header blocks (METADATA, WHEEL, a ``.metadata`` file), read field for field as
``email.parser.HeaderParser`` reads them with its default ``compat32`` policy, which is what
pip, installer and ``packaging.metadata`` read.

Written here rather than imported because ``email.parser`` costs a small ``check`` a fifth
of its own import time (it brings ``socket``, ``calendar``, ``random``, ``email.utils`` and
the MIME machinery, none of which a header block needs). ``tests/wheel/test_headers.py``
holds it to the standard library's parser on every shape of input that parser treats
specially: line ends (``\\r\\n``, ``\\r``, ``\\n``), folded values, a first line that is a
continuation, a ``From `` envelope line, a line with no colon (the body starts there), an
empty field name, and the blank line that ends the block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# feedparser.headerRE: what may begin a header line (a field name of printable ASCII but
# ':' and then ':', a continuation, or the mbox envelope "From ")
_HEADER_LINE = re.compile(r"(From |[\041-\071\073-\176]*:|[\t ])")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # StringIO(newline="").readlines()


class Headers:
    """The fields of one header block in file order, repeats kept; names compare without
    case, as ``email.message.Message`` compares them."""

    __slots__ = ("_fields",)

    def __init__(self, fields: list[tuple[str, str]]) -> None:
        self._fields = fields

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in self._fields])

    def keys(self) -> list[str]:
        return [name for name, _ in self._fields]

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first field of that name (``Message.get``)."""
        wanted = name.lower()
        return next((value for key, value in self._fields if key.lower() == wanted), default)

    def __getitem__(self, name: str) -> str | None:
        return self.get(name)

    def get_all(self, name: str) -> list[str] | None:
        wanted = name.lower()
        found = [value for key, value in self._fields if key.lower() == wanted]
        return found or None


def parse_headers(text: str) -> Headers:
    """``HeaderParser().parsestr(text)``'s fields: the block ends at a blank line or at the
    first line that is no header line; what follows (the description) is not read."""
    block: list[str] = []
    for line in _LINES.findall(text):
        if not _HEADER_LINE.match(line):
            break  # a blank line, or the body starting without one
        block.append(line)
    return Headers(_fields(block))


def _fields(lines: list[str]) -> list[tuple[str, str]]:
    """feedparser._parse_headers with compat32's header_source_parse."""
    fields: list[tuple[str, str]] = []
    current: list[str] = []
    for number, line in enumerate(lines):
        if line[0] in " \t":
            if current:  # a continuation of the field before; a first-line one is dropped
                current.append(line)
            continue
        if current:
            fields.append(_field(current))
            current = []
        if line.startswith("From "):
            if number == len(lines) - 1 and number:
                break  # feedparser pushes it back as the first line of the body
            continue  # the envelope line (first) or a misplaced one: not a field
        if line.find(":") == 0:
            continue  # no field name: feedparser notes a defect and goes on
        current = [line]
    if current:
        fields.append(_field(current))
    return fields


def _field(lines: list[str]) -> tuple[str, str]:
    name, value = lines[0].split(":", 1)
    value = value.lstrip(" \t") + "".join(lines[1:])
    return name, value.rstrip("\r\n")
