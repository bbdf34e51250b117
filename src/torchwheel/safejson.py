"""JSON documents from outside, read so that none can recurse, balloon or surprise a reader.

Plain ``json.loads`` is not enough for bytes torchwheel did not write (a ``variant.json`` in a
downloaded wheel, a ``--symbols`` table, an index page): CPython's decoder recurses once per
nesting level (100,000 brackets end in ``RecursionError``), turns a 5,000-digit integer into
``ValueError`` (``int_max_str_digits``), accepts ``NaN`` and duplicate keys (two readers then
see two different documents), and holds every value as a Python object (a 16 MiB file of
``{},`` is five million dicts, 360 MB). And a document that parses is not yet one its reader
understands: a string where an object belongs ends in ``AttributeError`` far from the input.

So every JSON reader goes through ``load``: the size (``limits.max_json_bytes``), the number
of values (``max-json-values``) and the nesting depth (``max-json-depth``) are counted by a
scan that does not recurse *before* ``json.loads`` sees the text; a number literal longer
than ``MAX_NUMBER_CHARS`` is refused while parsing (no count, size or version needs more);
then the document is checked against its schema, a small declarative description below, and
the first path that does not fit is named in the one-line ``InputError``.

Standard library only (a JSON Schema library would be a dependency for five small shapes,
and none bounds the parse itself).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import field
from itertools import accumulate
from pathlib import Path
from typing import Any

from torchwheel import limits
from torchwheel.errors import InputError, Reference
from torchwheel.frozen import frozen
from torchwheel.safeopen import open_regular

MAX_NUMBER_CHARS = 100  # a 64-bit count is 20 digits; 5,000 digits is an attack on int()

# a JSON string, escapes included; an unterminated one runs to the end. Unambiguous (each
# character has one way through), so linear on any input, and it never backtracks.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = [0] * 256
_DEPTH_STEP[ord("[")] = _DEPTH_STEP[ord("{")] = 1
_DEPTH_STEP[ord("]")] = _DEPTH_STEP[ord("}")] = -1
_CHUNK = 1 << 16


class _Refused(ValueError):
    """Raised from inside ``json.loads`` (its hooks) with the reason."""


def _number(text: str) -> str:
    if len(text) > MAX_NUMBER_CHARS:
        raise _Refused(f"a number of {len(text):,} characters (at most {MAX_NUMBER_CHARS})")
    return text


def _int(text: str) -> int:
    return int(_number(text))


def _float(text: str) -> float:
    return float(_number(text))


def _constant(text: str) -> Any:
    raise _Refused(f"{text} is not JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"the key {_quote(key)} appears twice in one object")
        out[key] = value
    return out


def _scan(text: str, where: str) -> None:
    """Values and depth counted without recursion, before anything is built: strings are cut
    out (a bracket inside one is text), then brackets and commas are counted. Every value but
    the first of a container follows a comma, so strings + containers + commas + 1 bounds the
    objects ``json.loads`` would create. The depth pass stops at the first level too deep."""
    lim = limits.current()
    bare, strings = _STRING.subn("", text)
    opens = bare.count("[") + bare.count("{")
    lim.max_json_values.check(f"{where}: the number of JSON values", strings + opens + bare.count(",") + 1)
    depth_limit = lim.max_json_depth.value
    if opens <= depth_limit:
        return
    brackets = _NOT_BRACKET.sub("", bare).encode("ascii")
    level = 0
    for start in range(0, len(brackets), _CHUNK):
        levels = list(
            accumulate(map(_DEPTH_STEP.__getitem__, brackets[start : start + _CHUNK]), initial=level)
        )
        deepest = max(levels)
        if deepest > depth_limit:
            lim.max_json_depth.check(f"{where}: the JSON nesting depth", _deepest(brackets, start, levels))
        level = levels[-1]


def _deepest(brackets: bytes, start: int, levels: list[int]) -> int:
    """How deep the document goes, for the message: the next 4 Mi brackets counted too (in C),
    a bounded effort for a number that only informs."""
    rest = brackets[start + _CHUNK : start + _CHUNK + (1 << 22)]
    return max(max(levels), max(accumulate(map(_DEPTH_STEP.__getitem__, rest), initial=levels[-1])))


def load(data: bytes, where: str, schema: Schema, *, reference: Reference) -> Any:
    """The document in ``data``, checked against ``schema``; ``InputError`` naming ``where``
    and the first problem otherwise, with the caller's ``reference`` (what such a document is:
    an index page, a tables file, a wheel's own). UTF-8 only (RFC 8259)."""
    limits.current().max_json_bytes.check(f"{where}: the document's size", len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: not UTF-8 JSON (byte {exc.start:,} is not valid UTF-8)", reference=reference
        ) from exc
    _scan(text, where)
    try:
        doc = json.loads(
            text, parse_int=_int, parse_float=_float, parse_constant=_constant, object_pairs_hook=_pairs
        )
    except _Refused as exc:
        raise InputError(f"{where}: refused: {exc}", reference=reference) from exc
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", reference=reference
        ) from exc
    except (RecursionError, ValueError) as exc:  # the scan bounds both; a last line of defence
        raise InputError(
            f"{where}: not a JSON document torchwheel can read ({type(exc).__name__})", reference=reference
        ) from exc
    problem = schema.problem(doc, "$")
    if problem is not None:
        raise InputError(f"{where}: {problem}", reference=reference)
    return doc


