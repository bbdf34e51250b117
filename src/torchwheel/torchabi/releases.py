"""The torch releases torchwheel knows of, at the granularity releases are cut: a minor.

Per-target indexes, ``matrix`` columns and the shim table are all cut by torch minor
(``2.12``); a patch release adds no API.
"""

from __future__ import annotations

from torchwheel.torchabi.symtable import load_shipped
from torchwheel.version import FeatureVersion

Minor = tuple[int, int]


def known_torches() -> list[Minor]:
    """The torch releases the shipped symbol table was read from (2.9 ... 2.15 today)."""
    return sorted({minor_of(FeatureVersion.parse(s)) for s in load_shipped().sources})


def parse_minor(text: str) -> Minor:
    """``2.12`` or ``2.12.3`` as a minor; ValueError otherwise."""
    return minor_of(FeatureVersion.parse(text))


def minor_of(v: FeatureVersion) -> Minor:
    return (v.major, v.minor)


def show_minor(m: Minor) -> str:
    return f"{m[0]}.{m[1]}"
