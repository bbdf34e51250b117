"""Where candidate wheels come from: files, folders, find-links pages and local PEP 503
indexes. A source that cannot be read at all raises ``InputError``; a wheel that cannot be
read becomes a ``Skipped`` with its reason, so one corrupt download does not hide the others.
The same file name found in two places is kept twice when the bytes differ and once (the
first origin) when they are identical.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion

from torchwheel.errors import InputError
from torchwheel.install.candidates import Candidate, Gathered, Skipped, read_candidate, sha256_of
from torchwheel.wheel.contents import parse_wheel_name


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
            if digest and target.is_file() and sha256_of(target) != digest:
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
