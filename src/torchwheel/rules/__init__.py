"""The rules, one module per concern; importing this package registers them all."""

from __future__ import annotations

from collections.abc import Iterable

from torchwheel.findings import REGISTRY, Finding, Policy, sort_findings
from torchwheel.rules import cpython, integrity, marker, release, requirements, torch
from torchwheel.wheelfacts import WheelFacts, provides_libtorch

__all__ = ["REGISTRY", "cpython", "integrity", "marker", "release", "requirements", "run", "run_all", "torch"]


def run(facts: WheelFacts, policy: Policy) -> list[Finding]:
    found: list[Finding] = []
    for code in sorted(REGISTRY):
        if code.startswith("TW6"):
            continue  # release rules see several wheels at once: run_all's release pass
        if facts.kind == "binary" and code.startswith(("TW4", "TW5")):
            continue  # a lone binary has no wheel metadata to judge
        if code.startswith(("TW1", "TW2")) and provides_libtorch(facts):
            continue  # torch's own libraries define the ABI that these rules hold consumers to
        if policy.enabled(code):
            found.extend(REGISTRY[code].run(facts, policy, facts.contents.path))
    return sort_findings(found)


def run_all(wheels: Iterable[WheelFacts], policy: Policy) -> list[Finding]:
    """Each wheel's rules, then the release pass (TW6xx) over wheels of one name and version;
    a release finding joins its wheel's findings, so the order stays wheel by wheel."""
    wheels = list(wheels)
    per_wheel = [run(w, policy) for w in wheels]
    codes = [c for c in sorted(REGISTRY) if c.startswith("TW6") and policy.enabled(c)]
    at = {id(w): i for i, w in enumerate(wheels)}
    for group in release.releases(wheels):
        for w in group:
            view = release.ReleaseView(w, group)
            extra = [f for code in codes for f in REGISTRY[code].run(view, policy, w.contents.path)]
            if extra:
                per_wheel[at[id(w)]] = sort_findings([*per_wheel[at[id(w)]], *extra])
    return [f for found in per_wheel for f in found]
