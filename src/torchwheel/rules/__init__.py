"""The rules, one module per code group; importing this package registers them all.

Which inputs each rule judges is declared with its code (``codes.Scope``), so the runner
below holds no list of codes of its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from torchwheel.analysis.release_wheels import ReleaseView, group_by_release
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.rules import accelerator, cpython, integrity, marker, release_agreement, requirements, torch
from torchwheel.rules.registry import REGISTRY, Findings, Policy, Rule, RuleFinding, sort_findings

__all__ = [
    "REGISTRY",
    "Findings",
    "accelerator",
    "cpython",
    "integrity",
    "marker",
    "release_agreement",
    "requirements",
    "rewrite_blockers",
    "run",
    "run_all",
    "torch",
]


def _judges(r: Rule, facts: WheelFacts, torch_itself: bool) -> bool:
    scope = r.scope
    if scope.release or (facts.kind == "binary" and not scope.lone_binary):
        return False
    return scope.torch_itself or not torch_itself


def run_rules(facts: WheelFacts, policy: Policy) -> Findings:
    """The findings of one input. A finding a rewrite fixes says, in a wheel the rewrite
    refuses (``blocks_rewrite``: run whatever the policy), which finding must be fixed first:
    only the fixes that work are offered."""
    found = Findings()
    torch_itself = facts.provides_libtorch
    path = facts.contents.path
    blockers: list[str] = []
    for code in sorted(REGISTRY):
        r = REGISTRY[code]
        if not _judges(r, facts, torch_itself):
            continue
        if policy.enabled(code):
            kept, more = r.run(facts, policy, path)
            found.add(kept, more, path, code)
        elif r.blocks_rewrite:
            kept, more = r.run(facts, policy, path)
        else:
            continue
        if r.blocks_rewrite and (kept or more):
            blockers.append(code)
    found.kept = sort_findings(_after_blockers(found.kept, blockers))
    return found


def _after_blockers(findings: list[RuleFinding], blockers: list[str]) -> list[RuleFinding]:
    """Each finding a rewrite fixes (``Code.fixed_by``) with the blockers that stop the
    rewrite named: ``torchwheel tag`` refuses the wheel until they are fixed."""
    if not blockers:
        return findings
    first = f" (first fix {', '.join(blockers)}: until then `tag` and `repair` refuse this wheel)"
    return [
        replace(f, message=f.message + first) if REGISTRY[f.code].fixed_by is not None else f
        for f in findings
    ]


def run_all(wheels: Iterable[WheelFacts], policy: Policy) -> Findings:
    """Each wheel's rules, then the release pass (TW6xx) over wheels of one name and version;
    a release finding joins its wheel's findings, so the order stays wheel by wheel."""
    wheels = list(wheels)
    per_wheel = [run_rules(w, policy) for w in wheels]
    codes = [c for c in sorted(REGISTRY) if REGISTRY[c].scope.release and policy.enabled(c)]
    at = {id(w): i for i, w in enumerate(wheels)}
    for group in group_by_release(wheels):
        for w in group:
            view = ReleaseView(w, group)
            found = per_wheel[at[id(w)]]
            for code in codes:
                found.add(*REGISTRY[code].run(view, policy, w.contents.path), w.contents.path, code)
            found.kept = sort_findings(found.kept)
    every = Findings()
    for found in per_wheel:
        every.kept += found.kept
        for (wheel, code), more in found.omitted.items():
            every.add([], more, wheel, code)  # one path given twice: its counts add up
    return every


def rewrite_blockers() -> Policy:
    """A policy selecting the codes on which ``tag`` and ``repair`` refuse to rewrite."""
    return Policy(select=frozenset(code for code, r in REGISTRY.items() if r.blocks_rewrite))