def load_file(path: Path, where: str, schema: Schema, *, reference: Reference) -> Any:
    """A JSON file: a regular file only (``safeopen``), its size bounded before it is read."""
    try:
        fd = open_regular(path)
    except OSError as exc:
        raise InputError(
            f"{where}: {exc.strerror or exc}",
            reference="not-found" if isinstance(exc, FileNotFoundError) else "file-system-error",
        ) from exc
    try:
        size = os.fstat(fd).st_size
        limits.current().max_json_bytes.check(f"{where}: the file's size", size)
        with open(fd, "rb", closefd=False) as fh:
            data = fh.read(limits.current().max_json_bytes.value + 1)
    except OSError as exc:
        raise InputError(f"{where}: {exc.strerror or exc}", reference="file-system-error") from exc
    finally:
        os.close(fd)
    return load(data, where, schema, reference=reference)


# -- schemas -----------------------------------------------------------------------------------
#
# A schema answers one question, ``problem(value, path)``: None when the value fits, else one
# line naming the first path that does not. Depth is bounded by the scan, so the check recurses.


def _quote(key: str) -> str:
    """A key from the input as it may appear in a one-line message: escaped, bounded."""
    return json.dumps(key if len(key) <= 60 else key[:60] + "...")


_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]{0,59}")


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if _PLAIN_KEY.fullmatch(key) else f"{path}[{_quote(key)}]"


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    return "null"


class Schema:
    """What a value must be. Subclasses below; ``ANY`` accepts everything."""

    expected = "anything"

    def problem(self, value: Any, path: str) -> str | None:
        return None

    def _wrong(self, value: Any, path: str) -> str:
        return f"{path}: expected {self.expected}, found {_kind(value)}"


ANY = Schema()


@frozen
class Str(Schema):
    pattern: str | None = None  # the whole string must match
    choices: tuple[str, ...] = ()

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.choices:
            return " or ".join(json.dumps(c) for c in self.choices)
        return "a string" + (f" matching {self.pattern}" if self.pattern else "")

    def problem(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str):
            return self._wrong(value, path)
        if self.choices and value not in self.choices:
            return f"{path}: expected {self.expected}, found {_quote(value)}"
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            return f"{path}: {_quote(value)} does not match {self.pattern}"
        return None


@frozen
class Int(Schema):
    minimum: int | None = None
    maximum: int | None = None
    expected = "an integer"

    def problem(self, value: Any, path: str) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return self._wrong(value, path)
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            return f"{path}: {value} is outside {self.minimum}..{self.maximum}"
        return None


@frozen
class Bool(Schema):
    expected = "true or false"

    def problem(self, value: Any, path: str) -> str | None:
        return None if isinstance(value, bool) else self._wrong(value, path)


@frozen
class Null(Schema):
    expected = "null"

    def problem(self, value: Any, path: str) -> str | None:
        return None if value is None else self._wrong(value, path)


@frozen
class Either(Schema):
    """The first of ``options`` that fits; the message lists what would have."""

    options: tuple[Schema, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return " or ".join(o.expected for o in self.options)

    def problem(self, value: Any, path: str) -> str | None:
        if any(o.problem(value, path) is None for o in self.options):  # the first that fits ends it
            return None
        problems = [o.problem(value, path) for o in self.options]
        # an option of the value's own kind names a deeper problem (of several, the one that
        # got furthest into the value: the longest path); else: none fits
        same = [p for o, p in zip(self.options, problems, strict=True) if p and _fits_kind(o, value)]
        return max(same, key=lambda p: len(p.split(": ", 1)[0])) if same else self._wrong(value, path)


def _fits_kind(schema: Schema, value: Any) -> bool:
    kinds: dict[type[Schema], type | tuple[type, ...]] = {
        Str: str, Int: int, Bool: bool, Null: type(None), List: list, Object: dict
    }  # fmt: skip
    want = kinds.get(type(schema))
    return want is not None and isinstance(value, want)


@frozen
class List(Schema):
    item: Schema = ANY
    min_items: int = 0
    expected = "a list"

    def problem(self, value: Any, path: str) -> str | None:
        if not isinstance(value, list):
            return self._wrong(value, path)
        if len(value) < self.min_items:
            return f"{path}: expected at least {self.min_items} item(s), found {len(value)}"
        for i, item in enumerate(value):
            found = self.item.problem(item, f"{path}[{i}]")
            if found is not None:
                return found
        return None


@frozen
class Object(Schema):
    """Named ``fields`` (those in ``required`` must be present) and, for any other key,
    ``other``: None refuses unknown keys, ``ANY`` ignores them, a schema checks their values
    (a map such as ``providers``); ``keys``: a pattern every other key must match."""

    fields: Mapping[str, Schema] = field(default_factory=dict)
    required: Iterable[str] = ()
    other: Schema | None = None
    keys: str | None = None
    expected = "an object"

    def problem(self, value: Any, path: str) -> str | None:
        if not isinstance(value, dict):
            return self._wrong(value, path)
        for name in self.required:
            if name not in value:
                return f"{path}: the key {_quote(name)} is missing"
        for key, item in value.items():
            schema = self.fields.get(key)
            if schema is None:
                if self.other is None:
                    return f"{path}: unexpected key {_quote(key)}"
                if self.keys is not None and not re.fullmatch(self.keys, key):
                    return f"{path}: the key {_quote(key)} does not match {self.keys}"
                schema = self.other
            found = schema.problem(item, _child(path, key))
            if found is not None:
                return found
        return None
