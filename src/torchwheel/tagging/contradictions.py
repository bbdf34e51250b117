"""What ``tag`` refuses to write because the wheel would contradict itself: the options a
user gives (``--local-label torch2.13``, ``--build-torch 2.13``) against what the binaries
need and what the torch requirement admits. Each refusal is one line (exit 2; ``repair``
refuses with exit 1), because every reader downstream believes the label or the pin: ``index``
would list the wheel under ``torch-2.13``, ``install`` would put it there, and it would not
load.

"Which torch releases does the requirement admit" has one answer, ``torchabi.torch_releases``; "does
the wheel load on that torch" has one too, ``torchabi.verdicts.minor_verdict``: both are asked
here, never reimplemented.
"""

from __future__ import annotations

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.errors import InputError, clipped
from torchwheel.tables.tableset import Tables
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.need import TorchNeed, local_minor, need_from_fields, show_releases
from torchwheel.torchabi.torch_releases import Releases, show_minor
from torchwheel.torchabi.verdicts import minor_verdict
from torchwheel.version import FeatureVersion


def check_importable(need: TorchNeed) -> None:
    """A wheel whose own import fails on every torch (its code imports a file as a module
    that exports no hook for its name: TW304) has no torch to state: WHEEL would promise the
    torches it loads on, and every installer would believe it."""
    if need.unimportable:
        shown = ", ".join(need.unimportable[:2]) + (" and more" if len(need.unimportable) > 2 else "")
        raise InputError(
            f"its code imports {shown} as a module, which exports no module hook for its name: its import "
            "fails on every torch (TW304); load the library by path (torch.ops.load_library) or build it "
            "as a module, then tag it",
            reference="rewrite-refused",
        )


def check_build_torch(need: TorchNeed, opts: TagOptions, releases: Releases) -> None:
    """``--build-torch X.Y`` names the one torch of a version-locked build: pointless on any
    other wheel, and a lie against a requirement that admits no release of X.Y (of
    ``releases``, the run's list)."""
    if opts.build_torch is None:
        return
    build = torch_releases.minor_of(FeatureVersion.parse(opts.build_torch))
    said = f"--build-torch {show_minor(build)}"
    if need.kind == "stable":
        raise InputError(
            f"{said}: the wheel is stable-ABI (target {need.label}): it loads on every torch from its target on, "
            "and --build-torch only names the torch of a version-locked (unstable) build; drop it",
            reference="rewrite-refused",
        )
    if need.kind in ("none", "any"):
        raise InputError(
            f"{said}: the wheel uses no torch symbols, so no build torch to name; drop it",
            reference="rewrite-refused",
        )
    if need.per_release:
        raise InputError(
            f"{said}: the wheel ships builds for torch {show_releases(need.releases)} and names them itself "
            "(Torch-ABI-Builds); drop it",
            reference="rewrite-refused",
        )
    if build > torch_releases.minor_of(releases.future()):
        return  # no such torch yet: ``requirement`` refuses it in its own words
    for req in need.requirements:
        if req.marker is None and build not in releases.admitted_minors(req.specifier):
            raise InputError(
                f"{said} contradicts the wheel's Requires-Dist {clipped(req)} (it admits torch "
                f"{releases.spec_span(req.specifier)}): fix the requirement in the project (or the option)",
                reference="rewrite-refused",
            )


def check_local_label(
    fields: list[tuple[str, str]],
    reqs: tuple[Requirement, ...],
    version: str,
    opts: TagOptions,
    tables: Tables,
) -> None:
    """A ``--local-label`` that names a torch (``torch2.13``) must name one the wheel, as
    written (its WHEEL ``fields``, ``reqs``: its new torch requirement), loads on; else
    ``index`` lists it there."""
    if opts.local_label is None:
        return
    minor = local_minor(Version(version))
    if minor is None:
        return
    stated: dict[str, list[str]] = {}
    for name, value in fields:
        stated.setdefault(name, []).append(value)
    need = need_from_fields(stated, reqs, Version(version), tables.releases)
    found = minor_verdict(need, None, minor, tables=tables) if need is not None else None
    if found is not None and not found.loads and found.axis in ("version", "requirement"):
        raise InputError(
            f"--local-label {opts.local_label} names torch {show_minor(minor)}, but the wheel does not load "
            f"there ({found.reason}); label it with a torch it loads on, or fix the requirement",
            reference="rewrite-refused",
        )
