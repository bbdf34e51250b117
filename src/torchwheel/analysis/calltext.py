"""Where a ``.py`` file's text spells what ``reach`` reacts to, and which of those spellings
can be a call: found by ``bytes.find``, before (and often instead of) parsing the file.

``reach`` makes an event only of a call whose callee's own name is a loading word or a
helper's (``torch.ops.load_library(...)``, ``_load_lib("x")``) and of an import that names a
compiled module (its last part spelled: ``from . import _C``). The callee's name is written
in the call, in the span of every statement around it, and is followed, up to the call's
``(``, by nothing but white space, line continuations, comments or the closing parentheses
of a parenthesized callee (``(load_library)(p)``). A spelling that is not so followed, one
inside a longer name (``_dlopen(``), the name a ``def``/``class`` defines, one in a comment
or a string (right after a quote, or after a ``#`` with no quote before it on its line) and
``import_module("x")``/``__import__("x")`` of a name that is no compiled module's (vLLM's
``envs.py``: ``__import__("torch")``) is never such a call; nor is a compiled module's
name an import's where it is part of a longer name, followed by a quote
(``find_spec("pkg._C")``), or in a comment. A statement whose lines hold none of those
holds no event, and a file that holds none is not worth parsing.

That reading of the text holds where the file's names are the names its tree holds and its
lines are the lines the tree numbers: no lone carriage return (a line break to the parser,
not to ``split(b"\\n")``), and no letter that an identifier may hold and NFKC makes ASCII
(the ligature U+FB01, a fullwidth letter: the parser normalizes identifiers, so a fullwidth
``l`` in ``load_library`` still calls it). A character that cannot be in an identifier (the
ellipsis U+2026, which NFKC makes ``...``) is in a string or a comment of a file that parses, and one that NFKC keeps out of
ASCII cannot make a name ASCII. A file with a coding declaration is decoded as it says,
not read here. ``narrow`` says whether it holds for a file.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable

from torchwheel.frozen import frozen

_NAME_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
# what may stand between a callee's name and its call's "(": white space, a continuation,
# a comment (to the line's end: never a "(" in it), a parenthesized callee's ")". Possessive:
# tried again at every shorter split, a rule of "#" took 2**77 tries (numpy's add_newdoc).
_TO_CALL = re.compile(rb"(?:[\s\\)]|#[^\n]*+)*+\(")
_QUOTES = b"\"'"
# calls that import the module their first argument names, when it is a literal
# (``pyimports.dynamic_import``), and such an argument: an absolute name
_IMPORTERS = frozenset({b"import_module", b"__import__"})
_NAMED = re.compile(rb"\s*([\"'])([\w.]+)\1\s*[,)]")


@frozen
class Spelling:
    """Per line count i, how many of the first i lines (split at ``\\n``, as ``lineno``
    counts them where ``narrow`` holds) spell a needle at all (``spelled``), and how many a
    call of a called needle or any of the others (``calling``)."""

    spelled: list[int]
    calling: list[int]

    @property
    def calls(self) -> bool:
        """Does any line spell a call (or a compiled module's name)?"""
        return self.calling[-1] > 0


def narrow(data: bytes) -> bool:
    """Does the text say what the tree holds (module docstring)?"""
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return False
    if data.isascii():
        return True
    if any(b"coding" in line for line in data.split(b"\n", 2)[:2]):
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not any(_ascii_name(c) for c in set(text) if c > "\x7f")


def _ascii_name(c: str) -> bool:
    """Can ``c`` be in an identifier and turn, normalized, into ASCII letters?"""
    form = unicodedata.normalize("NFKC", c)
    return any(x < "\x80" for x in form) and ("a" + form).isidentifier()


def _defines(data: bytes, at: int) -> bool:
    """Is the name at ``at`` the one a ``def`` or ``class`` defines?"""
    i = at
    while i > 0 and data[i - 1] in b" \t":
        i -= 1
    if i == at:
        return False
    for keyword in (b"def", b"class"):
        start = i - len(keyword)
        if start >= 0 and data[start:i] == keyword and (start == 0 or data[start - 1] not in _NAME_BYTES):
            return True
    return False


def _in_text(data: bytes, at: int) -> bool:
    """Is the spelling at ``at`` in a string or a comment, by its line alone: right after
    a quote (a name cannot follow a string), or after a ``#`` with no quote before it on
    the line (the ``#`` starts a comment, or the line is inside a string up to there)?"""
    if at and data[at - 1] in _QUOTES:
        return True
    before = data[data.rfind(b"\n", 0, at) + 1 : at]
    return b"#" in before and b'"' not in before and b"'" not in before


def _may_call(data: bytes, at: int, end: int, modules: frozenset[str]) -> bool:
    """Can the name spelled at ``data[at:end]`` be the callee of a call that is an event
    (module docstring)?"""
    if at and data[at - 1] in _NAME_BYTES:
        return False
    paren = _TO_CALL.match(data, end)
    if paren is None or _defines(data, at) or _in_text(data, at):
        return False
    if data[at:end] in _IMPORTERS:
        named = _NAMED.match(data, paren.end())
        if named is not None and not named[2].startswith(b".") and named[2].decode() not in modules:
            return False
    return True


def _may_import(data: bytes, at: int, end: int) -> bool:
    """Can the compiled module's name spelled at ``data[at:end]`` be one an import spells
    (module docstring)?"""
    if (at and data[at - 1] in _NAME_BYTES) or (end < len(data) and data[end] in _NAME_BYTES + _QUOTES):
        return False
    return not _in_text(data, at)


def spelling(
    data: bytes, called: Iterable[bytes], named: Iterable[bytes], modules: frozenset[str]
) -> Spelling:
    """Where ``data`` spells the ``called`` names (loading words, helpers) and the
    ``named`` ones (the last parts of the compiled ``modules``): each needle found by ``bytes.find``,
    once per line at most, so that a statement is then one subtraction (``reach._spells``),
    where joining its lines and looking for every needle in them was a third of the reading
    of vLLM's Python. No needle holds a line break, so a statement spells one when its lines
    do. The lines are counted, not split: a file is read at each level of helpers."""
    found: list[tuple[int, bool]] = []  # (offset, a call) of a needle, the first per line at most
    for needle, is_called in itertools.chain(((n, True) for n in called), ((n, False) for n in named)):
        at = data.find(needle) if needle else -1
        while at >= 0:
            end = at + len(needle)
            call = _may_call(data, at, end, modules) if is_called else _may_import(data, at, end)
            found.append((at, call))
            # the next spelling on a later line, or on this one while it spells no call yet
            at = data.find(needle, at + 1 if not call else data.find(b"\n", at) + 1 or len(data))
    lines = data.count(b"\n") + 1
    hit = bytearray(lines)
    calls = bytearray(lines)
    line, counted = 0, 0
    for at, call in sorted(found):
        line += data.count(b"\n", counted, at)
        counted = at
        hit[line] = 1
        calls[line] |= call
    return Spelling(list(itertools.accumulate(hit, initial=0)), list(itertools.accumulate(calls, initial=0)))
