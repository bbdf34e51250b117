"""One release, one METADATA: the TW6xx release rules of ``check`` and ``tag --release``,
``--build-tag`` and ``--local-label`` (with pip installing, listing and removing the result)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ..lib.helpers import fresh_venv, pip_install, release_wheels, torchwheel

LINUX = "cp39-abi3-manylinux_2_28_x86_64"
MAC = "cp39-abi3-macosx_11_0_arm64"
UNSTABLE = "cp311-cp311-manylinux_2_28_x86_64"

#: release set -> [(binary scenario, tag, requires)], and the TW6xx codes check must report
SETS: dict[str, tuple[list[tuple[str, str, str]], set[str]]] = {
    "tw601": (
        [
            ("elf_marker_2_10", LINUX, "torch>=2.10"),
            ("pe_mingw_marker_2_10", "cp39-abi3-win_amd64", "torch>=2.11"),
        ],
        {"TW601"},
    ),
    "tw602": (
        [("elf_marker_2_10", LINUX, "torch>=2.12"), ("macho_arm64_marker_2_12", MAC, "torch>=2.12")],
        {"TW602"},
    ),
    "tw603": (
        [("elf_marker_2_10", LINUX, "torch>=2.10"), ("elf_unstable_cpp", UNSTABLE, "torch>=2.10")],
        {"TW603"},
    ),
    "mac_newer": (
        [("elf_marker_2_10", LINUX, "torch>=2.10"), ("macho_arm64_marker_2_12", MAC, "torch>=2.12")],
        {"TW601", "TW602"},
    ),
}


def _write_set(name: str, built: dict[str, Path], out: Path) -> list[Path]:
    return release_wheels(
        built, out, [(scenario, tag, (requires,)) for scenario, tag, requires in SETS[name][0]]
    )


def _codes(result: subprocess.CompletedProcess[str]) -> dict[str, set[str]]:
    doc: dict[str, Any] = json.loads(result.stdout)
    found: dict[str, set[str]] = {}
    for f in doc["findings"]:
        found.setdefault(Path(f["path"]).name, set()).add(f["code"])
    return found


@pytest.mark.parametrize("name", sorted(SETS))
def test_release_rules(name: str, built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    paths = _write_set(name, built_fixtures, tmp_path)
    result = torchwheel("check", "--no-config", "--format", "json", "--select", "TW6", str(tmp_path))
    assert result.returncode == (1 if SETS[name][1] & {"TW601", "TW603"} else 0), result.stderr
    found = _codes(result)
    assert {p.name for p in paths} == set(found)
    for codes in found.values():
        assert codes == SETS[name][1]
    alone = torchwheel("check", "--no-config", "--format", "json", "--select", "TW6", str(paths[0]))
    assert _codes(alone) == {}  # one wheel is no release


def _torch_lines(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return [
            ln.split(":", 1)[1].strip()
            for ln in zf.read(meta).decode().splitlines()
            if ln.startswith("Requires-Dist: torch")
        ]


def test_tag_release_writes_one_requirement_set(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    paths = _write_set("mac_newer", built_fixtures, tmp_path / "in")
    out = tmp_path / "out"
    result = torchwheel("tag", "--no-config", "-w", str(out), *map(str, paths))
    assert result.returncode == 0, result.stderr
    written = sorted(out.glob("*.whl"))
    expected = ['torch>=2.12; sys_platform == "darwin"', 'torch>=2.10; sys_platform != "darwin"']
    assert [_torch_lines(w) for w in written] == [expected, expected]
    check = torchwheel("check", "--no-config", "--format", "json", *map(str, written))
    assert not any(c.startswith("TW6") for codes in _codes(check).values() for c in codes)
    single = torchwheel("tag", "--no-config", "--no-release", "--dry-run", *map(str, paths))
    assert "sys_platform" not in single.stdout  # each wheel on its own: no markers


def test_tag_release_refuses_stable_beside_unstable(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    paths = _write_set("tw603", built_fixtures, tmp_path)
    result = torchwheel(
        "tag", "--no-config", "--release", "--build-torch", "2.13", "--dry-run", *map(str, paths)
    )
    assert result.returncode == 2
    assert "stable and unstable builds in one release" in result.stderr and "--local-label" in result.stderr


def test_tag_release_needs_one_release(
    built_fixtures: dict[str, Path], fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    (path,) = _write_set("tw601", built_fixtures, tmp_path)[:1]
    mixed = torchwheel(
        "tag", "--no-config", "--release", "--dry-run", str(path), str(fixture_wheels["clean"])
    )
    assert mixed.returncode == 2
    assert "--release: the wheels given are not one release (demo-stable 1.0.0, relset 1.0.0)" in mixed.stderr


def test_build_tag_and_local_label(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    (path,) = _write_set("tw601", built_fixtures, tmp_path / "in")[:1]
    out = tmp_path / "out"
    result = torchwheel(
        "tag", "--no-config", "-w", str(out), "--build-tag", "2", "--local-label", "torch2.10", str(path)
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("*.whl")
    assert wheel.name == f"relset-1.0.0+torch2.10-2-{LINUX}.whl"
    with zipfile.ZipFile(wheel) as zf:
        assert "Version: 1.0.0+torch2.10" in zf.read("relset-1.0.0+torch2.10.dist-info/METADATA").decode()
        assert "Build: 2" in zf.read("relset-1.0.0+torch2.10.dist-info/WHEEL").decode()
    bad = torchwheel("tag", "--no-config", "--dry-run", "--build-tag", "x1", str(path))
    assert bad.returncode == 2 and "--build-tag 'x1'" in bad.stderr
    # pip installs it, lists the local version (freeze reads the .dist-info name), and removes
    # it cleanly
    python = fresh_venv(tmp_path / "venv")
    assert pip_install(python, "--no-deps", "--no-index", str(wheel)).returncode == 0
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "list", "--format", "freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "relset==1.0.0+torch2.10" in listed.splitlines()
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "uninstall", "-y", "relset"],
        check=True,
        capture_output=True,
    )
    (site,) = (tmp_path / "venv" / "lib").glob("python3*/site-packages")
    assert sorted(p.name for p in site.iterdir()) == []
