"""What a caller of the library (``torchwheel.api``) may pass, checked before anything is
read: a path is a ``str`` or ``os.PathLike`` naming text without NUL, a list of names is a
sequence of strings (never one string, whose letters would be read as names), a version is a
string within ``max-version-length``. Anything else is a misuse, and a misuse is
``InputError`` with one line that names the argument, as the command line reports its
options, never a ``TypeError`` or ``ValueError`` from deep inside.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from torchwheel import limits
from torchwheel.errors import InvalidValue, quoted


def _kind(value: object) -> str:
    return type(value).__name__


def path(value: object, what: str) -> Path:
    """One path: ``str`` or ``os.PathLike`` of text, without NUL."""
    if not isinstance(value, str | os.PathLike):
        raise InvalidValue(f"{what}: a path is a str or os.PathLike, not {_kind(value)}")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise InvalidValue(f"{what}: a path of text (str), not {_kind(text)}")
    if "\x00" in text:
        raise InvalidValue(f"{what}: {quoted(text, 60)} holds a NUL byte, which no file name can")
    return Path(text)


def _many(value: object, what: str) -> list[object]:
    """The items of a sequence argument, at most ``max-inputs`` of them (an endless generator
    is refused after that many, not followed)."""
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise InvalidValue(f"{what}: a sequence, not {_kind(value)}")
    limit = limits.current().max_inputs
    items = list(itertools.islice(value, limit.value + 1))
    limit.check(f"{what}: the number of items", len(items))
    return items


def paths(value: object, what: str = "paths") -> tuple[Path, ...]:
    """One path or a sequence of them."""
    if isinstance(value, str | os.PathLike):
        return (path(value, what),)
    return tuple(path(item, what) for item in _many(value, what))


def names(value: object, what: str) -> tuple[str, ...]:
    """A sequence of strings (codes, distribution names)."""
    items = _many(value, what)
    bad = next((item for item in items if not isinstance(item, str)), None)
    if bad is not None:
        raise InvalidValue(f"{what}: a sequence of strings, holding {_kind(bad)}")
    return tuple(str(item) for item in items)


def text(value: object, what: str, version: bool = False) -> str | None:
    """An optional string; ``version``: bounded by ``max-version-length`` too."""
    if value is None:
        return None
    if version and type(value).__name__ == "Version" and type(value).__module__ == "packaging.version":
        value = str(value)  # a packaging Version is a version too (api.loads_on's torch=)
    if not isinstance(value, str):
        raise InvalidValue(f"{what}: a string, not {_kind(value)}")
    return limits.check_version(what, value) if version else value


def gpu(value: object) -> str | int | None:
    """A GPU: ``sm_90``/``9.0`` or the number 90 (a compute capability, not a bool)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 10_000:
        raise InvalidValue(
            f"gpu: 'sm_90', '9.0' or a compute capability number like 90, not {quoted(value, 40)}"
        )
    return value
