"""Where a ``.py`` file's text spells what ``reach`` reacts to, and which of those spellings
can be a call: found by ``bytes.find``, before (and often instead of) parsing the file.

``reach`` makes an event only of a call whose callee's own name is a loading word or a
helper's (``torch.ops.load_library(...)``, ``_load_lib("x")``) and of an import that names a
compiled module (its last part spelled: ``from . import _C``). The callee's name is written
in the call, in the span of every statement around it, and is followed, up to the call's
``(``, by nothing but white space, line continuations, comments or the closing parentheses
of a parenthesized callee (``(load_library)(p)``). A spelling that is not so followed, one
inside a longer name (``_dlopen(``) or the name a ``def``/``class`` defines is never such a
call: a statement whose lines hold neither a call spelling nor a compiled module's name
holds no event, and a file that holds none is not worth parsing.

That reading of the text holds where the file's names are the names its tree holds and its
lines are the lines the tree numbers: an ASCII file (an identifier of other letters may be
normalized, NFKC, to a loading word) without a lone carriage return (a line break to the
parser, not to ``split(b"\\n")``). ``narrow`` says whether it holds for a file.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from torchwheel.frozen import frozen

_NAME_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
# what may stand between a callee's name and its call's "(": white space, a continuation,
# a comment (to the line's end), a parenthesized callee's ")"
_TO_CALL = re.compile(rb"(?:[\s\\)]|#[^\n]*)*\(")


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
    """Does the text say what the tree holds (module docstring): ASCII, no lone ``\\r``?"""
    return data.isascii() and (b"\r" not in data or data.count(b"\r") == data.count(b"\r\n"))


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


def _may_call(data: bytes, at: int, end: int) -> bool:
    """Can the name spelled at ``data[at:end]`` be a call's callee (module docstring)?"""
    if at and data[at - 1] in _NAME_BYTES:
        return False
    return _TO_CALL.match(data, end) is not None and not _defines(data, at)


def spelling(data: bytes, called: Iterable[bytes], named: Iterable[bytes]) -> Spelling:
    """Where ``data`` spells the ``called`` names (loading words, helpers) and the
    ``named`` ones (compiled modules' last parts): each needle found by ``bytes.find``,
    once per line at most, so that a statement is then one subtraction (``reach._spells``),
    where joining its lines and looking for every needle in them was a third of the reading
    of vLLM's Python. No needle holds a line break, so a statement spells one when its lines
    do. The lines are counted, not split: a file is read at each level of helpers."""
    found: list[tuple[int, bool]] = []  # (offset, a call) of a needle, the first per line at most
    for needle, is_called in itertools.chain(((n, True) for n in called), ((n, False) for n in named)):
        at = data.find(needle) if needle else -1
        while at >= 0:
            call = not is_called or _may_call(data, at, at + len(needle))
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
