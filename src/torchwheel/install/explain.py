"""How a choice reads: one line per project with its outcome (``outcome``), one per other
candidate with its reason, each named with the preference behind it (text), or the same as a
schema-versioned JSON document."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from torchwheel.errors import Exit
from torchwheel.install.candidates import Candidate, Gathered
from torchwheel.install.choose import Choice, Judged
from torchwheel.install.outcome import Outcome, absent_text, exit_code, strays, unreadable_line
from torchwheel.install.target import TorchTarget
from torchwheel.report.textsafe import json_text
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


def lower_reason(v: Judged, chosen: Candidate) -> str:
    """Why a candidate that fits lost to the choice: the first ranking step that differs,
    named with the preference behind it."""
    c = v.candidate
    if Version(c.version.public) != Version(chosen.version.public):
        return f"fits, but {chosen.version.public} is a newer release"
    if c.tags != chosen.tags:
        return (
            f"fits ({v.verdict.reason}), but the choice's tags {_tags(chosen)} come first in the target's "
            "order of tags (as pip ranks files)"
        )
    if c.torch != chosen.torch:
        return f"fits ({v.verdict.reason}), but {_torch_preference(c, chosen)}"
    if c.build != chosen.build:
        theirs = chosen.build[0] if chosen.build else 0
        mine = c.build[0] if c.build else 0
        return f"fits, but the choice has a higher build tag ({theirs} > {mine})"
    return "fits, but ranks after the choice (same release, tags and torch ABI)"


def _target_line(target: TorchTarget) -> str:
    torch = f"torch {target.torch}" if target.torch is not None else "no torch"
    built = f", a {target.build}" if target.torch is not None and target.build is not None else ""
    return f"target: {target.description}, {torch}{built}"


def _head(o: Outcome, gathered: Gathered) -> str:
    chosen = o.choice.chosen
    chose = (
        f"{_label(chosen)}: {o.choice.verdicts[0].verdict.reason} [from {chosen.torch.source}]"
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


def select_text(target: TorchTarget, gathered: Gathered, found: list[Outcome]) -> str:
    lines = [_target_line(target)]
    for o in found:
        lines.append(_head(o, gathered))
        for v in o.choice.verdicts:
            if v.candidate is o.choice.chosen:
                continue
            why = (
                lower_reason(v, o.choice.chosen) if v.verdict.loads and o.choice.chosen else v.verdict.reason
            )
            lines.append(f"  rejected {_label(v.candidate)}: {why}")
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


def _entry(v: Judged, choice: Choice) -> dict[str, Any]:
    lost = v.verdict.loads and choice.chosen is not None and v.candidate is not choice.chosen
    return {
        **candidate_json(v.candidate),
        "chosen": v.candidate is choice.chosen,
        "fits": v.verdict.loads,
        "verdict": v.verdict.cell,
        "axis": v.verdict.axis,
        "newer_than_tables": v.verdict.newer,
        "reason": lower_reason(v, choice.chosen) if lost and choice.chosen else v.verdict.reason,
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
                "candidates": [_entry(v, o.choice) for v in o.choice.verdicts],
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
        doc["error"] = {"message": unreadable_line(found, gathered), "exit": int(Exit.INPUT)}
    return json_text(doc)
