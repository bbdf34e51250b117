"""Does a candidate load on one torch minor? The question ``index`` and ``matrix`` ask per cell.

The answer comes from ``candidates.TorchNeed`` (read from metadata): a stable wheel loads on
every torch whose minor is at least its floor's, an unstable one only on the minor it was
built for, a wheel without torch symbols anywhere. Compared at minor granularity because
that is how releases, per-target indexes and the symbol table are cut; a floor with a patch
(``2.12.1``) still needs ``Requires-Dist: torch>=2.12.1`` to keep out 2.12.0, and says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from typing import Literal

from torchwheel.install.candidates import TorchNeed
from torchwheel.version import FeatureVersion

Fit = Literal["loads", "only", "no"]
Minor = tuple[int, int]


def known_torches() -> list[Minor]:
    """The torch releases the shipped symbol table was read from (2.9 ... 2.15 today)."""
    from torchwheel.symtable import load_shipped

    return sorted({_minor(FeatureVersion.parse(s)) for s in load_shipped().sources})


def installed_torch() -> Minor | None:
    """The torch minor of the environment running torchwheel, if any."""
    try:
        return _minor(FeatureVersion.parse(version("torch").split("+", 1)[0]))
    except (PackageNotFoundError, ValueError):
        return None


def parse_minor(text: str) -> Minor:
    """``2.12`` or ``2.12.3`` as a minor; ValueError otherwise."""
    return _minor(FeatureVersion.parse(text))


def _minor(v: FeatureVersion) -> Minor:
    return (v.major, v.minor)


def show_minor(m: Minor) -> str:
    return f"{m[0]}.{m[1]}"


def fit(need: TorchNeed, torch: Minor) -> tuple[Fit, str]:
    """(the cell, why) for one wheel on one torch minor: ``choose.torch_verdict`` (the rule
    ``select`` applies) on that minor's first release; a floor with a patch counts for its
    own minor (it loads from that patch on)."""
    from packaging.version import Version

    from torchwheel.install.choose import torch_verdict

    probe = Version(f"{torch[0]}.{torch[1]}.0")
    if need.kind == "stable" and need.floor is not None and _minor(need.floor) == torch:
        probe = Version(need.floor.release)
    ok, why = torch_verdict(need, probe)
    if not ok:
        return "no", why
    return ("only" if need.kind == "unstable" else "loads"), why


def needed_minors(needs: Iterable[TorchNeed]) -> set[Minor]:
    """The minors the candidates themselves name (stable floors, unstable builds)."""
    out: set[Minor] = set()
    for n in needs:
        if n.kind == "stable" and n.floor is not None:
            out.add(_minor(n.floor))
        elif n.kind == "unstable" and n.minor is not None:
            out.add(n.minor)
    return out


def preference(need: TorchNeed) -> tuple[int, int]:
    """Among candidates that load on one torch, higher is better, as ``select`` ranks them
    (``choose``): stable before unstable before none (a stable wheel keeps loading when
    torch is upgraded), and among stable wheels the newest floor."""
    order = {"none": 0, "unstable": 1, "stable": 2}
    return order[need.kind], need.floor.to_int() if need.floor is not None else 0
