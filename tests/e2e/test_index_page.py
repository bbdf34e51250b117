"""The front page ``torchwheel index`` writes beside ``simple/`` (issue 42, item 11; issue 50,
item 5), loaded in a real headless Chromium (Debian's ``chromium``, installed by
``scripts/dev-setup``) and read back twice: from the DOM it rendered (every cell is
``matrix --format json``'s, every wheel's mark is ``check``'s, every verdict that loads links
its wheel and the pip and uv lines that install it, and those lines do install that file: pip
and uv dry runs against the index served over HTTP), and from its pixels, in screenshots at
1280 and 390 px wide: the verdicts that load and those that do not are told apart in
greyscale, a broken wheel's cells look unlike a sound one's, and at phone width nothing is
wider than the screen.

The release: ``twidx`` 1.0.0 built three ways (stable 2.10, stable 2.12, unstable 2.13, each with
its local label); one project needing a CUDA 13 torch (a grid per torch build); per-minor
builds of one wheel (``only`` over a run of minors); and ``w201``, a wheel ``check`` calls broken
(TW201: its marker declares an older torch than its shims need) that loads on torch 2.13 and
later by its need.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from PIL import Image, ImageStat

from ..lib.helpers import torchwheel
from ..lib.index_server import serve
from ..lib.publish_helpers import labelled_release, offline_env

CHROMIUM = [
    "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
]  # fmt: skip
FIXTURES = ("clean", "cuda13", "per_minor_ranged", "tw201")
BROKEN = "w201-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"


class Page(HTMLParser):
    """What the rendered DOM shows: each grid (project, build) with its columns' minors and
    rows (wheel, broken or not, cells: verdict, word, the minors it says, links); the install
    lines by anchor; the project links and the ids they lead to; scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.grids: list[dict[str, Any]] = []
        self.lines: dict[str, list[str]] = {}
        self.nav: list[str] = []
        self.ids: set[str] = set()
        self.scripts = 0
        self.viewport = False
        self._cell: dict[str, Any] | None = None
        self._span: str | None = None  # the class of the span whose text is read
        self._dt: str | None = None
        self._code: list[str] | None = None
        self._in_body = False
        self._in_nav = False
        self._wheel: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "script":
            self.scripts += 1
        if tag == "meta" and a.get("name") == "viewport":
            self.viewport = True
        if tag == "nav":
            self._in_nav = True
        elif tag == "a" and self._in_nav:
            self.nav.append(a["href"])
        if tag == "table":
            self.grids.append(
                {"project": a["data-project"], "build": a["data-build"], "cols": [], "rows": []}
            )
        elif tag == "th" and "data-torches" in a:
            self.grids[-1]["cols"].append(a["data-torches"].split())
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.grids[-1]["rows"].append({"wheel": "", "broken": a.get("class") == "broken", "cells": []})
        elif tag == "th" and self._in_body:
            self._wheel = {"text": ""}
        elif tag == "td" and self._in_body:
            self._cell = {"fit": a["data-fit"], "word": "", "at": "", "links": [], "off": False}
        elif tag == "a" and self._cell is not None:
            self._cell["links"].append(a["href"])
        elif tag == "span" and self._cell is not None:
            self._span = "at" if a.get("class") == "at" else "word"
            self._cell["off"] |= "off" in a.get("class", "").split()
        elif tag != "a" and self._wheel is not None:
            self._wheel["text"] += " "  # the file name's link ends before the findings
        elif tag == "dt":
            self._dt = a.get("id", "")
            self.lines[self._dt] = []
        elif tag == "code" and self._dt is not None:
            self._code = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav":
            self._in_nav = False
        elif tag == "span":
            self._span = None
        elif tag == "td" and self._cell is not None:
            self.grids[-1]["rows"][-1]["cells"].append(self._cell)
            self._cell = None
        elif tag == "th" and self._wheel is not None:
            self.grids[-1]["rows"][-1]["wheel"] = self._wheel["text"].split()[0]
            self.grids[-1]["rows"][-1]["check"] = " ".join(self._wheel["text"].split()[1:])
            self._wheel = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "code" and self._code is not None and self._dt is not None:
            self.lines[self._dt].append("".join(self._code))
            self._code = None
        elif tag == "dl":
            self._dt = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None and self._span is not None:
            self._cell[self._span] += data
        if self._wheel is not None:
            self._wheel["text"] += data
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


