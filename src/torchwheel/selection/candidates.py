"""Candidate wheels: the facts selection needs of one wheel file (where they come from:
``discovery``).

Shared model (``select``, ``install``, ``index`` and ``matrix``): a ``Candidate`` is one wheel
file with the facts selection needs, read from its metadata only (``WheelArchive``: the
central directory, ``WHEEL`` and ``METADATA``). Its torch need comes from the
``Torch-ABI`` line of ``WHEEL`` that ``tag`` writes; an untagged wheel falls back to the
facts of its binaries (``analysis.collect`` + ``torch_need_of``), and says so in
``TorchNeed.source``. A candidate that cannot be read is a ``Skipped`` with its reason,
never an exception: one corrupt download must not hide the others.

Each file is opened once and read whole once: one descriptor for the digests (the index
page's and the sha256 duplicates are told apart by) and then for the archive, its metadata
and, for an untagged wheel, its binaries.

Builds of one release for different torch targets cannot share a file name, so they differ
by a build tag, a local version label (``1.0+torch2.12``), a wheel-variant label, or sit in
separate folders / per-target indexes; a ``Candidate`` keeps all of these (``build``,
``version.local``, ``variant``, ``origin``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    NormalizedName,
)
from packaging.version import Version

from torchwheel.errors import InputError, system_error
from torchwheel.frozen import frozen
from torchwheel.safeopen import open_regular, read_chunks
from torchwheel.tables.tableset import Tables, shipped_tables
from torchwheel.torchabi.need import TorchNeed, need_from_fields
from torchwheel.torchabi.torch_releases import Releases
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.contents import WheelContents, WheelName, parse_wheel_name
from torchwheel.wheel.defects import archive_defects
from torchwheel.wheel.metadata import MetadataFacts, parse_metadata

if TYPE_CHECKING:
    from torchwheel.analysis.wheelfacts import WheelFacts


@frozen
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
    # METADATA as read, kept for ``index`` alone (``verify_hashes``), which serves it as
    # ``{file}.metadata`` without opening the wheel again
    metadata: bytes = field(default=b"", compare=False, repr=False)
    # every fact ``check`` reads, for ``index`` alone (``verify_hashes``): the rules judge what
    # it publishes (``publish.front_page`` shows their findings), from the one read of the file
    facts: WheelFacts | None = field(default=None, compare=False, repr=False)
    # the tables it was read with (``tables.tableset``), which judge it too: its need was
    # dated and its pin read by them, so a verdict on it reads the same release list
    tables: Tables = field(kw_only=True, compare=False, repr=False)

    @property
    def filename(self) -> str:
        return self.path.name


@frozen
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


def _facts(archive: WheelArchive, tables: Tables, verify_hashes: bool) -> WheelFacts:
    """The facts ``check`` reads (every compiled member), with the tables ``check`` would
    use (``--symbols``), so the two cannot disagree; read through the archive already
    open, not a second open of the file. ``verify_hashes``: every member inflated and hashed
    in the same pass (``index``), not only the compiled ones (the untagged fallback)."""
    from torchwheel.analysis.collect import collect

    return collect(archive, tables, verify_hashes=verify_hashes)


def _whole_file(fd: int, page_hashes: Mapping[str, str]) -> tuple[str, str]:
    """One pass over the file: its sha256 (what duplicates are told apart by) and the first
    digest the index page gives that it does not match ("" when all match, or the page
    gives none ``hashlib`` knows)."""
    known = {a: v for a, v in page_hashes.items() if a in hashlib.algorithms_guaranteed}
    digests = {a: hashlib.new(a) for a in {"sha256", *known}}
    for chunk in read_chunks(fd, os.fstat(fd).st_size):
        for h in digests.values():
            h.update(chunk)
    differs = next((a for a, want in known.items() if digests[a].hexdigest() != want), "")
    return digests["sha256"].hexdigest(), differs


def _opened(path: Path, origin: str, page_hashes: Mapping[str, str], sha256: str) -> tuple[WheelArchive, str]:
    """The wheel open, and its sha256, through one descriptor: the bytes the page's digests
    were checked on are the bytes read. A digest that differs is reported before the archive
    is parsed (a truncated download says so, not "not a zip archive")."""
    try:
        fd = open_regular(path)
    except OSError as exc:
        raise system_error(path, exc) from exc
    try:
        if not sha256 or page_hashes:
            sha256, differs = _whole_file(fd, page_hashes)
            if differs:
                raise InputError(f"{differs} differs from the link on {origin}", reference="digest-mismatch")
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):  # a read error: one line, as for the open
            raise system_error(path, exc) from exc
        raise
    try:  # an invalid name is read, to be refused by TW414 beside what else is wrong with it
        return WheelArchive(path, lenient_name=True, fd=fd), sha256
    except OSError as exc:
        raise system_error(path, exc) from exc


def declared(
    c: WheelContents,
    filename: str,
    member_size: Callable[[str], int],
    hashes: dict[str, tuple[str | None, int]] | None = None,
    releases: Releases | None = None,
) -> tuple[WheelName, MetadataFacts, TorchNeed | None]:
    """What a wheel says of itself: its file name, its METADATA and the torch need its
    ``WHEEL`` and ``METADATA`` declare (None: untagged, its binaries must say it). A wheel
    ``check`` calls broken (``archive_defects``) raises ``InputError`` naming its first
    defect. One step for ``read_candidate`` and ``partial.wheel_need`` (its ranged twin),
    so that a whole read and a ranged one refuse, and answer, alike. ``releases``: the run's
    release list (the shipped one when None), which reads the requirement's pin."""
    broken = archive_defects(c, member_size, hashes)
    if broken:
        first = broken[0]
        more = f" (and {len(broken) - 1} more: `torchwheel check` lists them)" if len(broken) > 1 else ""
        where = f" {first.member}" if first.member else ""
        raise InputError(f"{filename}: {first.code}{where}: {first.message}{more}", reference="wheel-invalid")
    parsed = parse_wheel_name(filename)
    meta = parse_metadata(c.metadata_text)
    releases = releases if releases is not None else shipped_tables().releases
    return parsed, meta, need_from_fields(c.wheel_fields, meta.torch_requirements, parsed.version, releases)


