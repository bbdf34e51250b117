"""What an index page says, in either form: PEP 503 (HTML) and PEP 691 (JSON), with the
attributes installers act on (PEP 592 yanked, PEP 658/714 metadata files, PEP 700 sizes).

Formats only: the bytes come from a file (``discovery``) or an HTTP response (``fetch``), and
every link leaves here as an absolute URL, so one reader serves local and hosted indexes.
A page links distribution files (a project page) or project pages (a root page); a JSON page
says which, an HTML page is told apart by what its links point at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from posixpath import basename
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from packaging.utils import canonicalize_name

from torchwheel import safejson
from torchwheel.errors import InputError
from torchwheel.safejson import ANY, Bool, Either, Int, List, Object, Str

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

# what a link to a distribution file ends with (anything else on a page is a project page)
_DIST_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".egg", ".exe", ".msi")


@dataclass(frozen=True)
class Link:
    """One link of a page, resolved against the page's URL.

    ``hashes``: the page's digests of the file (a ``#sha256=`` fragment, PEP 691 ``hashes``),
    algorithm -> lowercase hex. ``metadata``: the digests of the PEP 658 ``{url}.metadata`` file
    when the page offers one (empty when offered without a digest), None when not offered.
    """

    url: str
    hashes: Mapping[str, str] = field(default_factory=dict)
    yanked: bool = False
    requires_python: str | None = None
    metadata: Mapping[str, str] | None = None
    size: int | None = None

    @property
    def filename(self) -> str:
        return unquote(basename(urlsplit(self.url).path.rstrip("/")))

    @property
    def is_file(self) -> bool:
        return self.filename.lower().endswith(_DIST_SUFFIXES)


@dataclass(frozen=True)
class Page:
    files: list[Link]  # distribution files (a project page)
    projects: list[Link]  # project pages (a root page)


def digests(text: str | None) -> dict[str, str]:
    """A ``#sha256=abc…`` fragment or attribute as ``{"sha256": "abc…"}``; anything else as none."""
    algo, sep, value = (text or "").partition("=")
    return {algo.strip().lower(): value.strip().lower()} if sep and algo.strip() and value.strip() else {}


class _Anchors(HTMLParser):
    """Anchors of a PEP 503 page (stdlib HTML parser: the format is a list of <a>), and the
    page's ``<base href>`` if it has one."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))
        elif tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")


def _html(text: str, url: str) -> Page:
    parser = _Anchors()
    parser.feed(text)
    parser.close()
    base = urljoin(url, parser.base) if parser.base else url
    files: list[Link] = []
    projects: list[Link] = []
    for a in parser.anchors:
        href = a.get("href")
        if not href:
            continue
        target, fragment = urldefrag(urljoin(base, href))
        # PEP 714: data-core-metadata, else the PEP 658 spelling; "true" or a digest
        meta_attr = "data-core-metadata" if "data-core-metadata" in a else "data-dist-info-metadata"
        link = Link(
            target,
            digests(fragment),
            "data-yanked" in a,  # PEP 592: present at all, with or without a reason
            a.get("data-requires-python"),
            digests(a.get(meta_attr)) if meta_attr in a else None,
        )
        (files if link.is_file else projects).append(link)
    return Page(files, projects)


def _offered(value: object) -> dict[str, str] | None:
    """A PEP 691 ``core-metadata`` value: true, false, or the file's hashes."""
    if isinstance(value, dict):
        return {str(k).lower(): str(v).lower() for k, v in value.items()}
    return {} if value is True else None


def _json(data: bytes, url: str, where: str) -> Page:
    doc = safejson.load(data, where, Either((PEP691_PROJECT, PEP691_ROOT)))
    if "files" in doc:
        files = []
        for f in doc["files"]:
            meta = f.get("core-metadata", f.get("dist-info-metadata"))  # PEP 714, else PEP 658
            yanked = f.get("yanked", False)
            files.append(
                Link(
                    urldefrag(urljoin(url, f["url"]))[0],
                    {k.lower(): v.lower() for k, v in f["hashes"].items()},
                    yanked is True or isinstance(yanked, str),
                    f.get("requires-python"),
                    _offered(meta),
                    f.get("size"),
                )
            )
        return Page(files, [])
    base = url if url.endswith("/") else url.rsplit("/", 1)[0] + "/"
    return Page([], [Link(urljoin(base, f"{canonicalize_name(p['name'])}/")) for p in doc["projects"]])


def parse(data: bytes, url: str, is_json: bool, where: str) -> Page:
    """A page's links; ``InputError`` naming ``where`` when the page cannot be read.
    ``url``: where the page was found (after redirects), which relative links resolve against."""
    if is_json:
        return _json(data, url, where)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: unreadable index page (not UTF-8: {exc.reason} at byte {exc.start})"
        ) from exc
    return _html(text, url)
