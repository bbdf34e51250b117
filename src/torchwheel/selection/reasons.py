"""How a choice reads: one line per project with its outcome (``outcome``), one per other
candidate with its reason, each named with the preference behind it (text), or the same as a
schema-versioned JSON document."""

from __future__ import annotations

from typing import Any

from packaging.tags import Tag

from torchwheel.errors import Exit
from torchwheel.report.textsafe import json_text
from torchwheel.selection.candidates import Candidate, Gathered
from torchwheel.selection.choose import HELD_BACK, Choice, Judged, tag_order, tag_rank
from torchwheel.selection.outcome import Outcome, absent_text, exit_code, refusal_line, strays
from torchwheel.selection.target import TorchTarget
from torchwheel.torchabi.backend import builds_text
from torchwheel.torchabi.need import show_release

SELECT_SCHEMA = 1


def _label(c: Candidate) -> str:
    return f"{c.filename} (in {c.origin})"


def _tags(c: Candidate) -> str:
    return ".".join(sorted(map(str, c.tags)))


def _torch_preference(c: Candidate, chosen: Candidate) -> str:
    """Which torch-ABI preference of ``choose`` put the choice first, in its own words."""
    mine, theirs = c.torch, chosen.torch
    if mine.kind == theirs.kind == "stable":
        return (
            f"the choice's newer stable-ABI target ({theirs}) ranks first: among stable builds, the "
            "newest target that loads (it may use newer shims)"
        )
    why = {
        "stable": "a stable-ABI build keeps loading when torch is upgraded",
        "unstable": "a build for this torch ranks before one without torch symbols",
    }.get(theirs.kind, "")
    return f"the choice ({theirs}) ranks first: stable ABI, then unstable, then no torch symbols" + (
        f"; {why}" if why else ""
    )


def _newer(v: Judged, chosen: Candidate) -> str:
    if v.candidate.version.public == chosen.version.public:  # the local labels differ
        return (
            f"fits ({v.verdict.reason}), but {chosen.version} is the higher version: PEP 440 ranks a "
            "local label above the plain version and compares labels part by part (as pip and uv do)"
        )
    return f"fits ({v.verdict.reason}), but {chosen.version} is a newer release"


def lower_reason(v: Judged, chosen: Candidate, order: dict[Tag, int]) -> str:
    """Why a candidate that fits lost to the choice: the first ranking step that differs
    (``choose.rank``), named with the preference behind it."""
    c = v.candidate
    if v.held_back:
        return f"fits, but {HELD_BACK}"
    if c.version != chosen.version:
        return _newer(v, chosen)
    if tag_rank(c, order) != tag_rank(chosen, order):
        return (
            f"fits ({v.verdict.reason}), but the choice's tags {_tags(chosen)} come first in the target's "
            "order of tags (as pip and uv rank files)"
        )
    if c.build != chosen.build:
        theirs = "".join(map(str, chosen.build)) or "none"
        mine = "".join(map(str, c.build)) or "none"
        return f"fits, but the choice has the higher build tag ({theirs} > {mine}; as pip and uv rank files)"
    if c.torch != chosen.torch:
        return f"fits ({v.verdict.reason}), but {_torch_preference(c, chosen)}"
    return "fits, but ranks after the choice (same version, tags, build tag and torch ABI)"


def why_not(v: Judged, choice: Choice, order: dict[Tag, int]) -> str:
    """A candidate that is not the choice: why it lost, or why it does not fit."""
    if v.held_back and choice.chosen is None:
        return f"loads ({v.verdict.reason}), but {HELD_BACK}"
    if v.verdict.loads and choice.chosen is not None:
        return lower_reason(v, choice.chosen, order)
    return v.verdict.reason


def _pre_note(choice: Choice) -> str:
    chosen = choice.chosen
    if chosen is None or not chosen.version.is_prerelease:
        return ""
    if choice.pre:
        return "; a pre-release (--pre)"
    return "; a pre-release: no final release has a file for the target, so pre-releases count (as in pip and uv)"


def _target_line(target: TorchTarget) -> str:
    torch = f"torch {target.torch}" if target.torch is not None else "no torch"
    built = f", a {target.build}" if target.torch is not None and target.build is not None else ""
    return f"target: {target.description}, {torch}{built}"


