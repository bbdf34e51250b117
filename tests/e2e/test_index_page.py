"""The front page ``torchwheel index`` writes beside ``simple/`` (issue 42, item 11), loaded in
a real headless Chromium (Debian's ``chromium``, installed by ``scripts/dev-setup``) and read
back from the DOM it rendered: every cell is ``matrix --format json``'s, every mark that loads
links its wheel and the pip and uv lines that install it, and those lines do install that file
(pip and uv, dry runs against the index served over HTTP).

The release: ``twidx`` 1.0.0 built three ways (stable 2.10, stable 2.12, unstable 2.13, each with
its local label), and two projects of one wheel each, one of them needing a CUDA 13 torch (a
grid per torch build).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from ..helpers import torchwheel
from ..index_server import serve
from ..publish_helpers import labelled_release, offline_env

WORD = {"yes": "loads", "only": "only", "some": "some", "no": "no", "unknown": "unknown"}
CHROMIUM = [
    "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip


class Page(HTMLParser):
    """What the rendered DOM shows: each grid (project, build) with its columns' minors and
    rows (wheel, cells), each cell's text and links; the install lines by anchor; scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.grids: list[dict[str, object]] = []
        self.lines: dict[str, list[str]] = {}
        self.scripts = 0
        self.viewport = False
        self._cell: dict[str, object] | None = None
        self._dt: str | None = None
        self._code: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "meta" and a.get("name") == "viewport":
            self.viewport = True
        if tag == "table":
            self.grids.append(
                {"project": a["data-project"], "build": a["data-build"], "cols": [], "rows": []}
            )
        elif tag == "th" and "data-torches" in a:
            self._grid["cols"].append(str(a["data-torches"]).split())  # type: ignore[attr-defined]
        elif tag == "tr" and self.grids and self._in_body:
            self._grid["rows"].append({"wheel": "", "cells": []})  # type: ignore[attr-defined]
        elif tag in ("td", "th") and self.grids and self._row is not None and a.get("scope") != "col":
            self._cell = {"text": "", "links": [], "header": tag == "th"}
        elif tag == "a" and self._cell is not None:
            self._cell["links"].append(a["href"])  # type: ignore[attr-defined]
        elif tag == "tbody":
            self._in_body = True
        elif tag == "dt":
            self._dt = a["id"]
            self.lines[str(a["id"])] = []
        elif tag == "code" and self._dt is not None:
            self._code = []

    _in_body = False

    @property
    def _grid(self) -> dict[str, object]:
        return self.grids[-1]

    @property
    def _row(self) -> dict[str, object] | None:
        rows = self._grid["rows"]
        return rows[-1] if self._in_body and rows else None  # type: ignore[index]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            row = self._row
            assert row is not None
            if self._cell["header"]:
                row["wheel"] = str(self._cell["text"]).strip()
            else:
                row["cells"].append(self._cell)  # type: ignore[attr-defined]
            self._cell = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "code" and self._code is not None and self._dt is not None:
            self.lines[self._dt].append("".join(self._code))
            self._code = None
        elif tag == "dl":
            self._dt = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] = str(self._cell["text"]) + data
        if self._code is not None:
            self._code.append(data)


