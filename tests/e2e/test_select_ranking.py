"""``select`` ranks as pip and uv rank, differentially: folders of small wheels written by
``wheel``'s own ``WheelFile`` (it writes RECORD), one project per case, and for each case set
one ``pip install --dry-run --report -``, one ``uv pip install --dry-run`` (uv 0.13.9, the
test extra's) and one ``select --format json``, all for this interpreter (torch 2.13.0 CPU
installed). Every case must give the same file in all three, or nothing in all three.

The cases are what ranking turns on: PEP 440 order with local labels (the issue's
``0.1.0`` beside ``0.1.0+torch2.10``, labels compared part by part, ``.post1`` above a label),
the target's tag order, build tags (numbers, then their letters), requirements that exclude
the installed torch (pip and uv then take the next version), and pre-releases: passed over
while a final release has a file for the target, taken when none has, and ranked as any
version with ``--pre``. The wheels hold no compiled code except the issue's pair, which
holds the demo wheel's real stable-ABI library (untagged: its torch need is read from it).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote

import pytest
from packaging.utils import canonicalize_name
from wheel.wheelfile import WheelFile

from ..lib.helpers import torchwheel
from ..lib.publish_helpers import offline_env, venv_with_torch
from ..selection.made import DEMO

MANY = "cp39-abi3-manylinux_2_28_x86_64"
NATIVE = "cp311-cp311-manylinux_2_17_x86_64"  # this interpreter's own ABI: ranked above abi3
ANY = "py3-none-any"


class W(NamedTuple):
    """One wheel of a case: its version, tag, build tag, requirements, and extra WHEEL lines."""

    version: str
    tag: str = ANY
    build: str = ""
    requires: tuple[str, ...] = ()
    wheel_lines: str = ""
    library: bool = False  # holds the demo's real stable-ABI library


TAGGED = "Torch-ABI: 2.10\nTorch-Build: any\n"

# case name -> its wheels; each case is a project of its own (twr-<case>)
CASES: dict[str, list[W]] = {
    "issue-local-above-plain": [
        W("0.1.0", "cp311-cp311-linux_x86_64", requires=("torch",), library=True),
        W("0.1.0+torch2.10", MANY, requires=("torch>=2.10",), wheel_lines=TAGGED, library=True),
    ],
    "labels-part-by-part": [W("1.0+torch2.9"), W("1.0+torch2.10")],
    "labels-letters": [W("1.0+cu129"), W("1.0+cpu"), W("1.0")],
    "post-above-label": [W("1.0.post1"), W("1.0+zzz")],
    "per-torch-builds": [W(f"1.0+torch2.{m}", MANY, requires=(f"torch==2.{m}.*",)) for m in (12, 13, 14)],
    "requirement-excludes-newest": [W("1.0", requires=("torch>=2.20",)), W("0.9")],
    "floor-above-torch": [
        W("2.0", MANY, requires=("torch>=2.14",), wheel_lines="Torch-ABI: 2.14\nTorch-Build: any\n"),
        W("1.0", MANY, requires=("torch>=2.10",), wheel_lines=TAGGED),
    ],
    "tag-order": [W("1.0"), W("1.0", MANY), W("1.0", NATIVE)],
    "version-before-tags": [W("2.0"), W("1.0", NATIVE)],
    "build-after-tags": [W("1.0", MANY, "1"), W("1.0", MANY, "2"), W("1.0", ANY, "5")],
    "build-letters": [W("1.0", build="1"), W("1.0", build="1a"), W("1.0", build="1b")],
    "label-before-build": [W("1.0+a", build="3"), W("1.0+b", build="1")],
    "pre-passed-over": [W("1.0"), W("1.1.dev1")],
    "pre-with-label": [W("1.0rc1+torch2.10"), W("0.9")],
    "only-pre": [W("1.1.dev1"), W("1.1rc1")],
    "pre-order": [W("1.0.dev1"), W("1.0a1"), W("1.0.post1.dev1")],
    "final-for-another-platform": [W("1.0", "cp311-cp311-win_amd64"), W("1.1rc1")],
    "pre-with-better-tags": [W("1.0"), W("2.0rc1", NATIVE)],
}
# nothing installs: each alone, since one failure fails a whole pip or uv run
NOTHING: dict[str, list[W]] = {
    "platform-only-windows": [W("1.0", "cp311-cp311-win_amd64")],
    "torch-excluded": [W("1.0", requires=("torch>=2.20",)), W("0.9", requires=("torch<2.10",))],
}


def _project(case: str) -> str:
    return f"twr-{case}"


def _write(folder: Path, case: str, w: W) -> None:
    name = _project(case)
    dist = canonicalize_name(name).replace("-", "_")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / dist).mkdir()
        (root / dist / "__init__.py").write_text("")
        if w.library:
            with zipfile.ZipFile(DEMO) as zf:
                (root / dist / "_C.abi3.so").write_bytes(zf.read("demo_stable/elf_marker_2_10.abi3.so"))
        info = root / f"{dist}-{w.version}.dist-info"
        info.mkdir()
        requires = "".join(f"Requires-Dist: {r}\n" for r in w.requires)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {w.version}\n{requires}"
        )
        build = f"Build: {w.build}\n" if w.build else ""
        (info / "WHEEL").write_text(
            f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: {w.tag}\n{build}{w.wheel_lines}"
        )
        extra = f"-{w.build}" if w.build else ""
        with WheelFile(folder / f"{dist}-{w.version}{extra}-{w.tag}.whl", "w") as wf:
            wf.write_files(str(root))


def _folder(root: Path, cases: dict[str, list[W]]) -> Path:
    root.mkdir(parents=True)
    for case, wheels in cases.items():
        for w in wheels:
            _write(root, case, w)
    return root


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ranking")
    out = {"all": _folder(root / "all", CASES)}
    for case, wheels in NOTHING.items():
        out[case] = _folder(root / case, {case: wheels})
    return out


Choices = dict[str, str | None]  # project -> the chosen file name, None: nothing installs


def _pip(folder: Path, names: Iterable[str], pre: bool) -> Choices:
    """pip's choice, from its installation report (``download_info.url`` of each project)."""
    names = list(names)
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--report", "-", "--quiet"]
    cmd += ["--no-index", "--find-links", str(folder), *(["--pre"] if pre else []), *names]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=offline_env())
    if run.returncode != 0:
        assert re.search("No matching distribution|ResolutionImpossible", run.stderr), run.stderr
        return dict.fromkeys(names)
    got = {
        i["metadata"]["name"]: unquote(i["download_info"]["url"].rsplit("/", 1)[1])
        for i in json.loads(run.stdout)["install"]
    }
    return {n: got.get(n) for n in names}


