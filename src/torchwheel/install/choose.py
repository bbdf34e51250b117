"""The choice: which candidate loads on the target, and why every other one does not.

A pure function of candidates and target (no I/O). Whether a wheel loads on the target's
torch is ``torchabi.verdicts.verdict``, the one verdict ``select``, ``install``, ``index``,
``matrix`` and ``compat`` share: a stable wheel loads on every torch >= its floor, an unstable
build only on the minor(s) it was built for, a wheel without torch symbols anywhere, and the
wheel's own ``Requires-Dist: torch`` (markers evaluated for the target) must admit the torch,
or an installer would try to swap it.

Ranking among the wheels that fit, best first: the newest release (public version, so a
``+torch2.12`` local label never outranks another release), then the wheel tags in the
target's ``sys_tags()`` order (how pip ranks), then the torch ABI (stable before unstable
before none: a stable wheel keeps loading when torch is upgraded; among stable wheels the
newest floor, which may use the newest shims), then the higher build tag.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from packaging.tags import Tag
from packaging.version import Version

from torchwheel.frozen import frozen
from torchwheel.install.candidates import Candidate
from torchwheel.install.target import TorchTarget, markers_for_tags
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


@frozen
class Choice:
    """One project's outcome: the chosen candidate (or None) and every judgement, best first."""

    name: str
    chosen: Candidate | None
    verdicts: list[Judged]


def torch_verdict(c: Candidate, target: TorchTarget) -> Verdict:
    """``verdicts.verdict`` for the target's torch; for a plan that named only a minor, over
    every release of it (``verdicts.minor_verdict``): the rule ``index`` and ``matrix`` apply."""
    if target.torch is not None and target.torch_minor_only:
        return minor_verdict(c.torch, target.markers, minor_of(target.torch), target.build, target.gpu)
    return verdict(c.torch, target.markers, target.torch, target.build, target.gpu)


class Tagged(Protocol):
    """A wheel as its file name alone describes it (a candidate, or a hosted file before download)."""

    @property
    def tags(self) -> frozenset[Tag]: ...


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


def _build_rank(c: Candidate) -> tuple[int, str]:
    return (-c.build[0], c.build[1]) if c.build else (0, "")


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


def choose(candidates: list[Candidate], target: TorchTarget, force: bool = False) -> list[Choice]:
    """One ``Choice`` per project among the candidates (sorted by project name)."""
    order = {t: i for i, t in enumerate(target.tags)}
    by_name: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_name.setdefault(c.name, []).append(c)
    out: list[Choice] = []
    for name in sorted(by_name):
        verdicts = [judge(c, target, order, force) for c in by_name[name]]

        def key(v: Judged) -> tuple[object, ...]:
            c = v.candidate
            rank = tag_rank(c, order)
            return (
                not v.verdict.loads,
                v.forced,
                [-x for x in Version(c.version.public).release] + [0] * 4,
                rank if rank is not None else len(order),
                best_first(preference(c.torch)),
                _build_rank(c),
                c.variant or "",
                str(c.path),
            )

        verdicts.sort(key=key)
        chosen = verdicts[0].candidate if verdicts and verdicts[0].verdict.loads else None
        out.append(Choice(name, chosen, verdicts))
    return out


# -- per torch minor: the cells of ``index`` and ``matrix``


def fit(c: Candidate, torch: Minor, build: TorchBuild | None = None) -> Verdict:
    """One wheel on every release of one torch minor (of one build, when given): the verdict
    ``select`` gives, with the wheel's own platform for its requirements' markers."""
    return minor_verdict(c.torch, markers_for_tags(c.tags), torch, build)


def needed_minors(needs: Iterable[TorchNeed]) -> set[Minor]:
    """The minors the candidates themselves name (stable floors, unstable builds)."""
    return {m for n in needs for m in n.named_minors}


_KIND_RANK = {"none": 0, "any": 0, "unstable": 1, "stable": 2}


def preference(need: TorchNeed) -> tuple[int, int]:
    """The ranking by torch ABI, written once: among candidates that load on one torch,
    higher is better. ``index`` keeps the highest; ``select`` (``choose``) sorts by it best
    first (``best_first``). Stable before unstable before any or no torch (a stable wheel
    keeps loading when torch is upgraded), and among stable wheels the newest floor."""
    return _KIND_RANK[need.kind], need.floor.to_int() if need.floor is not None else 0


def best_first(rank: tuple[int, ...]) -> tuple[int, ...]:
    """A higher-is-better rank as an ascending sort key: the best sorts first."""
    return tuple(-x for x in rank)
