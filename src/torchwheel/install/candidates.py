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
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    NormalizedName,
)
from packaging.version import Version

from torchwheel.errors import InputError
from torchwheel.torchabi.need import TorchNeed, need_from_fields
from torchwheel.torchabi.symtable import SymbolTable
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.contents import parse_wheel_name
from torchwheel.wheel.metadata import parse_metadata


@dataclass(frozen=True)
class Candidate:
    path: Path
    origin: str  # the folder, index page or file it was found through
    name: NormalizedName
    version: Version
    build: tuple[int, str] | tuple[()]
    tags: frozenset[Tag]
    variant: str | None
    torch: TorchNeed  # every axis, its own Requires-Dist: torch included
    requires_python: SpecifierSet | None
    sha256: str = field(default="", compare=False)
    url: str | None = field(default=None, compare=False)  # where a hosted wheel was downloaded from

    @property
    def filename(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Skipped:
    location: str
    reason: str
    name: NormalizedName | None = None  # the project its file name names (None: not a wheel name)


@dataclass
class Gathered:
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # could not be read or verified
    duplicates: list[Skipped] = field(default_factory=list)  # same bytes seen again elsewhere
    # files passed over on what an index page (and a hosted file's .metadata) says alone,
    # never opened: yanked, tags or Python that do not fit, ranked after the choice (``remote``)
    unopened: list[Skipped] = field(default_factory=list)
    other_names: set[NormalizedName] = field(default_factory=set)  # projects left out by --name


def _from_binaries(path: Path, table: SymbolTable | None) -> TorchNeed:
    """The untagged fallback: the same facts ``check`` reads (every compiled member), with
    the symbol table ``check`` would use (``--symbols``), so the two cannot disagree."""
    from torchwheel.analysis.load import load
    from torchwheel.analysis.wheelfacts import torch_need_of
    from torchwheel.torchabi.symtable import load_shipped

    (facts,) = list(load((path,), (), table or load_shipped(), verify_hashes=False))
    return torch_need_of(facts)


def read_candidate(
    path: Path, origin: str, verify_hashes: bool = False, table: SymbolTable | None = None
) -> Candidate:
    """One wheel's selection facts; ``InputError`` (with the reason) when it is unreadable or
    broken: the TW4xx errors ``check`` reports from the archive and its metadata files
    (``rules.integrity.integrity_errors``), with every member hashed against RECORD too when
    ``verify_hashes`` (``index``: what it publishes, it vouches for)."""
    from torchwheel.rules.integrity import integrity_errors  # here: the rules load on first use

    try:  # an invalid name is read, to be refused by TW414 beside what else is wrong with it
        archive = WheelArchive(path, lenient_name=True)
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
    parsed = parse_wheel_name(path.name)
    meta = parse_metadata(c.metadata_text)
    need = need_from_fields(c.wheel_fields, meta.torch_requirements, parsed.version)
    if need is None:  # untagged (or tagged before every axis was written): the binaries say it
        need = _from_binaries(path, table)
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
        sha256=sha256_of(path),
    )


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
