"""``torchwheel.frozen`` beside ``dataclass(frozen=True)``: the same record, built cheaper.

Each pair of classes below is written once and made twice, by the stdlib and by ``frozen``;
every observable the package relies on must agree: construction and defaults,
``__post_init__``, ``repr``, equality and hash values, ordering, ``fields``/``replace``/
``asdict``, pickling and copying, ``cached_property``, and the refusals.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from torchwheel.frozen import frozen

Maker = Callable[[type[Any]], type[Any]]
MAKERS: dict[str, tuple[Maker, Maker]] = {
    "plain": (dataclasses.dataclass(frozen=True), frozen),
    "ordered": (dataclasses.dataclass(frozen=True, order=True), frozen(order=True)),
}


def _record(make: Maker, name: str = "Record") -> type[Any]:
    class Record:
        """A record with every kind of field the package uses."""

        name: str
        count: int = 0
        parts: tuple[str, ...] = ()
        notes: list[str] = dataclasses.field(default_factory=list, compare=False)
        hidden: str = dataclasses.field(default="h", repr=False)
        unhashed: int = dataclasses.field(default=1, hash=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "parts", tuple(self.parts))

        @functools.cached_property
        def label(self) -> str:
            return f"{self.name}:{self.count}"

    Record.__qualname__ = Record.__name__ = name
    made = make(Record)
    globals()[name] = made  # pickle finds a class by its module and name
    return made


def _observe(cls: type[Any]) -> list[object]:
    a = cls("a", 2, ["x"], ["n"])
    same = cls("a", 2, ("x",), ["other notes"])
    other = cls("b")
    seen: list[object] = [
        repr(a),
        a == same,
        a != other,
        a == ("a", 2),
        hash(a) == hash(same),
        hash(a),
        a.label,
        [f.name for f in dataclasses.fields(cls)],
        dataclasses.asdict(a),
        repr(dataclasses.replace(a, count=3)),
        pickle.loads(pickle.dumps(a)) == a,
        repr(copy.deepcopy(a)),
        cls.__match_args__,
    ]
    for attempt in (
        lambda: setattr(a, "count", 5),
        lambda: setattr(a, "new", 5),
        lambda: delattr(a, "count"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            attempt()
    seen.append(a.count)
    return seen


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_same_observables(kind: str) -> None:
    stdlib, ours = MAKERS[kind]
    theirs, mine = _observe(_record(stdlib, f"R_{kind}")), _observe(_record(ours, f"R_{kind}"))
    assert mine == theirs


def test_same_order() -> None:
    stdlib, ours = MAKERS["ordered"]
    for cls in (_record(stdlib), _record(ours)):
        items = [cls("b", 1), cls("a", 3), cls("a", 2)]
        assert [(r.name, r.count) for r in sorted(items)] == [("a", 2), ("a", 3), ("b", 1)]
        assert cls("a") < cls("b") and cls("b") >= cls("a")
    with pytest.raises(TypeError):
        _ = _record(ours)("a") < 1


def test_unordered_refuses_order() -> None:
    with pytest.raises(TypeError):
        _ = _record(frozen)("a") < _record(frozen)("b")


def test_own_methods_kept_and_setattr_refused() -> None:
    @frozen
    class Own:
        value: int

        def __repr__(self) -> str:
            return "mine"

        def __hash__(self) -> int:
            return 7

    assert repr(Own(1)) == "mine" and hash(Own(1)) == 7 and Own(1) == Own(1)

    with pytest.raises(TypeError, match="__setattr__"):

        @frozen
        class Mutable:
            value: int

            def __setattr__(self, name: str, value: object) -> None:
                object.__setattr__(self, name, value)


def test_one_field_and_no_field_hash_as_the_stdlib() -> None:
    @frozen
    class One:
        value: int

    @frozen
    class Empty:
        pass

    assert hash(One(5)) == hash((5,)) and hash(Empty()) == hash(())
    assert One(5) == One(5) and Empty() == Empty() and One(5) != One(6)
