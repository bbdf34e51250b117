"""Which torch a wheel loads on, and the one verdict every command gives on it.

A wheel's need is a stable floor, the torch minor(s) an unstable build was made for, or no
torch at all; it is read from what ``tag`` wrote (``WHEEL Torch-ABI``, and for per-minor
builds ``Torch-ABI-Builds``), from the wheel's own torch requirement or local version label,
or, for an untagged wheel, from its binaries (``analysis.wheelfacts.torch_need_of``).

``verdict`` is the single answer to "does this wheel load on this torch?": ``select`` and
``install`` ask it for the target's torch, ``index`` and ``matrix`` for every release of a
minor (``minor_verdict``), ``compat`` for the torch it compared symbols with. A wheel loads
when its binaries load (the need) *and* its own ``Requires-Dist: torch`` admits that torch
(else an installer would try to swap torch), so the five cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Literal

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.errors import InputError
from torchwheel.torchabi import backend, releases
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.torchabi.releases import Minor, minor_of, show_minor
from torchwheel.version import FeatureVersion
from torchwheel.wheel.metadata import TORCH_ABI_BUILDS_FIELD, TORCH_ABI_FIELD, torch_abi_floor

_LOCAL_TORCH = re.compile(r"(?:^|[._])torch(\d+)[._]?(\d+)(?:$|[._])")  # +torch2.12, +cu128.torch2_12


Build = tuple[int, ...]  # the torch release a build was made for: a minor (2, 4) or a patch (2, 2, 1)


def show_build(build: Build) -> str:
    return ".".join(map(str, build))


def show_builds(builds: Iterable[Build]) -> str:
    """``2.4``, ``2.4, 2.6``, a run of minors ``2.4-2.9``, or patches ``2.0.0, 2.0.1``."""
    found = sorted(set(builds))
    minors = all(len(b) == 2 for b in found)
    if minors and len(found) > 2 and all(b == (a[0], a[1] + 1) for a, b in pairwise(found)):
        return f"{show_build(found[0])}-{show_build(found[-1])}"
    return ", ".join(show_build(b) for b in found)


def build_matches(build: Build, torch: Version) -> bool:
    """Does a build for ``build`` (a minor, or one patch release) serve this torch release?"""
    return tuple(Version(torch.base_version).release[: len(build)]) == build


@dataclass(frozen=True)
class TorchNeed:
    """Which torch a wheel's binaries load on.

    ``stable``: every torch >= ``floor``. ``unstable``: only the torch releases in
    ``builds`` (minors, or patch releases where the names say so): one minor for an ordinary
    build, several for a wheel that ships one library per torch release and loads the
    matching one (``analysis.alternatives``); empty when nothing names the build torch.
    ``none``: no torch symbols at all (loads anywhere). ``source`` says where the fact came
    from: ``"WHEEL Torch-ABI"`` or ``"binaries (untagged wheel)"``.
    """

    kind: Literal["stable", "unstable", "none"]
    floor: FeatureVersion | None
    builds: frozenset[Build]
    source: str
    # the torch builds it loads on (``torchabi.backend``): ``any``, or ``cpu``, ``cuda-13``, ...
    build_classes: frozenset[str] = frozenset({"any"})

    def __str__(self) -> str:
        if self.kind == "stable" and self.floor is not None:
            return f"stable >= {self.floor.minor_release if self.floor.patch == 0 else self.floor.release}"
        if self.kind == "unstable" and len(self.builds) > 1:
            return f"unstable, per-minor builds for torch {show_builds(self.builds)}"
        if self.kind == "unstable" and self.builds:
            return f"unstable, torch {show_builds(self.builds)} only"
        if self.kind == "unstable":
            return "unstable, torch unknown"
        return "no torch"

    @property
    def named_minors(self) -> set[Minor]:
        """The minors the need itself names (a stable floor's, an unstable build's)."""
        if self.kind == "stable" and self.floor is not None:
            return {minor_of(self.floor)}
        return {(b[0], b[1]) for b in self.builds}


def pinned_minor(reqs: Iterable[Requirement]) -> Minor | None:
    """The torch minor an unstable build names by its unconditional one-minor requirement."""
    for req in reqs:
        if req.marker is None and (minor := releases.pinned_minor(req.specifier)) is not None:
            return minor
    return None


def local_minor(version: Version) -> Minor | None:
    match = _LOCAL_TORCH.search(version.local or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def parse_builds(value: str) -> frozenset[Build]:
    """A ``Torch-ABI-Builds`` value: ``2.4, 2.5, 2.9`` (minors) or ``2.2.0, 2.2.1`` (patches)."""
    found: set[Build] = set()
    for part in value.split(","):
        numbers = part.strip().split(".")
        if not 2 <= len(numbers) <= 3 or not all(n.isdigit() and len(n) <= 3 for n in numbers):
            raise InputError(
                f"WHEEL {TORCH_ABI_BUILDS_FIELD}: {value[:80]!r} is not a list of torch releases"
            )
        found.add(tuple(int(n) for n in numbers))
    return frozenset(found)


def torch_need(
    declared: str,
    reqs: tuple[Requirement, ...],
    version: Version,
    source: str,
    builds: str | None = None,
    torch_build: str | None = None,
) -> TorchNeed:
    """From a ``Torch-ABI`` value (``2.10``, ``2.10.1``, ``unstable``, ``none``), for
    per-minor builds the ``Torch-ABI-Builds`` value, and the ``Torch-Build`` value."""
    need = _torch_need(declared.strip(), reqs, version, source, builds)
    return replace(need, build_classes=backend.parse_need(torch_build)) if torch_build else need


def _torch_need(
    value: str, reqs: tuple[Requirement, ...], version: Version, source: str, builds: str | None
) -> TorchNeed:
    if value == "unstable":
        if builds:
            return TorchNeed("unstable", None, parse_builds(builds), source)
        minor = local_minor(version) or pinned_minor(reqs)
        return TorchNeed("unstable", None, frozenset({minor} if minor else ()), source)
    if value == "none":
        return TorchNeed("none", None, frozenset(), source)
    try:
        return TorchNeed(
            "stable", torch_abi_floor(value), frozenset(), source
        )  # wheel.metadata: the one reading
    except (ValueError, InputError) as exc:
        raise InputError(f"WHEEL {TORCH_ABI_FIELD}: {value!r} is neither a version nor 'unstable'") from exc


# -- the verdict -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """Does a wheel load on one torch: ``loads`` (``only``: on this minor only, an unstable
    build), and why, either way."""

    loads: bool
    reason: str
    only: bool = False


def _binaries_verdict(need: TorchNeed, torch: Version) -> Verdict:
    if need.kind == "none":
        return Verdict(True, "uses no torch symbols")
    if need.kind == "stable" and need.floor is not None:
        if Version(torch.base_version) >= Version(need.floor.release):  # a 2.12 pre-release has 2.12's shims
            return Verdict(True, f"{need} loads on torch {torch.public}")
        return Verdict(False, f"{need}: torch {torch.public} is older than its target")
    if not need.builds:
        return Verdict(False, "unstable build for an unknown torch (no torch==X.Y.* pin or +torchX.Y label)")
    match = next((b for b in sorted(need.builds) if build_matches(b, torch)), None)
    if match is not None:
        what = "has a build for" if len(need.builds) > 1 else "built for"
        return Verdict(True, f"{need}: {what} torch {show_build(match)}", only=True)
    built = "has builds for" if len(need.builds) > 1 else "built for"
    here = show_minor(minor_of(torch)) if all(len(b) == 2 for b in need.builds) else torch.public
    return Verdict(False, f"{need}: {built} torch {show_builds(need.builds)}, the target has {here}")


def requirement_excludes(
    reqs: Iterable[Requirement], markers: Mapping[str, str] | None, torch: Version
) -> str:
    """Why the wheel's ``Requires-Dist: torch`` lines that apply keep this torch out, or ""."""
    for req in reqs:
        if req.marker is not None and (markers is None or not req.marker.evaluate(dict(markers))):
            continue
        if not req.specifier.contains(torch, prereleases=True) and not req.specifier.contains(
            Version(torch.public), prereleases=True
        ):
            return f"Requires-Dist {req} excludes torch {torch.public}"
    return ""


