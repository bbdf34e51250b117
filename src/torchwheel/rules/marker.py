"""TW1xx: the stable-ABI marker is present, exported, readable and consistent."""

from __future__ import annotations

from collections.abc import Iterator

from torchwheel.analysis.member import SliceAnalysis
from torchwheel.analysis.wheelfacts import WheelFacts, iter_slices
from torchwheel.binary.marker_record import SYMBOL
from torchwheel.rules.registry import Hit, Policy, rule
from torchwheel.tables.symtable import BASELINE
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.torch_releases import Releases
from torchwheel.version import FeatureVersion


@rule("TW101")
def marker_missing(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        if s.declared is None and s.torch.usage == "stable":
            yield (
                member,
                (
                    f"[{arch}] uses the stable torch shim but carries no {SYMBOL}: include "
                    "<torchwheel/stable_abi_marker.h> (flag: `torchwheel include`) in one source file"
                ),
            )


@rule("TW102")
def marker_hidden(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        if s.declared is not None and not s.declared.exported:
            yield (
                member,
                (
                    f"[{arch}] marker {s.declared.record.version or '?'} is in the bytes but not exported: "
                    f"add {SYMBOL} to the version script / export list (Mach-O: _{SYMBOL})"
                ),
            )


@rule("TW103")
def marker_unknown_schema(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        schemas = {h.record.schema for h in s.facts.raw_markers if not h.record.known}
        if s.declared is not None and not s.declared.record.known:
            schemas.add(s.declared.record.schema)
        for schema in sorted(schemas):
            yield member, f"[{arch}] marker schema {schema} is unknown: upgrade torchwheel to read it"


def slice_targets(s: SliceAnalysis) -> set[FeatureVersion]:
    """Every target one slice carries: its records, companion symbols and declared marker;
    more than one is TW104 (and the declared target is then whichever the linker saw first)."""
    versions = {h.record.version for h in s.facts.raw_markers if h.record.version is not None}
    versions.update(s.facts.companions)
    if s.declared is not None and s.declared.record.version is not None:
        versions.add(s.declared.record.version)
    return versions


@rule("TW104")
def marker_disagree(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        versions = slice_targets(s)
        if len(versions) > 1:
            listed = ", ".join(str(v) for v in sorted(versions))
            yield (
                member,
                (
                    f"[{arch}] translation units were built for different targets ({listed}): "
                    "build every source with one TORCH_TARGET_VERSION"
                ),
            )


@rule("TW105")
def targets_differ(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    targets = w.declared_targets
    if len(set(targets.values())) > 1:
        listed = ", ".join(f"{m}={v}" for m, v in sorted(targets.items()))
        newest = max(targets.values())
        yield (
            "",
            (
                f"libraries declare different torch targets ({listed}); the wheel needs torch>={newest.minor_release}: "
                "build all with one TORCH_TARGET_VERSION"
            ),
        )


@rule("TW106")
def marker_unreadable(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        if s.marker_problem:
            yield (
                member,
                f"[{arch}] {SYMBOL} is exported but unreadable ({s.marker_problem}): rebuild with the header",
            )


def _hex_reading(v: FeatureVersion) -> FeatureVersion | None:
    """``TORCH_TARGET_VERSION`` is byte-packed hex: ``0x0210...`` is 2.16, which an author who
    meant 2.10 wrote by spelling the minor in decimal digits. The version those digits spell."""
    digits = f"{v.minor:x}"
    return FeatureVersion(v.major, int(digits)) if digits.isdigit() and int(digits) != v.minor else None


def hex_hint(v: FeatureVersion, floor: FeatureVersion | None, releases: Releases) -> str:
    """`` (the symbols fit 2.10: did you mean 0x020a000000000000?)`` when ``v``'s minor spelled
    in decimal digits is a known release the imports fit, else ""."""
    meant = _hex_reading(v)
    newest = torch_releases.minor_of(releases.newest())
    if meant is None or torch_releases.minor_of(meant) > newest or (floor is not None and floor > meant):
        return ""
    return f" (the symbols fit {meant.minor_release}: did you mean {meant.to_int():#018x}?)"


@rule("TW107")
def target_not_a_release(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """Only a target older than the stable ABI: one newer than every release this torchwheel
    knows may be a torch released since, which is TW207's "newer than the tables"."""
    for member, arch, s in iter_slices(w):
        d = s.declared
        if d is None or d.record.version is None:
            continue
        v = d.record.version
        if v < BASELINE:
            yield (
                member,
                f"[{arch}] declares torch {v}, older than the first torch with the stable ABI "
                f"({BASELINE.minor_release}): set TORCH_TARGET_VERSION to the torch you build against",
            )
