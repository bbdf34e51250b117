"""TW5xx: ``Requires-Dist: torch`` agrees with what the binaries can load on."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.analysis.wheelfacts import WheelFacts, wheel_torch_abi
from torchwheel.rules.registry import Hit, Policy, rule
from torchwheel.version import FeatureVersion

# Probing a specifier with concrete releases answers "does it admit anything older than
# X / more than one minor?" for every operator packaging knows, without re-implementing
# PEP 440 interval arithmetic.
_MINORS = range(0, 40)


def _admits_older(req: Requirement, floor: FeatureVersion) -> Version | None:
    probes = [Version(f"{floor.major}.{m}.{p}") for m in range(floor.minor) for p in (0, 9)]
    probes += [Version(f"{floor.major}.{floor.minor}.{p}") for p in range(floor.patch)]
    probes += [Version(f"{floor.major - 1}.99"), Version("0.1")] if floor.major > 0 else []
    return next((v for v in reversed(probes) if req.specifier.contains(v, prereleases=True)), None)


def _admits_minors(req: Requirement) -> list[str]:
    return [f"2.{m}" for m in _MINORS if req.specifier.contains(Version(f"2.{m}.0"), prereleases=True)]


@rule("TW501")
def missing(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    abi = wheel_torch_abi(w)
    if policy.require_torch and abi.kind != "none" and not w.metadata.torch_requirements:
        want = f"torch>={abi}" if abi.kind == "stable" else "torch==<build torch minor>.*"
        yield "", f"binaries link libtorch ({abi}) but METADATA has no Requires-Dist: torch: add {want!r}"


@rule("TW502")
def too_tight(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    abi = wheel_torch_abi(w)
    if abi.kind != "stable" or abi.target is None:
        return
    for req in w.metadata.torch_requirements:
        if len(_admits_minors(req)) <= 1:
            yield (
                "",
                (
                    f"Requires-Dist {str(req)!r} pins one torch release although the stable ABI loads on "
                    f"torch>={abi}: require 'torch>={abi}' so installers do not swap the user's torch"
                ),
            )


@rule("TW503")
def too_loose(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    abi = wheel_torch_abi(w)
    if abi.kind != "stable" or abi.target is None:
        return
    for req in w.metadata.torch_requirements:
        older = _admits_older(req, abi.target)
        if older is not None:
            yield (
                "",
                (
                    f"Requires-Dist {str(req)!r} admits torch {older}, but the binaries need torch {abi.target}: "
                    f"require 'torch>={abi}'"
                ),
            )


@rule("TW504")
def unstable_unpinned(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    abi = wheel_torch_abi(w)
    if abi.kind != "unstable":
        return
    for req in w.metadata.torch_requirements:
        minors = _admits_minors(req)
        if len(minors) > 1:
            yield (
                "",
                (
                    f"Requires-Dist {str(req)!r} admits torch {minors[0]}..{minors[-1]}, but the binaries use unstable "
                    "libtorch symbols: pin the torch minor it was built with, 'torch==X.Y.*' (`torchwheel tag --build-torch X.Y` writes it)"
                ),
            )
