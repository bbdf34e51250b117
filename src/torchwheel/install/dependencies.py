"""The chosen wheel's other requirements, held against what the target has installed.

torchwheel installs no dependencies (it would need a resolver, and the other dependencies are
pip's or uv's business), so ``install`` says which of the wheel's ``Requires-Dist`` the target
does not satisfy: not installed, or installed at a version the requirement excludes. Markers
are evaluated for the target (``extra`` empty: no extras were asked for); torch is judged by
the choice itself. The target lists its distributions in a subprocess, as the probe does: its
``importlib.metadata`` sees its own ``sys.path``, ``.pth`` files included.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.errors import InputError
from torchwheel.selection.target import TorchTarget
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.headers import parse_headers

_LIST = """
import importlib.metadata as m, json
print(json.dumps([[d.metadata["Name"] or "", d.version] for d in m.distributions()]))
"""


def installed(target: TorchTarget) -> dict[NormalizedName, str]:
    """Every distribution the target's interpreter sees, by name (the first on its path)."""
    if target.python is None:
        return {}
    with tempfile.TemporaryDirectory() as empty:  # ``-c`` puts the cwd on sys.path
        try:
            proc = subprocess.run(
                [target.python, "-E", "-c", _LIST], capture_output=True, text=True, timeout=120, cwd=empty
            )
            found = json.loads(proc.stdout) if proc.returncode == 0 else None
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            raise InputError(f"--python {target.python}: cannot list its distributions ({exc})") from exc
    if not isinstance(found, list):
        raise InputError(f"--python {target.python}: cannot list its distributions")
    out: dict[NormalizedName, str] = {}
    for name, version in found:
        out.setdefault(canonicalize_name(str(name)), str(version))
    return out


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
