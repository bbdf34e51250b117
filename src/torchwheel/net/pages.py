"""What an index page says, in either form: PEP 503 (HTML) and PEP 691 (JSON), with the
attributes installers act on (PEP 592 yanked, PEP 658/714 metadata files, PEP 700 sizes).

Formats only: the bytes come from a file (``discovery``) or an HTTP response (``fetch``), and
every link leaves here as an absolute URL, so one reader serves local and hosted indexes.
A page links distribution files (a project page) or project pages (a root page); a JSON page
says which, an HTML page is told apart by what its links point at.

A page's cost is in its items, not its bytes: 16 MB of ``<a href=x>`` is 1.6 million links,
and one ``requires-python`` of 6 MB is a million clauses that ``packaging`` would make a
million objects of. So the links are counted as the parser meets them (``max-page-links``,
the parse stops at the first one too many) and a ``requires-python`` is measured
(``requires_python``) before anything parses it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import field
from functools import cached_property
from html.parser import HTMLParser
from posixpath import basename
from typing import Any
from urllib.parse import quote, unquote, urldefrag, urljoin, urlsplit, urlunsplit
from urllib.request import pathname2url, url2pathname

from packaging.utils import canonicalize_name

from torchwheel import safejson
from torchwheel.errors import InputError, quoted
from torchwheel.frozen import frozen
from torchwheel.limits import current
from torchwheel.safejson import ANY, Bool, Either, Int, List, Null, Object, Str

# a PEP 691 filename names a file in one folder: no separators, no NUL, no "." or ".."
_FILENAME = r"(?!\.{1,2}\Z)[^/\\\x00]+"

# PEP 691 pages (api-version 1.x; PEP 700 and 714 add keys). Clients must ignore keys they do
# not know, so every object takes others; what torchwheel reads is checked. A page is checked
# in two steps: its frame (``PEP691_PROJECT``: meta, name, a list of files), then each file
# entry on its own (``PEP691_FILE``), so one malformed entry costs that entry, not the page.
# Every optional key takes ``null`` as absent, as pip reads it (``file_data.get(key)``):
# real pages say ``"requires-python": null`` for a file that declares none.
_HASHES = Object(other=Str())
_META = Object({"api-version": Str(r"1\.\d+")}, required=("api-version",), other=ANY)
_OFFERED = Either((Bool(), _HASHES, Null()))  # PEP 658/714 metadata: true, false, or its hashes
PEP691_FILE = Object(
    {
        "filename": Str(_FILENAME),
        "url": Str(),
        "hashes": Either((_HASHES, Null())),
        "requires-python": Either((Str(), Null())),
        "core-metadata": _OFFERED,  # PEP 714
        "dist-info-metadata": _OFFERED,  # PEP 658 as PEP 691 spelled it
        "data-dist-info-metadata": _OFFERED,  # PyPI's JSON spelling before PEP 714: not read
        "gpg-sig": Either((Bool(), Null())),
        "yanked": Either((Bool(), Str(), Null())),
        "size": Either((Int(0), Null())),
        "upload-time": Either((Str(), Null())),
    },
    required=("url",),  # pip drops an entry without one; the rest it reads as absent
    other=ANY,
)
PEP691_PROJECT = Object(
    {"meta": _META, "name": Str(), "files": List(), "versions": ANY},
    required=("meta", "name", "files"),
    other=ANY,
)
_PROJECT_LINK = Object({"name": Str()}, required=("name",), other=ANY)
PEP691_ROOT = Object({"meta": _META, "projects": List()}, required=("meta", "projects"), other=ANY)

# what a link to a distribution file ends with (anything else on a page is a project page)
_DIST_SUFFIXES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tar.xz", ".tgz", ".tar", ".egg", ".exe", ".msi")


@frozen
class Link:
    """One link of a page, resolved against the page's URL.

    ``hashes``: the page's digests of the file (a ``#sha256=`` fragment, PEP 691 ``hashes``),
    algorithm -> lowercase hex. ``metadata``: the digests of the PEP 658 ``{url}.metadata`` file
    when the page offers one (empty when offered without a digest), None when not offered.
    ``name``: the file's name when the page states it (PEP 691 ``filename``: the URL need not
    end with it, a content-addressed store serves ``/blobs/<sha256>``); an HTML page's links
    end with it (PEP 503), so there it is the URL's last segment.
    """

    url: str
    hashes: Mapping[str, str] = field(default_factory=dict)
    yanked: bool = False
    requires_python: str | None = None
    metadata: Mapping[str, str] | None = None
    size: int | None = None
    name: str | None = None

    @cached_property  # asked for several times per link, and a page may hold 100,000
    def filename(self) -> str:
        """As pip 26.3 names it (``Link.filename``): the last component of the *unquoted*
        path, so a quoted ``%2F`` never makes a name with a separator in it, and ``.``/``..``
        no name at all."""
        if self.name is not None:
            return self.name
        name = os.path.basename(basename(unquote(urlsplit(self.url).path).rstrip("/")))
        return "" if name in (os.curdir, os.pardir) else name

    @property
    def is_file(self) -> bool:
        return self.filename.lower().endswith(_DIST_SUFFIXES)


@frozen
class Refused:
    """One entry of a page that is malformed: ``entry`` names it on its page (``$.files[3]``),
    ``reason`` says what is wrong, ``filename`` is its file name where one can be read."""

    entry: str
    reason: str
    filename: str | None = None


@frozen
class Page:
    files: list[Link]  # distribution files (a project page)
    projects: list[Link]  # project pages (a root page)
    refused: list[Refused] = field(default_factory=list)  # malformed entries, each on its own
    name: str | None = None  # the project a PEP 691 project page says it is for


def digests(text: str | None) -> dict[str, str]:
    """A ``data-core-metadata="sha256=abc…"`` attribute as ``{"sha256": "abc…"}``; anything else as none."""
    algo, sep, value = (text or "").partition("=")
    return {algo.strip().lower(): value.strip().lower()} if sep and algo.strip() and value.strip() else {}


# pip 26.3's reading of a link's digest (``LinkHash._hash_url_fragment_re``, searched over the
# whole URL): one of its algorithms, spelled in lower case, after ``#`` or ``&``, up to the
# next ``&``; so ``#sha256=abc&subdirectory=x`` is ``abc``, and a fragment without one of
# these names has no digest
_LINK_DIGEST = re.compile(r"[#&](sha512|sha384|sha256|sha224|sha1|md5)=([^&]*)")
# what pip keeps as it is while it quotes a path: ``@`` and a quoted ``/`` (``_reserved_chars_re``)
_RESERVED = re.compile("(@|%2F)", re.IGNORECASE)


def _quoted_part(part: str, local: bool) -> str:
    if local:  # a file: URL's path, as the platform spells one (pip's ``_clean_file_url_path``)
        out = pathname2url(url2pathname(part))
        return out.removeprefix("//") if out.startswith("///") else out
    return quote(unquote(part))  # unquoted first, so nothing is quoted twice


def quote_link(url: str) -> str:
    """``url`` with its path quoted as pip 26.3 quotes a link before it fetches it
    (``_ensure_quoted_url``): a raw space becomes ``%20``, ``%5b`` becomes ``%5B``, an
    existing ``%20`` stays; ``@`` and ``%2F`` are kept as they are. Written here because
    pip's function is internal to pip (no library offers it)."""
    parts = urlsplit(url)
    local = not parts.netloc
    pieces = _RESERVED.split(parts.path)
    path = "".join(
        _quoted_part(piece, local) if i % 2 == 0 else piece.upper() for i, piece in enumerate(pieces)
    )
    # the scheme as "file" first, so an empty netloc still gets its "//" (RFC 1738), as pip does
    out = urlunsplit(parts._replace(scheme="file", path=path))
    return parts.scheme + out[4:]


