"""`select`, `install`, `matrix` and `index` on hosted indexes: a real HTTP(S) server on
127.0.0.1 (tests/lib/index_server.py) serving what `torchwheel index` wrote, PEP 503 HTML and
PEP 691 JSON, PEP 658/714 metadata files, and the ways a network fails.

The release: ``twidx`` 1.0.0 built three ways (stable 2.10, stable 2.12, unstable 2.13; each
``--local-label torchX.Y``), requiring the dependency ``twdep``; and for some tests a newer
``twidx`` 1.1.0 (stable 2.10). Stub torches stand for the targets.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

from ..lib.helpers import REPO, fixture_wheels_module, torchwheel
from ..lib.index_server import Behaviour, self_signed, serve
from ..lib.publish_helpers import (
    DEPENDENCY,
    TAGS,
    installed_dist_info,
    labelled,
    labelled_release,
    venv_with_torch,
)
from ..lib.release_set import site_files

sys.path.insert(0, str(REPO / "fixtures"))
import hostile
import hostile_net as hn

PLAN = ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")
NEWER = f"twidx-1.1.0-{TAGS}.whl"


@pytest.fixture(scope="module")
def release(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return labelled_release(built_fixtures, tmp_path_factory.mktemp("hrelease"), also=(f"{DEPENDENCY}>=1",))


@pytest.fixture(scope="module")
def newer(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """twidx 1.1.0, a stable 2.10 build, tagged."""
    wm = fixture_wheels_module()
    spec = wm.WheelSpec(
        "newer",
        "twidx",
        TAGS,
        (("twidx/_C.abi3.so", "elf_marker_2_10"),),
        requires=("torch>=2.10",),
        version="1.1.0",
    )
    raw = wm.write_wheel(tmp_path_factory.mktemp("raw") / spec.filename, spec, built_fixtures)
    out = tmp_path_factory.mktemp("newer")
    assert torchwheel("tag", "-w", str(out), str(raw)).returncode == 0
    return out / NEWER


def _index(sources: list[Path], out: Path) -> Path:
    result = torchwheel("index", *map(str, sources), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def site(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _index([release], tmp_path_factory.mktemp("site") / "site")


@pytest.fixture(scope="module")
def site_newer(release: Path, newer: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _index([release, newer], tmp_path_factory.mktemp("site2") / "site")


@pytest.fixture
def venv_python(tmp_path: Path) -> Path:
    """A fresh environment with a stub torch 2.12 (``install``'s target)."""
    return venv_with_torch(tmp_path / "venv", "2.12.0", tmp_path / "stub")


@pytest.fixture
def served(site: Path) -> Iterator[tuple[str, Behaviour]]:
    with serve(site) as found:
        yield found


def _select(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    result = torchwheel("select", "--format", "json", *args, env=env)
    doc = json.loads(result.stdout) if result.stdout.startswith("{") else {}
    return result.returncode, doc, result.stderr


def _project(doc: dict[str, Any]) -> dict[str, Any]:
    (project,) = doc["projects"]
    return project


def test_select_downloads_only_the_wheels_that_can_be_chosen(served: tuple[str, Behaviour]) -> None:
    url, server = served
    code, doc, err = _select("--torch", "2.12", *PLAN, "-i", f"{url}/simple/", "--name", "twidx")
    assert code == 0, err
    project = _project(doc)
    assert project["outcome"] == "chosen"
    assert project["chosen"]["file"] == labelled("212")
    assert project["chosen"]["url"] == f"{url}/files/{labelled('212').replace('+', '%2B')}"
    assert project["chosen"]["path"] is None  # the download is gone with the command
    # the 2.13 build's .metadata pins torch==2.13.*: judged without downloading it; the 2.10
    # build ranks below the 2.12 one that fits (its local label is the lower version)
    passed = {unquote(Path(p["location"]).name): p["reason"] for p in project["not_opened"]}
    assert "torch==2.13.*" in passed[labelled("213")] and "excludes torch 2.12" in passed[labelled("213")]
    assert (
        "1.0.0+torch2.12 is a newer version (PEP 440 ranks the local label higher)" in passed[labelled("210")]
    )
    assert server.downloads() == [labelled("212")]
    assert f"/files/{labelled('213')}.metadata" in server.requests
    assert "/simple/" not in server.requests  # --name: straight to the project page, never the root


def test_a_newer_release_that_fits_spares_every_older_download(site_newer: Path) -> None:
    with serve(site_newer) as (url, server):
        code, doc, err = _select("--torch", "2.12", *PLAN, "-i", f"{url}/simple", "--name", "twidx")
    assert code == 0, err
    assert _project(doc)["chosen"]["file"] == NEWER
    assert server.downloads() == [NEWER]
    assert not any(p.endswith(".metadata") and "1.0.0" in p for p in server.requests)
    reasons = {Path(p["location"]).name: p["reason"] for p in _project(doc)["not_opened"]}
    assert all("1.1.0 is a newer release that fits" in r for r in reasons.values()), reasons
    assert len(reasons) == 3


def test_nothing_fits_without_a_download(site_newer: Path) -> None:
    """torch 2.9: every .metadata excludes it, so no wheel is downloaded; exit 1."""
    with serve(site_newer) as (url, server):
        code, doc, _ = _select("--torch", "2.9", *PLAN, "-i", f"{url}/simple", "--name", "twidx")
    assert code == 1
    assert _project(doc)["outcome"] == "nothing-fits"
    assert server.downloads() == []


def test_pep_691_json_pages_by_content_negotiation(site: Path, tmp_path: Path) -> None:
    """The same index with index.json pages (PEP 691, core-metadata hashes, PEP 700 sizes)
    next to the HTML: torchwheel asks for JSON and gets it."""
    root = tmp_path / "site"
    shutil.copytree(site, root)
    files = sorted((root / "files").glob("*.whl"))
    doc = {
        "meta": {"api-version": "1.1"},
        "name": "twidx",
        "files": [
            {
                "filename": f.name,
                "url": f"../../files/{f.name}",
                "hashes": {"sha256": hashlib.sha256(f.read_bytes()).hexdigest()},
                "core-metadata": {"sha256": hashlib.sha256(Path(f"{f}.metadata").read_bytes()).hexdigest()},
                "requires-python": ">=3.9",
                "size": f.stat().st_size,
            }
            for f in files
        ],
    }
    (root / "simple" / "twidx" / "index.json").write_text(json.dumps(doc))
    (root / "simple" / "twidx" / "index.html").write_text("<html>not the page torchwheel should read</html>")
    with serve(root) as (url, server):
        code, out, err = _select("--torch", "2.13", *PLAN, "-i", f"{url}/simple/", "--name", "twidx")
    assert code == 0, err
    assert _project(out)["chosen"]["file"] == labelled("213")  # the highest version (as pip and uv)
    assert f"/files/{labelled('213')}" in server.requests  # 2.13 admits the unstable build: downloaded


def test_a_download_that_differs_from_its_page_is_unreadable(site: Path, tmp_path: Path) -> None:
    root = tmp_path / "site"
    shutil.copytree(site, root)
    wheel = root / "files" / labelled("212")
    data = bytearray(wheel.read_bytes())
    data[-30] ^= 1  # one byte: the page's sha256 no longer holds
    wheel.write_bytes(bytes(data))
    with serve(root) as (url, _):
        result = torchwheel("select", "--torch", "2.12", *PLAN, "-i", f"{url}/simple/")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "sha256 differs from the index page" in result.stderr
    assert "twidx: cannot tell, a candidate could not be read" in result.stdout


def test_a_metadata_file_that_differs_from_its_page_is_unreadable(site: Path, tmp_path: Path) -> None:
    root = tmp_path / "site"
    shutil.copytree(site, root)
    meta = root / "files" / f"{labelled('213')}.metadata"
    meta.write_bytes(meta.read_bytes() + b"Requires-Dist: extra\n")
    with serve(root) as (url, _):
        result = torchwheel("select", "--torch", "2.12", *PLAN, "-i", f"{url}/simple/twidx/")
    assert result.returncode == 2
    assert ".metadata file's sha256 differs" in result.stderr


@pytest.mark.parametrize(
    ("env", "behaviour", "message"),
    [
        ({"TORCHWHEEL_MAX_PAGE_BYTES": "100"}, Behaviour(), "max-page-bytes"),
        ({"TORCHWHEEL_MAX_DOWNLOAD_BYTES": "1000"}, Behaviour(), "max-download-bytes"),
        ({"TORCHWHEEL_HTTP_TIMEOUT": "1"}, Behaviour(slow={"/twidx/": 3}), "http-timeout"),
        ({}, Behaviour(short={".whl"}), "the response ended after"),
        ({}, Behaviour(token="s3cret"), "HTTP 401"),
    ],
    ids=["page-size", "download-size", "timeout", "short-body", "unauthorized"],
)
def test_network_failures_are_one_line(
    site: Path, env: dict[str, str], behaviour: Behaviour, message: str, tmp_path: Path
) -> None:
    with serve(site, behaviour) as (url, _):
        result = torchwheel(
            "select",
            "--torch",
            "2.12",
            *PLAN,
            "-i",
            f"{url}/simple/",
            env={**os.environ, **env, "TMPDIR": str(tmp_path)},
        )
    assert result.returncode == 2, result.stdout
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # no download left behind


def test_credentials_in_the_url_are_sent_and_never_shown(site: Path) -> None:
    with serve(site, Behaviour(token="s3cret")) as (url, _):
        good = url.replace("://", "://user:s3cret@")
        code, doc, err = _select("--torch", "2.12", *PLAN, "-i", f"{good}/simple/", "--name", "twidx")
        assert code == 0, err
        assert "s3cret" not in json.dumps(doc)
        bad = torchwheel(
            "select", "--torch", "2.12", *PLAN, "-i", url.replace("://", "://user:wrong@") + "/simple/"
        )
    assert bad.returncode == 2 and "HTTP 401" in bad.stderr
    assert "wrong" not in bad.stderr + bad.stdout and f"{url}/simple/: HTTP 401" in bad.stderr  # dropped


def test_a_page_link_with_a_user_part_is_followed_and_never_written(site: Path, tmp_path: Path) -> None:
    """Issue 47: a page whose links carry ``user:password@`` (a mirror that puts a token in
    every link): the download is sent the credentials, and every line, document and page
    written holds the link without them (``fetch.Session.remember``)."""
    with serve(site, Behaviour(token=hn.SECRET)) as (base, _):
        linked = base.replace("://", f"://user:{quote(hn.SECRET, safe='')}@")
        text = (site / "simple" / "twidx" / "index.html").read_text()
        page = tmp_path / "page" / "index.html"
        page.parent.mkdir()
        page.write_text(text.replace('href="../../', f'href="{linked}/'))
        assert linked in page.read_text()
        scan = torchwheel("scan", str(page), "-o", str(tmp_path / "scan.jsonl"))
        code, doc, err = _select("--torch", "2.12", *PLAN, str(page))
        matrix = torchwheel("matrix", "--format", "json", str(page))
        index = torchwheel("index", str(page), "-o", str(tmp_path / "out"))
    assert scan.returncode == 0 and code == 0 and matrix.returncode == 0 and index.returncode == 0, err
    lines = (tmp_path / "scan.jsonl").read_text()
    assert lines.count('"error":null') == 3 and f'"url":"{base}/files/' in lines
    assert _project(doc)["chosen"]["file"] == labelled("212")
    written = [p.read_text() for p in (tmp_path / "out").rglob("*.html")]
    for text in [lines, json.dumps(doc), err, matrix.stdout, index.stdout, *written]:
        assert not _leaks(text, hn.SECRET) and "user:" not in text


def test_only_http_redirects_and_links_are_followed(site: Path, tmp_path: Path) -> None:
    root = tmp_path / "site"
    shutil.copytree(site, root)
    page = root / "simple" / "twidx" / "index.html"
    page.write_text(page.read_text().replace("../../files/", f"{(root / 'files').as_uri()}/"))
    behaviour = Behaviour(redirects={"/elsewhere/": "ftp://127.0.0.1/simple/"})  # urllib would follow it
    with serve(root, behaviour) as (url, _):
        redirected = torchwheel("select", "--torch", "2.12", *PLAN, "-i", f"{url}/elsewhere/")
        linked = torchwheel("select", "--torch", "2.12", *PLAN, "-i", f"{url}/simple/twidx/")
    assert redirected.returncode == 2 and "not http(s)" in redirected.stderr
    assert linked.returncode == 2 and "links a local file" in linked.stderr


def test_a_root_page_without_name_is_bounded(served: tuple[str, Behaviour]) -> None:
    url, _ = served
    env = {**os.environ, "TORCHWHEEL_MAX_INDEX_PROJECTS": "0"}
    result = torchwheel("select", "--torch", "2.12", *PLAN, "-i", f"{url}/simple/", env=env)
    assert result.returncode == 2 and "--name" in result.stderr and "max-index-projects" in result.stderr
    named = torchwheel("select", "--torch", "2.12", *PLAN, "-i", f"{url}/simple/", "--name", "twidx", env=env)
    assert named.returncode == 0, named.stderr


def test_an_unknown_project_is_nothing_fits_with_its_name(served: tuple[str, Behaviour]) -> None:
    url, _ = served
    result = torchwheel("select", "--torch", "2.12", *PLAN, "-i", f"{url}/simple/", "--name", "nosuch")
    assert result.returncode == 1
    assert "nosuch: no wheel of this project in the sources" in result.stdout + result.stderr
    assert "no readable candidates" not in result.stdout


def test_https_with_a_certificate_the_client_trusts(site: Path, tmp_path: Path) -> None:
    tls = self_signed(tmp_path / "tls")
    with serve(site, tls=tls) as (url, _):
        assert url.startswith("https://")
        env = {**os.environ, "SSL_CERT_FILE": str(tls / "cert.pem")}
        code, doc, err = _select("--torch", "2.12", *PLAN, "-i", f"{url}/simple/", "--name", "twidx", env=env)
        untrusted = torchwheel("select", "--torch", "2.12", *PLAN, "-i", f"{url}/simple/")
    assert code == 0, err
    assert _project(doc)["chosen"]["file"] == labelled("212")
    assert untrusted.returncode == 2 and "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr


def test_matrix_and_index_read_a_hosted_index(served: tuple[str, Behaviour], tmp_path: Path) -> None:
    url, server = served
    grid = torchwheel("matrix", "--format", "json", f"{url}/simple/")
    assert grid.returncode == 0, grid.stderr
    rows = {w["file"]: w for w in json.loads(grid.stdout)["wheels"]}
    assert sorted(rows) == sorted(labelled(b) for b in ("210", "212", "213"))
    assert rows[labelled("213")]["cells"]["2.13"]["fit"] == "only"
    assert rows[labelled("212")]["url"].startswith(url) and rows[labelled("212")]["path"] is None
    mirror = torchwheel("index", f"{url}/simple/", "-o", str(tmp_path / "mirror"))
    assert mirror.returncode == 0, mirror.stderr
    page = tmp_path / "mirror" / "torch-2.12" / "simple" / "twidx" / "index.html"
    assert labelled("212") in page.read_text()
    assert sorted(server.downloads()).count(labelled("210")) == 2  # once per command, all of them


def test_install_upgrade_and_unmet_requirements_from_a_hosted_index(
    served: tuple[str, Behaviour], tmp_path: Path
) -> None:
    url, _ = served
    python = venv_with_torch(tmp_path / "venv", "2.12.0", tmp_path / "stub")
    first = torchwheel("install", "--python", str(python), "-i", f"{url}/torch-2.10/simple/")
    assert first.returncode == 0, first.stderr
    assert f"installed {labelled('210')}" in first.stdout
    # the wheel requires twdep, which the target lacks: said, never installed
    assert f"requires what {python}" in first.stderr and "twdep>=1 (not installed)" in first.stderr
    assert "pip install 'twdep>=1'" in first.stderr
    again = torchwheel("install", "--python", str(python), "-i", f"{url}/simple/")
    assert again.returncode == 1 and "already installed" in again.stderr and "--upgrade" in again.stderr
    before = site_files(python)
    up = torchwheel("install", "--upgrade", "--python", str(python), "-i", f"{url}/simple/")
    assert up.returncode == 0, up.stderr
    assert f"replaced twidx 1.0.0+torch2.10 with {labelled('212')}" in up.stdout
    assert "Torch-ABI: 2.12" in (installed_dist_info(python, "twidx") / "WHEEL").read_text()
    after = site_files(python)
    # the old build's files: its .dist-info and its module (each build's module is named for its hook)
    assert before - after == {
        p for p in before if "twidx-1.0.0+torch2.10.dist-info" in p or "elf_marker_2_10" in p
    }
    same = torchwheel("install", "--upgrade", "--python", str(python), "-i", f"{url}/simple/")
    assert same.returncode == 0 and "already installed: " in same.stdout
    assert site_files(python) == after


def test_a_pep_691_filename_names_the_file_not_the_url(site: Path, tmp_path: Path) -> None:
    """A content-addressed store serves ``/blobs/<sha256>``: the wheel's name (its project,
    version and tags) comes from ``filename``, and the download is saved under it."""
    root = tmp_path / "site"
    shutil.copytree(site, root)
    (root / "blobs").mkdir()
    files = []
    for f in sorted((root / "files").glob("*.whl")):
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        f.rename(root / "blobs" / digest)
        files.append({"filename": f.name, "url": f"../../blobs/{digest}", "hashes": {"sha256": digest}})
    doc = {"meta": {"api-version": "1.1"}, "name": "twidx", "files": files}
    (root / "simple" / "twidx" / "index.json").write_text(json.dumps(doc))
    with serve(root) as (url, server):
        code, out, err = _select("--torch", "2.12", *PLAN, "-i", f"{url}/simple/", "--name", "twidx")
    assert code == 0, err
    assert _project(out)["chosen"]["file"] == labelled("212")
    assert any(p.startswith("/blobs/") for p in server.requests)


SECRETS = sorted(hn.SECRETS)
PIECES = re.split(r"[#/?]", hn.SECRET)  # each run of it between the raw delimiters
WRONG = "W" + hn.SECRET  # a wrong password: still a secret, still never shown


def _leaks(text: str, password: str) -> list[str]:
    token = base64.b64encode(f"user:{password}".encode()).decode()
    forms = [*PIECES, quote(password, safe=""), token]
    return [f for f in forms if f in text]


@pytest.mark.parametrize("name", SECRETS)
def test_the_password_reaches_no_output_of_any_command(
    name: str, site: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Every command that takes a URL, in each format, on success and on each way of
    failing, with a password that holds a raw "#", "/" and "?" (``urlsplit`` reads it as a
    port, a path and a query, and the old masking printed it whole): stdout, stderr and
    every file written (the index tree and its constraints.txt, the installed dist-info,
    TMPDIR) are searched for it, its pieces, its %-encoded and its Basic-auth forms."""
    command, fmt, path = hn.SECRETS[name]
    venv_python: Path = request.getfixturevalue("venv_python") if command == "install" else Path()
    tls = self_signed(tmp_path / "tls")
    password = WRONG if path == "401" else hn.SECRET
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "SSL_CERT_FILE": str(tls / "cert.pem"), "TMPDIR": str(tmp)}
    with serve(site, Behaviour(token=hn.SECRET), tls=tls) as (base, _):
        if path == "refused":
            base = "https://127.0.0.1:9"  # nothing listens there
        root = base.replace("://", f"://user:{password}@") + "/simple/"
        if path in hn.MALFORMED:
            root = hn.MALFORMED[path].format(pw=password, hp=base.split("://", 1)[1])
        page = root + ("nosuch/" if path == "missing" else "")
        formats = ("--format", fmt) if fmt not in ("text", "jsonl") else ()
        args = {
            "select": ["select", *formats, "--torch", "2.12", *PLAN, "-i", root, "--name",
                       "nosuch" if path == "missing" else "twidx"],
            "matrix": ["matrix", *formats, page],
            "index": ["index", page, "-o", str(out)],
            "install": ["install", "--python", str(venv_python), "-i",
                        page if path == "missing" else root.replace("/simple/", "/torch-2.10/simple/")],
            "scan": ["scan", page, "-o", str(tmp_path / "scan.jsonl")],
        }[command]  # fmt: skip
        if path == "base_url":  # the index is read without a password; the address it is served at has one
            args = [
                "index",
                base + "/simple/",
                "-o",
                str(out),
                "--base-url",
                f"https://user:{password}@host/",
            ]
        result = torchwheel(*args, env=env)
    want = hostile.CASES[name].expect.codes
    assert result.returncode in want, (result.returncode, result.stdout[-400:], result.stderr[-400:])
    assert "Traceback" not in result.stderr
    written = [p for d in (out, tmp) if d.exists() for p in d.rglob("*") if p.is_file()]
    written += [p for p in [tmp_path / "scan.jsonl"] if p.exists()]
    if command == "scan" and path == "ok":
        assert written and '"error":null' in written[-1].read_text(), result.stderr
        report = torchwheel("scan", "--report", str(tmp_path / "scan.jsonl"), "--format", "json")
        assert report.returncode == 0 and not _leaks(report.stdout, password), report.stdout
    if path == "base_url":
        assert "--base-url https://***@host/: holds a user part" in result.stderr and not out.exists()
    if command == "install" and path == "ok":
        written += [p for p in installed_dist_info(venv_python, "twidx").rglob("*") if p.is_file()]
        assert result.returncode == 0, result.stderr
    if command == "index" and path == "ok":
        assert any(p.name == "constraints.txt" for p in written) and any(p.suffix == ".html" for p in written)
    texts = {"stdout": result.stdout, "stderr": result.stderr}
    texts |= {str(p.relative_to(tmp_path)): p.read_bytes().decode("utf-8", "replace") for p in written}
    leaks = {where: found for where, text in texts.items() if (found := _leaks(text, password))}
    assert not leaks, leaks
    if path != "ok":
        assert result.stderr.count("\n") == 1 or result.returncode == 1, result.stderr
