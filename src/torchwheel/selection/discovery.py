"""Where candidate wheels come from: files, folders, find-links pages and indexes, local (a
path, a ``file://`` URL) or hosted (``http(s)://``), in the HTML form of PEP 503 or the JSON
form of PEP 691 (``pages``).

A source that cannot be read at all raises ``InputError``; a wheel that cannot be read or
verified (a corrupt download, a digest that differs from its page) becomes a ``Skipped`` with
its reason and its project, so one bad file does not hide the others and the exit code can
say which project it concerns (``outcome``). A yanked file (PEP 592) is passed over as pip
does. The same file name found in two places is kept twice when the bytes differ and once
(the first origin) when they are identical.

Local wheels are read where they lie. Hosted wheels are downloaded only when needed
(``remote``): for a target, only the ones that can still be chosen; for ``matrix`` and
``index``, which show or republish every wheel, all of them. ``-i`` names an index root as
pip means it: with ``--name`` only that project's page is fetched (``{root}/{name}/``), so a
registry's root page is never read; without ``--name`` a hosted root page may list at most
``max-index-projects`` projects.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion

from torchwheel.errors import InputError
from torchwheel.limits import current
from torchwheel.net import fetch, pages
from torchwheel.safeopen import open_regular
from torchwheel.selection import remote
from torchwheel.selection.candidates import Candidate, Gathered, Skipped, read_candidate
from torchwheel.selection.target import TorchTarget
from torchwheel.tables.tableset import Tables
from torchwheel.wheel.contents import project_of

_JSON = ".json"  # a PEP 691 page on disk: index.json, or any page named *.json
_INDEX_PAGES = ("index.html", f"index{_JSON}")


def _project_of(filename: str) -> NormalizedName | None:
    """The project a file is reported under: an invalid wheel name whose project part parses
    (pip downloads such files) is that project's unreadable wheel, not a stray that makes
    the whole run unreadable."""
    return project_of(filename)


def _read_local_page(page: Path) -> pages.Page:
    """A page on disk: a regular file, its size bounded before it is read."""
    try:
        fd = open_regular(page)
        try:
            size = os.fstat(fd).st_size
            current().max_page_bytes.check(f"{page}: the index page's size", size)
            with open(fd, "rb", closefd=False) as fh:
                data = fh.read(size + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(
            f"{page}: unreadable index page ({exc.strerror or exc})", reference="file-system-error"
        ) from exc
    return pages.parse(data, page.resolve().as_uri(), page.suffix == _JSON, str(page))


def source_path(source: str) -> Path:
    """A path or a ``file://`` URL as a path (hosted URLs are told apart before)."""
    if "://" in source:
        try:
            parts = urlsplit(source)
        except ValueError:  # an unclosed "[" in the authority
            raise InputError(
                f"{fetch.shown(source)}: not a path or a URL torchwheel reads", reference="url-refused"
            ) from None
        if parts.scheme != "file":
            raise InputError(
                f"{fetch.shown(source)}: only paths, file:// and http(s):// URLs are read",
                reference="url-refused",
            )
        return Path(url2pathname(unquote(parts.path)))
    return Path(source)


def _local_page_of(target: Path) -> Path | None:
    """A project link on a local page: the page itself, or a folder's index page."""
    if target.is_dir():
        return next((target / p for p in _INDEX_PAGES if (target / p).is_file()), None)
    return target if target.is_file() else None


def _link_project(link: pages.Link) -> str:
    """The project a root page's link is for: its last path segment (``name/``,
    ``name/index.html``)."""
    parts = [p for p in urlsplit(link.url).path.split("/") if p]
    if parts and parts[-1] in _INDEX_PAGES:
        parts.pop()
    return unquote(parts[-1]) if parts else ""


