"""Editing ``Requires-Dist`` header lines of a METADATA file, everything else byte for byte.

Why not ``email`` (or ``packaging.metadata``) round trips: they re-fold and re-encode
headers and normalise the body, and a ``tag`` must change only the lines it reports. So
the split is written here, but it follows the parser installers use (``email.feedparser``,
which ``packaging.metadata.parse_email`` calls): lines end at CRLF, CR or LF; the header
block is the run of lines that look like headers or continuations; an empty line after
it is the separator, anything else starts the body. A description given as a folded
``Description:`` header is a header like any other. What was written is then parsed back
with ``packaging.metadata`` (``verify_requirements``) so a claim is never printed about
bytes that say something else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement

from torchwheel import limits
from torchwheel.errors import InputError

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_HEADER = re.compile(r"^(From |[\041-\071\073-\176]*:|[\t ])")  # email.feedparser.headerRE
_EOL = re.compile(r"(\r\n|\r|\n)$")


@dataclass
class _Header:
    lines: list[str]  # physical lines with their endings (continuations included)

    @property
    def name(self) -> str:
        return self.lines[0].split(":", 1)[0].strip().lower() if self.lines else ""  # [] = dropped

    @property
    def value(self) -> str:
        """Unfolded as compat32 does: line endings removed, the folding whitespace kept."""
        return "".join(_EOL.sub("", line) for line in self.lines).split(":", 1)[1].strip()

    @property
    def eol(self) -> str:
        found = _EOL.search(self.lines[-1])
        return found.group() if found else ""


def _split(text: str) -> tuple[list[_Header], str]:
    lines = _LINE.findall(text)
    headers: list[_Header] = []
    at = 0
    for line in lines:
        if not _HEADER.match(line):
            break
        if line[0] in " \t" and headers:
            headers[-1].lines.append(line)
        else:
            headers.append(_Header([line]))
        at += 1
    return headers, "".join(lines[at:])


def requirement(header_value: str) -> Requirement | None:
    """The line as packaging reads it, or None for one it must not be given: malformed
    (check's TW407), or holding a word past ``max-version-length`` (check's TW416; packaging
    would convert its digits with ``int()``, which refuses 4,300 of them)."""
    from torchwheel.wheel.metadata import longest_word

    if longest_word(header_value) > limits.current().max_version_length.value:
        return None
    try:
        return Requirement(header_value)
    except InvalidRequirement:  # a malformed line is check's business (TW407), not ours
        return None


def rewrite_requirements(
    text: str, name: str, edit: Callable[[list[Requirement]], tuple[Mapping[int, str | None], str | None]]
) -> tuple[str, list[str]]:
    """Apply ``edit`` to the ``Requires-Dist`` lines naming ``name``.

    ``edit`` gets those requirements and returns {index: new requirement text} and an
    optional requirement to add after the last ``Requires-Dist`` (or the last header).
    Returns the new text and the requirements for ``name`` it now states, in order.
    """
    headers, body = _split(text)
    eol = next((h.eol for h in headers if h.eol), "\n")  # the file's own line ending style
    found = [
        (i, req)
        for i, h in enumerate(headers)
        if h.name == "requires-dist"
        and (req := requirement(h.value)) is not None
        and req.name.lower() == name
    ]
    replaced, added = edit([req for _, req in found])
    for k, new in replaced.items():  # None: drop the line (tag --release replaces a whole set)
        i = found[k][0]
        headers[i] = _Header([f"Requires-Dist: {new}{headers[i].eol or eol}"] if new is not None else [])
    if added is not None:
        after = max((i for i, h in enumerate(headers) if h.name == "requires-dist"), default=len(headers) - 1)
        if after >= 0 and not headers[after].eol:  # the file ended without a line ending
            headers[after].lines[-1] += eol
        headers.insert(after + 1, _Header([f"Requires-Dist: {added}{eol}"]))
    kept = [replaced.get(k, str(req)) for k, (_, req) in enumerate(found)]
    claimed = [r for r in kept if r is not None] + ([added] if added else [])
    return "".join(line for h in headers for line in h.lines) + body, claimed


def verify_requirements(text: str, name: str, claimed: list[str], where: str) -> None:
    """The written METADATA, parsed as installers parse it, states exactly ``claimed``."""
    raw, _ = parse_email(text)
    stated = [
        str(r)
        for value in raw.get("requires_dist", [])
        if (r := requirement(value)) and r.name.lower() == name
    ]
    if stated != [str(Requirement(c)) for c in claimed]:
        raise InputError(
            f"{where}: METADATA would state {name} requirements {stated!r}, not the {claimed!r} "
            "torchwheel computed: refusing to write it",
            reference="internal-error",
        )