def link_digests(url: str) -> dict[str, str]:
    """The digest a link's URL carries, as pip reads it (``#sha256=…``, also with other
    parameters beside it: ``#sha256=…&subdirectory=…``), lowercase hex."""
    m = _LINK_DIGEST.search(url)
    # an empty value is kept, as pip keeps it: a digest no file matches, never "no digest"
    return {m.group(1): m.group(2).lower()} if m is not None else {}


def split_link(url: str) -> tuple[str, dict[str, str]]:
    """A link's absolute URL as torchwheel fetches it (quoted as pip quotes it, without its
    fragment) and the digest it carries."""
    return urldefrag(quote_link(url))[0], link_digests(url)


def requires_python(text: str | None, where: str) -> str | None:
    """``text`` once its length and its clauses are within the limits (``LimitExceeded``
    otherwise), before ``packaging`` turns each clause into an object."""
    if text is None:
        return None
    lim = current()
    lim.max_requires_python_length.check(f"{where}: the length of a requires-python", len(text))
    lim.max_requires_python_clauses.check(
        f"{where}: the number of clauses in a requires-python", text.count(",") + 1
    )
    return text


def _links(count: int, where: str) -> None:
    current().max_page_links.check(f"{where}: the number of links on one index page", count)


# the attributes a link is read for (PEP 503, 592, 658, 714); the others are not kept
_KEPT = frozenset(
    ("href", "data-yanked", "data-requires-python", "data-core-metadata", "data-dist-info-metadata")
)