class Chromium:
    """Headless Chromium driven over its DevTools pipe (``--remote-debugging-pipe``: JSON
    messages, each ending in NUL, in on fd 3 and out on fd 4). A phone is emulated as Chrome's
    device mode does (``Emulation.setDeviceMetricsOverride``, ``mobile``: the page's viewport
    tag decides its width; ``--window-size`` stops at 500 px in headless mode), and the layout
    is read from the very page the screenshot is taken of."""

    def __init__(self, profile: Path) -> None:
        commands, self._out = os.pipe()
        self._in, answers = os.pipe()
        self.process = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{commands} 4>&{answers}', "bash", *CHROMIUM,
             f"--user-data-dir={profile}", "--remote-debugging-pipe"],
            pass_fds=(commands, answers), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(commands)
        os.close(answers)
        self._buffer = b""
        self._id = 0
        self._events: list[dict[str, Any]] = []
        self._deadline = time.monotonic() + 120

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self._deadline - time.monotonic()
            assert left > 0 and select.select([self._in], [], [], left)[0], "chromium did not answer"
            chunk = os.read(self._in, 1 << 20)
            assert chunk, "chromium closed its pipe"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        found: dict[str, Any] = json.loads(message)
        return found

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._id += 1
        message = {
            "id": self._id,
            "method": method,
            "params": params,
            **({"sessionId": session} if session else {}),
        }
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while (answer := self._message()).get("id") != self._id:
            self._events.append(answer)
        assert "error" not in answer, (method, answer["error"])
        result: dict[str, Any] = answer["result"]
        return result

    def wait(self, event: str) -> None:
        while not any(e.get("method") == event for e in self._events):
            self._events.append(self._message())

    def close(self) -> None:
        with contextlib.suppress(AssertionError, OSError):
            self.send("Browser.close")
        self.process.wait(60)
        os.close(self._in)
        os.close(self._out)


# where everything lies on the page, as Chromium laid it out
GEOMETRY = """JSON.stringify((() => {
  const box = e => { const b = e.getBoundingClientRect();
    return [b.left + scrollX, b.top + scrollY, b.right + scrollX, b.bottom + scrollY]; };
  const cells = [...document.querySelectorAll("td[data-fit]")].map(td => ({
    fit: td.dataset.fit, wheel: td.closest("tr").querySelector("th.wheel > a").textContent,
    off: td.querySelector(".v").classList.contains("off"), badge: box(td.querySelector(".v")),
    at: getComputedStyle(td.querySelector(".at")).display !== "none", top: box(td)[1]}));
  const wide = [...document.body.querySelectorAll("*")].filter(
    e => e.getBoundingClientRect().right > innerWidth + 0.5).map(e => e.tagName + "." + e.className);
  return {viewport: innerWidth, page: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight, cells, wide,
    grids: [...document.querySelectorAll(".grid")].map(g => g.scrollWidth - g.clientWidth)};
})())"""


def screenshot(page: Path, width: int, work: Path) -> tuple[dict[str, Any], Image.Image]:
    """The page at this width, on a phone's screen below 600 px: its geometry, and its
    screenshot whole (``front-{width}.png`` in ``work``)."""
    browser = Chromium(work / f"profile-{width}")
    try:
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        tab = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            tab,
            width=width,
            height=900,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        browser.send("Page.enable", tab)
        browser.send("Page.navigate", tab, url=page.as_uri())
        browser.wait("Page.loadEventFired")
        laid = browser.send("Runtime.evaluate", tab, expression=GEOMETRY, returnByValue=True)
        geometry: dict[str, Any] = json.loads(laid["result"]["value"])
        clip = {"x": 0, "y": 0, "width": width, "height": geometry["height"], "scale": 1}
        shot = browser.send(
            "Page.captureScreenshot", tab, format="png", captureBeyondViewport=True, clip=clip
        )
    finally:
        browser.close()
    png = work / f"front-{width}.png"
    png.write_bytes(base64.b64decode(shot["data"]))
    image = Image.open(png).convert("RGB")
    assert geometry["viewport"] == width and image.size == (width, geometry["height"]), image.size
    return geometry, image


