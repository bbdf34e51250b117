"""The package's own loader decides, and one floor for every import (issue 46), on real op
libraries built against the real torch 2.13 headers of ``.venv``.

``fixtures/real_ext/oplib``: the everyday op library, ``#include <torch/extension.h>`` (which
brings pybind11, so it imports ``Py*``), ``TORCH_LIBRARY``, no ``PyInit__C``, built by
``CppExtension("twdemo_oplib._C", ...)`` and loaded by its ``__init__.py`` with
``torch.ops.load_library``: no TW304, its op runs; the same library imported with
``from . import _C`` is TW304, and the import really fails.

``fixtures/real_ext/mixed``: shims torch 2.10 first shipped (a target-2.10 translation unit)
plus one unstable ``at::`` symbol (a second unit without the target): dated from 2.10 by
every command, never from the older torches that export its unstable symbol.

Cost: the two wheels build once (~1 min each on a busy machine) into ``.cache/real_ext``;
the tests then take a few seconds plus two interpreters that import torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import pytest

from ..helpers import REPO, fixture_wheels_module, load_script, torchwheel

CPU_ENV = REPO / ".venv"


@pytest.fixture(scope="module")
def built() -> dict[str, Path]:
    real = load_script("torchwheel_real_ext_build", REPO / "fixtures" / "real_ext" / "build.py")
    wheels: dict[str, Path] = real.build_real_wheels(
        REPO / ".cache" / "real_ext", str(CPU_ENV / "bin" / "python"), names=("oplib", "mixed")
    )
    return wheels


def _codes(wheel: Path, cwd: Path) -> tuple[int, dict[str, list[str]]]:
    result = torchwheel("check", "--format", "json", "--no-config", str(wheel), cwd=cwd)
    found: dict[str, list[str]] = {}
    for f in json.loads(result.stdout)["findings"]:
        found.setdefault(f["code"], []).append(f["message"])
    return result.returncode, found


def _rewrap(wheel: Path, out: Path, init: bytes) -> Path:
    """The same built library in a wheel whose ``__init__.py`` is ``init``."""
    with zipfile.ZipFile(wheel) as zf:
        (so,) = [n for n in zf.namelist() if n.endswith(".so")]
        lib = out.parent / "lib.so"
        lib.write_bytes(zf.read(so))
    fw = fixture_wheels_module()
    spec = fw.WheelSpec(
        out.stem, "twdemo_oplib", "cp311-cp311-linux_x86_64", ((so, "lib"),), requires=("torch==2.13.*",),
        extra=(("twdemo_oplib/__init__.py", init),),
    )  # fmt: skip
    return Path(fw.write_wheel(out, spec, {"lib": lib}))


def _run_in_torch(site: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [str(CPU_ENV / "bin" / "python"), "-W", "ignore", "-c", code],
        capture_output=True, text=True, timeout=300, cwd=cwd, env={**env, "PYTHONPATH": str(site)},
    )  # fmt: skip


def _install(wheel: Path, target: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target)]
    subprocess.run([*cmd, str(wheel)], check=True, capture_output=True, timeout=300)
    return target


# --------------------------------------------------------------------------------------------
# an op library loaded by path: no module hook needed


def test_the_op_library_is_what_the_issue_describes(built: dict[str, Path], tmp_path: Path) -> None:
    """No PyInit, Py* imports (pybind11 from torch/extension.h), named as a module."""
    doc = json.loads(torchwheel("show", "--json", str(built["oplib"]), cwd=tmp_path).stdout)
    (file,) = doc["wheels"][0]["files"]
    assert file["member"] == "twdemo_oplib/_C.cpython-311-x86_64-linux-gnu.so"
    (s,) = file["slices"]
    assert s["python"]["hooks"] == []
    assert s["python"]["verdict"] != "not-python"  # it calls CPython's API
    assert file["reach"]["how"] == "library" and file["reach"]["when"] == "import"


def test_loaded_by_path_it_is_no_module(built: dict[str, Path], tmp_path: Path) -> None:
    """Tagged for its build torch: `check` exit 0, no TW304, and its op runs in torch 2.13."""
    untagged = _codes(built["oplib"], tmp_path)[1]
    assert "TW304" not in untagged and "TW302" not in untagged, untagged
    tagged_dir = tmp_path / "tagged"
    tag = torchwheel("tag", "-w", str(tagged_dir), "--build-torch", "2.13", str(built["oplib"]), cwd=tmp_path)
    assert tag.returncode == 0, tag.stdout + tag.stderr
    (tagged,) = tagged_dir.glob("*.whl")
    code, found = _codes(tagged, tmp_path)
    assert (code, "TW304" in found) == (0, False), found
    site = _install(tagged, tmp_path / "site")
    run = _run_in_torch(
        site,
        "import torch, twdemo_oplib\nprint(torch.ops.twdemo_oplib.twice(torch.arange(3.0)).tolist())",
        tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[0.0, 2.0, 4.0]"


def test_imported_as_a_module_it_is_tw304(built: dict[str, Path], tmp_path: Path) -> None:
    """The same library behind `from . import _C`: TW304, and Python's import says why."""
    wheel = _rewrap(built["oplib"], tmp_path / "twdemo_oplib-0.1.0-cp311-cp311-linux_x86_64.whl",
                    b"import torch\nfrom . import _C\n")  # fmt: skip
    code, found = _codes(wheel, tmp_path)
    assert code == 1 and "TW304" in found, found
    assert "PyInit__C" in found["TW304"][0]
    run = _run_in_torch(_install(wheel, tmp_path / "site"), "import twdemo_oplib", tmp_path)
    assert run.returncode != 0 and "dynamic module does not define module export function" in run.stderr