def verdict(
    need: TorchNeed,
    reqs: Iterable[Requirement],
    markers: Mapping[str, str] | None,
    torch: Version | None,
    build: TorchBuild | None = None,
) -> Verdict:
    """The one answer to "does this wheel load on this torch?" (module docstring): the
    torch version, the torch build (``build``: CPU, CUDA 13, ...; None when the target's is
    not known, which is said, not judged) and the wheel's own requirement.

    ``markers``: the target's environment for requirements with markers; None evaluates only
    the unconditional ones."""
    if torch is None:
        if need.kind == "none" and "any" in need.build_classes:
            return Verdict(True, "uses no torch symbols")
        return Verdict(False, f"{need}: the target has no torch (torchwheel never installs torch)")
    found = _binaries_verdict(need, torch)
    if not found.loads:
        return found
    fits, why = backend.build_fits(need.build_classes, build)
    if not fits:
        return Verdict(False, why)
    excluded = requirement_excludes(reqs, markers, torch)
    if excluded:
        return Verdict(False, excluded)
    return replace(found, reason=f"{found.reason}; {why}") if why else found


Cell = Literal["loads", "only", "some", "no", "unknown"]


@dataclass(frozen=True)
class MinorVerdict:
    """The verdict over every known release of one torch minor (a ``matrix`` cell, an
    ``index`` listing, a ``select --torch X.Y`` plan): ``some`` when it loads on some patch
    releases only (``torch==2.9.1`` on 2.9); ``unknown`` for an unstable build whose torch
    nothing names (it loads on some minor, nobody can say which: no choice picks it)."""

    cell: Cell
    reason: str
    loads_on: tuple[Version, ...]

    @property
    def loads(self) -> bool:
        return self.cell in ("loads", "only", "some")


def minor_verdict(
    need: TorchNeed,
    reqs: Iterable[Requirement],
    markers: Mapping[str, str] | None,
    minor: Minor,
    build: TorchBuild | None = None,
) -> MinorVerdict:
    reqs = tuple(reqs)
    if need.kind == "unstable" and not need.builds:
        return MinorVerdict(
            "unknown", verdict(need, reqs, markers, releases.releases_of(minor)[-1], build).reason, ()
        )
    candidates = releases.releases_of(minor)
    each = [(v, verdict(need, reqs, markers, v, build)) for v in candidates]
    good = tuple(v for v, found in each if found.loads)
    if not good:
        return MinorVerdict("no", each[-1][1].reason, ())
    if len(good) < len(candidates):
        bad = next(found for _, found in each if not found.loads)
        return MinorVerdict("some", f"loads on torch {releases.span(good)} only ({bad.reason})", good)
    first = next(found for _, found in each if found.loads)
    return MinorVerdict("only" if first.only else "loads", first.reason, good)
