"""Every shell and TOML block of README.md and docs/ that a user is told to paste is run (or,
for configuration, read by the tool it configures), as written, before a user finds it broken.

Each such block has a comment on the line above it that says how it is held:

- ``<!-- run: WORKSPACE -->``: run here by ``bash -e -o pipefail`` in the workspace of that
  name (below), every command to exit 0; a TOML block is written as the project's
  ``pyproject.toml`` and the command it configures is run on a wheel it must change;
- ``<!-- tested: tests/...py -->``, ``<!-- flow: KEY -->`` (``test_authors_flow.py``),
  ``<!-- recipe: KEY -->`` (``test_recipes.py``): run by that test, which reads the block from
  the page (held below: the test names the page and reads that marker or heading);
- another comment of words alone (``<!-- hybrid recipe -->``): the marker a test reads the
  block by; that test holds the comment as written and names the page;
- ``<!-- not run: REASON -->``: cannot run here (it uploads, pushes a tag, is the suite itself,
  names the reader's own index or a torch this machine lacks), and the test's id says why.

A fence without a language, or a shell or TOML block without one of these comments, fails.

What the blocks run on, shared across them (the suite must stay fast): one copy of this
checkout, named ``torchwheel`` as a clone is, where README's blocks run (its first command
makes the copy's own ``.venv``; its install block builds torchwheel's wheel with
``python -m build`` and installs it by path), and one new venv, the user's (its ``bin`` first on
``PATH``: ``python``, ``pip`` and that ``torchwheel``), which every later block uses. Workspaces:

- ``checkout``: the copy itself;
- ``author``: an extension's project folder beside the copy (``../torchwheel/dist/``);
- ``release``: ``dist/`` with the untagged wheel of one release;
- ``builds``: ``build-2.10/``, ``build-2.12/`` and ``build-unstable/``, one untagged build of
  ``twidx`` 1.0.0 each (stable 2.10, stable 2.12, version-locked 2.13: ``publish_helpers``);
- ``gpu``: ``build-cpu/``, ``build-cu13/``, ``build-cu12/`` (the nvcc fixtures);
- ``config``: a project whose ``dist/`` holds a wheel with an unstable ``_C_legacy`` library.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..lib.helpers import REPO, checkout_copy, fixture_wheels_module
from ..lib.publish_helpers import TAGS, untagged_builds

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SHELL, CONFIG = {"sh", "bash", "shell"}, {"toml"}
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_DIRECTIVE = re.compile(r"^\s*<!-- (run|tested|flow|recipe|not run): ?(.*?) -->$")
_MARKER = re.compile(r"^\s*(<!-- [\w -]+ -->)$")  # another test's own marker: <!-- hybrid recipe -->
# the test that runs the blocks another test reads, by marker
BY_MARKER = {"flow": "tests/e2e/test_authors_flow.py", "recipe": "tests/e2e/test_recipes.py"}
WORKSPACES = {"checkout", "author", "release", "builds", "gpu", "config"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    body: str
    how: str  # run, tested, flow, recipe, not run; "" when no comment says
    detail: str

    @property
    def where(self) -> str:
        shown = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page
        return f"{shown}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of a page, with the comment on the line above it."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, lang = opening.groups()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        body = "\n".join(line.removeprefix(indent) for line in lines[i + 1 : end])
        said = _DIRECTIVE.match(lines[i - 1]) if i else None
        marker = _MARKER.match(lines[i - 1]) if i and not said else None
        how, detail = (
            (said.group(1), said.group(2)) if said else ("marker", marker.group(1)) if marker else ("", "")
        )
        found.append(Block(page, i + 1, lang, body, how, detail))
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]
PASTED = [b for b in ALL if b.lang in SHELL | CONFIG]


def test_every_fence_names_its_language() -> None:
    assert [b.where for b in ALL if not b.lang] == []


def test_every_pasted_block_says_how_it_is_held() -> None:
    assert [b.where for b in PASTED if not b.how] == []
    assert len(PASTED) > 30


def test_the_checks_catch_a_block_that_says_nothing(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```sh\ntorchwheel check x.whl\n```\n\n<!-- run: release -->\n```sh\nls\n```\n\n```\nout\n```\n"
    )
    found = blocks(page)
    assert [(b.lang, b.how, b.detail) for b in found] == [
        ("sh", "", ""),
        ("sh", "run", "release"),
        ("", "", ""),
    ]
    unread = "<!-- read by " + "no test -->"  # spelled apart: this file names the page too
    page.write_text(f"{unread}\n```sh\nls\n```\n")
    (marked,) = blocks(page)
    assert (marked.how, marked.detail) == ("marker", unread)
    with pytest.raises(AssertionError):
        _marker_reader(marked)


@pytest.mark.parametrize(
    "block", [b for b in PASTED if b.how == "not run"], ids=lambda b: f"{b.where} not run: {b.detail}"
)
def test_a_block_not_run_here_says_why(block: Block) -> None:
    """The id above is the reason; it must name what the block needs, and where the same
    commands are tested if they are (a path that exists)."""
    assert len(block.detail) > 20, block.where
    for named in re.findall(r"tests/[\w/]+\.py", block.detail):
        assert (REPO / named).is_file(), (block.where, named)


def _marker_reader(block: Block) -> str:
    """The test file that reads ``block`` by its own marker comment, as written."""
    readers = [
        str(p.relative_to(REPO))
        for p in sorted((REPO / "tests").rglob("test_*.py"))
        if block.detail in p.read_text() and block.page.name in p.read_text()
    ]
    assert readers, (block.where, block.detail)
    return readers[0]


@pytest.mark.parametrize(
    "block", [b for b in PASTED if b.how in ("tested", "flow", "recipe", "marker")], ids=lambda b: b.where
)
def test_a_block_another_test_runs_is_read_by_that_test(block: Block) -> None:
    """The test named reads this page; for a marker, by that marker; for a cibuildwheel block,
    by its heading; for a page's file (``# pyproject.toml``), by its first line."""
    test = _marker_reader(block) if block.how == "marker" else BY_MARKER.get(block.how, block.detail)
    source = (REPO / test).read_text()
    assert block.page.name in source, (block.where, test)
    text = block.page.read_text()
    if block.how == "marker":
        return  # found by its marker, as written, in a test that names the page
    if block.how in BY_MARKER:
        assert f"<!-- {block.how}: " in source, (block.where, test)
    elif test.endswith("test_cibuildwheel.py"):
        from .test_cibuildwheel import SECTIONS
        from .test_cibuildwheel import block as section

        heading = [h for h in re.findall(r"^#+ (.+)$", text[: text.index(block.body)], re.M)][-1]
        assert heading in SECTIONS.values() and section(heading) == block.body + "\n", block.where
    elif test.endswith("test_authors_flow.py"):
        assert f'page_file("{block.body.splitlines()[0]}"' in source, block.where
    else:
        assert block.body.splitlines()[0].strip() in source or "releasing.md" in source, block.where


