"""TW1xx: the stable-ABI marker is present, exported, readable and consistent."""

from __future__ import annotations

from collections.abc import Iterator

from torchwheel.analysis.member import SliceAnalysis
from torchwheel.analysis.wheelfacts import WheelFacts, iter_slices
from torchwheel.binary.marker_record import SYMBOL
from torchwheel.rules.registry import Hit, Policy, rule
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.symtable import BASELINE
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


@rule("TW107")
def target_not_a_release(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    newest = torch_releases.newest()
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
            continue
        if torch_releases.minor_of(v) <= torch_releases.minor_of(newest) or s.torch.unknown_symbols:
            continue  # a known minor, or shims this torchwheel does not know: a newer torch (TW203)
        meant = _hex_reading(v)
        floor = s.torch.min_version
        likely = (
            f"; the symbols fit {meant.minor_release}: did you mean {meant.to_int():#018x}?"
            if meant is not None
            and torch_releases.minor_of(meant) <= torch_releases.minor_of(newest)
            and (floor is None or floor <= meant)
            else ""
        )
        yield (
            member,
            f"[{arch}] declares torch {v} ({v.to_int():#018x}), newer than any torch release "
            f"(newest {newest}): TORCH_TARGET_VERSION is byte-packed hex{likely}",
        )
