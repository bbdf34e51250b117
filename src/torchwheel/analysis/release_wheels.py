"""The wheels of one release (same name and version): installers read one METADATA per
release, so ``check`` judges them together (TW6xx) and ``tag --release`` writes them one
shared torch requirement set. A local version label (``1.0+torch2.12``) makes another
release: that is the way out.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.frozen import frozen


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
