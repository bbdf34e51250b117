"""TW1xx: the stable-ABI marker is present, exported, readable and consistent."""

from __future__ import annotations

from collections.abc import Iterator

from torchwheel.analysis.wheelfacts import WheelFacts, declared_targets, iter_slices
from torchwheel.binary.marker_record import SYMBOL
from torchwheel.rules.registry import Hit, Policy, rule


@rule("TW101")
def missing(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
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
def hidden(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
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
def unknown_schema(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        schemas = {h.record.schema for h in s.facts.raw_markers if not h.record.known}
        if s.declared is not None and not s.declared.record.known:
            schemas.add(s.declared.record.schema)
        for schema in sorted(schemas):
            yield member, f"[{arch}] marker schema {schema} is unknown: upgrade torchwheel to read it"


@rule("TW104")
def disagree(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        versions = {h.record.version for h in s.facts.raw_markers if h.record.version is not None}
        versions.update(s.facts.companions)
        if s.declared is not None and s.declared.record.version is not None:
            versions.add(s.declared.record.version)
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
    targets = declared_targets(w)
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
def unreadable(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for member, arch, s in iter_slices(w):
        if s.marker_problem:
            yield (
                member,
                f"[{arch}] {SYMBOL} is exported but unreadable ({s.marker_problem}): rebuild with the header",
            )