@dataclass
class _Walk:
    """Every wheel the sources name, local (read at once) or hosted (collected for ``remote``)."""

    names: frozenset[NormalizedName]
    out: Gathered
    session: fetch.Session
    local: list[tuple[Path, str, Mapping[str, str]]] = field(default_factory=list)
    hosted: list[remote.HostedFile] = field(default_factory=list)
    per_project: dict[NormalizedName | None, int] = field(default_factory=dict)  # max-project-files

    def wanted(self, filename: str) -> bool:
        """Is this file one of the projects asked for? A name that is no wheel name is kept
        to be reported, unless projects were named (it cannot be one of them; pip skips it)."""
        return self._keeps(_project_of(filename))

    def _keeps(self, name: NormalizedName | None) -> bool:
        if self.names and name not in self.names:
            if name is not None:
                self.out.other_names.add(name)
            return False
        return True

    def source(self, source: str, index: bool) -> None:
        if fetch.is_remote(source):
            self._hosted_source(self.session.remember(source), index)
            return
        path = source_path(source)
        if path.is_file() and path.suffix == ".whl":
            if self.wanted(path.name):
                self.local.append((path, str(path.parent), {}))
        elif path.is_file() and path.suffix in (".html", ".htm", _JSON):
            self._local_page(path, 0)
        elif path.is_dir():
            wheels = sorted(path.glob("*.whl"))
            page = _local_page_of(path)
            if page is not None and not wheels:
                self._local_page(page, 0)
            elif not wheels:
                raise InputError(
                    f"{fetch.shown(source)}: neither wheels nor an index page (index.html or index.json)",
                    reference="not-a-wheel",
                )
            for w in wheels:
                if self.wanted(w.name):
                    self.local.append((w, str(path), {}))
        elif not path.exists():
            raise InputError(f"{fetch.shown(source)}: no such file or directory", reference="not-found")
        else:
            raise InputError(
                f"{fetch.shown(source)}: not a wheel, a folder of wheels or an index page",
                reference="not-a-wheel",
            )

    def _files(self, page: pages.Page, origin: str, hosted_page: bool) -> None:
        limit = current().max_project_files
        for link in page.files:
            if not link.filename.endswith(".whl"):
                continue  # sdists and other files: torchwheel chooses among wheels
            name = _project_of(link.filename)  # once: a page may hold 100,000 links
            if not self._keeps(name):
                continue
            count = self.per_project[name] = self.per_project.get(name, 0) + 1
            limit.check(
                f"{origin}: the number of wheels of the project {name or '(not a wheel name)'}", count
            )
            if link.yanked:
                self.out.unopened.append(Skipped(fetch.shown(link.url), f"yanked on {origin}", name))
            elif fetch.is_remote(link.url):
                if "@" in link.url:  # a user part, maybe (a page may hold 100,000 links: only then)
                    try:
                        link = replace(link, url=self.session.remember(link.url, keep=True))
                    except InputError as exc:  # a user part before no host: that entry, not the page
                        self.out.skipped.append(Skipped(fetch.shown(link.url), f"on {origin}: {exc}", name))
                        continue
                self.hosted.append(remote.HostedFile(link, origin))
            elif hosted_page:
                self.out.skipped.append(
                    Skipped(fetch.shown(link.url), f"a hosted page ({origin}) links a local file", name)
                )
            else:
                self.local.append((source_path(link.url), origin, link.hashes))
        for bad in page.refused:
            self._refused(bad, page.name, origin)

    def _refused(self, bad: pages.Refused, project: str | None, origin: str) -> None:
        """A malformed entry costs that entry: a wheel of the projects asked for (by its file
        name, else the page's project) that could not be listed, as unreadable as a corrupt
        download of it (it might have been the choice); another project's entry, or a file
        that is no wheel, is nothing. A root page's malformed project link names no project:
        it counts only when no project was named."""
        if bad.filename is not None and not bad.filename.endswith(".whl"):
            return  # an sdist or another file: torchwheel reads none
        name = _project_of(bad.filename) if bad.filename else None
        if name is None and project is not None:
            name = canonicalize_name(project)
        if not self._keeps(name):
            return
        where = f"{origin} {bad.entry}" + (f" ({bad.filename})" if bad.filename else "")
        self.out.skipped.append(Skipped(where, f"a malformed index entry: {bad.reason}", name))

    def _local_page(self, page: Path, depth: int) -> None:
        found = _read_local_page(page)
        self._files(found, str(page), hosted_page=False)
        if depth:
            return
        for link in found.projects:
            if self.names and canonicalize_name(_link_project(link)) not in self.names:
                continue
            if fetch.is_remote(link.url):
                self._hosted_page(link.url, depth + 1)
                continue
            sub = _local_page_of(source_path(link.url))
            if sub is None:
                self.out.skipped.append(Skipped(fetch.shown(link.url), f"linked from {page} but missing"))
                continue
            self._local_page(sub, depth + 1)

    def _hosted_source(self, url: str, index: bool) -> None:
        path = urlsplit(url).path
        if path.endswith(".whl"):
            link = pages.Link(*pages.split_link(url))
            self._files(pages.Page([link], []), fetch.shown(url), hosted_page=True)
            return
        last = canonicalize_name(unquote(path.rstrip("/").rsplit("/", 1)[-1]))
        if index and self.names and last not in self.names:  # a root: straight to the project pages
            root = url if url.endswith("/") else url + "/"
            for name in sorted(self.names):
                try:
                    self._hosted_page(urljoin(root, f"{name}/"), 1)
                except fetch.NotFound:
                    continue  # no such project on this index: an answer, not a broken index
            return
        self._hosted_page(url, 0)

    def _hosted_page(self, url: str, depth: int) -> None:
        response = self.session.get(url, current().max_page_bytes, fetch.PAGE_ACCEPT)
        where = fetch.shown(response.url)
        is_json = response.content_type.endswith("json")
        found = pages.parse(response.body, response.url, is_json, where, response.charset)
        self._files(found, where, hosted_page=True)
        if depth:
            return
        projects = [
            link
            for link in found.projects
            if not self.names or canonicalize_name(_link_project(link)) in self.names
        ]
        limit = current().max_index_projects
        if len(projects) > limit.value:
            raise InputError(
                f"{where}: a root page of {len(projects):,} projects (more than max-index-projects = "
                f"{limit.value:,}): name the projects to read with --name, or raise it with {limit.env}",
                reference="limit-exceeded",
                value=len(projects),
                limit=limit.name,
            )
        for link in projects:
            shown = fetch.shown(link.url)
            if not fetch.is_remote(link.url):
                self.out.skipped.append(Skipped(shown, f"a hosted page ({where}) links a local page"))
                continue
            try:
                self._hosted_page(link.url, depth + 1)
            except fetch.NotFound as exc:
                self.out.skipped.append(Skipped(shown, f"linked from {where} but missing ({exc})"))


