"""Hybrid releases (issue 48, item 3): a stable-ABI build for torch >= 2.13 and ordinary
per-minor builds for 2.10, 2.11 and 2.12, published by the recipe of docs/installers.md
("Hybrid releases"), read from the page and run as written. Then every reader chooses the
per-minor build below the floor and the stable build from it: `select`, `matrix`, `index`'s
per-torch indexes and constraints, the front page, and pip and uv installing from the
per-torch indexes into environments with that torch (stub torch distributions, offline).
The builds are the fixture binaries (gcc): `elf_marker_2_13_shims_2_13` and
`elf_unstable_cpp`, each wheel saying which build it is."""

from __future__ import annotations

import glob
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from ..lib.helpers import REPO, fixture_wheels_module, torchwheel
from ..lib.publish_helpers import offline_env, pip, uv, venv_with_torch

TAGS = "cp39-abi3-manylinux_2_28_x86_64"
PLAN = ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")
_BLOCK = re.compile(r"<!-- hybrid recipe -->\n```sh\n(?P<body>.*?)\n```", re.DOTALL)
# the torch each file is for: the per-minor builds below the floor, the stable build from it
EXPECTED = {
    "2.10": "twhyb-1.0.0+torch2.10",
    "2.11": "twhyb-1.0.0+torch2.11",
    "2.12": "twhyb-1.0.0+torch2.12",
    "2.13": "twhyb-1.0.0",
    "2.14": "twhyb-1.0.0",
}


def recipe() -> list[str]:
    (m,) = _BLOCK.finditer((REPO / "docs" / "installers.md").read_text())
    return m["body"].splitlines()


@pytest.fixture(scope="module")
def work(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's CI output (build-stable/, build-2.10/ ...: one untagged wheel each, every
    one named alike), then the recipe's lines run in that folder as a user runs them."""
    wm = fixture_wheels_module()
    root = tmp_path_factory.mktemp("hybrid")
    for build, binary, req in (
        ("stable", "elf_marker_2_13_shims_2_13", "torch>=2.10"),
        *((m, "elf_unstable_cpp", "torch") for m in ("2.10", "2.11", "2.12")),
    ):
        init = (("twhyb/__init__.py", f"BUILD = {build!r}\n".encode()),)
        spec = wm.WheelSpec(
            "hybrid", "twhyb", TAGS, ((f"twhyb/{binary}.abi3.so", binary),), requires=(req,), extra=init
        )
        wm.write_wheel(root / f"build-{build}" / spec.filename, spec, built_fixtures)
    for line in recipe():
        words = shlex.split(line)
        assert words[0] == "torchwheel", line
        args = [a for w in words[1:] for a in (sorted(glob.glob(w, root_dir=root)) if "*" in w else [w])]
        result = torchwheel(*args, cwd=root)
        assert result.returncode == 0, (line, result.stderr)
    return root


def test_the_recipe_writes_the_stable_build_plain_and_the_per_minor_builds_labelled(work: Path) -> None:
    assert sorted(p.name for p in (work / "dist").iterdir()) == sorted(
        f"{v}-{TAGS}.whl" for v in set(EXPECTED.values())
    )
    result = torchwheel("check", "--no-config", "--format", "json", "dist", cwd=work)
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert not codes & {"TW601", "TW602", "TW603"}, codes  # labelled: releases of their own
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("torch", sorted(EXPECTED))
def test_select_chooses_the_per_minor_build_below_the_floor_and_the_stable_build_from_it(
    work: Path, torch: str
) -> None:
    result = torchwheel("select", "--format", "json", "--torch", torch, *PLAN, "dist", cwd=work)
    assert result.returncode == 0, result.stderr
    (project,) = json.loads(result.stdout)["projects"]
    assert project["chosen"]["file"] == f"{EXPECTED[torch]}-{TAGS}.whl"


def test_matrix_says_the_same(work: Path) -> None:
    result = torchwheel("matrix", "--format", "json", "dist", cwd=work)
    doc = json.loads(result.stdout)
    loads = {
        torch: sorted(w["file"] for w in doc["wheels"] if w["cells"][torch]["fit"] in ("loads", "only"))
        for torch in EXPECTED
    }
    assert loads == {torch: [f"{v}-{TAGS}.whl"] for torch, v in EXPECTED.items()}


def test_index_serves_each_torch_its_build(work: Path) -> None:
    site = work / "site"
    for torch, version in EXPECTED.items():
        page = (site / f"torch-{torch}" / "simple" / "twhyb" / "index.html").read_text()
        assert re.findall(r">(twhyb-[^<]*\.whl)<", page) == [f"{version}-{TAGS}.whl"], torch
        pin = version.removeprefix("twhyb-")
        assert f"twhyb=={pin}\n" in (site / f"torch-{torch}" / "constraints.txt").read_text()


