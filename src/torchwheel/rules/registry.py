"""Findings and the rule registry: the vocabulary between the rules and the reports.

A rule is a pure function from facts to findings, registered under its code in
``codes.CODES`` (name, severity, scope and summary live there, all codes in one table).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any

from torchwheel import limits
from torchwheel.frozen import frozen
from torchwheel.rules.codes import BY_CODE, Code, Severity

SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


@frozen
class RuleFinding:
    code: str
    severity: Severity
    wheel: str  # the input the finding is about
    member: str  # the file inside it ("" for the wheel as a whole)
    message: str  # one line that says what to do, its lists cut to a few names
    # the lists the message cut, whole (``check -v``, the JSON ``detail``); "" when it cut none
    detail: str = ""

    @property
    def location(self) -> str:
        return f"{self.wheel}:{self.member}" if self.member else self.wheel


@frozen
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


# (member, message) or (member, message, detail): a rule says where and what, and the whole
# lists its message cut (``Finding.detail``); the runner adds the rest
Hit = tuple[str, str] | tuple[str, str, str]


def hit(member: str, message: str, detail: str = "") -> Hit:
    """A rule's hit, with the whole lists its message cut when there are any."""
    return (member, message, detail) if detail else (member, message)


@frozen
class Omitted:
    """What a check yields for hits its facts only counted (RECORD problems past
    ``max-listed``): so many more findings than it names."""

    count: int


Check = Callable[[Any, Policy], Iterable[Hit | Omitted]]


def _order(f: RuleFinding) -> tuple[str, str, int, str, str]:
    return (f.wheel, f.member, SEVERITY_ORDER[f.severity], f.code, f.message)


@dataclass
class Findings:
    """The findings in report order, at most ``max-listed`` per (input, code), and how many
    more each (input, code) had.

    A rule may fire once per member of a 100,000-member wheel or per row of a 400,000-row
    RECORD. Kept whole, that was 500 MB of findings and JSON for a 504 KB wheel; the reports
    name what is kept and say how many more there were, and the summary counts them all.
    """

    kept: list[RuleFinding] = field(default_factory=list)
    omitted: dict[tuple[str, str], int] = field(default_factory=dict)  # (input, code) -> count

    def __iter__(self) -> Iterator[RuleFinding]:
        return iter(self.kept)

    def __bool__(self) -> bool:
        return bool(self.kept or self.omitted)

    def severities(self) -> Counter[str]:
        """Every finding's severity, the omitted ones included."""
        counts: Counter[str] = Counter(f.severity for f in self.kept)
        for (_, code), n in self.omitted.items():
            counts[BY_CODE[code].severity] += n
        return counts

    def relabelled(self, old: str, new: str) -> Findings:
        """The same findings with input ``old`` named ``new``: ``repair`` reports on the
        user's wheel, not on the repair tool's temporary copy of it."""
        kept = [replace(f, wheel=new) if f.wheel == old else f for f in self.kept]
        omitted = {(new if wheel == old else wheel, code): n for (wheel, code), n in self.omitted.items()}
        return Findings(kept, omitted)

    def add(self, kept: list[RuleFinding], more: int, wheel: str, code: str) -> None:
        self.kept.extend(kept)
        if more:
            self.omitted[(wheel, code)] = self.omitted.get((wheel, code), 0) + more


@frozen
class Rule(Code):
    """A code of ``codes.CODES`` with the function that checks it."""

    check: Check = field(compare=False, kw_only=True)

    def run(self, facts: Any, policy: Policy, wheel: str) -> tuple[list[RuleFinding], int]:
        """This rule's findings on one input: the first ``max-listed`` in report order (a heap
        of that size, whatever the check yields), and how many more there were."""
        more = 0

        def found() -> Iterator[RuleFinding]:
            nonlocal more
            for hit in self.check(facts, policy):
                if isinstance(hit, Omitted):
                    more += hit.count
                    continue
                more += 1
                yield RuleFinding(self.code, self.severity, wheel, *hit)

        keep = max(1, limits.current().max_listed.value)  # each code present names one finding
        kept = heapq.nsmallest(keep, found(), key=_order)
        return kept, more - len(kept)


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


def sort_findings(findings: Iterable[RuleFinding]) -> list[RuleFinding]:
    return sorted(findings, key=_order)
