"""The distributions installed in an environment: every ``*.dist-info`` of the directories
an interpreter finds distributions in (its ``sys.path``, in order, as ``importlib.metadata``
searches it; the first of a name is the one imported, the later ones are shadowed), each
with the boundary its files must lie in.

An environment is input from outside like a wheel is: a ``.dist-info`` that is a link out of
the environment, a ``WHEEL``/``METADATA``/``RECORD`` that is one, or that cannot be read, is
one ``NotRead`` with the reason, never opened. The boundary of a directory is the innermost
installation prefix of the interpreter that holds it (a venv, its base, a user base), else
the directory itself (a ``PYTHONPATH`` or ``--target`` folder): ``sources.DirectorySource``
then opens no RECORD entry that resolves outside it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

from torchwheel import limits
from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.safeopen import read_regular
from torchwheel.wheel.headers import parse_headers
from torchwheel.wheel.sources import DirectorySource, RecordOf

_METADATA_FILES = ("WHEEL", "METADATA", "RECORD", "direct_url.json")


@frozen
class Installed:
    """One ``.dist-info`` found: where, and the boundary its files must lie in."""

    name: str  # as the directory spells it (``torch``, ``nvidia_cublas``)
    version: str
    site: Path  # the directory it was found in
    dist_info: Path
    boundary: Path

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)

    def source(
        self, only: Callable[[str], bool] | None = None, record_of: RecordOf | None = None
    ) -> DirectorySource:
        """Its files, as RECORD lists them (``InputError`` when its metadata cannot be read);
        ``only`` and ``record_of`` as ``DirectorySource`` takes them."""
        return DirectorySource(
            self.site, self.dist_info, installed=True, boundary=self.boundary, only=only, record_of=record_of
        )

    def editable_from(self) -> str | None:
        """The source tree of an editable install (``direct_url.json``), else None."""
        path = self.dist_info / "direct_url.json"
        if not path.is_file():
            return None
        try:
            doc = json.loads(read_regular(path, limits.current().max_metadata_bytes.value))
        except (OSError, ValueError):
            return None
        editable = isinstance(doc, dict) and isinstance(doc.get("dir_info"), dict)
        if not editable or doc["dir_info"].get("editable") is not True:
            return None
        url = doc.get("url")
        return url if isinstance(url, str) else "an unknown location"


@frozen
class NotRead:
    """A distribution (or what looks like one) whose files cannot be known: why, in a line."""

    name: str
    version: str
    where: str
    reason: str


def boundary_of(directory: str, prefixes: Iterable[str]) -> Path:
    """The innermost of ``prefixes`` that holds ``directory`` (both resolved), else itself."""
    real = Path(os.path.realpath(directory))
    holding = [Path(os.path.realpath(p)) for p in prefixes if p]
    inside = [p for p in holding if real == p or real.is_relative_to(p)]
    return max(inside, key=lambda p: len(p.parts), default=real)


def _inside(path: Path, boundary: Path) -> bool:
    return _within(os.path.realpath(path), boundary)


def _within(real: str, boundary: Path) -> bool:
    return real == str(boundary) or real.startswith(str(boundary).rstrip(os.sep) + os.sep)


def _real_entry(real_dir: str, entry: str) -> str:
    """``realpath(directory / entry)`` when ``real_dir`` is ``realpath(directory)`` and ``entry``
    a name it lists: resolved again only when the entry is itself a link (a ``realpath`` of a
    deep site-packages is one ``lstat`` per part: 8,800 of them for 300 distributions)."""
    path = os.path.join(real_dir, entry)
    return os.path.realpath(path) if os.path.islink(path) else path


def _split(entry: str) -> tuple[str, str]:
    stem = entry.rsplit(".", 1)[0]
    name, _, version = stem.partition("-")
    return name, version


def _directories(search_path: Iterable[str]) -> Iterator[Path]:
    """Each directory of the search path once (by its real path), in order; a zip file, a
    missing entry or anything not a directory holds no ``.dist-info`` we read."""
    seen: set[str] = set()
    for entry in search_path:
        real = os.path.realpath(entry)
        if real in seen:
            continue
        seen.add(real)
        try:
            if stat.S_ISDIR(os.stat(entry).st_mode):
                yield Path(entry)
        except OSError:
            continue


def installed(search_path: Iterable[str], prefixes: Iterable[str]) -> Iterator[Installed | NotRead]:
    """Every distribution the search path holds, in import order, shadowed ones left out,
    each an ``Installed`` or, when its files cannot be known safely, a ``NotRead``."""
    found: set[str] = set()
    prefixes = tuple(prefixes)
    for directory in _directories(search_path):
        boundary = boundary_of(str(directory), prefixes)
        real_dir = os.path.realpath(directory)
        try:
            names = sorted(
                e.name for e in os.scandir(directory) if e.name.endswith((".dist-info", ".egg-info"))
            )
        except OSError as exc:  # every distribution in it unknown: the environment cannot be read
            raise InputError(
                f"{directory}: cannot be listed ({exc.strerror or exc})",
                reference="file-system-error",
                path=directory,
            ) from exc
        for entry in names:
            name, version = _split(entry)
            key = canonicalize_name(name) if name else entry
            if key in found:
                continue
            found.add(key)
            yield _one(directory, entry, name, version, boundary, real_dir)


def _one(
    directory: Path, entry: str, name: str, version: str, boundary: Path, real_dir: str
) -> Installed | NotRead:
    path = directory / entry
    where = str(path)
    if entry.endswith(".egg-info"):
        return NotRead(name, version, where, "an egg-info installation: nothing lists its files")
    if not name or not version:
        return NotRead(name or entry, version, where, "not a name-version.dist-info directory")
    real = _real_entry(real_dir, entry)
    if not _within(real, boundary):
        return NotRead(name, version, where, f"a link out of the environment (to {real}): not read")
    try:
        if not stat.S_ISDIR(os.stat(path).st_mode):
            return NotRead(name, version, where, "not a directory")
    except OSError as exc:
        return NotRead(name, version, where, f"cannot be read ({exc.strerror or exc})")
    for file in _METADATA_FILES:  # in a folder inside the boundary, only a link can leave it
        part = path / file
        if os.path.islink(part) and not _inside(part, boundary):
            real = os.path.realpath(part)
            return NotRead(
                name, version, where, f"its {file} is a link out of the environment (to {real}): not read"
            )
    if not (path / "RECORD").is_file():
        return NotRead(
            name,
            version,
            where,
            "no RECORD: nothing says which files are its own (a system package manager's?)",
        )
    return Installed(name, version, directory, path, boundary)


def locate(search_path: Iterable[str], key: str) -> Path | None:
    """The ``.dist-info`` (or ``.egg-info``) of the distribution ``key`` (a canonical name)
    that ``importlib.metadata`` would find first on the search path, or None. A directory
    that cannot be listed is passed over, as ``importlib.metadata`` passes it over."""
    for directory, entry in _metadata_entries(search_path):
        name, _ = _split(entry)
        if name and canonicalize_name(name) == key:
            return directory / entry
    return None


def _metadata_entries(search_path: Iterable[str]) -> Iterator[tuple[Path, str]]:
    """Every ``.dist-info`` and ``.egg-info`` on the search path, in the order
    ``importlib.metadata`` finds them; a directory that cannot be listed is passed over."""
    for directory in _directories(search_path):
        try:
            names = sorted(
                e.name for e in os.scandir(directory) if e.name.endswith((".dist-info", ".egg-info"))
            )
        except OSError:
            continue
        for entry in names:
            yield directory, entry


def distributions(search_path: Iterable[str]) -> dict[NormalizedName, str]:
    """Every distribution's version by name, the first of a name on the search path (as
    ``importlib.metadata.distributions()`` lists them): the version the folder's name
    spells (``name-1.0.dist-info``, ``name-1.0-py3.11.egg-info``), else its metadata's."""
    out: dict[NormalizedName, str] = {}
    for directory, entry in _metadata_entries(search_path):
        name, version = _split(entry)
        key = canonicalize_name(name) if name else None
        if key is None or key in out:
            continue
        version = version.split("-py", 1)[0] if entry.endswith(".egg-info") else version
        if not version:
            try:
                version = str(parse_headers(metadata_text(directory / entry)).get("Version") or "")
            except OSError:
                continue
        out[key] = version
    return out


def metadata_text(dist: Path) -> str:
    """A distribution's core metadata as text: ``METADATA`` of a ``.dist-info``, ``PKG-INFO``
    of an ``.egg-info`` folder, or the ``.egg-info`` file itself; read through ``safeopen``
    within ``max-metadata-bytes`` (``OSError`` otherwise)."""
    if dist.name.endswith(".dist-info"):
        path = dist / "METADATA"
    else:
        path = dist / "PKG-INFO" if dist.is_dir() else dist
    data = read_regular(path, limits.current().max_metadata_bytes.value)
    return data.decode("utf-8", "replace")


def source_of(
    item: Installed, only: Callable[[str], bool] | None = None, record_of: RecordOf | None = None
) -> DirectorySource | NotRead:
    """Its ``DirectorySource``, or a ``NotRead`` saying why its metadata cannot be read."""
    try:
        return item.source(only, record_of)
    except InputError as exc:
        return NotRead(item.name, item.version, str(item.dist_info), str(exc))