class _Anchors(HTMLParser):
    """Anchors of a PEP 503 page (stdlib HTML parser: the format is a list of <a>), counted
    as they come, and the page's ``<base href>`` if it has one."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where
        self.anchors: list[dict[str, str | None]] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            kept = {k: v for k, v in attrs if k in _KEPT}
            if kept.get("href"):
                _links(len(self.anchors) + 1, self.where)
                requires_python(kept.get("data-requires-python"), self.where)
                self.anchors.append(kept)
        elif tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")


def _html(text: str, url: str, where: str) -> Page:
    parser = _Anchors(where)
    parser.feed(text)
    parser.close()
    try:
        base = urljoin(url, parser.base) if parser.base else url
    except ValueError as exc:  # an unclosed "[": the URL itself is never printed (it may hold a password)
        raise InputError(
            f"{where}: unreadable index page (its <base href> is no URL: {exc})", reference="index-invalid"
        ) from None
    files: list[Link] = []
    projects: list[Link] = []
    refused: list[Refused] = []
    for i, a in enumerate(parser.anchors):
        try:
            target, hashes = split_link(urljoin(base, a["href"] or ""))
        except ValueError as exc:
            refused.append(Refused(f"link {i + 1:,}", f"its href is no URL ({exc})"))
            continue
        # PEP 714: data-core-metadata, else the PEP 658 spelling; "true" or a digest
        meta_attr = "data-core-metadata" if "data-core-metadata" in a else "data-dist-info-metadata"
        link = Link(
            target,
            hashes,
            "data-yanked" in a,  # PEP 592: present at all, with or without a reason
            a.get("data-requires-python"),
            digests(a.get(meta_attr)) if meta_attr in a else None,
        )
        (files if link.is_file else projects).append(link)
    return Page(files, projects, refused)


def _offered(value: object) -> dict[str, str] | None:
    """A PEP 691 ``core-metadata`` value: true, false (or null), or the file's hashes."""
    if isinstance(value, dict):
        return {str(k).lower(): str(v).lower() for k, v in value.items()}
    return {} if value is True else None


def _metadata(f: Mapping[str, object]) -> object:
    """PEP 714's key, else PEP 658's as PEP 691 spelled it, as pip reads them (a ``false``
    under the first is the answer; ``null`` is absent). ``data-dist-info-metadata``, the
    HTML spelling PyPI once served in JSON too, is accepted and not read: pip reads it not,
    and PyPI serves ``core-metadata`` beside it."""
    found = f.get("core-metadata")
    return f.get("dist-info-metadata") if found is None else found


