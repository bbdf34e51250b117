"""``tag --variant``: the plain plan plus ``variant.json`` and the variant label in the file
name (the format: ``wheel.variant``). The plain wheel stays beside it as the fallback."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from torchwheel.errors import InputError
from torchwheel.tagging.plan import Plan
from torchwheel.torchabi.need import show_build, torch_need
from torchwheel.wheel.metadata import parse_metadata
from torchwheel.wheel.variant import DIST_INFO_FILE, document, encode, label, property_of


def variant_plan(p: Plan, dist_info: str) -> Plan:
    """The plain plan plus ``variant.json`` and the labelled file name.

    An unstable wheel's minor is the one its (planned) ``Requires-Dist: torch==X.Y.*`` pins,
    read through the same model ``select`` uses.
    """
    meta = parse_metadata(p.members[f"{dist_info}/METADATA"].decode())
    version = Version(dist_info.removesuffix(".dist-info").rpartition("-")[2])
    builds = ", ".join(show_build(b) for b in sorted(p.torch_abi.builds)) or None
    need = torch_need(str(p.torch_abi), meta.torch_requirements, version, "tag", builds)
    if need.kind == "stable" and need.floor is not None:
        value = need.floor.minor_release if need.floor.patch == 0 else need.floor.release
    elif need.kind == "unstable" and len(need.builds) > 1:
        raise InputError(
            "--variant: per-minor builds would need one build_torch value per minor; "
            "publish them as the plain wheel (it loads the matching library itself)"
        )
    elif need.kind == "unstable" and need.builds:
        value = show_build(next(iter(need.builds)))
    elif need.kind == "unstable":
        raise InputError("--variant: the unstable build's torch minor is unknown: pass --build-torch X.Y")
    else:
        value = ""
    feature, value = property_of(need.kind, value)
    members = {**p.members, f"{dist_info}/{DIST_INFO_FILE}": encode(document(feature, value))}
    filename = p.filename.removesuffix(".whl") + f"-{label(feature, value)}.whl"
    return replace(
        p, filename=filename, members=members, changes=[*p.changes, f"variant {label(feature, value)}"]
    )
