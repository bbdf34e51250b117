"""One exit-code decision for ``select``, ``install``, ``matrix`` and ``index``, made per
project: every project ends as *chosen* (0), *nothing fits* (1) or *unreadable* (2), and a
command exits with the worst of them (``exit_code``; for the grids of ``matrix`` and
``index``, ``grid_exit_code``). The codes are ``errors.Exit``; what they mean per command is
``cli/exits.py``.

- chosen: a wheel of it loads on the target (``matrix``/``index``: on every ``--torch`` asked);
- nothing fits: every wheel of it was read and none loads there; also a ``--name`` that the
  sources hold no wheel of (pip says "no matching distribution" for both, and exits 1);
- unreadable: a wheel of it could not be read or verified (a corrupt download, a digest that
  differs from its index page, what ``check`` calls broken). The unreadable file might have
  been the choice, so neither "chosen" nor "nothing fits" would be true: the report still
  names what the readable files give, and ``install`` installs nothing. A file whose name is
  no wheel name belongs to no project and makes the whole run unreadable.

Files passed over on what an index page says (yanked, tags, a requirement that excludes the
torch, ranked after the choice) are answers, not unreadable input.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from packaging.utils import NormalizedName, canonicalize_name

from torchwheel.errors import Exit
from torchwheel.frozen import frozen
from torchwheel.selection.candidates import Candidate, Gathered, Skipped
from torchwheel.selection.choose import Choice, fit
from torchwheel.torchabi.torch_releases import Minor, show_minor

Kind = Literal["chosen", "nothing-fits", "absent", "unreadable"]
EXIT: dict[Kind, Exit] = {
    "chosen": Exit.OK,
    "nothing-fits": Exit.NO,
    "absent": Exit.NO,
    "unreadable": Exit.INPUT,
}


@frozen
class Outcome:
    choice: Choice
    kind: Kind
    unreadable: tuple[Skipped, ...] = ()

    @property
    def name(self) -> str:
        return self.choice.name


def outcomes(choices: list[Choice], gathered: Gathered, names: Iterable[str] = ()) -> list[Outcome]:
    """Every project the run is about (chosen among candidates, only skipped or passed over,
    or asked for by name), sorted by name."""
    by_name = {c.name: c for c in choices}
    wanted: set[str] = {canonicalize_name(n) for n in names}
    projects = set(by_name) | wanted
    projects |= {s.name for s in [*gathered.skipped, *gathered.unopened] if s.name is not None}
    out = []
    for name in sorted(projects):
        choice = by_name.get(name, Choice(name, None, []))
        bad = tuple(s for s in gathered.skipped if s.name == name)
        passed = any(s.name == name for s in gathered.unopened)
        kind: Kind
        if bad:
            kind = "unreadable"
        elif choice.chosen is not None:
            kind = "chosen"
        elif choice.verdicts or passed:
            kind = "nothing-fits"
        else:
            kind = "absent"
        out.append(Outcome(choice, kind, bad))
    return out


def strays(gathered: Gathered) -> list[Skipped]:
    """Unreadable inputs of no project (a file name that is no wheel name, a missing page)."""
    return [s for s in gathered.skipped if s.name is None]


def exit_code(found: list[Outcome], gathered: Gathered) -> Exit:
    """The worst project's code; a stray unreadable input is an exit 2, and a run about no
    project at all found nothing that fits (1)."""
    codes = [EXIT[o.kind] for o in found] + ([Exit.INPUT] if strays(gathered) else [])
    return max(codes, default=Exit.NO)


def absent_text(name: str, gathered: Gathered) -> str:
    others = sorted(gathered.other_names)
    held = f" (they hold: {', '.join(others)})" if others else ""
    return f"{name}: no wheel of this project in the sources{held}"


def _first(skipped: list[Skipped] | tuple[Skipped, ...]) -> str:
    first = skipped[0]
    more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
    return f"{first.location}: {first.reason}{more}"


def refusal_line(found: list[Outcome], gathered: Gathered) -> str:
    """The one stderr line of an exit 2: the first input that could not be used (the report
    on stdout lists every one with its reason)."""
    if not gathered.candidates and gathered.skipped:
        return f"no readable candidate: {_first(gathered.skipped)}"
    bad = next((o for o in found if o.kind == "unreadable"), None)
    if bad is not None:
        return f"{bad.name}: a candidate could not be read: {_first(bad.unreadable)}"
    return _first(strays(gathered))


def uncovered(cands: list[Candidate], asked: Iterable[Minor]) -> list[str]:
    """``matrix``/``index`` with ``--torch``: each project and asked torch minor that no wheel
    of it loads on (the "nothing fits" of a grid)."""
    by_name: dict[NormalizedName, list[Candidate]] = {}
    for c in cands:
        by_name.setdefault(c.name, []).append(c)
    return [
        f"{name}: no wheel loads on torch {show_minor(m)}"
        for name in sorted(by_name)
        for m in sorted(set(asked))
        if not any(fit(c, m).loads for c in by_name[name])
    ]


def grid_exit_code(cands: list[Candidate], asked: Iterable[Minor]) -> tuple[Exit, list[str]]:
    """``matrix``/``index`` once every input was read (an unreadable one has ended the run
    with exit 2 before): each project is *chosen* when a wheel of it loads on every
    ``--torch`` asked, else *nothing fits*; the code of the worst, and a line per gap."""
    missing = uncovered(cands, asked)
    return (EXIT["nothing-fits"] if missing else EXIT["chosen"]), missing
