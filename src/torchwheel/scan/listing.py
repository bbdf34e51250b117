"""SOURCES -> the wheels to scan, each named exactly (``scan.scanline.WheelSource``), none
of them read yet: folders, PEP 503/691 indexes (local or hosted, through
``selection.discovery``) and files that list wheel URLs or paths, one a line.

Listing is the parent's work and reads pages only; every wheel is fetched and read by a
worker. A page that cannot be read ends the command (exit 2) before any line is written:
a scan of half an index that looks like the whole one is worse than none. What a page
links but cannot be listed (a missing project page) becomes a line with its error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from torchwheel.errors import InputError
from torchwheel.limits import current
from torchwheel.net import fetch
from torchwheel.scan.scanline import WheelSource
from torchwheel.selection.discovery import listing, source_path

_PAGE_SUFFIXES = (".whl", ".html", ".htm", ".json")


@dataclass
class Listed:
    """The wheels to scan, and what the listing itself could not reach (location, reason)."""

    wheels: list[WheelSource] = field(default_factory=list)
    unlisted: list[tuple[str, str]] = field(default_factory=list)
    yanked: int = 0
    credentials: dict[str, str] = field(default_factory=dict)  # host -> Authorization, from the URLs given


def _url_list(path: Path) -> Iterator[str]:
    """The entries of a file of wheel URLs (or paths, relative to the file): one a line,
    blank lines and ``#`` comments skipped; its size within ``max-page-bytes``."""
    try:
        size = path.stat().st_size
        current().max_page_bytes.check(f"{path}: the size of a list of wheels", size)
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}", reference="file-system-error") from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not a UTF-8 list of wheel URLs (byte {exc.start:,})", reference="not-a-wheel"
        ) from exc
    for line in text.splitlines():
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        if fetch.is_remote(entry) or "://" in entry or Path(entry).is_absolute():
            yield entry
        else:
            yield os.path.normpath(path.parent / entry)  # one spelling: no lists/../


def _expanded(sources: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """Each source, a list file replaced by its entries: (source, the list that named it)."""
    for source in sources:
        path = None if fetch.is_remote(source) else source_path(source)
        if path is not None and path.is_file() and path.suffix.lower() not in _PAGE_SUFFIXES:
            yield from ((entry, str(path)) for entry in _url_list(path))
        else:
            yield source, None


def _place(location: str) -> str:
    """One spelling per file: ``lists/../wheels/x.whl`` and ``wheels/x.whl`` are one wheel."""
    return location if fetch.is_remote(location) else os.path.abspath(location)


def _plain_path(entry: str) -> bool:
    """A list entry that is a path, not a URL of any scheme (``file:`` ones included)."""
    return "://" not in entry and not entry.lower().startswith("file:")


def _local(path: Path, origin: str, sha256: str | None) -> WheelSource:
    try:
        st = os.stat(path)
    except OSError:  # listed but gone: the worker's line says so
        return WheelSource(str(path), sha256, None, None, origin)
    return WheelSource(str(path), sha256, st.st_size, st.st_mtime_ns, origin)


def list_sources(sources: Iterable[str], indexes: Iterable[str] = (), names: Iterable[str] = ()) -> Listed:
    """Every wheel of ``sources`` and ``indexes`` (index roots, ``-i``: with ``names`` only
    those projects' pages are read), once each (the same location or sha256 twice: once)."""
    expanded = list(_expanded(sources))
    from_list = {_place(entry): named_by for entry, named_by in expanded if named_by is not None}
    # a wheel a list names that is not there is one bad input among many: its line says so
    # (as a hosted entry's 404 does), where a missing SOURCE on the command line is exit 2
    gone = [
        (entry, named_by)
        for entry, named_by in expanded
        if named_by is not None and _plain_path(entry) and not os.path.lexists(entry)
    ]
    kept = (entry for entry, named_by in expanded if (entry, named_by) not in gone)
    walk = listing(kept, fetch.Session(), indexes, names)
    out = Listed(yanked=len(walk.out.unopened), credentials=dict(walk.session.credentials))
    out.unlisted = [(s.location, s.reason) for s in walk.out.skipped]
    seen: set[str] = set()
    found = [_local(Path(entry), named_by, None) for entry, named_by in gone if named_by is not None]
    found += [
        _local(p, from_list.get(_place(str(p)), origin), hashes.get("sha256"))
        for p, origin, hashes in walk.local
    ]
    found += [
        WheelSource(
            h.link.url,
            h.link.hashes.get("sha256"),
            h.link.size,
            None,
            from_list.get(h.origin, h.origin),
            h.link.filename,
        )
        for h in walk.hosted
    ]
    for w in found:
        keys = {_place(w.location), *([f"sha256:{w.sha256}"] if w.sha256 else [])}
        if keys & seen:
            continue
        seen |= keys
        out.wheels.append(w)
    return out
