"""Candidate wheels, read from files, folders, find-links folders and local PEP 503 indexes.

Shared model (``index``, ``matrix`` and variants import it): a ``Candidate`` is one wheel
file with the facts selection needs, read from its metadata only (``WheelArchive``: the
central directory, ``WHEEL`` and ``METADATA``). Its torch need comes from the
``Torch-ABI`` line of ``WHEEL`` that ``tag`` writes; an untagged wheel falls back to the
facts of its binaries (``inputs.load`` + ``wheel_torch_abi``), and says so in
``TorchNeed.source``. A candidate that cannot be read is a ``Skipped`` with its reason,
never an exception: one corrupt download must not hide the others.

Builds of one release for different torch targets cannot share a file name, so they differ
by a build tag, a local version label (``1.0+torch2.12``), a wheel-variant label, or sit in
separate folders / per-target indexes; a ``Candidate`` keeps all of these (``build``,
``version.local``, ``variant``, ``origin``). The same file name found in two places is kept
twice when the bytes differ and once (the first origin) when they are identical.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from torchwheel.errors import InputError
from torchwheel.retag import TORCH_ABI_FIELD
from torchwheel.version import FeatureVersion
from torchwheel.wheelfacts import parse_metadata
from torchwheel.wheelfile import WheelArchive

_VARIANT_LABEL = re.compile(r"^[0-9a-z_.]+$")  # wheel-variant drafts (PEP 825), see reference
_LOCAL_TORCH = re.compile(r"(?:^|[._])torch(\d+)[._]?(\d+)(?:$|[._])")  # +torch2.12, +cu128.torch2_12


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
        return TorchNeed("stable", FeatureVersion.parse(value), None, source)
    except (ValueError, InputError) as exc:
        raise InputError(f"WHEEL {TORCH_ABI_FIELD}: {value!r} is neither a version nor 'unstable'") from exc


def _from_binaries(path: Path, reqs: tuple[Requirement, ...], version: Version) -> TorchNeed:
    """The untagged fallback: the same facts ``check`` reads (every compiled member)."""
    from torchwheel.inputs import load
    from torchwheel.symtable import load_shipped
    from torchwheel.wheelfacts import wheel_torch_abi

    (facts,) = list(load((path,), (), load_shipped(), verify_hashes=False))
    abi = wheel_torch_abi(facts)
    source = "binaries (untagged wheel)"
    if abi.kind == "stable" and abi.target is not None:
        return TorchNeed("stable", abi.target, None, source)
    return torch_need(abi.kind, reqs, version, source)


def read_candidate(path: Path, origin: str) -> Candidate:
    """One wheel's selection facts; ``InputError`` (with the reason) when it is unreadable."""
    parsed = parse_wheel_name(path.name)
    try:
        archive = WheelArchive(path) if parsed.variant is None else _variant_archive(path)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    with archive:
        c = archive.contents
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
        sha256=_sha256(path),
    )


def _variant_archive(path: Path) -> WheelArchive:
    """WheelArchive validates the name with packaging; a variant name is read without its
    label (the members and metadata are those of an ordinary wheel)."""
    return WheelArchive(path, _strip_label(path.name))


def _strip_label(filename: str) -> str:
    return filename.removesuffix(".whl").rpartition("-")[0] + ".whl"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# -- where candidates come from ---------------------------------------------------------------


class _Links(HTMLParser):
    """Anchors of a PEP 503 page (stdlib HTML parser: the page format is a list of <a>)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            found = dict(attrs)
            href = found.get("href")
            if href:
                self.links.append((href, found))


def _page_links(page: Path) -> list[tuple[str, dict[str, str | None]]]:
    try:
        text = page.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{page}: unreadable index page ({exc})") from exc
    parser = _Links()
    parser.feed(text)
    return parser.links


def _url_path(base: Path, href: str) -> tuple[Path, str]:
    """A link on a local page as a path, and its ``#sha256=`` fragment (if any)."""
    url = urljoin(base.resolve().as_uri() + ("/" if base.is_dir() else ""), href)
    parts = urlsplit(url)
    if parts.scheme != "file":
        raise InputError(f"{href}: only local (file://) links are read")
    frag = parts.fragment
    return Path(url2pathname(unquote(parts.path))), frag.removeprefix("sha256=") if frag.startswith(
        "sha256="
    ) else ""


def source_path(source: str) -> Path:
    """A path or a ``file://`` URL as a path; any other URL is refused (offline tool)."""
    if "://" in source:
        parts = urlsplit(source)
        if parts.scheme != "file":
            raise InputError(f"{source}: only paths and file:// URLs are read")
        return Path(url2pathname(unquote(parts.path)))
    return Path(source)


def _index_page(
    page: Path, name: NormalizedName | None, out: Gathered, depth: int = 0
) -> Iterator[tuple[Path, str]]:
    """Wheels linked from a PEP 503 page: a project page lists files, the root page lists
    projects (only ``name``'s is followed when a name is given)."""
    base = page.parent
    for href, attrs in _page_links(page):
        target, digest = _url_path(base, href)
        if target.name.endswith(".whl") or href.split("#")[0].endswith(".whl"):
            if attrs.get("data-yanked") is not None:
                out.skipped.append(Skipped(str(target), f"yanked on {page}"))
                continue
            if digest and target.is_file() and _sha256(target) != digest:
                out.skipped.append(Skipped(str(target), f"sha256 differs from the link on {page}"))
                continue
            yield target, str(page)
        elif depth == 0 and (name is None or canonicalize_name(target.name) == name):
            sub = target / "index.html" if target.is_dir() or not target.suffix else target
            if not sub.is_file():
                out.skipped.append(Skipped(str(sub), f"linked from {page} but missing"))
                continue
            yield from _index_page(sub, name, out, depth + 1)


def _wheel_paths(source: str, name: NormalizedName | None, out: Gathered) -> Iterator[tuple[Path, str]]:
    path = source_path(source)
    if path.is_file() and path.suffix == ".whl":
        yield path, str(path.parent)
    elif path.is_file() and path.suffix in (".html", ".htm"):
        yield from _index_page(path, name, out)
    elif path.is_dir():
        wheels = sorted(path.glob("*.whl"))
        if (path / "index.html").is_file() and not wheels:
            yield from _index_page(path / "index.html", name, out)
        elif not wheels:
            raise InputError(f"{source}: neither wheels nor an index.html")
        for w in wheels:
            yield w, str(path)
    elif not path.exists():
        raise InputError(f"{source}: no such file or directory")
    else:
        raise InputError(f"{source}: not a wheel, a folder of wheels or an index page")


def gather(sources: Iterable[str], name: str | None = None) -> Gathered:
    """Every candidate of ``sources`` (optionally of one project). A source that cannot be
    read at all (missing, an unreadable index page) raises ``InputError``; a wheel that
    cannot be read becomes a ``Skipped``."""
    wanted = canonicalize_name(name) if name else None
    out = Gathered()
    seen: dict[tuple[str, str], Candidate] = {}
    for source in sources:
        for path, origin in _wheel_paths(source, wanted, out):
            try:
                if wanted is not None and parse_wheel_name(path.name).name != wanted:
                    continue
                cand = read_candidate(path, origin)
            except (InputError, InvalidVersion, ValueError) as exc:
                out.skipped.append(Skipped(str(path), str(exc)))
                continue
            key = (cand.filename, cand.sha256)
            if key in seen:
                out.duplicates.append(Skipped(str(path), f"the same file as {seen[key].path}"))
                continue
            seen[key] = cand
            out.candidates.append(cand)
    return out