def _inside(image: Image.Image, box: list[float], mode: str) -> list[float]:
    """The mean colour (``RGB``) or lightness (``L``) of a badge, its border left out."""
    x0, y0, x1, y1 = (round(v) for v in box)
    crop = image.crop((x0 + 2, y0 + 2, x1 - 2, y1 - 2)).convert(mode)
    return [float(v) for v in ImageStat.Stat(crop).mean]


@pytest.fixture(scope="module")
def site(
    fixture_wheels: dict[str, Path], built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, Path, str]]:
    """(the wheels, the index written with --base-url where it is served, that URL)."""
    work = tmp_path_factory.mktemp("frontpage")
    dist = labelled_release(built_fixtures, work)
    for key in FIXTURES:
        shutil.copy(fixture_wheels[key], dist)
    root = work / "www"
    root.mkdir()
    with serve(root) as (url, _):
        base = f"{url}/whl"
        made = torchwheel("index", str(dist), "-o", str(root / "whl"), "--base-url", base)
        assert made.returncode == 0, made.stderr
        assert (root / "whl" / "index.html").is_file()
        yield dist, root / "whl", base


def _matrix(dist: Path, project: str) -> dict[str, Any]:
    result = torchwheel("matrix", "--format", "json", "--name", project, str(dist))
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _errors(wheel: Path) -> list[str]:
    """The codes of the errors ``check`` finds in the wheel, as ``check`` reports them."""
    result = torchwheel("check", "--no-config", "--format", "json", str(wheel))
    codes = [f["code"] for f in json.loads(result.stdout)["findings"] if f["severity"] == "error"]
    assert result.returncode == (1 if codes else 0), result.stderr
    return codes


def test_the_page_in_chromium_shows_the_cells_of_matrix_and_the_findings_of_check(
    site: tuple[Path, Path, str], tmp_path: Path
) -> None:
    dist, out, base = site
    page = rendered(out / "index.html", tmp_path / "profile")
    assert page.scripts == 0 and page.viewport  # static, and sized for a phone's screen
    projects = {str(g["project"]) for g in page.grids}
    assert projects == {"twidx", "demo-stable", "wcuda13", "wperminorr", "w201"}
    # a link per project, to its section
    assert sorted(page.nav) == sorted(f"#project-{p}" for p in projects)
    assert all(href.removeprefix("#") in page.ids for href in page.nav)
    builds = {(str(g["project"]), str(g["build"])) for g in page.grids}
    assert ("wcuda13", "cu130") in builds and ("twidx", "") in builds
    compared = 0
    broken_rows = set()
    for grid in page.grids:
        doc = _matrix(dist, grid["project"])
        torches = set(doc["torches"])
        shown = {m for col in grid["cols"] for m in col}
        assert shown <= torches and torches - shown <= {doc["installed_torch"]}
        rows = {w["file"]: w for w in doc["wheels"]}
        for row in grid["rows"]:
            wheel = rows[row["wheel"]]
            cells = wheel["by_backend"][grid["build"]] if grid["build"] else wheel["cells"]
            errors = _errors(dist / row["wheel"])
            assert row["broken"] == bool(errors), (row["wheel"], errors, row["check"])
            assert all(code in row["check"] for code in errors)
            if errors:
                broken_rows.add(row["wheel"])
            # an "only" says every minor its build loads on, whatever column it stands in
            only = [m for m, c in cells.items() if c["fit"] == "only"]
            for col, cell in zip(grid["cols"], row["cells"], strict=True):
                fit = cell["fit"]
                assert all(cells[m]["fit"] == fit for m in col), (row["wheel"], col, fit)
                assert cell["at"] == f"torch {col[0]}" + (f"-{col[-1]}" if len(col) > 1 else "")
                if fit == "only":
                    assert cell["word"] == f"only {_runs(only)}"
                compared += len(col)
                assert cell["off"] == row["broken"]
                if fit in ("loads", "only", "some", "partly") and not row["broken"]:
                    href, anchor = cell["links"]
                    assert unquote(href) == f"files/{row['wheel']}" and (out / unquote(href)).is_file()
                    pip, uv = page.lines[anchor.removeprefix("#")]
                    assert pip == f"pip install {base}/{href}" and uv == f"uv pip install {base}/{href}"
                else:
                    assert cell["links"] == []
    assert broken_rows == {BROKEN}
    assert not [a for a in page.lines if "w201" in a]  # no install line for it
    assert compared >= 40
    twidx = next(g for g in page.grids if g["project"] == "twidx")
    words = {r["wheel"].split("+")[1][:9]: [c["word"] for c in r["cells"]] for r in twidx["rows"]}
    assert words["torch2.13"] == ["no", "no", "only 2.13", "no"]  # 2.10-2.11, 2.12, 2.13, 2.14-2.15
    ranged = next(g for g in page.grids if g["project"] == "wperminorr")
    assert ranged["cols"] == [["2.6", "2.7", "2.8"]]  # a merged column: its cell says the range, not "only"
    assert [c["word"] for c in ranged["rows"][0]["cells"]] == ["only 2.6-2.8"]
    w201 = next(g for g in page.grids if g["project"] == "w201")
    assert "loads" in [c["fit"] for c in w201["rows"][0]["cells"]]  # it would be offered, were it sound


