"""Which torch a wheel loads on, as selection sees it: a stable floor, one torch minor, or
no torch at all, read from what ``tag`` wrote (``WHEEL Torch-ABI``) and the wheel's own
torch requirement or local version label."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.errors import InputError
from torchwheel.version import FeatureVersion
from torchwheel.wheel.metadata import TORCH_ABI_FIELD, torch_abi_floor

_LOCAL_TORCH = re.compile(r"(?:^|[._])torch(\d+)[._]?(\d+)(?:$|[._])")  # +torch2.12, +cu128.torch2_12


@dataclass(frozen=True)
class TorchNeed:
    """Which torch a wheel loads on.

    ``stable``: every torch >= ``floor``. ``unstable``: only the torch minor ``minor``
    (None when neither a one-minor ``Requires-Dist`` pin nor a ``torchX.Y`` local label names
    it). ``none``: no torch symbols at all (loads anywhere). ``source`` says where the fact
    came from: ``"WHEEL Torch-ABI"`` or ``"binaries (untagged wheel)"``.
    """

    kind: Literal["stable", "unstable", "none"]
    floor: FeatureVersion | None
    minor: tuple[int, int] | None
    source: str

    def __str__(self) -> str:
        if self.kind == "stable" and self.floor is not None:
            return f"stable >= {self.floor.minor_release if self.floor.patch == 0 else self.floor.release}"
        if self.kind == "unstable":
            return (
                f"unstable, torch {self.minor[0]}.{self.minor[1]} only"
                if self.minor
                else "unstable, torch unknown"
            )
        return "no torch"


def _minor_of(reqs: Iterable[Requirement]) -> tuple[int, int] | None:
    """The torch minor an unstable build names: its one-minor pin (``torch==2.13.*``)."""
    for req in reqs:
        if req.marker is not None:
            continue
        minors = {(2, m) for m in range(40) if req.specifier.contains(f"2.{m}.0", prereleases=True)}
        minors |= {(2, m) for m in range(40) if req.specifier.contains(f"2.{m}.5", prereleases=True)}
        if len(minors) == 1:
            return minors.pop()
    return None


def _local_minor(version: Version) -> tuple[int, int] | None:
    match = _LOCAL_TORCH.search(version.local or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def torch_need(declared: str, reqs: tuple[Requirement, ...], version: Version, source: str) -> TorchNeed:
    """From a ``Torch-ABI`` value (``2.10``, ``2.10.1``, ``unstable``, ``none``)."""
    value = declared.strip()
    if value == "unstable":
        return TorchNeed("unstable", None, _local_minor(version) or _minor_of(reqs), source)
    if value == "none":
        return TorchNeed("none", None, None, source)
    try:
        return TorchNeed("stable", torch_abi_floor(value), None, source)  # wheel.metadata: the one reading
    except (ValueError, InputError) as exc:
        raise InputError(f"WHEEL {TORCH_ABI_FIELD}: {value!r} is neither a version nor 'unstable'") from exc
