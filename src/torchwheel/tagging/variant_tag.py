"""``tag --variant``: the plain plan plus ``variant.json`` and the variant label in the file
name (the format: ``wheel.variant_json``). The plain wheel stays beside it as the fallback.

A wheel that loads only on CUDA builds of torch is labelled by NVIDIA's provider (the CUDA
major, the GPU code), which uv's preview resolves itself; every other wheel by torchwheel's
(its torch floor or build minor): see ``wheel.variant_json`` for why not both at once."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from packaging.version import Version

from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.errors import InputError
from torchwheel.tagging.plan import Plan
from torchwheel.torchabi.backend import BuildSet
from torchwheel.torchabi.cuda_archs import ptx_cuda
from torchwheel.torchabi.need import need_from_fields, show_release
from torchwheel.wheel.metadata import parse_metadata, parse_wheel_fields
from torchwheel.wheel.variant_json import (
    DIST_INFO_FILE,
    document,
    encode_variant_json,
    label,
    nvidia_document,
    property_of,
)


def variant_plan(p: Plan, dist_info: str, w: WheelFacts) -> Plan:
    """The plain plan plus ``variant.json`` and the labelled file name.

    An unstable wheel's minor is the one its (planned) ``Requires-Dist: torch==X.Y.*`` pins,
    read through the same model ``select`` uses.
    """
    builds = p.need.builds
    if builds and all(b.kind == "cuda" for b in builds):
        name, doc = _nvidia(w, builds)
        return _labelled(p, dist_info, name, doc)
    meta = parse_metadata(p.members[f"{dist_info}/METADATA"].decode())
    version = Version(dist_info.removesuffix(".dist-info").rpartition("-")[2])
    need = need_from_fields(
        parse_wheel_fields(p.members[f"{dist_info}/WHEEL"].decode()),
        meta.torch_requirements,
        version,
        w.tables.releases,
    )
    if need is None:
        raise InputError(
            "--variant: the wheel's torch build could not be read from its binaries",
            reference="rewrite-refused",
        )
    if need.kind == "stable" and need.floor is not None:
        value = need.label
    elif need.kind == "unstable" and len(need.releases) > 1:
        raise InputError(
            "--variant: per-minor builds would need one build_torch value per minor; "
            "publish them as the plain wheel (it loads the matching library itself)",
            reference="rewrite-refused",
        )
    elif need.kind == "unstable" and need.releases:
        value = show_release(next(iter(need.releases)))
    elif need.kind == "unstable":
        raise InputError(
            "--variant: the unstable build's torch minor is unknown: pass --build-torch X.Y (or installed)",
            reference="rewrite-refused",
        )
    else:
        value = ""
    feature, value = property_of(need.kind, value)
    return _labelled(p, dist_info, label(feature, value), document(feature, value))


def _labelled(p: Plan, dist_info: str, name: str, doc: dict[str, Any]) -> Plan:
    members = {**p.members, f"{dist_info}/{DIST_INFO_FILE}": encode_variant_json(doc)}
    filename = p.filename.removesuffix(".whl") + f"-{name}.whl"
    return replace(p, filename=filename, members=members, changes=[*p.changes, f"variant {name}"])


def _nvidia(w: WheelFacts, builds: BuildSet) -> tuple[str, dict[str, Any]]:
    """NVIDIA's properties of a wheel that needs a CUDA build: the oldest CUDA major one of
    its builds loads on (a runtime's name, else the PTX ISA's toolkit), and the GPU code of
    all its libraries (the build's architecture list, as the provider's values name it)."""
    needs = w.accelerator_needs
    majors = [b.major for b in builds if b.major is not None]
    isas = [cuda[0] for i, _ in needs.gpu.cuda if i.ptx_isa and (cuda := ptx_cuda(i.ptx_isa))]
    major = min(majors) if majors else min(isas) if isas else None
    values = [f"{i.arch}_{'virtual' if i.kind == 'ptx' else 'real'}" for i, _ in needs.gpu.cuda]
    return nvidia_document(major, values)
