"""The recipes of docs/installers.md ("Next to PyPI: recipes that hold"), read from the page
and run as written against two real HTTP indexes on 127.0.0.1: a stand-in for PyPI
(``publish_helpers.registry``: a newer ``twidx`` 1.1.0 built for another torch whose
requirement does not say so, the dependency ``twdep``, stub torches) and the per-target index
``torchwheel index`` wrote for ``twidx`` 1.0.0 (stable 2.10, stable 2.12, unstable 2.13).

The page's ``https://pypi.org/simple`` stands for the registry, ``https://example.org/whl``
for the per-target index, ``NAME`` for ``twidx``; a recipe that is not on the page, or that
the page changes, fails here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from email.parser import HeaderParser
from pathlib import Path

import pytest

from ..lib.helpers import REPO
from ..lib.index_server import serve
from ..lib.publish_helpers import DEPENDENCY, labelled_release, registry, venv_with_torch

PAGE = REPO / "docs" / "installers.md"
_RECIPE = re.compile(r"<!-- recipe: (?P<key>[\w-]+)[^>]*-->\n```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.DOTALL)
PYPI, SITE = "https://pypi.org/simple", "https://example.org/whl"


def recipes() -> dict[str, str]:
    return {m["key"]: m["body"] for m in _RECIPE.finditer(PAGE.read_text())}


@pytest.fixture(scope="module")
def indexes(
    built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """(registry URL, per-target index URL), both served over HTTP for the module."""
    work = tmp_path_factory.mktemp("recipes")
    simple = registry(built_fixtures, work / "registry")
    release = labelled_release(built_fixtures, work / "release", also=(f"{DEPENDENCY}>=1",))
    site = work / "site"
    made = subprocess.run(
        [sys.executable, "-m", "torchwheel", "index", str(release), "-o", str(site)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    with serve(simple.parent) as (reg, _), serve(site) as (per_torch, _):
        yield f"{reg}/simple", per_torch


def _fill(text: str, reg: str, site: str, torch: str) -> str:
    text = text.replace(PYPI, reg).replace(SITE, site).replace("NAME", "twidx")
    return text.replace("torch-2.12", f"torch-{torch}").replace("torch==2.12.*", f"torch=={torch}.*")


def _env(tmp: Path) -> dict[str, str]:
    """pip and uv with no configuration of their own, online (the indexes are on 127.0.0.1)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(
        PIP_CONFIG_FILE=os.devnull, XDG_CONFIG_HOME=str(tmp / "config"), UV_CACHE_DIR=str(tmp / "uv-cache")
    )
    return env


def _run_line(
    line: str, python: Path, tmp: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """One command of a recipe as a user runs it, aimed at ``python``'s environment."""
    words = shlex.split(line)
    if words[:2] == ["pip", "install"]:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-cache-dir",
            *words[2:],
        ]
    elif words[:3] == ["uv", "pip", "install"]:
        cmd = [str(Path(sys.executable).parent / "uv"), "pip", "install", "--python", str(python), *words[3:]]
    elif words[:2] == ["torchwheel", "install"]:
        cmd = [sys.executable, "-m", "torchwheel", "install", "--python", str(python), *words[2:]]
    else:
        raise AssertionError(f"a recipe line this test cannot run: {line}")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=_env(tmp), cwd=cwd)


def _run(
    key: str, indexes: tuple[str, str], python: Path, tmp: Path, torch: str
) -> subprocess.CompletedProcess[str]:
    body = _fill(recipes()[key], *indexes, torch)
    if key == "uv-project":  # the project file as written, with the registry stand-in as default index
        project = tmp / "app"
        project.mkdir()
        default = f'\n[[tool.uv.index]]\nurl = "{indexes[0]}"\ndefault = true\n'
        (project / "pyproject.toml").write_text(body + "\n" + default)
        return _run_line("uv pip install -r pyproject.toml", python, tmp, cwd=project)
    result = subprocess.CompletedProcess[str]([], 0, "", "")
    for line in body.splitlines():
        result = _run_line(line, python, tmp)
        if result.returncode:
            break
    return result


def _installed(python: Path) -> dict[str, str]:
    (site,) = (python.parent.parent / "lib").glob("python3*/site-packages")
    out = {}
    for meta in site.glob("*.dist-info/METADATA"):
        msg = HeaderParser().parsestr(meta.read_text())
        out[str(msg["Name"])] = str(msg["Version"])
    return out


def test_the_page_has_the_recipes() -> None:
    assert set(recipes()) == {"pip-naive", "pip", "uv-pip", "uv-project", "torchwheel"}


@pytest.mark.parametrize("key", ["pip", "uv-pip", "uv-project", "torchwheel"])
def test_a_recipe_gets_the_build_for_this_torch(key: str, indexes: tuple[str, str], tmp_path: Path) -> None:
    python = venv_with_torch(tmp_path / "venv", "2.12.0", tmp_path / "stub")
    result = _run(key, indexes, python, tmp_path, "2.12")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _installed(python) == {"torch": "2.12.0", "twidx": "1.0.0+torch2.12", DEPENDENCY: "1.0.0"}


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_the_obvious_line_takes_the_registrys_newer_release(
    installer: str, indexes: tuple[str, str], tmp_path: Path
) -> None:
    """Why the recipes exist: the per-torch index as --index-url and the registry as
    --extra-index-url gives the registry's newer, wrong build, with pip and with uv."""
    python = venv_with_torch(tmp_path / "venv", "2.12.0", tmp_path / "stub")
    line = _fill(recipes()["pip-naive"], *indexes, "2.12")
    result = _run_line(line if installer == "pip" else f"uv {line}", python, tmp_path)
    assert result.returncode == 0, result.stderr
    assert _installed(python)["twidx"] == "1.1.0"


# how each recipe stops on torch 2.9: pip cannot fetch torch-2.9/constraints.txt (1, its error
# exit), uv pip says the same (2: uv's exit for an error), the uv project finds no solution (1)
FAILS_WITH = {"pip": 1, "uv-pip": 2, "uv-project": 1}


@pytest.mark.parametrize("key", sorted(FAILS_WITH))
def test_a_recipe_fails_closed_where_nothing_loads(
    key: str, indexes: tuple[str, str], tmp_path: Path
) -> None:
    """torch 2.9: no build loads, torch-2.9/ does not exist; the recipe stops instead of
    taking the registry's build."""
    python = venv_with_torch(tmp_path / "venv", "2.9.0", tmp_path / "stub")
    result = _run(key, indexes, python, tmp_path, "2.9")
    assert result.returncode == FAILS_WITH[key], result.stderr
    assert "twidx" not in _installed(python)