def _runs(minors: list[str]) -> str:
    """``2.6-2.8``: neighbouring minors as one range, as the page writes them."""
    parts = [tuple(map(int, m.split("."))) for m in minors]
    runs: list[list[tuple[int, ...]]] = []
    for p in parts:
        if runs and p == (runs[-1][-1][0], runs[-1][-1][1] + 1):
            runs[-1].append(p)
        else:
            runs.append([p])
    show = [f"{r[0][0]}.{r[0][1]}" + (f"-{r[-1][0]}.{r[-1][1]}" if len(r) > 1 else "") for r in runs]
    return ", ".join(show)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_page_reads_at_a_glance_in_pixels(
    site: tuple[Path, Path, str], tmp_path: Path, width: int
) -> None:
    """The screenshots (``front-1280.png``, ``front-390.png`` in the test's folder): the page
    never scrolls sideways; in greyscale every verdict that loads is darker than every one that
    does not (colour is not needed to read it); a broken wheel's verdicts differ from a sound
    one's; at 390 px each row is a card whose cells say their torch minors."""
    _, out, _ = site
    geometry, image = screenshot(out / "index.html", width, tmp_path)
    assert geometry["page"] <= width and geometry["wide"] == [], geometry["wide"][:5]
    cells = geometry["cells"]
    sound = [c for c in cells if not c["off"]]
    grey = {i: _inside(image, c["badge"], "L")[0] for i, c in enumerate(cells)}
    loads = [grey[i] for i, c in enumerate(cells) if c["fit"] in ("loads", "only") and not c["off"]]
    no = [grey[i] for i, c in enumerate(cells) if c["fit"] == "no" and not c["off"]]
    assert len(loads) >= 5 and len(no) >= 3
    assert max(loads) + 50 < min(no), (max(loads), min(no))
    # the broken wheel's verdict that loads, against a sound wheel's: other colours and lightness
    broken = [c for c in cells if c["off"] and c["fit"] == "loads"]
    assert broken and all(c["wheel"] == BROKEN for c in cells if c["off"])
    good = next(c for c in sound if c["fit"] == "loads")
    a, b = _inside(image, broken[0]["badge"], "RGB"), _inside(image, good["badge"], "RGB")
    assert sum(abs(x - y) for x, y in zip(a, b, strict=True)) > 150, (a, b)
    assert abs(_inside(image, broken[0]["badge"], "L")[0] - _inside(image, good["badge"], "L")[0]) > 60
    rows: dict[str, set[float]] = {}
    for c in cells:
        rows.setdefault(c["wheel"], set()).add(round(c["top"]))
    if width == 390:  # cards: every cell says its torch minors, and they wrap onto lines of their own
        assert geometry["grids"] and all(over == 0 for over in geometry["grids"])
        assert all(c["at"] for c in cells)
        assert any(len(tops) > 1 for tops in rows.values())
    else:  # a table: the header says the minors, each row's cells on one line
        assert not any(c["at"] for c in cells)
        assert all(len(tops) == 1 for tops in rows.values())


