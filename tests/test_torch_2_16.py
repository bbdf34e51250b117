"""Issue 48, item 8: torch 2.16's first extensions, before and after the day it ships.

The extension mirrors PyTorch's own 2.16 test extension (``fixtures/torch216/agn_2_16.c``:
target 2.16, the stable c10d ``ProcessGroup``/``Work`` calls, ``torch_is_warn_always_enabled``,
the shim ``is_privateuseone`` reads the device with), compiled by gcc against the real torch
2.13.0 of ``.venv`` and packed as its setup.py packs it (``cp310-abi3``, ``Requires-Dist:
torch``). Before the tables know 2.16, every command says "newer than the tables" and none
guesses; after ``symbols update`` with a 2.16 torch (``fixtures/torch216/build.py``: the real
2.13.0 relabelled, its shim headers given the 2.16 block, its libraries rebuilt by gcc to
export the 2.16 shims too), the floor is 2.16 and the need names a torch built with
distributed, with libtorch_python loaded.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from torchwheel import api

from .lib.helpers import REPO, load_script, torchwheel

SITE = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
FIXTURE = REPO / "fixtures" / "torch216"
torch216 = load_script("torchwheel_torch216", FIXTURE / "build.py")
DIST, TAG = "libtorch_agn_2_16", "cp310-abi3-manylinux_2_28_x86_64"
C10D = "torch_process_group_rank"


def _wheel(out: Path, lib: Path) -> Path:
    info = f"{DIST}-0.0.dist-info"
    files = {
        f"{DIST}/_C.abi3.so": lib.read_bytes(),
        f"{DIST}/__init__.py": b"",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.0\nRequires-Dist: torch\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: setuptools\nRoot-Is-Purelib: false\nTag: {TAG}\n".encode(),
    }

    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{n},sha256={digest(d)},{len(d)}\n" for n, d in files.items()) + f"{info}/RECORD,,\n"
    path = out / f"{DIST}-0.0-{TAG}.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr(f"{info}/RECORD", record)
    return path


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("torch216")
    lib = out / "_C.abi3.so"
    torch_lib = SITE / "torch" / "lib"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-I{REPO / 'src' / 'torchwheel' / 'include'}", str(FIXTURE / "agn_2_16.c"),
         "-o", str(lib), f"-L{torch_lib}", "-Wl,--no-as-needed", "-ltorch", "-ltorch_cpu", "-lc10"],
        check=True,
    )  # fmt: skip
    torch = torch216.build(SITE, out / "site")
    tables = out / "tables-2.16.json"
    env = {**os.environ, "XDG_DATA_HOME": str(out / "data")}
    done = torchwheel("symbols", "update", "-o", str(tables), str(torch), env=env)
    assert done.returncode == 0, done.stderr
    assert "linux-x86_64: torch 2.16.0 added" in done.stderr
    return {"wheel": _wheel(out, lib), "tables": tables, "torch": torch}


def test_the_synthetic_torch_exports_the_2_16_shims(day: dict[str, Path]) -> None:
    """Built by nm and gcc: the shims of the 2.16 block resolve against it (compat, the
    loader's own question), and the Python bridge is libtorch_python's alone."""
    lib = day["torch"] / "torch" / "lib"
    nm = ["nm", "-D", "--defined-only", "--format=posix"]
    python = subprocess.run(
        [*nm, str(lib / "libtorch_python.so")], capture_output=True, text=True, check=True
    )
    libtorch = subprocess.run([*nm, str(lib / "libtorch.so")], capture_output=True, text=True, check=True)
    assert "torch_process_group_from_pyobject " in python.stdout
    assert f"{C10D} " in libtorch.stdout and "torch_process_group_from_pyobject" not in libtorch.stdout
    env = {**os.environ, "TORCHWHEEL_SYMBOLS": str(day["tables"])}
    compat = torchwheel(
        "compat", "--against", str(day["torch"]), "--format", "json", str(day["wheel"]), env=env
    )
    assert json.loads(compat.stdout)["inputs"][0]["loads"] is True, compat.stdout


def test_before_the_day_every_command_says_newer_than_the_tables(
    day: dict[str, Path], tmp_path: Path
) -> None:
    wheel = day["wheel"]
    env = {k: v for k, v in os.environ.items() if k != "TORCHWHEEL_SYMBOLS"}
    env["XDG_DATA_HOME"] = str(tmp_path)
    check = json.loads(torchwheel("check", "--no-config", "--format", "json", str(wheel), env=env).stdout)
    found = {f["code"]: f for f in check["findings"]}
    assert set(found) == {"TW203", "TW207"} and {f["severity"] for f in found.values()} == {"warning"}
    assert (
        "declares torch 2.16.0 (0x0210000000000000), newer than this torchwheel's tables"
        in found["TW207"]["message"]
    )
    need = api.need(wheel).to_json()["need"]
    assert need["floor"] == "2.16.0" and need["newer_than_tables"]["tables"] == "2.15"
    assert "torch_is_warn_always_enabled" in need["newer_than_tables"]["imports"]
    assert need["build_needs"] == []  # what the 2.16 shims need is not known yet: never guessed
    on_2_15 = api.loads_on(wheel, torch="2.15.0", backend="cpu")
    assert on_2_15.cell == "no" and "exported by no torch up to 2.15" in on_2_15.reason
    on_2_16 = api.loads_on(wheel, torch="2.16.0", backend="cpu")
    assert (on_2_16.cell, on_2_16.verdict.newer) == ("unknown", True)
    assert "torch 2.16 is newer than this torchwheel's tables (newest 2.15)" in on_2_16.reason
    chose = torchwheel("select", "--torch", "2.16", "--format", "json", str(wheel), env=env)
    (cand,) = json.loads(chose.stdout)["projects"][0]["candidates"]
    assert (chose.returncode, cand["verdict"], cand["newer_than_tables"]) == (1, "unknown", True)
    grid = json.loads(torchwheel("matrix", "--format", "json", "--torch", "2.15", str(wheel), env=env).stdout)
    assert grid["newer_than_tables"] == ["2.16"] and grid["wheels"][0]["cells"]["2.16"]["fit"] == "unknown"
    refused = torchwheel("tag", "-w", str(tmp_path / "tagged"), str(wheel), env=env)
    assert refused.returncode != 0 and "refusing to rewrite" in refused.stderr  # no requirement from a guess
    assert "TW203" in refused.stdout and "newer than this torchwheel's tables" in refused.stdout


def test_after_symbols_update_floor_2_16_and_what_of_the_build_it_needs(day: dict[str, Path]) -> None:
    wheel, tables = day["wheel"], day["tables"]
    need = api.need(wheel, symbols=tables).to_json()["need"]
    assert (need["kind"], need["floor"], need["newer_than_tables"]) == ("stable", "2.16.0", None)
    assert need["build_needs"] == ["distributed", "python"]
    assert need["summary"] == (
        "stable >= 2.16, needs a torch built with distributed, with libtorch_python loaded "
        "(the Python torch, not LibTorch alone)"
    )
    loads = api.loads_on(wheel, torch="2.16.0", backend="cpu", symbols=tables)
    assert (loads.cell, loads.verdict.newer) == ("loads", False)
    assert "a torch built with distributed" in loads.reason
    assert api.loads_on(wheel, torch="2.15.0", backend="cpu", symbols=tables).cell == "no"
    codes = {f.code for f in api.check(wheel, symbols=tables).findings}
    assert "TW203" not in codes and "TW207" not in codes
    assert "TW503" in codes  # now known: 'torch' admits releases older than its floor
    shown = torchwheel("show", "--symbols", str(tables), str(wheel)).stdout
    assert "torch needs      a torch built with distributed, with libtorch_python loaded" in shown