def _front_rows(page: str) -> dict[str, list[str]]:
    """The front page's matrix: wheel file -> its cells' verdicts, in column order."""
    rows = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.DOTALL):
        wheel = re.search(r'<th scope="row"[^>]*><a [^>]*>([^<]*)</a>', row)
        if wheel is not None and wheel[1].startswith("twhyb-"):
            rows[wheel[1]] = re.findall(r'<td data-fit="(\w+)"', row)
    return rows


def test_the_front_page_links_each_torch_its_build(work: Path) -> None:
    page = (work / "site" / "index.html").read_text()
    header = re.search(r"<tr[^>]*>(.*?)</tr>", page, re.DOTALL)
    assert header is not None
    columns = [
        " ".join(re.sub(r"<[^>]+>", " ", c).split())
        for c in re.findall(r"<th[^>]*>(.*?)</th>", header[1], re.DOTALL)
    ][1:]
    assert columns[:3] == ["2.10", "2.11", "2.12"] and columns[3].startswith(
        "2.13-"
    )  # up to the tables' newest
    rows = _front_rows(page)
    assert 'class="broken"' not in page  # `check` finds no error in them: each is offered
    for column, torch in zip(columns, ("2.10", "2.11", "2.12", "2.13"), strict=True):
        loading = [f for f, cells in rows.items() if cells[columns.index(column)] != "no"]
        assert loading == [f"{EXPECTED[torch]}-{TAGS}.whl"], (column, rows)


@pytest.mark.parametrize("torch", ["2.11", "2.13"])
def test_torchwheel_install_takes_the_build_for_the_environments_torch(
    work: Path, tmp_path: Path, torch: str
) -> None:
    python = venv_with_torch(tmp_path / "venv", torch, tmp_path / "stub")
    result = torchwheel("install", "--python", str(python), "dist", cwd=work)
    assert result.returncode == 0, result.stderr
    got = subprocess.run(
        [str(python), "-c", "import twhyb; print(twhyb.BUILD)"],
        capture_output=True,
        text=True,
        env=offline_env(),
    )
    assert got.stdout.strip() == ("stable" if torch == "2.13" else torch), got.stderr


@pytest.mark.parametrize("installer", ["pip", "uv"])
@pytest.mark.parametrize("torch", ["2.11", "2.13"])
def test_installers_get_the_right_build_from_the_per_torch_index(
    work: Path, tmp_path: Path, torch: str, installer: str
) -> None:
    python = venv_with_torch(tmp_path / "venv", torch, tmp_path / "stub")
    index = (work / "site" / f"torch-{torch}" / "simple").as_uri()
    if installer == "pip":
        result = pip(python, "--index-url", index, "twhyb")
    else:
        result = uv(
            "pip", "install", "--python", str(python), "--index-url", index, "twhyb", cache=tmp_path / "uv"
        )
    assert result.returncode == 0, result.stderr
    got = subprocess.run(
        [str(python), "-c", "import twhyb; print(twhyb.BUILD)"],
        capture_output=True,
        text=True,
        env=offline_env(),
    )
    assert got.stdout.strip() == ("stable" if torch == "2.13" else torch), got.stderr


def test_one_release_told_apart_by_build_tags(work: Path) -> None:
    """The same builds without labels, one release told apart by build tags (`tag --build-tag
    210`): `check` recognises the hybrid (no TW603; TW601, an error, gives the recipe), and
    `index`'s per-torch indexes still serve each torch its build."""
    for build in ("stable", "2.10", "2.11", "2.12"):
        pins = () if build == "stable" else ("--build-torch", build, "--build-tag", build.replace(".", ""))
        result = torchwheel(
            "tag", "-w", "tagged", *pins, *glob.glob(f"build-{build}/*.whl", root_dir=work), cwd=work
        )
        assert result.returncode == 0, result.stderr
    result = torchwheel("check", "--no-config", "--format", "json", "--select", "TW6", "tagged", cwd=work)
    findings = json.loads(result.stdout)["findings"]
    assert result.returncode == 1 and {f["code"] for f in findings} == {"TW601"}
    assert all(
        "hybrid release (stable >= 2.13, per-minor builds for torch 2.10, 2.11, 2.12)" in f["message"]
        for f in findings
    )
    made = torchwheel("index", "tagged", "-o", "site-tags", cwd=work)
    assert made.returncode == 0, made.stderr
    for torch, version in EXPECTED.items():
        page = (work / "site-tags" / f"torch-{torch}" / "simple" / "twhyb" / "index.html").read_text()
        build = "" if version == "twhyb-1.0.0" else "-" + torch.replace(".", "")
        assert re.findall(r">(twhyb-[^<]*\.whl)<", page) == [f"twhyb-1.0.0{build}-{TAGS}.whl"], torch
