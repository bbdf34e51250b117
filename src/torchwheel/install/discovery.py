"""Where candidate wheels come from: files, folders, find-links pages and local indexes, in
the HTML form of PEP 503 or the JSON form of PEP 691. A source that cannot be read at all
raises ``InputError``; a wheel that cannot be read becomes a ``Skipped`` with its reason, so
one corrupt download does not hide the others. The same file name found in two places is kept
twice when the bytes differ and once (the first origin) when they are identical.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion

from torchwheel import safejson
from torchwheel.errors import InputError
from torchwheel.install.candidates import Candidate, Gathered, Skipped, read_candidate, sha256_of
from torchwheel.safejson import ANY, Bool, Either, Int, List, Object, Str
from torchwheel.wheel.contents import parse_wheel_name

# PEP 691 pages (api-version 1.x; PEP 700 and 714 add keys). Clients must ignore keys they do
# not know, so every object takes others; what torchwheel reads is checked.
_HASHES = Object(other=Str())
_META = Object({"api-version": Str(r"1\.\d+")}, required=("api-version",), other=ANY)
PEP691_PROJECT = Object(
    {
        "meta": _META,
        "name": Str(),
        "files": List(
            Object(
                {
                    "filename": Str(),
                    "url": Str(),
                    "hashes": _HASHES,
                    "requires-python": Str(),
                    "dist-info-metadata": Either((Bool(), _HASHES)),
                    "core-metadata": Either((Bool(), _HASHES)),
                    "gpg-sig": Bool(),
                    "yanked": Either((Bool(), Str())),
                    "size": Int(0),
                    "upload-time": Str(),
                },
                required=("filename", "url", "hashes"),
                other=ANY,
            )
        ),
        "versions": List(Str()),
    },
    required=("meta", "name", "files"),
    other=ANY,
)
PEP691_ROOT = Object(
    {"meta": _META, "projects": List(Object({"name": Str()}, required=("name",), other=ANY))},
    required=("meta", "projects"),
    other=ANY,
)
_JSON = ".json"  # a PEP 691 page on disk: index.json, or any page named *.json


@dataclass(frozen=True)
class _Link:
    """One link of an index page: where it points, and what the page says about it."""

    href: str
    yanked: bool = False
    sha256: str = ""  # from the page (a ``#sha256=`` fragment or PEP 691 ``hashes``)


class _Links(HTMLParser):
    """Anchors of a PEP 503 page (stdlib HTML parser: the page format is a list of <a>)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[_Link] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            found = dict(attrs)
            href = found.get("href")
            if href:
                self.links.append(_Link(href, found.get("data-yanked") is not None))


def _page_links(page: Path) -> list[_Link]:
    """The links of a PEP 503 page (HTML) or a PEP 691 page (JSON, by its ``.json`` name)."""
    if page.suffix == _JSON:
        return _json_links(page)
    try:
        text = page.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{page}: unreadable index page ({exc})") from exc
    parser = _Links()
    parser.feed(text)
    return parser.links


def _json_links(page: Path) -> list[_Link]:
    """A PEP 691 page, bounded and checked (``safejson``): a project page's files, or a root
    page's projects as links to their pages (``NAME/index.json``, the normalized name)."""
    doc = safejson.load_file(page, f"{page}", Either((PEP691_PROJECT, PEP691_ROOT)))
    if "files" in doc:
        return [
            _Link(f["url"], bool(f.get("yanked")), f["hashes"].get("sha256", "").lower())
            for f in doc["files"]
        ]
    return [_Link(f"{canonicalize_name(p['name'])}/index{_JSON}") for p in doc["projects"]]


def _url_path(base: Path, link: _Link) -> tuple[Path, str]:
    """A link on a local page as a path, and the sha256 the page gives for it (if any)."""
    url = urljoin(base.resolve().as_uri() + ("/" if base.is_dir() else ""), link.href)
    parts = urlsplit(url)
    if parts.scheme != "file":
        raise InputError(f"{link.href}: only local (file://) links are read")
    frag = parts.fragment
    digest = link.sha256 or (frag.removeprefix("sha256=") if frag.startswith("sha256=") else "")
    return Path(url2pathname(unquote(parts.path))), digest


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
    """Wheels linked from an index page: a project page lists files, the root page lists
    projects (only ``name``'s is followed when a name is given)."""
    base = page.parent
    for link in _page_links(page):
        target, digest = _url_path(base, link)
        if target.name.endswith(".whl") or link.href.split("#")[0].endswith(".whl"):
            if link.yanked:
                out.skipped.append(Skipped(str(target), f"yanked on {page}"))
                continue
            if digest and target.is_file() and sha256_of(target) != digest:
                out.skipped.append(Skipped(str(target), f"sha256 differs from the link on {page}"))
                continue
            yield target, str(page)
        elif depth == 0:
            sub = target / "index.html" if target.is_dir() or not target.suffix else target
            project = sub.parent.name if sub.name in ("index.html", f"index{_JSON}") else sub.name
            if name is not None and canonicalize_name(project) != name:
                continue
            if not sub.is_file():
                out.skipped.append(Skipped(str(sub), f"linked from {page} but missing"))
                continue
            yield from _index_page(sub, name, out, depth + 1)


def _wheel_paths(source: str, name: NormalizedName | None, out: Gathered) -> Iterator[tuple[Path, str]]:
    path = source_path(source)
    if path.is_file() and path.suffix == ".whl":
        yield path, str(path.parent)
    elif path.is_file() and path.suffix in (".html", ".htm", _JSON):
        yield from _index_page(path, name, out)
    elif path.is_dir():
        wheels = sorted(path.glob("*.whl"))
        pages = [p for p in (path / "index.html", path / f"index{_JSON}") if p.is_file()]
        if pages and not wheels:
            yield from _index_page(pages[0], name, out)
        elif not wheels:
            raise InputError(f"{source}: neither wheels nor an index page (index.html or index.json)")
        for w in wheels:
            yield w, str(path)
    elif not path.exists():
        raise InputError(f"{source}: no such file or directory")
    else:
        raise InputError(f"{source}: not a wheel, a folder of wheels or an index page")


def gather(sources: Iterable[str], name: str | None = None, verify_hashes: bool = False) -> Gathered:
    """Every candidate of ``sources`` (optionally of one project). A source that cannot be
    read at all (missing, an unreadable index page) raises ``InputError``; a wheel that
    cannot be read, or that ``check`` calls broken, becomes a ``Skipped`` with the reason
    (``verify_hashes``: members hashed against RECORD too, see ``read_candidate``)."""
    wanted = canonicalize_name(name) if name else None
    out = Gathered()
    seen: dict[tuple[str, str], Candidate] = {}
    for source in sources:
        for path, origin in _wheel_paths(source, wanted, out):
            try:
                if wanted is not None and parse_wheel_name(path.name).name != wanted:
                    continue
                cand = read_candidate(path, origin, verify_hashes)
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