def test_the_page_needs_no_emoji_font(site: tuple[Path, Path, str]) -> None:
    """Every mark is drawn by CSS beside a word: no character a plain font may lack."""
    _, out, _ = site
    text = (out / "index.html").read_text()
    assert max(map(ord, text)) < 0x2000, sorted({c for c in text if ord(c) >= 0x2000})


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


PARTLY_INIT = b"""import os

import torch

try:  # the CUDA kernels, where a CUDA build of torch has them
    torch.ops.load_library(os.path.join(os.path.dirname(__file__), "_cuda_ops.abi3.so"))
except OSError:
    pass
"""


def test_partly_is_a_badge_of_its_own_that_reads_as_a_verdict_that_loads(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """``twpartly``: its CUDA 13 op library (nvcc, ``fixtures/cuda``) loaded by path in a
    ``try`` that goes on, so its import works on a CPU torch without it (issue 46's "partly").
    In the page (issue 50, item 5, over the merge of both): the CPU grid's cells say
    ``partly``, link the wheel and its install line (it imports), and in greyscale are as dark
    as those that load and darker than those that do not, in a colour of their own; the CUDA
    13 grid says ``yes``. Its release 0.9.0 (stable 2.10) gives the cells that do not load."""
    from ..lib.helpers import fixture_wheels_module

    fw = fixture_wheels_module()
    spec = fw.WheelSpec(
        "partly", "twpartly", "cp39-abi3-" + fw.LINUX,
        (("twpartly/_cuda_ops.abi3.so", "cuda:cu13_torch_cuda.so"),), requires=("torch",),
        extra=(("twpartly/__init__.py", PARTLY_INIT),),
    )  # fmt: skip
    older = fw.WheelSpec(
        "older", "twpartly", "cp39-abi3-" + fw.LINUX, (("twpartly/elf_marker_2_10.abi3.so", "elf_marker_2_10"),),
        version="0.9.0",
    )  # fmt: skip
    dist = tmp_path / "dist"
    wheel = Path(fw.write_wheel(dist / spec.filename, spec, {}))
    assert (
        _errors(wheel) == []
        and _errors(Path(fw.write_wheel(dist / older.filename, older, built_fixtures))) == []
    )
    made = torchwheel("index", str(dist), "-o", str(tmp_path / "site"))
    assert made.returncode == 0, made.stderr
    page = rendered(tmp_path / "site" / "index.html", tmp_path / "profile")
    grids = {g["build"]: g for g in page.grids if g["project"] == "twpartly"}
    assert set(grids) == {"cpu", "cu130"}
    cpu, cuda = (
        next(r for r in grids[b]["rows"] if r["wheel"] == wheel.name)["cells"] for b in ("cpu", "cu130")
    )
    assert {c["fit"] for c in cpu} == {"partly"} and {c["fit"] for c in cuda} == {"loads"}
    assert all(c["word"] == "partly" and len(c["links"]) == 2 for c in cpu)
    assert page.lines[cpu[0]["links"][1].removeprefix("#")][0].endswith(f"/files/{wheel.name}")
    geometry, image = screenshot(tmp_path / "site" / "index.html", 1280, tmp_path)
    grey: dict[str, list[float]] = {}
    colour: dict[str, list[float]] = {}
    for c in geometry["cells"]:
        grey.setdefault(c["fit"], []).append(_inside(image, c["badge"], "L")[0])
        colour[c["fit"]] = _inside(image, c["badge"], "RGB")
    assert {"partly", "loads", "no"} <= set(grey), grey
    assert max(grey["partly"] + grey["loads"]) + 50 < min(grey["no"]), grey
    assert sum(abs(x - y) for x, y in zip(colour["partly"], colour["loads"], strict=True)) > 100, colour