def test_run_blocks_name_a_workspace() -> None:
    assert {b.detail for b in PASTED if b.how == "run"} <= WORKSPACES


# -- running them ------------------------------------------------------------------------------


@dataclass
class User:
    root: Path  # holds torchwheel/ (the copy) and every workspace
    env: dict[str, str]  # the user's shell: their venv first on PATH

    def run(self, block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.body],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=900,
        )


def _blocks(workspace: str) -> list[Block]:
    return [b for b in PASTED if b.how == "run" and b.detail == workspace]


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> Iterator[User]:
    """The checkout copy after README's blocks ran in it, in page order: the first command
    (the copy's own .venv, check and show of the demo wheel), then the install block that
    builds the wheel and installs it by path into the user's new venv."""
    root = tmp_path_factory.mktemp("docs")
    copy = checkout_copy(root / "torchwheel")
    venv = root / "user-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env |= {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    someone = User(root, env)
    readme = _blocks("checkout")
    assert [b.page.name for b in readme] == ["README.md", "README.md"]
    for block in readme:
        result = someone.run(block, copy)
        assert result.returncode == 0, (block.where, result.stdout[-3000:], result.stderr[-3000:])
        if ".venv/bin/torchwheel check" in block.body:
            assert "1 input checked: 0 error(s), 0 warning(s), 0 info(s) - all clean" in result.stdout
    yield someone


