"""The choice: which candidate loads on the target, and why every other one does not.

A pure function of candidates and target (no I/O), so ``select``, ``install``, ``index``
and ``matrix`` agree by construction. The torch rule (``torch_verdict``):

- a stable wheel loads on every torch >= its floor (the stable ABI is forward compatible);
- an unstable wheel loads only on the torch minor it was built for;
- a wheel without torch symbols loads anywhere;
- and the wheel's own ``Requires-Dist: torch`` (markers evaluated for the target) must
  admit the target's torch, or an installer would try to swap torch.

Ranking among the wheels that fit, best first: the newest release (public version, so a
``+torch2.12`` local label never outranks another release), then the wheel tags in the
target's ``sys_tags()`` order (how pip ranks), then the torch ABI (stable before unstable
before none: a stable wheel keeps loading when torch is upgraded; among stable wheels the
newest floor, which may use the newest shims), then the higher build tag.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from packaging.tags import Tag
from packaging.version import Version

from torchwheel.install.candidates import Candidate
from torchwheel.install.target import TorchTarget
from torchwheel.torchabi.need import TorchNeed
from torchwheel.torchabi.releases import Minor, minor_of

Fit = Literal["loads", "only", "no"]  # a cell of ``matrix``: loads / this minor only / not

Torch = Version | None


@dataclass(frozen=True)
class Verdict:
    candidate: Candidate
    fits: bool
    reason: str  # why it does not fit (or, for a fit, what it loads on)


@dataclass(frozen=True)
class Choice:
    """One project's outcome: the chosen candidate (or None) and every verdict, best first."""

    name: str
    chosen: Candidate | None
    verdicts: list[Verdict]


def _release(v: Version) -> str:
    return ".".join(map(str, v.release[:2]))


def torch_verdict(need: TorchNeed, torch: Torch) -> tuple[bool, str]:
    """Does a wheel with this need load on this torch? The reason either way."""
    if need.kind == "none":
        return True, "uses no torch symbols"
    if torch is None:
        return False, f"{need}: the target has no torch (torchwheel never installs torch)"
    if need.kind == "stable" and need.floor is not None:
        floor = Version(need.floor.release)
        if Version(torch.base_version) >= floor:  # a 2.12 pre-release has 2.12's shims
            return True, f"{need} loads on torch {torch.public}"
        return False, f"{need}: torch {torch.public} is older than its target"
    if need.minor is None:
        return False, "unstable build for an unknown torch (no torch==X.Y.* pin or +torchX.Y label)"
    if (torch.major, torch.minor) == need.minor:
        return True, f"{need}: built for this torch minor"
    return False, f"{need}: built for torch {need.minor[0]}.{need.minor[1]}, the target has {_release(torch)}"


def requirement_verdict(c: Candidate, target: TorchTarget) -> tuple[bool, str]:
    """The wheel's ``Requires-Dist: torch`` lines that apply on the target must admit its torch."""
    if target.torch is None:
        return True, ""
    for req in c.torch_requirements:
        if req.marker is not None and not req.marker.evaluate(target.markers):
            continue
        if not req.specifier.contains(target.torch, prereleases=True) and not req.specifier.contains(
            Version(target.torch.public), prereleases=True
        ):
            return False, f"Requires-Dist {req} excludes torch {target.torch.public}"
    return True, ""


def tag_rank(c: Candidate, order: dict[Tag, int]) -> int | None:
    ranks = [order[t] for t in c.tags if t in order]
    return min(ranks) if ranks else None


def tag_reason(c: Candidate, target: TorchTarget) -> str:
    """Which part of the tags the target lacks: the platform, else the Python/ABI."""
    plats = {t.platform for t in target.tags}
    theirs = sorted({t.platform for t in c.tags})
    if not plats & set(theirs):
        return f"platform {'.'.join(theirs)} does not run on the target"
    pys = sorted({f"{t.interpreter}-{t.abi}" for t in c.tags})
    return f"Python tag {', '.join(pys)} does not fit Python {target.python_version}"


def _abi_rank(need: TorchNeed) -> tuple[int, int]:
    order: dict[Literal["stable", "unstable", "none"], int] = {"stable": 0, "unstable": 1, "none": 2}
    floor = need.floor.to_int() if need.floor is not None else 0
    return order[need.kind], -floor


def _build_rank(c: Candidate) -> tuple[int, str]:
    return (-c.build[0], c.build[1]) if c.build else (0, "")


def judge(c: Candidate, target: TorchTarget, order: dict[Tag, int], force: bool = False) -> Verdict:
    """One candidate against the target; ``force`` waives only the torch checks."""
    if tag_rank(c, order) is None:
        return Verdict(c, False, tag_reason(c, target))
    if c.requires_python is not None and not c.requires_python.contains(
        target.python_version, prereleases=True
    ):
        return Verdict(
            c, False, f"Requires-Python {c.requires_python} excludes Python {target.python_version}"
        )
    ok, why = torch_verdict(c.torch, target.torch)
    if ok:
        req_ok, req_why = requirement_verdict(c, target)
        ok, why = (ok, why) if req_ok else (False, req_why)
    if not ok and force:
        return Verdict(c, True, f"FORCED past: {why}")
    return Verdict(c, ok, why)


def choose(candidates: list[Candidate], target: TorchTarget, force: bool = False) -> list[Choice]:
    """One ``Choice`` per project among the candidates (sorted by project name)."""
    order = {t: i for i, t in enumerate(target.tags)}
    by_name: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_name.setdefault(c.name, []).append(c)
    out: list[Choice] = []
    for name in sorted(by_name):
        verdicts = [judge(c, target, order, force) for c in by_name[name]]

        def key(v: Verdict) -> tuple[object, ...]:
            c = v.candidate
            rank = tag_rank(c, order)
            return (
                not v.fits,
                v.reason.startswith("FORCED"),
                [-x for x in Version(c.version.public).release] + [0] * 4,
                rank if rank is not None else len(order),
                _abi_rank(c.torch),
                _build_rank(c),
                c.variant or "",
                str(c.path),
            )

        verdicts.sort(key=key)
        chosen = verdicts[0].candidate if verdicts and verdicts[0].fits else None
        out.append(Choice(name, chosen, verdicts))
    return out


# -- per torch minor: the cells of ``index`` and ``matrix``


def fit(need: TorchNeed, torch: Minor) -> tuple[Fit, str]:
    """(the cell, why) for one wheel on one torch minor: ``torch_verdict`` (the rule
    ``select`` applies) on that minor's first release; a floor with a patch counts for its
    own minor (it loads from that patch on)."""
    probe = Version(f"{torch[0]}.{torch[1]}.0")
    if need.kind == "stable" and need.floor is not None and minor_of(need.floor) == torch:
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
            out.add(minor_of(n.floor))
        elif n.kind == "unstable" and n.minor is not None:
            out.add(n.minor)
    return out


def preference(need: TorchNeed) -> tuple[int, int]:
    """Among candidates that load on one torch, higher is better, as ``select`` ranks them
    (``choose``): stable before unstable before none (a stable wheel keeps loading when
    torch is upgraded), and among stable wheels the newest floor."""
    order = {"none": 0, "unstable": 1, "stable": 2}
    return order[need.kind], need.floor.to_int() if need.floor is not None else 0
