"""Per-minor builds in one wheel: libraries that are the same library built for different
torch minors, of which the package's Python code loads the one matching the running torch.

Some published wheels ship one unstable library per torch minor, the minor in each file name
(``_C_torch24.so`` ... ``_C_torch29.so``, often in CPU and CUDA flavours), with a bare
``Requires-Dist: torch``: the wheel loads on every minor it has a build for, and a pin would
break it on all the others. Such a set is recognised by its names alone (same directory,
same name but for the torch minor, at least two different minors); ``compat`` confirms a
claim against a real torch's exports where one is at hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from torchwheel.torchabi.releases import Minor

# torch24, torch29, torch210, torch2_10, torch-2.9, torch_2_4: a word of its own in the name
_TOKEN = re.compile(r"(?<![A-Za-z0-9])torch[_.-]?(2)[_.-]?(\d{1,2})(?![0-9])", re.IGNORECASE)


def build_minor(member: str) -> tuple[str, Minor] | None:
    """(the name with its torch minor blanked out, the minor) when the file name names one."""
    directory, _, base = member.rpartition("/")
    found = list(_TOKEN.finditer(base))
    if len(found) != 1:
        return None  # no minor, or an ambiguous name: not a per-minor build by its name
    m = found[0]
    key = f"{directory}/{base[: m.start()]}*{base[m.end() :]}"
    return key, (int(m.group(1)), int(m.group(2)))


@dataclass(frozen=True)
class Alternatives:
    """One library built for several torch minors: ``key`` is its name with the minor as ``*``."""

    key: str
    members: tuple[tuple[Minor, str], ...]  # (minor, member), by minor

    @property
    def minors(self) -> frozenset[Minor]:
        return frozenset(minor for minor, _ in self.members)


def find_alternatives(members: Iterable[str]) -> list[Alternatives]:
    """The per-minor sets among ``members``: at least two different minors for one name."""
    groups: dict[str, list[tuple[Minor, str]]] = {}
    for member in members:
        found = build_minor(member)
        if found is not None:
            groups.setdefault(found[0], []).append((found[1], member))
    return [
        Alternatives(key, tuple(sorted(group)))
        for key, group in sorted(groups.items())
        if len({minor for minor, _ in group}) > 1
    ]
