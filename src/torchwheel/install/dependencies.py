"""The chosen wheel's other requirements, held against what the target has installed.

torchwheel installs no dependencies (it would need a resolver, and the other dependencies are
pip's or uv's business), so ``install`` says which of the wheel's ``Requires-Dist`` the target
does not satisfy: not installed, or installed at a version the requirement excludes. Markers
are evaluated for the target (``extra`` empty: no extras were asked for); torch is judged by
the choice itself. The target's distributions are the ``.dist-info`` folders of its search path
(``selection.target.probe``: ``.pth`` path lines included, nothing of the environment run).
"""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.selection.target import TorchTarget
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.headers import parse_headers
from torchwheel.wheel.installed import distributions


def installed_by_name(target: TorchTarget) -> dict[NormalizedName, str]:
    """Every distribution on the target's search path, by name (the first on the path, as
    ``importlib.metadata`` finds it): read from the ``.dist-info`` folders on disk, never by
    running the target (its ``.pth`` files and ``sitecustomize`` would run)."""
    return distributions(target.search_path)


def requirements(wheel: Path) -> list[Requirement]:
    """The wheel's ``Requires-Dist`` (an invalid one is ``check``'s TW407, skipped here)."""
    with WheelArchive(wheel) as archive:
        text = archive.contents.metadata_text
    out = []
    for raw in parse_headers(text).get_all("Requires-Dist") or []:
        try:
            out.append(Requirement(str(raw)))
        except InvalidRequirement:
            continue
    return out


def unmet(reqs: list[Requirement], have: dict[NormalizedName, str], markers: dict[str, str]) -> list[str]:
    """Each requirement the target lacks, with what it has instead."""
    env = {**markers, "extra": ""}
    out = []
    for req in reqs:
        name = canonicalize_name(req.name)
        if name == "torch" or (req.marker is not None and not req.marker.evaluate(env)):
            continue
        version = have.get(name)
        if version is None:
            out.append(f"{req} (not installed)")
            continue
        try:
            ok = req.specifier.contains(Version(version), prereleases=True)
        except InvalidVersion:
            ok = True  # a version no specifier can judge: not ours to flag
        if not ok:
            out.append(f"{req} ({version} installed)")
    return out
