"""Findings and the rule registry: the vocabulary between the rules and the reports.

A rule is a pure function from facts to findings, registered under its code in
``codes.CODES`` (name, severity, scope and summary live there, all codes in one table).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from torchwheel.rules.codes import BY_CODE, Code, Severity

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
    # ``gpu-archs``: the GPUs the project builds for (``sm_90``, ``compute_120``; TW705, TW706)
    gpu_archs: tuple[str, ...] = ()

    def enabled(self, code: str) -> bool:
        def hit(codes: frozenset[str]) -> bool:
            return any(code.startswith(c) for c in codes)

        return (not self.select or hit(self.select)) and not hit(self.ignore)


Hit = tuple[str, str]  # (member, message): a rule says where and what; the runner adds the rest
Check = Callable[[Any, Policy], Iterable[Hit]]


@dataclass(frozen=True)
class Rule(Code):
    """A code of ``codes.CODES`` with the function that checks it."""

    check: Check = field(compare=False, kw_only=True)

    def run(self, facts: Any, policy: Policy, wheel: str) -> Iterator[Finding]:
        for member, message in self.check(facts, policy):
            yield Finding(self.code, self.severity, wheel, member, message)


REGISTRY: dict[str, Rule] = {}


def rule(code: str) -> Callable[[Check], Check]:
    """Register a check under a code of ``codes.CODES``; the function stays callable for tests."""

    def register(func: Check) -> Check:
        if code in REGISTRY:
            raise RuntimeError(f"rule code {code} registered twice")
        about = BY_CODE[code]
        REGISTRY[code] = Rule(**{f.name: getattr(about, f.name) for f in fields(about)}, check=func)
        return func

    return register


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.wheel, f.member, SEVERITY_ORDER[f.severity], f.code, f.message))