def read_candidate(
    path: Path,
    origin: str,
    verify_hashes: bool = False,
    tables: Tables | None = None,
    *,
    page_hashes: Mapping[str, str] = MappingProxyType({}),
    sha256: str = "",
    checked: WheelFacts | None = None,
) -> Candidate:
    """One wheel's selection facts, the file opened once and hashed whole once; ``InputError``
    (with the reason) when it is unreadable or broken: a digest of ``page_hashes`` (the link
    it was found through) that differs, or a defect of the archive and its metadata files
    (``wheel.defects``, what ``check`` reports as TW4xx errors), with every member hashed
    against RECORD too when ``verify_hashes`` (``index``: what it publishes, it vouches for;
    its METADATA and every fact ``check`` reads are kept then, for ``index`` to serve and to
    judge: the members are inflated once for both). ``sha256``: the file's, known already (a download checked against its page).
    ``checked``: the wheel's facts as ``check`` collected them (``scan``): an untagged wheel's
    binaries are not read a second time. ``tables``: the run's (``--symbols``; None: the
    shipped ones), which read it and judge it (``Candidate.tables``)."""
    from torchwheel.analysis.wheelfacts import torch_need_of

    tables = tables if tables is not None else shipped_tables()
    archive, sha256 = _opened(path, origin, page_hashes, sha256)
    with archive:
        c = archive.contents
        facts = _facts(archive, tables, verify_hashes=True) if verify_hashes else None
        hashes: dict[str, tuple[str | None, int]] | None = dict(facts.hashes) if facts is not None else None
        parsed, meta, need = declared(c, path.name, archive.member_size, hashes, tables.releases)
        if need is None:  # untagged (or tagged before every axis was written): the binaries say it
            need = torch_need_of(facts or checked or _facts(archive, tables, verify_hashes=False))
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
        sha256=sha256,
        metadata=c.metadata_text.encode() if verify_hashes else b"",
        facts=facts,
        tables=tables,
    )