_SELECTING = re.compile(r"Selecting: (\S+)==(\S+) \[\w+\] \((\S+\.whl)\)")


def _uv(folder: Path, names: Iterable[str], pre: bool, cache: Path) -> Choices:
    """uv's choice: the file its resolver logs (``-v``) for the version it would install
    (the last "Selecting" of each project: a backtrack selects again)."""
    names = list(names)
    uv = Path(sys.executable).parent / "uv"
    cmd = [str(uv), "pip", "install", "--dry-run", "-v", "--python", sys.executable, "--no-index"]
    cmd += ["--find-links", str(folder), *(["--prerelease", "allow"] if pre else []), *names]
    run = subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, env={**offline_env(), "UV_CACHE_DIR": str(cache)}
    )
    if run.returncode != 0:
        assert "No solution found" in run.stderr, run.stderr
        return dict.fromkeys(names)
    selected = {m[1]: (m[2], m[3]) for m in _SELECTING.finditer(run.stderr)}
    installs = dict(re.findall(r"^ \+ (\S+)==(\S+)$", run.stderr, re.M))
    for name, version in installs.items():  # the log and the summary agree
        assert selected[name][0] == version, (name, selected[name], version)
    return {n: selected[n][1] if n in installs else None for n in names}


def _select(folder: Path, names: Iterable[str], pre: bool) -> Choices:
    names = list(names)
    run = torchwheel("select", "--format", "json", *(["--pre"] if pre else []), str(folder))
    doc = json.loads(run.stdout)
    got = {p["name"]: p["chosen"]["file"] if p["chosen"] else None for p in doc["projects"]}
    assert set(got) == set(names), got
    return got


def _three(folder: Path, names: list[str], pre: bool, cache: Path) -> tuple[Choices, Choices, Choices]:
    return _select(folder, names, pre), _pip(folder, names, pre), _uv(folder, names, pre, cache)