def rendered(page: Path, profile: Path) -> Page:
    """The DOM headless Chromium built from the page (a fresh profile, no network of its own)."""
    result = subprocess.run(
        [*CHROMIUM, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "<table" in result.stdout, result.stderr[-2000:]
    parsed = Page()
    parsed.feed(result.stdout)
    return parsed


@pytest.fixture(scope="module")
def site(
    fixture_wheels: dict[str, Path], built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, Path, str]]:
    """(the wheels, the index written with --base-url where it is served, that URL)."""
    work = tmp_path_factory.mktemp("frontpage")
    dist = labelled_release(built_fixtures, work)
    for key in ("clean", "cuda13"):
        shutil.copy(fixture_wheels[key], dist)
    root = work / "www"
    root.mkdir()
    with serve(root) as (url, _):
        base = f"{url}/whl"
        made = torchwheel("index", str(dist), "-o", str(root / "whl"), "--base-url", base)
        assert made.returncode == 0, made.stderr
        assert (root / "whl" / "index.html").is_file()
        yield dist, root / "whl", base


def _matrix(dist: Path, project: str) -> dict[str, object]:
    result = torchwheel("matrix", "--format", "json", "--name", project, str(dist))
    assert result.returncode == 0, result.stderr
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_the_page_in_chromium_shows_the_cells_of_matrix(site: tuple[Path, Path, str], tmp_path: Path) -> None:
    dist, out, base = site
    page = rendered(out / "index.html", tmp_path / "profile")
    assert page.scripts == 0 and page.viewport  # static, and sized for a phone's screen
    projects = {str(g["project"]) for g in page.grids}
    assert projects == {"twidx", "demo-stable", "wcuda13"}
    builds = {(str(g["project"]), str(g["build"])) for g in page.grids}
    assert ("wcuda13", "cu130") in builds and ("twidx", "") in builds
    compared = 0
    for grid in page.grids:
        doc = _matrix(dist, str(grid["project"]))
        torches = set(doc["torches"])  # type: ignore[arg-type]
        shown = {m for col in grid["cols"] for m in col}  # type: ignore[attr-defined]
        assert shown <= torches and torches - shown <= {doc["installed_torch"]}
        rows = {w["file"]: w for w in doc["wheels"]}  # type: ignore[attr-defined]
        for row in grid["rows"]:  # type: ignore[attr-defined]
            wheel = rows[row["wheel"]]
            cells = wheel["by_backend"][grid["build"]] if grid["build"] else wheel["cells"]
            for col, cell in zip(grid["cols"], row["cells"], strict=True):  # type: ignore[call-overload]
                fit = WORD[cell["text"].split()[1]]  # "✅ yes": the mark, then the word
                assert all(cells[m]["fit"] == fit for m in col), (row["wheel"], col, fit)
                compared += len(col)
                if fit in ("loads", "only", "some"):
                    href, anchor = cell["links"]
                    assert unquote(href) == f"files/{row['wheel']}" and (out / unquote(href)).is_file()
                    pip, uv = page.lines[anchor.removeprefix("#")]
                    assert pip == f"pip install {base}/{href}" and uv == f"uv pip install {base}/{href}"
                else:
                    assert cell["links"] == []
    assert compared >= 30  # every cell of the three projects: 18 + 6 + 16 today
    twidx = next(g for g in page.grids if g["project"] == "twidx")
    words = {r["wheel"].split("+")[1][:9]: [c["text"] for c in r["cells"]] for r in twidx["rows"]}  # type: ignore[attr-defined]
    assert words["torch2.13"] == [
        "❌ no",
        "❌ no",
        "✅ only install",
        "❌ no",
    ]  # 2.10-2.11, 2.12, 2.13, 2.14-2.15


def test_the_install_lines_install_that_file(site: tuple[Path, Path, str], tmp_path: Path) -> None:
    """The lines of the 2.12 build, run as written (dry runs: the file's own torch requirement
    is not resolved), pick exactly that file from the served index."""
    _, out, base = site
    page = rendered(out / "index.html", tmp_path / "profile")
    (anchor,) = [a for a in page.lines if "torch2.12" in a]
    pip, uv = page.lines[anchor]
    name = unquote(anchor.removeprefix("install-"))
    env = offline_env()
    got = subprocess.run(
        [sys.executable, "-m", *pip.split()[:2], "--dry-run", "--no-deps", "--report", "-", "--quiet",
         *pip.split()[2:]],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    (item,) = json.loads(got.stdout)["install"]
    assert unquote(item["download_info"]["url"]) == f"{base}/files/{name}"
    assert item["metadata"]["version"] == "1.0.0+torch2.12"
    uv_bin = shutil.which("uv", path=str(Path(sys.executable).parent))
    assert uv_bin is not None
    env.pop("UV_OFFLINE")  # the index is on 127.0.0.1: online, with nothing else configured
    got = subprocess.run(
        [uv_bin, *uv.split()[1:3], "--dry-run", "--no-deps", "--python", sys.executable, *uv.split()[3:]],
        capture_output=True, text=True, env={**env, "UV_CACHE_DIR": str(tmp_path / "uv")}, timeout=300,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert f" + twidx @ {uv.split()[-1]}\n" in got.stderr, got.stderr  # that file, to be installed


def test_without_a_base_url_the_page_says_what_to_put_there(
    site: tuple[Path, Path, str], tmp_path: Path
) -> None:
    dist, _, _ = site
    made = torchwheel("index", str(dist), "-o", str(tmp_path / "out"))
    assert made.returncode == 0, made.stderr
    text = (tmp_path / "out" / "index.html").read_text()
    assert "pip install BASE_URL/files/" in text and "torchwheel index --base-url URL" in text
    assert os.access(tmp_path / "out" / "index.html", os.R_OK)
