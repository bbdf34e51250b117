"""``net.pages`` on recorded copies of real index pages (``fixtures/pages/``), in both
forms, held to pip's own parser (``pip._internal.index.collector.parse_links``, the reader
every pip user's index is read by): the same files, digests, requires-python, yanked state
and metadata offers. And one malformed entry costs that entry, not the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pip._internal.index.collector import IndexContent, parse_links
from pip._internal.models.link import Link as PipLink

from torchwheel.errors import InputError
from torchwheel.net import pages

PAGES = Path(__file__).resolve().parents[2] / "fixtures" / "pages"
URL = "https://pypi.example/simple/{}/"
RECORDED = sorted(p.name for p in PAGES.iterdir())
JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def _ours(page: Path | bytes, is_json: bool, name: str = "x") -> pages.Page:
    data = page if isinstance(page, bytes) else page.read_bytes()
    return pages.parse(data, URL.format(name), is_json, f"{name} page")


def _pips(data: bytes, is_json: bool, name: str = "x") -> list[PipLink]:
    kind = JSON_TYPE if is_json else "text/html"
    return list(parse_links(IndexContent(data, kind, "utf-8", URL.format(name), cache_link_parsing=False)))


def _facts(link: pages.Link) -> tuple[Any, ...]:
    meta = None if link.metadata is None else link.metadata.get("sha256")
    return (
        link.filename,
        link.hashes.get("sha256"),
        link.requires_python,
        link.yanked,
        link.metadata is not None,
        meta,
    )


def _pip_facts(link: PipLink) -> tuple[Any, ...]:
    meta = link.metadata_file_data
    sha = None if meta is None or meta.hashes is None else meta.hashes.get("sha256")
    digest = link.hash if link.hash_name == "sha256" else None
    return (link.filename, _low(digest), link.requires_python, link.is_yanked, meta is not None, _low(sha))


def _low(digest: str | None) -> str | None:
    """Hex digits as torchwheel keeps them: lowercase (pip keeps the page's case)."""
    return digest.lower() if digest else digest


@pytest.mark.parametrize("name", RECORDED)
def test_a_recorded_page_reads_as_pip_reads_it(name: str) -> None:
    path = PAGES / name
    is_json = path.suffix == ".json"
    ours = _ours(path, is_json)
    assert ours.refused == [] and ours.projects == []
    assert [_facts(link) for link in ours.files] == [
        _pip_facts(link) for link in _pips(path.read_bytes(), is_json)
    ]
    assert len(ours.files) >= 20


@pytest.mark.parametrize("project", ["torchao", "torchao-pep714", "torchcodec", "vllm", "xformers"])
def test_both_forms_of_a_page_say_the_same(project: str) -> None:
    as_json = _ours(PAGES / f"{project}.json", True)
    as_html = _ours(PAGES / f"{project}.html", False)
    assert sorted(map(_facts, as_json.files)) == sorted(map(_facts, as_html.files))  # the order may differ


def test_the_real_shapes_are_there_and_read() -> None:
    """What made ``select -i``, ``scan`` and ``install`` refuse these pages before: a
    ``"requires-python": null`` (every torchao file, torchcodec's ``$.files[48]``)."""
    torchao = _ours(PAGES / "torchao.json", True)
    assert all(link.requires_python is None for link in torchao.files)
    codec = json.loads((PAGES / "torchcodec.json").read_text())["files"]
    assert [f["requires-python"] for f in codec].count(None) == 1
    vllm = _ours(PAGES / "vllm.json", True)
    assert sum(link.yanked for link in vllm.files) == 5
    offered = _ours(PAGES / "torchao-pep714.json", True).files
    shapes = {(link.metadata is None, bool(link.metadata)) for link in offered}
    assert shapes == {(True, False), (False, False), (False, True)}  # false, true, a digest
    assert all(link.size for link in offered)


def _entry(**change: Any) -> dict[str, Any]:
    entry = json.loads((PAGES / "torchao.json").read_text())["files"][-1]
    entry.update(change)
    return {k: v for k, v in entry.items() if v is not _ABSENT}


_ABSENT = object()
# every shape PEP 691, 700 and 714 allow for a key (null and absent alike), read as pip reads it
SHAPES = [
    {"requires-python": None},
    {"requires-python": _ABSENT},
    {"requires-python": ">=3.10"},
    {"yanked": True},
    {"yanked": False},
    {"yanked": None},
    {"yanked": ""},  # PEP 592 wants a reason; pip reads "" as not yanked
    {"yanked": "broken build"},
    {"core-metadata": {"sha256": "AB" * 32}},
    {"core-metadata": True},
    {"core-metadata": False, "dist-info-metadata": True},  # core-metadata's false is the answer
    {"core-metadata": None, "dist-info-metadata": {"sha256": "cd" * 32}},
    {"dist-info-metadata": True},
    {"data-dist-info-metadata": {"sha256": "ef" * 32}},  # not read, as pip
    {"size": None},
    {"size": _ABSENT},
    {"upload-time": None},
    {"upload-time": _ABSENT},
    {"hashes": None},
    {"hashes": _ABSENT},
    {"hashes": {"sha256": "AB" * 32, "blake2b": "00"}},
    {"gpg-sig": None},
    {"provenance": None},
    {"filename": _ABSENT},
]


@pytest.mark.parametrize("change", SHAPES, ids=[json.dumps(c, default=lambda v: "absent") for c in SHAPES])
def test_every_allowed_shape_is_read_as_pip_reads_it(change: dict[str, Any]) -> None:
    doc = {"meta": {"api-version": "1.1"}, "name": "torchao", "files": [_entry(**change)]}
    data = json.dumps(doc).encode()
    ours = _ours(data, True)
    assert ours.refused == []
    assert [_facts(link) for link in ours.files] == [_pip_facts(link) for link in _pips(data, True)]


BAD = [
    ({"url": _ABSENT}, 'the key "url" is missing'),
    ({"url": 5}, ".url: expected a string"),
    ({"hashes": ["sha256"]}, ".hashes"),
    ({"yanked": 3}, ".yanked"),
    ({"size": -1}, ".size"),
    ({"core-metadata": "yes"}, ".core-metadata"),
    ({"filename": "../torchao-1.0-py3-none-any.whl"}, ".filename"),
]


@pytest.mark.parametrize(("change", "says"), BAD, ids=[b[1] for b in BAD])
def test_a_malformed_entry_costs_that_entry(change: dict[str, Any], says: str) -> None:
    good = json.loads((PAGES / "torchao.json").read_text())
    good["files"].insert(3, _entry(**change))
    page = _ours(json.dumps(good).encode(), True, "torchao")
    assert len(page.files) == 24 and page.name == "torchao"
    (bad,) = page.refused
    assert bad.entry == "$.files[3]" and says in bad.reason and bad.reason.startswith("$.files[3]")


def test_a_malformed_root_entry_costs_that_link() -> None:
    doc = {"meta": {"api-version": "1.0"}, "projects": [{"name": "torchao"}, {"name": 5}, {}]}
    page = _ours(json.dumps(doc).encode(), True)
    assert [link.url for link in page.projects] == ["https://pypi.example/simple/x/torchao/"]
    assert [b.entry for b in page.refused] == ["$.projects[1]", "$.projects[2]"]


@pytest.mark.parametrize(
    "frame",
    [{"files": {}}, {"meta": {"api-version": "2.0"}}, {"name": 5}, {"meta": _ABSENT}],
    ids=["files-object", "api-2", "name-int", "no-meta"],
)
def test_a_broken_frame_is_still_the_page(frame: dict[str, Any]) -> None:
    doc = {"meta": {"api-version": "1.1"}, "name": "x", "files": []} | frame
    with pytest.raises(InputError):
        _ours(json.dumps({k: v for k, v in doc.items() if v is not _ABSENT}).encode(), True)


# -- links as pip 26.3 reads them: its own test shapes (pypa/pip tests/unit/test_collector.py
# ``test_clean_url_path`` / ``test_ensure_quoted_url``, tests/unit/test_link.py), each held to
# the literal pip's test expects and to pip's own function on the same input

from pip._internal.models.link import _ensure_quoted_url  # noqa: E402

# (path, what pip's test_clean_url_path expects it quoted as)
PIP_PATHS = [
    ("a b", "a%20b"),
    ("a @ b", "a%20@%20b"),
    ("a @ @ b", "a%20@%20@%20b"),
    ("a %40 b", "a%20%40%20b"),
    ("a %40b@ c", "a%20%40b@%20c"),
    ("a @b%40 c", "a%20@b%40%20c"),
    ("a %40@b %40@c %40", "a%20%40@b%20%40@c%20%40"),
    ("a / b", "a%20/%20b"),
    ("a / / b", "a%20/%20/%20b"),
    ("a %2F b", "a%20%2F%20b"),
    ("a %2Fb/ c", "a%20%2Fb/%20c"),
    ("a /b%2F c", "a%20/b%2F%20c"),
    ("a %2F/b %2F/c %2F", "a%20%2F/b%20%2F/c%20%2F"),
    ("a %5b %5d b", "a%20%5B%20%5D%20b"),
    ("a %2f b", "a%20%2F%20b"),
]

# (URL, what pip's test_ensure_quoted_url expects), the shapes that are not Windows-only
PIP_URLS = [
    ("https://localhost.localdomain:8181/path/with space/", "https://localhost.localdomain:8181/path/with%20space/"),
    (
        "https://localhost.localdomain:8181/path/with%20quoted%20space/",
        "https://localhost.localdomain:8181/path/with%20quoted%20space/",
    ),
    ("https://127.0.0.1:8181/path/with space/", "https://127.0.0.1:8181/path/with%20space/"),
    ("https://[fd00:0:0:236::100]:8181/path/with space/", "https://[fd00:0:0:236::100]:8181/path/with%20space/"),
    (
        "https://localhost.localdomain:8181/path/with/query?request=test",
        "https://localhost.localdomain:8181/path/with/query?request=test",
    ),
    ("https://localhost.localdomain:8181/path:/with:/colon", "https://localhost.localdomain:8181/path%3A/with%3A/colon"),
    ("https://localhost.localdomain/T:/path/", "https://localhost.localdomain/T%3A/path/"),
    ("https://example.com/access%2Ftoken/path/", "https://example.com/access%2Ftoken/path/"),
    ("file:///T:/path/with spaces/", "file:///T%3A/path/with%20spaces/"),  # on a POSIX host, as pip's test says
]  # fmt: skip


@pytest.mark.parametrize(("path", "expected"), PIP_PATHS, ids=[p for p, _ in PIP_PATHS])
def test_a_path_is_quoted_as_pip_quotes_it(path: str, expected: str) -> None:
    url = f"https://example.com/{path}"
    assert pages.quote_link(url) == f"https://example.com/{expected}" == _ensure_quoted_url(url)


@pytest.mark.parametrize(("url", "expected"), PIP_URLS, ids=[u for u, _ in PIP_URLS])
def test_a_url_is_quoted_as_pip_quotes_it(url: str, expected: str) -> None:
    assert pages.quote_link(url) == expected == _ensure_quoted_url(url)


DIGEST = "ab" * 32
# hrefs as pages write them: a raw space, a quoted one, a fragment with more than the digest,
# pip's own shapes of test_collector.py (``#md5=000000000``, ``#sha512=abc132409cb``) and
# test_link.py (``#egg=...&subdirectory=...``, a quoted ``#`` and ``+`` in the file name)
HREFS = [
    "/files/with space/demo-1.0-py3-none-any.whl",
    "/files/with%20space/demo-1.0-py3-none-any.whl",
    f"/files/demo-1.0-py3-none-any.whl#sha256={DIGEST}&subdirectory=sub",
    f"/files/demo-1.0-py3-none-any.whl#subdirectory=sub&sha256={DIGEST}",
    f"/files/demo-1.0-py3-none-any.whl#egg=demo&sha256={DIGEST.upper()}",
    f"/files/demo-1.0-py3-none-any.whl#SHA256={DIGEST}",  # pip reads lower-case names only: none
    "/files/demo-1.0-py3-none-any.whl#sha256=",  # an empty digest stays one (no file matches it)
    "/abc-1.0.tar.gz#md5=000000000",
    "/pkg1-1.0.tar.gz#sha512=abc132409cb",
    "/files/page%231-1.0-py3-none-any.whl",
    "/files/myproject-1.0%2Bfoobar.0-py2.py3-none-any.whl",
    "/files/a%2F..%2Fdemo-1.0-py3-none-any.whl",  # a quoted separator never makes a path
    f"/files/q/demo-1.0-py3-none-any.whl?x=1&sha256={DIGEST}",  # pip searches the whole URL
    "../up/./demo-1.0-py3-none-any.whl#sha256=x",
    "https://other.example/w i t h/demo-1.0-py3-none-any.whl#sha256=x&egg=demo",
]


def _pip_link_facts(link: PipLink) -> tuple[Any, ...]:
    return (link.url_without_fragment, link.filename, {k: v.lower() for k, v in link._hashes.items()})


def _link_facts(link: pages.Link) -> tuple[Any, ...]:
    return (link.url, link.filename, dict(link.hashes))


@pytest.mark.parametrize("href", HREFS)
def test_an_html_link_reads_as_pip_reads_it(href: str) -> None:
    html = f'<!DOCTYPE html><html><body><a href="{href}">x</a></body></html>'.encode()
    (ours,) = [*_ours(html, False).files, *_ours(html, False).projects]
    (theirs,) = _pips(html, False)
    assert _link_facts(ours) == _pip_link_facts(theirs)
    assert " " not in ours.url


@pytest.mark.parametrize("href", HREFS)
def test_a_json_file_url_reads_as_pip_reads_it(href: str) -> None:
    """PEP 691: the page's ``hashes`` and the URL's own digest, which pip lays over them."""
    entry = {
        "filename": "demo-1.0-py3-none-any.whl",
        "url": href,
        "hashes": {"sha256": "CD" * 32, "md5": "ef"},
    }
    data = json.dumps({"meta": {"api-version": "1.1"}, "name": "demo", "files": [entry]}).encode()
    (ours,) = _ours(data, True).files
    (theirs,) = _pips(data, True)
    assert _link_facts(ours)[0::2] == _pip_link_facts(theirs)[0::2]  # the file name is the page's
    assert ours.filename == "demo-1.0-py3-none-any.whl"


def test_the_digest_of_a_fragment_with_more_parameters() -> None:
    """The one shape a page of a real index writes that a plain ``partition("=")`` misread."""
    page = f'<a href="demo-1.0-py3-none-any.whl#sha256={DIGEST}&subdirectory=sub">x</a>'.encode()
    (link,) = _ours(page, False).files
    assert link.hashes == {"sha256": DIGEST} and link.url == URL.format("x") + "demo-1.0-py3-none-any.whl"
