"""The choice: which candidate loads on the target, and why every other one does not.

A pure function of candidates and target (no I/O). Whether a wheel loads on the target's
torch is ``torchabi.verdicts.verdict``, the one verdict ``select``, ``install``, ``index``,
``matrix`` and ``compat`` share: a stable wheel loads on every torch >= its floor, an unstable
build only on the minor(s) it was built for, a wheel without torch symbols anywhere, and the
wheel's own ``Requires-Dist: torch`` (markers evaluated for the target) must admit the torch,
or an installer would try to swap it.

Ranking among the wheels that fit, best first, as pip and uv rank files: the highest version
(all of PEP 440, so ``0.1.0+torch2.10`` outranks ``0.1.0``, and local labels compare segment
by segment), then the wheel tags in the target's ``sys_tags()`` order, then the higher build
tag; then what only torchwheel knows, for files that pip could not tell apart (one file name
in two folders): the torch ABI (stable before unstable before none: a stable wheel keeps
loading when torch is upgraded; among stable wheels the newest floor, which may use the
newest shims).

Pre-releases are held back as pip holds them back: while a final release of the project has
a file whose tags fit the target, a pre-release is passed over even when it loads, unless
``--pre``; with no such final release, pre-releases are considered (pip and uv alike).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from packaging.tags import Tag
from packaging.version import Version

from torchwheel.frozen import frozen
from torchwheel.selection.candidates import Candidate
from torchwheel.selection.target import TorchTarget, markers_for_tags
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.torchabi.need import TorchNeed
from torchwheel.torchabi.torch_releases import Minor, minor_of
from torchwheel.torchabi.verdicts import Verdict, minor_verdict, verdict


@frozen
class Judged:
    """One candidate and the one verdict on it (``torchabi.verdicts.Verdict``; the tags and
    Requires-Python are judged first, with their own axis)."""

    candidate: Candidate
    verdict: Verdict
    forced: bool = False  # loads only because ``--force`` waived the torch verdict
    held_back: bool = False  # a pre-release passed over: a final release has a file for the target

    @property
    def eligible(self) -> bool:
        """Can be the choice: loads, and is not a pre-release held back."""
        return self.verdict.loads and not self.held_back


@frozen
class Choice:
    """One project's outcome: the chosen candidate (or None) and every judgement, best first;
    ``pre``: pre-releases were asked for (``--pre``)."""

    name: str
    chosen: Candidate | None
    verdicts: list[Judged]
    pre: bool = False


def torch_verdict(c: Candidate, target: TorchTarget) -> Verdict:
    """``verdicts.verdict`` for the target's torch; for a plan that named only a minor, over
    every release of it (``verdicts.minor_verdict``): the rule ``index`` and ``matrix`` apply."""
    if target.torch is not None and target.torch_minor_only:
        return minor_verdict(
            c.torch, target.markers, minor_of(target.torch), target.build, target.gpu, tables=c.tables
        )
    return verdict(c.torch, target.markers, target.torch, target.build, target.gpu, tables=c.tables)


class Tagged(Protocol):
    """A wheel as its file name alone describes it (a candidate, or a hosted file before download)."""

    @property
    def tags(self) -> frozenset[Tag]: ...

    @property
    def version(self) -> Version: ...


def tag_order(target: TorchTarget) -> dict[Tag, int]:
    """The target's tags by rank, best first (0)."""
    return {t: i for i, t in enumerate(target.tags)}


def tag_rank(c: Tagged, order: dict[Tag, int]) -> int | None:
    ranks = [order[t] for t in c.tags if t in order]
    return min(ranks) if ranks else None


def tag_reason(c: Tagged, target: TorchTarget) -> str:
    """Which part of the tags the target lacks: the platform, else the Python/ABI."""
    plats = {t.platform for t in target.tags}
    theirs = sorted({t.platform for t in c.tags})
    if not plats & set(theirs):
        return f"platform {'.'.join(theirs)} does not run on the target"
    pys = sorted({f"{t.interpreter}-{t.abi}" for t in c.tags})
    return f"Python tag {', '.join(pys)} does not fit Python {target.python_version}"


