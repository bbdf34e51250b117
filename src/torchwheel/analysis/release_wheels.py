"""The wheels of one release (same name and version): installers read one METADATA per
release, so ``check`` judges them together (TW6xx) and ``tag --release`` writes them one
shared torch requirement set. A local version label (``1.0+torch2.12``) makes another
release: that is the way out.

A *hybrid* release (``hybrid_of``) is a stable-ABI build for torch >= its floor beside
ordinary per-minor builds for the minors below it (prebuilt-kernel projects serve torch
2.10-2.12 users so): no torch has two of its builds that load, so the builds do not
conflict; only one METADATA per index cannot hold them, which local labels and per-target
indexes answer (``docs/installers.md``, "Hybrid releases").
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.frozen import frozen
from torchwheel.torchabi.need import Release, claimed_releases, show_release
from torchwheel.version import FeatureVersion


@frozen
class ReleaseView:
    wheel: WheelFacts
    release: tuple[WheelFacts, ...]  # every wheel of the release, this one included

    @property
    def others(self) -> list[WheelFacts]:
        return [w for w in self.release if w is not self.wheel]


def release_key(w: WheelFacts) -> tuple[str, str] | None:
    """(name, version) of a wheel file, or None for what is not one (binaries, directories)."""
    if not w.is_wheel_file or w.provides_libtorch:
        return None
    try:
        version = str(Version(w.contents.filename_version))
    except InvalidVersion:
        return None
    return canonicalize_name(w.contents.filename_name), version


def group_by_release(wheels: Iterable[WheelFacts]) -> list[tuple[WheelFacts, ...]]:
    """The releases with more than one wheel, in input order."""
    groups: dict[tuple[str, str], list[WheelFacts]] = {}
    for w in wheels:
        key = release_key(w)
        if key is not None:
            groups.setdefault(key, []).append(w)
    return [tuple(g) for g in groups.values() if len(g) > 1]


def platform_family(w: WheelFacts) -> str | None:
    """``sys_platform`` of a wheel's platform tags, None for ``any`` or a mix."""
    found = set()
    for t in w.contents.filename_tags:
        p = t.platform
        if p == "any":
            return None
        found.add("darwin" if p.startswith("macosx") else "win32" if p.startswith("win") else "linux")
    return found.pop() if len(found) == 1 else None


def markers_can_tell(a: WheelFacts, b: WheelFacts) -> bool:
    """Can ``sys_platform`` markers give two wheels of one release different requirements? Only
    when each is of one platform family and the two families differ."""
    fa, fb = platform_family(a), platform_family(b)
    return fa is not None and fb is not None and fa != fb


@frozen
class Hybrid:
    """A stable build for torch >= ``floor`` and per-minor builds for ``releases``, all below it."""

    floor: FeatureVersion  # the lowest floor of the release's stable wheels
    releases: tuple[Release, ...]  # what its version-locked wheels are built for, ascending

    @property
    def summary(self) -> str:
        shown = ", ".join(show_release(r) for r in self.releases)
        return f"stable >= {self.floor.minor_release}, per-minor builds for torch {shown}"


def hybrid_of(release: Iterable[WheelFacts]) -> Hybrid | None:
    """The release as a hybrid, or None: it has stable and version-locked wheels, every
    version-locked one is dated (its one-minor pin, else the releases it loads on; none newer
    than the tables) and every release it is for is a minor below every stable floor.
    Anything less is a real conflict (TW603)."""
    stable: list[FeatureVersion] = []
    locked: list[Release] = []
    for w in release:
        need = w.torch_need
        if need.kind == "stable":
            if need.floor is None or need.newer:
                return None
            stable.append(need.floor)
        elif need.kind == "unstable":
            # where installers put it: its one-minor pin (or label) where it states one, as the
            # imports of a per-minor build may exist in later torches too; else where it loads
            try:
                version = Version(w.contents.filename_version)
            except InvalidVersion:
                version = Version("0")
            releases = (
                claimed_releases(w.metadata.torch_requirements, version, w.tables.releases)[0]
                or need.releases
            )
            if not releases or need.newer:
                return None
            locked += releases
    if not stable or not locked:
        return None
    floor = min(stable)
    if any(r[:2] >= (floor.major, floor.minor) for r in locked):
        return None
    return Hybrid(floor, tuple(sorted(set(locked))))