def test_readmes_lines_install_torchwheel_from_a_checkout(user: User) -> None:
    """The copy's own .venv holds the copy's editable torchwheel; the user's venv the wheel
    built from it, not this checkout: each line did what it says."""
    copy = user.root / "torchwheel"
    (wheel,) = (copy / "dist").glob("torchwheel-*-py3-none-any.whl")
    for python, inside in (
        (copy / ".venv" / "bin" / "python", copy / "src"),
        (Path(user.env["VIRTUAL_ENV"]) / "bin" / "python", Path(user.env["VIRTUAL_ENV"])),
    ):
        where = subprocess.run(
            [python, "-c", "import torchwheel; print(torchwheel.__file__)"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert Path(where.stdout.strip()).is_relative_to(inside), where.stdout
    assert wheel.stat().st_size > 100_000


def test_the_authors_install_line(user: User) -> None:
    project = user.root / "mypkg"
    project.mkdir()
    for block in _blocks("author"):
        result = user.run(block, project)
        assert result.returncode == 0, (block.where, result.stdout, result.stderr)
    shown = subprocess.run(
        ["torchwheel", "--version"], env=user.env, capture_output=True, text=True, check=True
    )
    assert shown.stdout.startswith("torchwheel, version ")


def _workspace_run(user: User, workspace: str, cwd: Path) -> list[subprocess.CompletedProcess[str]]:
    runs = []
    for block in _blocks(workspace):
        result = user.run(block, cwd)
        assert result.returncode == 0, (block.where, result.stdout[-3000:], result.stderr[-3000:])
        runs.append(result)
    return runs


def test_the_release_block(user: User, built_fixtures: dict[str, Path]) -> None:
    work = user.root / "release"
    wheel = untagged_builds(built_fixtures, work / "raw")["210"]
    (work / "dist").mkdir()
    shutil.copy(wheel, work / "dist")
    _workspace_run(user, "release", work)
    (tagged,) = (work / "dist").glob("*.whl")
    assert "Torch-ABI: 2.10" in _member(tagged, "WHEEL")


def test_the_builds_blocks(user: User, built_fixtures: dict[str, Path]) -> None:
    """installers.md's per-torch route in page order: three builds tagged with their labels
    and the index written; the unlabelled PyPI copy of one; the variant of the 2.12 build."""
    work = user.root / "builds"
    raw = untagged_builds(built_fixtures, work / "raw")
    for build, folder in (("210", "build-2.10"), ("212", "build-2.12"), ("213", "build-unstable")):
        (work / folder).mkdir(parents=True)
        shutil.copy(raw[build], work / folder)
    _workspace_run(user, "builds", work)
    dist = sorted(p.name for p in (work / "dist").glob("*.whl"))
    assert [n for n in dist if "+torch" in n] == [f"twidx-1.0.0+torch2.{m}-{TAGS}.whl" for m in (10, 12, 13)]
    assert (work / "site" / "torch-2.12" / "simple").is_dir() and (work / "site" / "index.html").is_file()
    assert (work / "pypi" / f"twidx-1.0.0-{TAGS}.whl").is_file()
    assert f"twidx-1.0.0-{TAGS}-torch2.12.whl" in dist  # the variant beside the plain fallback


def test_the_gpu_block(user: User, built_fixtures: dict[str, Path]) -> None:
    work = user.root / "gpu"
    wm = fixture_wheels_module()
    for build, binary in (
        ("cpu", "elf_marker_2_10"),
        ("cu13", "cuda:cu13_torch_cuda.so"),
        ("cu12", "cuda:cu12_runtime.so"),
    ):
        spec = wm.WheelSpec("r", "twgpu", TAGS, (("twgpu/_C.abi3.so", binary),), requires=("torch>=2.10",))
        wm.write_wheel(work / f"build-{build}" / spec.filename, spec, built_fixtures)
    _workspace_run(user, "gpu", work)
    assert (work / "dist" / f"twgpu-1.0.0-{TAGS}.whl").is_file()
    assert (work / "cu13" / f"twgpu-1.0.0-{TAGS}-cu13.whl").is_file()
    assert (work / "cu12" / f"twgpu-1.0.0-{TAGS}-cu12.whl").is_file()


def test_the_configuration_block_configures_check(user: User, built_fixtures: dict[str, Path]) -> None:
    """rules.md's [tool.torchwheel], pasted as a project's pyproject.toml: read by the
    torchwheel the user installed, it allowlists the project's _C_legacy library (no TW204)
    and that entry is in use (no TW205); without it, check says TW204 and nothing else changes."""
    (block,) = _blocks("config")
    assert block.lang == "toml"
    work = user.root / "config"
    wm = fixture_wheels_module()
    spec = wm.WheelSpec("c", "wcfg", TAGS, (("wcfg/_C_legacy.abi3.so", "elf_unstable_cpp"),), requires=())
    wheel = Path(wm.write_wheel(work / "dist" / spec.filename, spec, built_fixtures))
    (work / "pyproject.toml").write_text(block.body + "\n")
    configured = subprocess.run(
        ["torchwheel", "check", "--format", "json", str(wheel)],
        env=user.env,
        cwd=work,
        capture_output=True,
        text=True,
    )
    plain = subprocess.run(
        ["torchwheel", "check", "--no-config", "--format", "json", str(wheel)],
        env=user.env,
        cwd=work,
        capture_output=True,
        text=True,
    )
    codes = [{f["code"] for f in json.loads(r.stdout)["findings"]} for r in (configured, plain)]
    assert "TW204" in codes[1], plain.stdout
    assert not codes[0] & {"TW204", "TW205"} and codes[0] == codes[1] - {"TW204"}, configured.stdout


def _member(wheel: Path, suffix: str) -> str:
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(f".dist-info/{suffix}")]
        return zf.read(name).decode()