@pytest.mark.parametrize("pre", [False, True], ids=["default", "pre"])
def test_select_chooses_as_pip_and_uv(pre: bool, folders: dict[str, Path], tmp_path: Path) -> None:
    """Every case in one run of each (``--pre``: pip's ``--pre``, uv's ``--prerelease allow``)."""
    names = [_project(c) for c in CASES]
    mine, pip, uv = _three(folders["all"], names, pre, tmp_path)
    assert mine == pip == uv, {n: (mine[n], pip[n], uv[n]) for n in names if not mine[n] == pip[n] == uv[n]}
    assert all(mine.values())  # every case chooses a file (nothing-installs cases are below)
    pres = {n for n, f in mine.items() if f is not None and re.search(r"-[^-]*(dev|a|rc)\d", f)}
    # the pre-release cases: chosen only where no final release has a file for the target,
    # or in every case where one is the highest version (--pre)
    assert len(pres) == (6 if pre else 3), pres


@pytest.mark.parametrize("case", sorted(NOTHING))
def test_nothing_installs_in_any_of_the_three(case: str, folders: dict[str, Path], tmp_path: Path) -> None:
    names = [_project(case)]
    mine, pip, uv = _three(folders[case], names, False, tmp_path)
    assert mine == pip == uv == {names[0]: None}


def test_where_uv_takes_a_pre_release_select_sides_with_pip(tmp_path: Path) -> None:
    """A final release whose requirement excludes the installed torch beside a pre-release
    that loads: pip holds the pre-release back and installs nothing, uv (whose pre-release
    rule looks at what can be resolved) takes it. ``select`` follows pip, and names --pre."""
    case = "final-refused-pre-loads"
    folder = _folder(tmp_path / "f", {case: [W("2.0", requires=("torch==2.10.*",)), W("2.1rc1")]})
    name = _project(case)
    mine, pip, uv = _three(folder, [name], False, tmp_path / "uv")
    assert mine == pip == {name: None}
    assert uv == {name: "twr_final_refused_pre_loads-2.1rc1-py3-none-any.whl"}  # the known difference
    text = torchwheel("select", str(folder))
    assert text.returncode == 1
    assert "2.1rc1-py3-none-any.whl (in" in text.stdout and "--pre considers it" in text.stdout
    assert _select(folder, [name], True) == uv  # with --pre: the pre-release


def _page(root: Path, folder: Path, name: str) -> Path:
    """A PEP 503 project page linking the folder's wheels (with their sha256) under files/."""
    import hashlib
    import shutil

    (root / "files").mkdir(parents=True)
    (root / "simple" / name).mkdir(parents=True)
    links = []
    for wheel in sorted(folder.glob("*.whl")):
        shutil.copy2(wheel, root / "files" / wheel.name)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        links.append(
            f'<a href="../../files/{wheel.name.replace("+", "%2B")}#sha256={digest}">{wheel.name}</a>'
        )
    (root / "simple" / name / "index.html").write_text(
        "<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>"
    )
    return root


def test_a_hosted_pre_release_held_back_is_not_downloaded(tmp_path: Path) -> None:
    from ..lib.index_server import serve

    case = "pre-passed-over"
    name = _project(case)
    site = _page(tmp_path / "site", _folder(tmp_path / "wheels", {case: CASES[case]}), name)
    final, pre = "twr_pre_passed_over-1.0-py3-none-any.whl", "twr_pre_passed_over-1.1.dev1-py3-none-any.whl"
    for flags, chosen, spared in (((), final, pre), (("--pre",), pre, final)):
        with serve(site) as (url, server):
            run = torchwheel("select", "--format", "json", *flags, "-i", f"{url}/simple", "--name", name)
        assert run.returncode == 0, run.stderr
        (project,) = json.loads(run.stdout)["projects"]
        assert project["chosen"]["file"] == chosen
        assert server.downloads() == [chosen]
        (passed,) = project["not_opened"]
        assert passed["location"].endswith(spared)
        assert ("--pre considers it" if chosen == final else "1.1.dev1 is a newer release") in passed[
            "reason"
        ]


def test_install_names_pre_when_only_a_held_back_pre_release_loads(tmp_path: Path) -> None:
    """The refusal says what would help: --pre, not --force; with --pre it installs."""
    case = "final-refused-pre-loads"
    folder = _folder(tmp_path / "f", {case: [W("2.0", requires=("torch==2.10.*",)), W("2.1rc1")]})
    python = venv_with_torch(tmp_path / "venv", "2.13.0", tmp_path / "stub")  # torch==2.10.* excludes it
    run = torchwheel("install", "--python", str(python), str(folder))
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        "torchwheel: install refused: only a pre-release loads on the target (--pre takes it)"
    )
    pre = torchwheel("install", "--pre", "--python", str(python), str(folder))
    assert pre.returncode == 0, pre.stderr
    assert "installed twr_final_refused_pre_loads-2.1rc1-py3-none-any.whl" in pre.stdout
