"""How a choice reads: one line for the choice, one per other candidate with its reason
(text), or the same as a schema-versioned JSON document."""

from __future__ import annotations

import json
from typing import Any

from packaging.version import Version

from torchwheel.install.candidates import Candidate, Gathered, Skipped
from torchwheel.install.choose import Choice, Verdict
from torchwheel.install.target import TorchTarget
from torchwheel.torchabi.backend import need_text
from torchwheel.torchabi.need import show_build

SELECT_SCHEMA = 1


def _label(c: Candidate) -> str:
    return f"{c.filename} (in {c.origin})"


def lower_reason(v: Verdict, chosen: Candidate) -> str:
    """Why a candidate that fits lost to the choice: the first ranking step that differs."""
    c = v.candidate
    if Version(c.version.public) != Version(chosen.version.public):
        return f"fits, but {chosen.version.public} is a newer release"
    if c.tags != chosen.tags:
        return f"fits ({v.reason}), but {'.'.join(sorted(map(str, chosen.tags)))} ranks first among the target's tags"
    if c.torch != chosen.torch:
        return f"fits ({v.reason}), but {chosen.torch} is preferred"
    if c.build != chosen.build:
        return "fits, but the choice has a higher build tag"
    return "fits, but ranks after the choice (same release, tags and torch ABI)"


def _target_line(target: TorchTarget) -> str:
    torch = f"torch {target.torch}" if target.torch is not None else "no torch"
    built = f", a {target.build}" if target.torch is not None and target.build is not None else ""
    return f"target: {target.description}, {torch}{built}"


def select_text(target: TorchTarget, gathered: Gathered, choices: list[Choice]) -> str:
    lines = [_target_line(target)]
    for choice in choices:
        if choice.chosen is None:
            lines.append(f"{choice.name}: nothing fits")
        else:
            lines.append(
                f"{choice.name}: chose {_label(choice.chosen)}: {choice.verdicts[0].reason} "
                f"[from {choice.chosen.torch.source}]"
            )
        for v in choice.verdicts:
            if v.candidate is choice.chosen:
                continue
            why = lower_reason(v, choice.chosen) if v.fits and choice.chosen else v.reason
            lines.append(f"  rejected {_label(v.candidate)}: {why}")
    for s in gathered.skipped:
        lines.append(f"  skipped {s.location}: {s.reason}")
    for s in gathered.duplicates:
        lines.append(f"  duplicate {s.location}: {s.reason}")
    if not choices:
        lines.append("no readable candidates")
    return "\n".join(lines)


def skipped_summary(skipped: list[Skipped]) -> str:
    """The one stderr line of an exit 2: the first input that could not be used and how many
    more (a report on stdout lists each with its reason)."""
    first = skipped[0]
    more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
    return f"{first.location}: {first.reason}{more}"


def candidate_json(c: Candidate) -> dict[str, Any]:
    return {
        "file": c.filename,
        "path": str(c.path),
        "origin": c.origin,
        "name": c.name,
        "version": str(c.version),
        "build": f"{c.build[0]}{c.build[1]}" if c.build else None,
        "variant": c.variant,
        "tags": sorted(map(str, c.tags)),
        "torch_abi": {
            "kind": c.torch.kind,
            "floor": c.torch.floor.release if c.torch.floor is not None else None,
            "minor": show_build(next(iter(c.torch.builds))) if len(c.torch.builds) == 1 else None,
            "builds": [show_build(b) for b in sorted(c.torch.builds)],
            "torch_build": need_text(c.torch.build_classes),
            "source": c.torch.source,
        },
        "sha256": c.sha256,
    }


def select_json(target: TorchTarget, gathered: Gathered, choices: list[Choice]) -> str:
    doc = {
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
                "name": ch.name,
                "chosen": candidate_json(ch.chosen) if ch.chosen else None,
                "candidates": [
                    {
                        **candidate_json(v.candidate),
                        "chosen": v.candidate is ch.chosen,
                        "fits": v.fits,
                        "reason": lower_reason(v, ch.chosen)
                        if v.fits and ch.chosen and v.candidate is not ch.chosen
                        else v.reason,
                    }
                    for v in ch.verdicts
                ],
            }
            for ch in choices
        ],
        "skipped": [{"location": s.location, "reason": s.reason} for s in gathered.skipped],
        "duplicates": [{"location": s.location, "reason": s.reason} for s in gathered.duplicates],
    }
    return json.dumps(doc, indent=2)
