"""The rules, one module per concern; importing this package registers them all."""

from __future__ import annotations

from collections.abc import Iterable

from torchwheel.findings import REGISTRY, Finding, Policy, sort_findings
from torchwheel.rules import cpython, integrity, marker, requirements, torch
from torchwheel.wheelfacts import WheelFacts, provides_libtorch

__all__ = ["REGISTRY", "cpython", "integrity", "marker", "requirements", "run", "run_all", "torch"]


def run(facts: WheelFacts, policy: Policy) -> list[Finding]:
    found: list[Finding] = []
    for code in sorted(REGISTRY):
        if facts.kind == "binary" and code.startswith(("TW4", "TW5")):
            continue  # a lone binary has no wheel metadata to judge
        if code.startswith(("TW1", "TW2")) and provides_libtorch(facts):
            continue  # torch's own libraries define the ABI that these rules hold consumers to
        if policy.enabled(code):
            found.extend(REGISTRY[code].run(facts, policy, facts.contents.path))
    return sort_findings(found)


def run_all(wheels: Iterable[WheelFacts], policy: Policy) -> list[Finding]:
    return [f for w in wheels for f in run(w, policy)]