def _head(o: Outcome, gathered: Gathered) -> str:
    chosen = o.choice.chosen
    chose = (
        f"{_label(chosen)}: {o.choice.verdicts[0].verdict.reason} [from {chosen.torch.source}]{_pre_note(o.choice)}"
        if chosen is not None
        else ""
    )
    if o.kind == "chosen":
        return f"{o.name}: chose {chose}"
    if o.kind == "absent":
        return absent_text(o.name, gathered)
    if o.kind == "unreadable":
        among = f"the readable ones give {chose}" if chose else "none of the readable ones fits"
        return f"{o.name}: cannot tell, a candidate could not be read (skipped below); {among}"
    return f"{o.name}: nothing fits"


def select_text(target: TorchTarget, gathered: Gathered, found: list[Outcome], brief: bool = False) -> str:
    """The target, then per project the choice and why each other wheel was not chosen;
    ``brief`` (``select -q``): the line of each project's choice alone."""
    if brief:
        return "\n".join(_head(o, gathered) for o in found)
    lines = [_target_line(target)]
    order = tag_order(target)
    for o in found:
        lines.append(_head(o, gathered))
        for v in o.choice.verdicts:
            if v.candidate is not o.choice.chosen:
                lines.append(f"  rejected {_label(v.candidate)}: {why_not(v, o.choice, order)}")
        lines += [f"  not opened {s.location}: {s.reason}" for s in gathered.unopened if s.name == o.name]
        lines += [f"  skipped {s.location}: {s.reason}" for s in o.unreadable]
    lines += [f"  skipped {s.location}: {s.reason}" for s in strays(gathered)]
    lines += [f"  duplicate {s.location}: {s.reason}" for s in gathered.duplicates]
    if not found:
        lines.append("no wheels in the sources")
    return "\n".join(lines)


def candidate_json(c: Candidate) -> dict[str, Any]:
    return {
        "file": c.filename,
        "path": str(c.path) if c.url is None else None,  # a download is gone when the command ends
        "url": c.url,
        "origin": c.origin,
        "name": c.name,
        "version": str(c.version),
        "pre_release": c.version.is_prerelease,
        "build": f"{c.build[0]}{c.build[1]}" if c.build else None,
        "variant": c.variant,
        "tags": sorted(map(str, c.tags)),
        "torch_abi": {
            "kind": c.torch.kind,
            "floor": c.torch.floor.release if c.torch.floor is not None else None,
            "minor": show_release(next(iter(c.torch.releases))) if len(c.torch.releases) == 1 else None,
            "builds": [show_release(b) for b in sorted(c.torch.releases)],
            "releases_from": c.torch.releases_from or None,
            "torch_build": builds_text(c.torch.builds),
            "gpu_code": sorted(c.torch.gpu_code) if c.torch.gpu_code is not None else "unknown",
            "unknown": list(c.torch.unknown_axes),
            "newer_than_tables": c.torch.newer_json,
            "summary": str(c.torch),
            "source": c.torch.source,
        },
        "sha256": c.sha256,
    }


def _entry(v: Judged, choice: Choice, order: dict[Tag, int]) -> dict[str, Any]:
    return {
        **candidate_json(v.candidate),
        "chosen": v.candidate is choice.chosen,
        "fits": v.verdict.loads,
        "held_back": v.held_back,
        "verdict": v.verdict.cell,
        "axis": v.verdict.axis,
        "newer_than_tables": v.verdict.newer,
        "reason": v.verdict.reason if v.candidate is choice.chosen else why_not(v, choice, order),
    }


def select_json(target: TorchTarget, gathered: Gathered, found: list[Outcome]) -> str:
    doc: dict[str, Any] = {
        "schema_version": SELECT_SCHEMA,
        "target": {
            "description": target.description,
            "python": target.python,
            "python_version": target.python_version,
            "torch": str(target.torch) if target.torch is not None else None,
            "torch_backend": target.build.backend if target.build is not None else None,
        },
        "projects": [
            {
                "name": o.name,
                "outcome": o.kind,
                "chosen": candidate_json(o.choice.chosen) if o.choice.chosen else None,
                "candidates": [_entry(v, o.choice, tag_order(target)) for v in o.choice.verdicts],
                "not_opened": [
                    {"location": s.location, "reason": s.reason}
                    for s in gathered.unopened
                    if s.name == o.name
                ],
            }
            for o in found
        ],
        "skipped": [
            {"location": s.location, "reason": s.reason, "project": s.name} for s in gathered.skipped
        ],
        "duplicates": [{"location": s.location, "reason": s.reason} for s in gathered.duplicates],
    }
    if exit_code(found, gathered) == Exit.INPUT:  # the command's exit 2: the same line as on stderr
        doc["error"] = {
            "message": refusal_line(found, gathered),
            "reference": "candidates-unusable",
            "exit": int(Exit.INPUT),
        }
    return json_text(doc)