def listing(
    sources: Iterable[str], session: fetch.Session, indexes: Iterable[str] = (), names: Iterable[str] = ()
) -> _Walk:
    """Every wheel ``sources`` and ``indexes`` (index roots: ``-i``) name, of the projects
    ``names`` (all when empty), none of them read (``torchwheel scan`` reads each in a
    worker): ``.local`` (path, origin, the page's digests), ``.hosted``, and in ``.out`` what
    could not be listed (``skipped``) or is passed over (``unopened``: yanked)."""
    walk = _Walk(frozenset(canonicalize_name(n) for n in names), Gathered(), session)
    for source in sources:
        walk.source(source, index=False)
    for source in indexes:
        walk.source(source, index=True)
    return walk


def gather(
    sources: Iterable[str],
    names: Iterable[str] = (),
    *,
    indexes: Iterable[str] = (),
    verify_hashes: bool = False,
    target: TorchTarget | None = None,
    scratch: Path | None = None,
    tables: Tables | None = None,
    pre: bool = False,
) -> Gathered:
    """Every candidate of ``sources`` and ``indexes`` (index roots: ``-i``), of the projects
    ``names`` (all when empty). Hosted wheels are downloaded into ``scratch`` (``gathering``
    makes one): for a ``target`` only those that can still be chosen, else all.
    ``verify_hashes``: every member hashed against RECORD too (``read_candidate``); ``tables``:
    the tables each wheel is read and judged with (``--symbols``; None: the shipped ones); ``pre``:
    pre-releases may be the choice (``--pre``), so they are downloaded too."""
    out = Gathered()
    walk = _Walk(frozenset(canonicalize_name(n) for n in names), out, fetch.Session())
    for source in sources:
        walk.source(source, index=False)
    for source in indexes:
        walk.source(source, index=True)
    seen: dict[tuple[str, str], Candidate] = {}

    def add(cand: Candidate) -> None:
        key = (cand.filename, cand.sha256)
        if key in seen:
            out.duplicates.append(
                Skipped(str(cand.url or cand.path), f"the same file as {seen[key].url or seen[key].path}")
            )
            return
        seen[key] = cand
        out.candidates.append(cand)

    for path, origin, hashes in walk.local:
        name = _project_of(path.name)
        try:  # the page's digests checked in the one pass that reads the file
            cand = read_candidate(path, origin, verify_hashes, tables, page_hashes=hashes)
        except (InputError, InvalidVersion, ValueError) as exc:
            out.skipped.append(Skipped(str(path), str(exc), name))
            continue
        add(cand)
    if walk.hosted:
        if scratch is None:
            raise InputError(
                "hosted wheels need a download folder (discovery.gathering)", reference="internal-error"
            )
        local = list(out.candidates)
        for cand in remote.fetch_all(
            walk.hosted, local, target, walk.session, scratch, verify_hashes, out, tables, pre=pre
        ):
            add(cand)
    return out


@contextmanager
def gathering(
    sources: Iterable[str],
    names: Iterable[str] = (),
    *,
    indexes: Iterable[str] = (),
    verify_hashes: bool = False,
    target: TorchTarget | None = None,
    tables: Tables | None = None,
    pre: bool = False,
) -> Iterator[Gathered]:
    """``gather`` with a download folder that lives as long as the block: an install or an
    index needs the downloaded files after choosing; none is left behind."""
    with tempfile.TemporaryDirectory(prefix="torchwheel-downloads-") as scratch:
        yield gather(
            sources,
            names,
            indexes=indexes,
            verify_hashes=verify_hashes,
            target=target,
            scratch=Path(scratch),
            tables=tables,
            pre=pre,
        )