def judge(c: Candidate, target: TorchTarget, order: dict[Tag, int], force: bool = False) -> Judged:
    """One candidate against the target; ``force`` waives only the torch checks."""
    if tag_rank(c, order) is None:
        return Judged(c, Verdict("no", tag_reason(c, target), "tags"))
    if c.requires_python is not None and not c.requires_python.contains(
        target.python_version, prereleases=True
    ):
        why = f"Requires-Python {c.requires_python} excludes Python {target.python_version}"
        return Judged(c, Verdict("no", why, "python"))
    found = torch_verdict(c, target)
    if not found.loads and force:
        return Judged(c, Verdict("loads", f"FORCED past: {found.reason}", found.axis), forced=True)
    return Judged(c, found)


HELD_BACK = "a pre-release, passed over while a final release has a file for the target (as pip does); --pre considers it"


def holds_back_pre(cands: Iterable[Tagged], order: dict[Tag, int], pre: bool) -> bool:
    """pip's rule: pre-releases are passed over while a final release has a file whose tags
    fit the target, unless ``--pre``. uv holds them back alike as long as a final release can
    be installed, but takes a pre-release where every final one is refused by its
    requirements; pip then installs nothing, and so does ``select`` (it names the
    pre-release that would load)."""
    return not pre and any(not c.version.is_prerelease and tag_rank(c, order) is not None for c in cands)


def rank(v: Judged, order: dict[Tag, int]) -> tuple[object, ...]:
    """Higher is better: what can be chosen, then pip's order (version with its local label,
    tags, build tag), then the torch ABI."""
    c = v.candidate
    tags = tag_rank(c, order)
    return (
        v.eligible,
        not v.forced,
        c.version,
        -(tags if tags is not None else len(order)),
        c.build,
        preference(c.torch),
    )


def choose(
    candidates: list[Candidate], target: TorchTarget, force: bool = False, pre: bool = False
) -> list[Choice]:
    """One ``Choice`` per project among the candidates (sorted by project name)."""
    order = tag_order(target)
    by_name: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_name.setdefault(c.name, []).append(c)
    out: list[Choice] = []
    for name in sorted(by_name):
        held = holds_back_pre(by_name[name], order, pre)
        verdicts = [judge(c, target, order, force) for c in by_name[name]]
        verdicts = [
            replace(v, held_back=True)
            if held and v.verdict.loads and v.candidate.version.is_prerelease
            else v
            for v in verdicts
        ]
        # ties (one file name in two folders) in a fixed order, then best first (a stable sort)
        verdicts.sort(key=lambda v: (v.candidate.variant or "", str(v.candidate.path)))
        verdicts.sort(key=lambda v: rank(v, order), reverse=True)
        chosen = verdicts[0].candidate if verdicts and verdicts[0].eligible else None
        out.append(Choice(name, chosen, verdicts, pre))
    return out


# -- per torch minor: the cells of ``index`` and ``matrix``


def fit(c: Candidate, torch: Minor, build: TorchBuild | None = None) -> Verdict:
    """One wheel on every release of one torch minor (of one build, when given): the verdict
    ``select`` gives, with the wheel's own platform for its requirements' markers."""
    return minor_verdict(c.torch, markers_for_tags(c.tags), torch, build, tables=c.tables)


def needed_minors(needs: Iterable[TorchNeed]) -> set[Minor]:
    """The minors the candidates themselves name (stable floors, unstable builds)."""
    return {m for n in needs for m in n.named_minors}


_KIND_RANK = {"none": 0, "any": 0, "unstable": 1, "stable": 2}


def preference(need: TorchNeed) -> tuple[int, int]:
    """The ranking by torch ABI, written once: among candidates that load on one torch,
    higher is better. ``index`` keeps the highest; ``select`` (``choose``) ranks by it after
    pip's order (``rank``). Stable before unstable before any or no torch (a stable wheel
    keeps loading when torch is upgraded), and among stable wheels the newest floor."""
    return _KIND_RANK[need.kind], need.floor.to_int() if need.floor is not None else 0
