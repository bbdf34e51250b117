"""Frozen record classes that cost little to define.

``dataclass(frozen=True)`` on CPython 3.11 compiles six functions per class, each with its
own ``exec`` (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and
``__delattr__``): about half a millisecond a class. ``check`` defines some sixty record
classes before it reads a byte, a quarter of its start-up (docs/evidence/performance.md,
"Start-up"); CPython 3.13 compiles them in one ``exec``. Until 3.13 is the floor,
``frozen`` has ``dataclasses`` compile ``__init__`` alone and gives every class the same
five functions, which read the class's field names, gathered once when it is defined.

What a record does is what ``dataclass(frozen=True)`` does, and tests/test_frozen.py holds
the two side by side: the same fields, defaults, ``__post_init__``, ``dataclasses.fields``,
``replace`` and ``asdict``, the same ``repr``, equality and hash values, and
``FrozenInstanceError`` on assignment or deletion, and with ``@frozen(order=True)`` the
same ordering. Records with ``slots=True`` stay stdlib dataclasses (there are two, and slots
change the layout).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

_C = TypeVar("_C", bound=type[Any])

_Key = Callable[[object], tuple[object, ...]]


def _key(names: tuple[str, ...]) -> _Key:
    """A function giving the tuple of those attributes, as the generated methods build it."""
    if len(names) > 1:
        return attrgetter(*names)  # a tuple for two names or more
    if names:
        one = attrgetter(names[0])
        return lambda record: (one(record),)
    return lambda record: ()


def _eq(self: Any, other: Any) -> Any:  # a bool, or NotImplemented for another class
    if other.__class__ is not self.__class__:
        return NotImplemented
    key: _Key = self.__record_compared__
    return key(self) == key(other)


def _hash(self: Any) -> int:
    key: _Key = self.__record_hashed__
    return hash(key(self))


def _repr(self: Any) -> str:
    names: tuple[str, ...] = self.__record_shown__
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
    return f"{self.__class__.__qualname__}({shown})"


def _ordering(compare: Callable[[object, object], bool]) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:  # a bool, or NotImplemented for another class
        if other.__class__ is not self.__class__:
            return NotImplemented
        key: _Key = self.__record_compared__
        return compare(key(self), key(other))

    return method


_ORDER = {
    name: _ordering(getattr(operator, name.strip("_"))) for name in ("__lt__", "__le__", "__gt__", "__ge__")
}


def _setattr(self: Any, name: str, value: object) -> None:
    # __init__ assigns each field once; after that, every assignment is refused
    if name in self.__dict__ or name not in self.__record_fields__:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


@overload
def frozen(cls: _C, /) -> _C: ...
@overload
def frozen(*, order: bool = False) -> Callable[[_C], _C]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: _C | None = None, /, *, order: bool = False) -> _C | Callable[[_C], _C]:
    """Make ``cls`` an immutable record, as ``@dataclass(frozen=True, order=order)`` would.

    As there, a ``__repr__``, ``__eq__`` or ``__hash__`` the class defines itself is kept,
    and one that defines ``__setattr__``, ``__delattr__`` or (with ``order``) a comparison
    is refused.
    """
    if cls is None:
        return lambda cls: _make(cls, order)
    return _make(cls, order)


def _make(cls: _C, order: bool) -> _C:
    own = cls.__dict__
    refused = ("__setattr__", "__delattr__", *(_ORDER if order else ()))
    for name in refused:
        if name in own:
            raise TypeError(f"cannot overwrite attribute {name} in class {cls.__name__}")
    class_hash = own.get("__hash__")
    explicit_hash = "__hash__" in own and not (class_hash is None and "__eq__" in own)
    dataclasses.dataclass(cls, eq=False, repr=False)  # compiles __init__ alone, in place
    fields = dataclasses.fields(cls)
    names = {
        "__record_fields__": frozenset(f.name for f in fields),
        "__record_shown__": tuple(f.name for f in fields if f.repr),
        # staticmethod: read through the instance, a key function must stay unbound
        "__record_compared__": staticmethod(_key(tuple(f.name for f in fields if f.compare))),
        "__record_hashed__": staticmethod(
            _key(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))
        ),
    }
    shared: dict[str, object] = {"__repr__": _repr, "__eq__": _eq}
    if order:
        shared.update(_ORDER)
    if not explicit_hash:
        shared["__hash__"] = _hash
    for name, value in names.items():
        setattr(cls, name, value)
    for name, function in shared.items():
        if name not in own or (name == "__hash__" and own[name] is None):
            setattr(cls, name, function)
    setattr(cls, "__setattr__", _setattr)  # noqa: B010  # mypy refuses a plain assignment to a method
    setattr(cls, "__delattr__", _delattr)  # noqa: B010
    return cls
