"""``tag`` over a release: one identical torch requirement set for every wheel.

Installers read one METADATA per release (uv assumes every wheel of a version has the same),
so the per-wheel requirements that ``tag`` derives are merged into one set: identical
requirements stay as they are; requirements that differ by platform become one line per
platform family with a ``sys_platform`` marker (the most common one takes ``!=`` for the
others, so a platform nobody built for keeps the common floor). A release whose wheels
disagree *within* one platform family (or a stable beside an unstable build: TW603) cannot
be expressed with markers and is refused with what to do instead. A hybrid release (a stable
build beside per-minor builds for the minors below its floor) given without ``--release``
keeps each wheel's own requirement: its builds never meet on one torch, and the recipe
(local labels, ``index``) gives each torch its own.
"""

from __future__ import annotations

from collections import Counter

from packaging.markers import Marker
from packaging.requirements import Requirement

from torchwheel.analysis.release_wheels import group_by_release, hybrid_of, platform_family, release_key
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.errors import InputError
from torchwheel.tagging.plan import plan
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.wheel.metadata import parse_metadata


def _with_marker(req: str, family_marker: str) -> str:
    r = Requirement(req)
    marker = f"({family_marker}) and ({r.marker})" if r.marker else family_marker
    r.marker = Marker(marker)
    return str(r)


def shared_requirements(group: list[WheelFacts], opts: TagOptions) -> tuple[str, ...]:
    """The one torch requirement set for every wheel of ``group`` (one release)."""
    kinds = {w.torch_need.kind for w in group} - {"none", "any"}
    hybrid = hybrid_of(group)
    if hybrid is not None:
        raise InputError(
            f"{group[0].contents.filename_name} {group[0].contents.filename_version}: a hybrid release "
            f"({hybrid.summary}) cannot share one torch requirement: tag each build on its own, the "
            "per-minor builds with --build-torch X.Y --local-label torchX.Y, and publish them with "
            "`torchwheel index` (docs/installers.md, hybrid releases)",
            reference="rewrite-refused",
        )
    if kinds == {"stable", "unstable"}:
        raise InputError(
            f"{group[0].contents.filename_name} {group[0].contents.filename_version}: stable and unstable "
            "builds in one release cannot share a torch requirement (TW603): tag the unstable build "
            "with --local-label torchX.Y or publish it on a per-target index",
            reference="rewrite-refused",
        )
    per_family: dict[str | None, tuple[str, ...]] = {}
    for w in group:
        meta = plan(w, opts).members[f"{w.contents.dist_info}/METADATA"].decode()
        reqs = tuple(sorted(str(r) for r in parse_metadata(meta).torch_requirements))
        family = platform_family(w)
        if per_family.setdefault(family, reqs) != reqs:
            raise InputError(
                f"{w.contents.path}: its torch requirement {', '.join(reqs) or 'none'} differs from another "
                f"{family or 'platform-independent'} wheel of the same release; markers cannot tell them "
                "apart: give one a local label (--local-label) or a separate index",
                reference="rewrite-refused",
            )
    sets = set(per_family.values())
    if len(sets) == 1:
        return sets.pop()
    if None in per_family:
        raise InputError(
            "a platform-independent wheel cannot share a release with wheels whose torch floors differ",
            reference="rewrite-refused",
        )
    common, _ = Counter(per_family.values()).most_common(1)[0]
    out: list[str] = []
    others = sorted(f for f, reqs in per_family.items() if reqs != common and f is not None)
    for family in others:
        out += [_with_marker(r, f'sys_platform == "{family}"') for r in per_family[family]]
    rest = " and ".join(f'sys_platform != "{f}"' for f in others)
    out += [_with_marker(r, rest) for r in common]
    return tuple(out)


def release_sets(wheels: list[WheelFacts], opts: TagOptions, mode: bool | None) -> dict[int, tuple[str, ...]]:
    """``id(wheel)`` -> the requirement set of its release. ``mode``: True (``--release``: the
    wheels must be one release), None (automatic: every release given with 2+ wheels),
    False (``--no-release``: each wheel on its own)."""
    if mode is False:
        return {}
    if mode is True:
        keys = {release_key(w) for w in wheels}
        if len(keys) != 1 or None in keys:
            shown = ", ".join(sorted(f"{k[0]} {k[1]}" if k else "not a wheel file" for k in keys))
            raise InputError(
                f"--release: the wheels given are not one release ({shown})", reference="rewrite-refused"
            )
        groups = [tuple(wheels)]
    else:  # a hybrid release keeps each wheel's own requirement (module docstring)
        groups = [g for g in group_by_release(wheels) if hybrid_of(g) is None]
    out: dict[int, tuple[str, ...]] = {}
    for group in groups:
        reqs = shared_requirements(list(group), opts)
        out.update({id(w): reqs for w in group})
    return out
