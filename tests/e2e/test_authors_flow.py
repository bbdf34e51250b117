"""docs/authors.md steps 2 to 4, read from the page and run as written: build, then ``repair``
(or ``tag``), then ``check`` passes.

The build block (``pip wheel``) stands for what it leaves in ``dist/``: the newcomer's wheel of
a ``setup.py`` with ``install_requires=["torch"]``, tagged ``linux_x86_64`` with
``Requires-Dist: torch``, one stable-ABI library (target 2.10). The fixture library gets a
``DT_NEEDED`` on libc (``patchelf --add-needed``) as every real extension has: gcc links none
into it, and auditwheel refuses an extension module whose libc it cannot tell. The fake torch
it links, ``libtorchfake.so``, stands for torch's libraries, which torchwheel's excludes name:
the test adds ``--exclude libtorchfake.so`` to the page's auditwheel call, and runs the test
venv's auditwheel. Every other word of the blocks runs as the page has it, in ``bash -e``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ..helpers import REPO, fixture_wheels_module, torchwheel

PAGE = REPO / "docs" / "authors.md"
_FLOW = re.compile(r"<!-- flow: (?P<key>[\w-]+) -->\n```sh\n(?P<body>.*?)\n```", re.DOTALL)
BIN = Path(sys.executable).parent
BUILD = "python -m pip wheel --no-deps --no-build-isolation -w dist ."


def flow() -> dict[str, str]:
    return {m["key"]: m["body"] for m in _FLOW.finditer(PAGE.read_text())}


def test_the_page_has_the_flow() -> None:
    blocks = flow()
    assert list(blocks) == ["build", "repair", "tag", "check"]
    assert blocks["build"] == BUILD
    assert "'auditwheel repair -w {repair_dir} {wheel}'" in blocks["repair"]
    assert 'install_requires=["torch"]' in PAGE.read_text()


@pytest.fixture
def project(built_fixtures: dict[str, Path], tmp_path: Path) -> Path:
    """A project directory after step 2: ``dist/`` holds the build's wheel."""
    lib = tmp_path / "lib" / "elf_marker_2_10.so"
    lib.parent.mkdir()
    shutil.copyfile(built_fixtures["elf_marker_2_10"], lib)
    subprocess.run([str(BIN / "patchelf"), "--add-needed", "libc.so.6", str(lib)], check=True)
    wm = fixture_wheels_module()
    spec = wm.WheelSpec(
        "newcomer",
        "mypkg",
        "cp39-abi3-linux_x86_64",
        (("mypkg/elf_marker_2_10.abi3.so", "elf_marker_2_10"),),
        requires=("torch",),
        version="0.1.0",
    )
    root = tmp_path / "mypkg"
    wm.write_wheel(root / "dist" / spec.filename, spec, {"elf_marker_2_10": lib})
    return root


def _run(block: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    body = flow()[block].replace(
        "'auditwheel repair ", f"'{BIN / 'auditwheel'} repair --exclude libtorchfake.so "
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-e", "-c", body], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _codes(folder: Path, cwd: Path) -> set[str]:
    result = torchwheel("check", "--format", "json", *map(str, sorted(folder.glob("*.whl"))), cwd=cwd)
    return {f["code"] for f in json.loads(result.stdout)["findings"]}


def _requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read("mypkg-0.1.0.dist-info/METADATA").decode()
    return [line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: ")]


def test_the_build_alone_does_not_pass(project: Path) -> None:
    """What the page says of step 2's wheel: TW503 (a bare torch) and TW415 (linux_x86_64)."""
    assert _codes(project / "dist", project) == {"TW503", "TW415"}
    assert torchwheel("check", *map(str, (project / "dist").glob("*.whl")), cwd=project).returncode == 1


def test_build_repair_check_passes_clean(project: Path) -> None:
    repaired = _run("repair", project)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "TW503 fixed by the rewrite" in repaired.stderr
    checked = _run("check", project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 error(s), 0 warning(s), 0 info(s) - all clean" in checked.stdout
    (wheel,) = (project / "wheelhouse").glob("*.whl")
    assert "manylinux" in wheel.name and "linux_x86_64" not in wheel.name.replace("manylinux", "")
    assert _requires(wheel) == ["torch>=2.10"]
    with zipfile.ZipFile(wheel) as zf:
        assert not [m for m in zf.namelist() if ".libs/" in m]  # nothing grafted


def test_build_tag_check_passes_with_the_pypi_warning(project: Path) -> None:
    tagged = _run("tag", project)
    assert tagged.returncode == 0, tagged.stdout + tagged.stderr
    checked = _run("check", project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert _codes(project / "wheelhouse", project) == {"TW415"}
    (wheel,) = (project / "wheelhouse").glob("*.whl")
    assert _requires(wheel) == ["torch>=2.10"]
