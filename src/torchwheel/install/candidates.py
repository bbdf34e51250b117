"""Candidate wheels: the facts selection needs of one wheel file (where they come from:
``discovery``).

Shared model (``select``, ``install``, ``index`` and ``matrix``): a ``Candidate`` is one wheel
file with the facts selection needs, read from its metadata only (``WheelArchive``: the
central directory, ``WHEEL`` and ``METADATA``). Its torch need comes from the
``Torch-ABI`` line of ``WHEEL`` that ``tag`` writes; an untagged wheel falls back to the
facts of its binaries (``analysis.load`` + ``wheel_torch_abi``), and says so in
``TorchNeed.source``. A candidate that cannot be read is a ``Skipped`` with its reason,
never an exception: one corrupt download must not hide the others.

Builds of one release for different torch targets cannot share a file name, so they differ
by a build tag, a local version label (``1.0+torch2.12``), a wheel-variant label, or sit in
separate folders / per-target indexes; a ``Candidate`` keeps all of these (``build``,
``version.local``, ``variant``, ``origin``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    parse_wheel_filename,
)
from packaging.version import Version

from torchwheel.errors import InputError
from torchwheel.torchabi.need import TorchNeed, torch_need
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.metadata import TORCH_ABI_FIELD, parse_metadata

_VARIANT_LABEL = re.compile(r"^[0-9a-z_.]+$")  # wheel-variant drafts (PEP 825), see reference


@dataclass(frozen=True)
class WheelName:
    """A wheel file name, including the wheel-variant form that packaging rejects."""

    name: NormalizedName
    version: Version
    build: tuple[int, str] | tuple[()]
    tags: frozenset[Tag]
    variant: str | None


def parse_wheel_name(filename: str) -> WheelName:
    """``packaging.utils.parse_wheel_filename``, plus the draft variant label as a last
    dash-separated part (``name-1.0-cp39-abi3-linux_x86_64-torch212.whl``). packaging
    decides everything else; the label is only peeled off when packaging refuses the name."""
    try:
        name, version, build, tags = parse_wheel_filename(filename)
        return WheelName(name, version, build, tags, None)
    except InvalidWheelFilename as first:
        stem, _, label = filename.removesuffix(".whl").rpartition("-")
        if not filename.endswith(".whl") or not _VARIANT_LABEL.match(label) or stem.count("-") < 4:
            raise InputError(f"{filename}: not a valid wheel file name ({first})") from first
        try:
            name, version, build, tags = parse_wheel_filename(stem + ".whl")
        except InvalidWheelFilename:
            raise InputError(f"{filename}: not a valid wheel file name ({first})") from first
        return WheelName(name, version, build, tags, label)


@dataclass(frozen=True)
class Candidate:
    path: Path
    origin: str  # the folder, index page or file it was found through
    name: NormalizedName
    version: Version
    build: tuple[int, str] | tuple[()]
    tags: frozenset[Tag]
    variant: str | None
    torch: TorchNeed
    requires_python: SpecifierSet | None
    torch_requirements: tuple[Requirement, ...]
    sha256: str = field(default="", compare=False)

    @property
    def filename(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Skipped:
    location: str
    reason: str


@dataclass
class Gathered:
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    duplicates: list[Skipped] = field(default_factory=list)  # same bytes seen again elsewhere


def _from_binaries(path: Path, reqs: tuple[Requirement, ...], version: Version) -> TorchNeed:
    """The untagged fallback: the same facts ``check`` reads (every compiled member)."""
    from torchwheel.analysis.load import load
    from torchwheel.analysis.wheelfacts import wheel_torch_abi
    from torchwheel.torchabi.symtable import load_shipped

    (facts,) = list(load((path,), (), load_shipped(), verify_hashes=False))
    abi = wheel_torch_abi(facts)
    source = "binaries (untagged wheel)"
    if abi.kind == "stable" and abi.target is not None:
        return TorchNeed("stable", abi.target, None, source)
    return torch_need(abi.kind, reqs, version, source)


def read_candidate(path: Path, origin: str, verify_hashes: bool = False) -> Candidate:
    """One wheel's selection facts; ``InputError`` (with the reason) when it is unreadable or
    broken: the TW4xx errors ``check`` reports from the archive and its metadata files
    (``rules.integrity.integrity_errors``), with every member hashed against RECORD too when
    ``verify_hashes`` (``index``: what it publishes, it vouches for)."""
    from torchwheel.rules.integrity import integrity_errors  # here: the rules load on first use

    parsed = parse_wheel_name(path.name)
    try:
        archive = WheelArchive(path) if parsed.variant is None else _variant_archive(path)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    with archive:
        c = archive.contents
        hashes: dict[str, tuple[str | None, int]] | None = None
        if verify_hashes:
            hashes = {m: archive.hash_member(m) for m in c.members}
        broken = integrity_errors(c, archive.member_size, hashes)
    if broken:
        first = broken[0]
        more = f" (and {len(broken) - 1} more: `torchwheel check` lists them)" if len(broken) > 1 else ""
        where = f" {first.member}" if first.member else ""
        raise InputError(f"{path.name}: {first.code}{where}: {first.message}{more}")
    meta = parse_metadata(c.metadata_text)
    declared = c.wheel_fields.get(TORCH_ABI_FIELD)
    if declared:
        need = torch_need(declared[-1], meta.torch_requirements, parsed.version, f"WHEEL {TORCH_ABI_FIELD}")
    else:
        need = _from_binaries(path, meta.torch_requirements, parsed.version)
    return Candidate(
        path=path,
        origin=origin,
        name=parsed.name,
        version=parsed.version,
        build=parsed.build,
        tags=parsed.tags,
        variant=parsed.variant,
        torch=need,
        requires_python=meta.requires_python,
        torch_requirements=meta.torch_requirements,
        sha256=sha256_of(path),
    )


def _variant_archive(path: Path) -> WheelArchive:
    """WheelArchive validates the name with packaging; a variant name is read without its
    label (the members and metadata are those of an ordinary wheel)."""
    return WheelArchive(path, _strip_label(path.name))


def _strip_label(filename: str) -> str:
    return filename.removesuffix(".whl").rpartition("-")[0] + ".whl"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
