"""Findings and the rule registry: the vocabulary between the rules and the reports.

A rule is a pure function from facts to findings, registered with a stable code. Codes
never change meaning once released (like ruff's): tools and ``--ignore`` lists depend
on them. ``docs/rules.md`` has one section per code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    wheel: str  # the input the finding is about
    member: str  # the file inside it ("" for the wheel as a whole)
    message: str  # one line that says what to do

    @property
    def location(self) -> str:
        return f"{self.wheel}:{self.member}" if self.member else self.wheel


@dataclass(frozen=True)
class Policy:
    """Project policy from ``[tool.torchwheel]`` and the command line."""

    select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    unstable_allowlist: tuple[str, ...] = ()
    require_torch: bool = True

    def enabled(self, code: str) -> bool:
        def hit(codes: frozenset[str]) -> bool:
            return any(code.startswith(c) for c in codes)

        return (not self.select or hit(self.select)) and not hit(self.ignore)


Hit = tuple[str, str]  # (member, message): a rule says where and what; the runner adds the rest
Check = Callable[[Any, Policy], Iterable[Hit]]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    check: Check = field(compare=False)

    def run(self, facts: Any, policy: Policy, wheel: str) -> Iterator[Finding]:
        for member, message in self.check(facts, policy):
            yield Finding(self.code, self.severity, wheel, member, message)


REGISTRY: dict[str, Rule] = {}


def rule(code: str, name: str, severity: Severity, summary: str) -> Callable[[Check], Check]:
    """Register a check under a stable code; the function stays callable for tests."""

    def register(func: Check) -> Check:
        if code in REGISTRY:
            raise RuntimeError(f"rule code {code} registered twice")
        REGISTRY[code] = Rule(code, name, severity, summary, func)
        return func

    return register


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.wheel, f.member, SEVERITY_ORDER[f.severity], f.code, f.message))


def only_errors(findings: Iterable[Finding]) -> Iterator[Finding]:
    return (f for f in findings if f.severity == "error")
