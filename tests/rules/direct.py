"""A rule called directly, as ``rules.run_all`` calls it, on the facts of a real wheel: what the
rule tests of this package share."""

from __future__ import annotations

from pathlib import Path

from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.api import inspect_wheel
from torchwheel.rules.registry import Check, Hit, Omitted, Policy

from ..lib.helpers import fixture_wheels_module


def facts(path: Path) -> WheelFacts:
    return inspect_wheel(path).facts[0]


def named(found: list[Hit | Omitted]) -> list[Hit]:
    """The hits, having checked that the rule counted none instead of naming it (only the
    RECORD rules ever do)."""
    assert not any(isinstance(h, Omitted) for h in found), found
    return [h for h in found if not isinstance(h, Omitted)]


def hits(rule: Check, path: Path, policy: Policy | None = None) -> list[Hit]:
    return named(list(rule(facts(path), policy or Policy())))


def custom_wheel(
    tmp_path: Path,
    built: dict[str, Path],
    tag: str,
    member: str,
    scenario: str,
    requires_python: str = ">=3.9",
) -> Path:
    """One wheel of one binary scenario, written by the fixtures' own zipfile writer."""
    wheels = fixture_wheels_module()
    spec = wheels.WheelSpec(
        "custom", "xcustom", tag, ((f"xcustom/{member}", scenario),), requires_python=requires_python
    )
    path: Path = wheels.write_wheel(tmp_path / spec.filename, spec, built)
    return path