def _file(f: Mapping[str, Any], url: str, where: str) -> Link:
    """One PEP 691 file entry that fits ``PEP691_FILE``. ``yanked`` as pip reads it: true or a
    reason; false, null and "" (PEP 592 wants a reason that is not empty) are not yanked."""
    yanked = f.get("yanked")
    target, from_link = split_link(urljoin(url, f["url"]))
    return Link(
        target,
        # the page's digests, and the URL's own over them, as pip merges them
        {k.lower(): v.lower() for k, v in (f.get("hashes") or {}).items()} | from_link,
        yanked is True or (isinstance(yanked, str) and yanked != ""),
        requires_python(f.get("requires-python"), where),
        _offered(_metadata(f)),
        f.get("size"),
        f.get("filename"),  # PEP 691 names the file (uv reads it; pip 26 still takes the URL's end)
    )


def _entry_name(f: object) -> str | None:
    """A malformed entry's file name, where it has one that names a single file."""
    name = f.get("filename") if isinstance(f, dict) else None
    return name if isinstance(name, str) and Str(_FILENAME).problem(name, "") is None else None


def _json(data: bytes, url: str, where: str) -> Page:
    doc = safejson.load(data, where, Either((PEP691_PROJECT, PEP691_ROOT)), reference="index-invalid")
    refused: list[Refused] = []
    if "files" in doc:
        _links(len(doc["files"]), where)
        files = []
        for i, f in enumerate(doc["files"]):
            problem = PEP691_FILE.problem(f, f"$.files[{i}]")
            if problem is None:
                try:
                    files.append(_file(f, url, where))
                except ValueError as exc:  # an unclosed "[" in its url
                    refused.append(Refused(f"$.files[{i}]", f"its url is no URL ({exc})", _entry_name(f)))
            else:
                refused.append(Refused(f"$.files[{i}]", problem, _entry_name(f)))
        return Page(files, [], refused, doc["name"])
    _links(len(doc["projects"]), where)
    base = url if url.endswith("/") else url.rsplit("/", 1)[0] + "/"
    projects = []
    for i, p in enumerate(doc["projects"]):
        problem = _PROJECT_LINK.problem(p, f"$.projects[{i}]")
        if problem is None:
            projects.append(Link(urljoin(base, f"{canonicalize_name(p['name'])}/")))
        else:
            refused.append(Refused(f"$.projects[{i}]", problem))
    return Page([], projects, refused)


def _text(data: bytes, charset: str | None, where: str) -> str:
    """An HTML page's text in the charset its Content-Type names, UTF-8 when it names none
    (as pip reads it). The message is torchwheel's own: a codec's ("invalid start byte",
    "unknown encoding: x") says nothing about a page."""
    encoding = charset or "utf-8"
    try:
        return data.decode(encoding)
    except LookupError as exc:
        raise InputError(
            f"{where}: unreadable index page (its Content-Type names the charset {quoted(encoding, 40)}, "
            f"which is not a text encoding torchwheel knows)",
            reference="index-invalid",
        ) from exc
    except UnicodeError as exc:
        at = f"byte {exc.start:,}" if isinstance(exc, UnicodeDecodeError) else "its text"
        said = (
            f"{quoted(encoding, 40)}, the charset its Content-Type names"
            if charset
            else ("UTF-8, and no charset is declared")
        )
        raise InputError(
            f"{where}: unreadable index page ({at} is not valid {said})", reference="index-invalid"
        ) from exc


def parse(data: bytes, url: str, is_json: bool, where: str, charset: str | None = None) -> Page:
    """A page's links; ``InputError`` naming ``where`` when the page cannot be read.
    ``url``: where the page was found (after redirects), which relative links resolve against;
    ``charset``: what its Content-Type says (a JSON page is UTF-8 whatever it says, RFC 8259)."""
    if is_json:
        return _json(data, url, where)
    return _html(_text(data, charset, where), url, where)