# --------------------------------------------------------------------------------------------
# one floor for every import


def _need(wheel: Path, cwd: Path) -> dict[str, Any]:
    doc = json.loads(torchwheel("show", "--format", "json", str(wheel), cwd=cwd).stdout)
    need: dict[str, Any] = doc["wheels"][0]["need"]
    return need


def test_the_floor_of_its_shims_dates_it(built: dict[str, Path], tmp_path: Path) -> None:
    """2.10 shims plus an at:: symbol torch 2.4 already exports: dated from 2.10, by show,
    select, matrix, index and tag alike; and it does load on torch 2.13."""
    wheel = built["mixed"]
    need = _need(wheel, tmp_path)
    assert need["kind"] == "unstable" and need["releases"][0] == "2.10", need
    assert need["summary"] == "unstable, torch 2.10-2.15 (dated by its imports)"
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / wheel.name).write_bytes(wheel.read_bytes())
    assert torchwheel("select", str(folder), "--torch", "2.9", cwd=tmp_path).returncode == 1
    chosen = torchwheel("select", str(folder), "--torch", "2.13", cwd=tmp_path)
    assert chosen.returncode == 0 and f"chose {wheel.name}" in chosen.stdout, chosen.stdout
    grid = json.loads(torchwheel("matrix", "--format", "json", "--torch", "2.9", "--torch", "2.13",
                                 str(folder), cwd=tmp_path).stdout)  # fmt: skip
    cells = grid["wheels"][0]["cells"]
    assert cells["2.9"]["fit"] == "no" and cells["2.13"]["fit"] == "only", cells
    index = torchwheel("index", str(folder), "-o", str(tmp_path / "index"), cwd=tmp_path)
    assert index.returncode == 0, index.stdout + index.stderr
    listed = sorted(p.name for p in (tmp_path / "index").glob("torch-*") if any(p.rglob("*.whl")) or
                    any(p.rglob("index.html")))  # fmt: skip
    assert listed and all(tuple(map(int, n.split("-")[1].split("."))) >= (2, 10) for n in listed), listed
    tagged = torchwheel(
        "tag", "-w", str(tmp_path / "tagged"), "--build-torch", "2.13", str(wheel), cwd=tmp_path
    )
    assert tagged.returncode == 0, tagged.stdout + tagged.stderr
    (out,) = (tmp_path / "tagged").glob("*.whl")
    with zipfile.ZipFile(out) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
        fields = HeaderParser().parsestr(zf.read(name).decode())
    exports = [tuple(map(int, v.split("."))) for v in fields["Torch-ABI-Exports"].split(", ")]
    assert min(exports) == (2, 10), fields["Torch-ABI-Exports"]
    assert _need(out, tmp_path)["releases"] == need["releases"]  # WHEEL says what the binaries said
    site = _install(wheel, tmp_path / "site")
    run = _run_in_torch(site, "import torch, twdemo_mixed\nprint(torch.ops.twdemo_mixed.copy(torch.ones(2)).shape)",
                        tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
