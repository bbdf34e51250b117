"""``select`` and ``install`` end to end, offline: real extension builds of one release
(stable 2.10, stable 2.12, unstable for this torch) against a target without torch, stub
torches below, between and above the targets, and the real torch 2.13.0 in a fresh venv."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..lib.helpers import fresh_venv, pip_install, torchwheel
from ..lib.release_set import build_release, candidate_folders, site_files, stub_torch_wheel

PLAN = ("--python-version", "3.11", "--platform", "linux_x86_64")


@pytest.fixture(scope="module")
def cands(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return candidate_folders(build_release(), tmp_path_factory.mktemp("candidates"))


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Fresh venvs: no torch, and stub torch 2.9.0 / 2.11.0 / 2.14.0 (metadata only)."""
    root = tmp_path_factory.mktemp("venvs")
    out = {"none": fresh_venv(root / "none")}
    for v in ("2.9.0", "2.11.0", "2.14.0"):
        out[v] = fresh_venv(root / v)
        result = pip_install(out[v], "--no-index", "--no-deps", str(stub_torch_wheel(v, root / "stubs")))
        assert result.returncode == 0, result.stderr
    return out


def _select(*args: str) -> tuple[int, dict[str, Any], str]:
    result = torchwheel("select", "--format", "json", *args)
    doc = json.loads(result.stdout) if result.stdout.startswith("{") else {}
    return result.returncode, doc, result.stderr


def _verdicts(doc: dict[str, Any]) -> dict[str, str]:
    (project,) = doc["projects"]
    return {c["path"]: c["reason"] for c in project["candidates"]}


def _chosen(doc: dict[str, Any]) -> str | None:
    (project,) = doc["projects"]
    return project["chosen"]["path"] if project["chosen"] else None


SOURCES = ("labels", "decoys")


def _folders(cands: dict[str, Path], *names: str) -> list[str]:
    return [str(cands["s210"].parent.parent / n) for n in names]


@pytest.mark.parametrize(
    ("torch", "expected", "why"),
    [
        ("none", None, {"s210": "no torch", "s212": "no torch", "unstable": "no torch"}),
        (
            "2.9.0",
            None,
            # the unstable build's imports are exported by torch 2.12-2.15 (the version axis);
            # its own pin, torch==2.13.*, is what keeps it off 2.14 (the requirement axis)
            {"s210": "older than its target", "s212": "older", "unstable": "the target has 2.9"},
        ),
        (
            "2.11.0",
            "s210",
            {"s212": "torch 2.11.0 is older than its target", "unstable": "the target has 2.11"},
        ),
        (
            "2.14.0",
            "s212",
            {
                "s210": "but 0.1.0+torch2.12 is the higher version: PEP 440 ranks a local label above",
                "unstable": "Requires-Dist torch==2.13.* excludes torch 2.14.0",
            },
        ),
    ],
)
def test_select_for_stub_torches(
    cands: dict[str, Path], venvs: dict[str, Path], torch: str, expected: str | None, why: dict[str, str]
) -> None:
    code, doc, err = _select("--python", str(venvs[torch]), *_folders(cands, *SOURCES))
    assert code == (0 if expected else 1), err
    assert _chosen(doc) == (str(cands[expected]) if expected else None)
    reasons = _verdicts(doc)
    for role, text in why.items():
        assert text in reasons[str(cands[role])], reasons[str(cands[role])]
    assert "platform macosx_11_0_arm64 does not run" in reasons[str(cands["wrong_platform"])]
    assert "Python tag cp312-cp312 does not fit Python 3.11" in reasons[str(cands["wrong_python"])]
    assert doc["target"]["torch"] == (None if torch == "none" else torch)


def test_select_text_lists_every_other_candidate(cands: dict[str, Path], venvs: dict[str, Path]) -> None:
    result = torchwheel("select", "--python", str(venvs["2.11.0"]), *_folders(cands, *SOURCES))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"target: {venvs['2.11.0']}") and "torch 2.11.0" in lines[0]
    assert lines[1].startswith(f"twdemo-stable: chose {cands['s210'].name}")
    assert "[from WHEEL Torch-ABI]" in lines[1]
    assert len([line for line in lines if line.startswith("  rejected ")]) == 4


@pytest.mark.parametrize(("torch", "folder"), [("2.11", "t210"), ("2.12", "t212"), ("2.14", "t212")])
def test_same_file_name_in_two_folders(cands: dict[str, Path], torch: str, folder: str) -> None:
    assert cands["same210"].name == cands["same212"].name
    code, doc, err = _select("--torch", torch, *PLAN, *_folders(cands, "t210", "t212"))
    assert code == 0, err
    assert Path(_chosen(doc) or "").parent.name == folder


@pytest.mark.parametrize(("torch", "build"), [("2.11", "1"), ("2.13", "2")])
def test_builds_told_apart_by_build_tag(cands: dict[str, Path], torch: str, build: str) -> None:
    code, doc, err = _select("--torch", torch, *PLAN, *_folders(cands, "builds"))
    assert code == 0, err
    assert doc["projects"][0]["chosen"]["build"] == build


def test_plan_for_another_python_and_platform(cands: dict[str, Path]) -> None:
    code, doc, _ = _select(
        "--torch",
        "2.13",
        "--python-version",
        "3.12",
        "--platform",
        "macosx_14_0_arm64",
        *_folders(cands, *SOURCES),
    )
    assert code == 0
    assert _chosen(doc) == str(cands["wrong_platform"])  # the macOS copy is the right one for this plan


def test_untagged_wheels_fall_back_to_their_binaries(tmp_path: Path) -> None:
    built = build_release()
    folder = tmp_path / "raw"
    folder.mkdir()
    shutil.copy2(built["stable-2.10"], folder)
    code, doc, _ = _select("--torch", "2.13", *PLAN, str(folder))
    assert code == 0
    assert doc["projects"][0]["chosen"]["torch_abi"] == {
        "kind": "stable",
        "floor": "2.10.0",
        "minor": None,
        "builds": [],
        "releases_from": None,
        "torch_build": "any",
        "gpu_code": [],
        "unknown": [],
        "newer_than_tables": None,
        "summary": "stable >= 2.10",
        "source": "binaries (untagged wheel)",
    }


def _index(root: Path, wheels: list[Path]) -> Path:
    """A PEP 503 index as a project would serve it (sha256 fragments on the links)."""
    import hashlib

    project = root / "simple" / "twdemo-stable"
    project.mkdir(parents=True)
    links = []
    for w in wheels:
        shutil.copy2(w, project / w.name)
        digest = hashlib.sha256(w.read_bytes()).hexdigest()
        links.append(f'<a href="{w.name.replace("+", "%2B")}#sha256={digest}">{w.name}</a>')
    (project / "index.html").write_text("<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>")
    (root / "simple" / "index.html").write_text(
        '<html><body><a href="twdemo-stable/">twdemo-stable</a></body></html>'
    )
    return root / "simple"


def test_local_index_by_path_and_file_url(cands: dict[str, Path], tmp_path: Path) -> None:
    simple = _index(tmp_path, [cands["s210"], cands["s212"], cands["unstable"]])
    for where in (str(simple), simple.as_uri(), (simple / "twdemo-stable" / "index.html").as_uri()):
        code, doc, err = _select("--torch", "2.12", *PLAN, "-i", where)
        assert code == 0, err
        assert Path(_chosen(doc) or "").name == cands["s212"].name


def test_unreadable_index_page_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "simple").mkdir()
    (tmp_path / "simple" / "index.html").write_bytes(b"<a href='x/'>\xff\xfe not utf-8</a>")
    result = torchwheel("select", "--torch", "2.12", *PLAN, "-i", (tmp_path / "simple").as_uri())
    assert result.returncode == 2
    assert result.stderr.startswith("torchwheel: error: ") and "unreadable index page" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_corrupt_candidate_is_skipped_with_its_reason(cands: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy2(cands["s210"], folder)
    bad = folder / "twdemo_stable-0.2.0-cp39-abi3-linux_x86_64.whl"
    bad.write_bytes(cands["s212"].read_bytes()[:3000])
    code, doc, err = _select("--torch", "2.12", *PLAN, str(folder))
    # the corrupt file might have been the choice: the project is unreadable (exit 2), and the
    # report still says what the readable files give
    assert code == 2
    assert doc["projects"][0]["outcome"] == "unreadable"
    assert Path(_chosen(doc) or "").name == cands["s210"].name
    (skipped,) = doc["skipped"]
    assert skipped["location"] == str(bad) and "zip archive" in skipped["reason"]
    assert skipped["project"] == "twdemo-stable"
    assert err.count("\n") == 1 and "twdemo-stable: a candidate could not be read" in err and bad.name in err
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    shutil.move(bad, only_bad / bad.name)
    result = torchwheel("select", "--torch", "2.12", *PLAN, str(only_bad))
    assert result.returncode == 2 and "zip archive" in result.stdout
    assert len(result.stderr.strip().splitlines()) == 1 and "no readable candidate" in result.stderr


def test_python_that_is_not_a_python(cands: dict[str, Path], tmp_path: Path) -> None:
    """A program that runs but is no Python, or a venv folder given for its interpreter: one
    line that says so (not a JSON decoder's message)."""
    cases = {"/bin/echo": "not a Python interpreter (it answered", "/bin/true": "it printed nothing"}
    cases[str(tmp_path)] = "a directory, not an interpreter"
    for python, said in cases.items():
        for command in ("select", "install"):
            result = torchwheel(command, "--python", python, *_folders(cands, "labels"))
            assert result.returncode == 2
            assert result.stderr.startswith(f"torchwheel: error: --python {python}: "), result.stderr
            assert said in result.stderr and "Expecting value" not in result.stderr
            assert len(result.stderr.strip().splitlines()) == 1


def test_an_unknown_name_is_nothing_fits_with_what_the_sources_hold(cands: dict[str, Path]) -> None:
    for command in ("select", "install"):
        result = torchwheel(command, "--name", "nosuch", *_folders(cands, "labels"))
        assert result.returncode == 1, result.stderr
        assert "nosuch: no wheel of this project in the sources (they hold: twdemo-stable)" in result.stderr
        assert "no readable candidates" not in result.stdout + result.stderr


def test_python_that_does_not_run(cands: dict[str, Path], tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    fake.chmod(0o755)
    for python in (str(tmp_path / "missing"), str(fake)):
        for command in ("select", "install"):
            result = torchwheel(command, "--python", python, *_folders(cands, "labels"))
            assert result.returncode == 2
            assert result.stderr.startswith(f"torchwheel: error: --python {python}: "), result.stderr
            assert len(result.stderr.strip().splitlines()) == 1


# -- install ------------------------------------------------------------------------------------


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_install_list_uninstall_on_a_stub_torch(cands: dict[str, Path], venvs: dict[str, Path]) -> None:
    python = venvs["2.11.0"]
    before = site_files(python)
    result = torchwheel("install", "--python", str(python), *_folders(cands, *SOURCES))
    assert result.returncode == 0, result.stderr
    assert f"installed {cands['s210'].name}" in result.stdout
    assert "twdemo_stable==0.1.0" in _pip(python, "list", "--format", "freeze").stdout.splitlines()
    (installer,) = (python.parent.parent / "lib").glob(
        "python3*/site-packages/twdemo_stable-0.1.0.dist-info/INSTALLER"
    )
    assert installer.read_text().startswith("torchwheel ")
    installed = site_files(python)
    again = torchwheel("install", "--python", str(python), *_folders(cands, *SOURCES))  # as pip and uv: done
    assert again.returncode == 0, again.stderr
    assert f"already installed: {cands['s210'].name}" in again.stdout and "nothing to do" in again.stdout
    assert site_files(python) == installed
    removed = _pip(python, "uninstall", "-y", "twdemo-stable")
    assert removed.returncode == 0, removed.stderr
    assert site_files(python) == before


@pytest.mark.parametrize(
    ("torch", "why", "forced_past"),
    [("none", "no torch", "no torch"), ("2.9.0", "older than its target", "the target has 2.9")],
)
def test_install_refuses_and_force_overrides(
    cands: dict[str, Path], venvs: dict[str, Path], torch: str, why: str, forced_past: str
) -> None:
    """--force installs what pip would: the highest version (the +torch2.13 build)."""
    python = venvs[torch]
    before = site_files(python)
    result = torchwheel("install", "--python", str(python), *_folders(cands, "labels"))
    assert result.returncode == 1
    assert why in result.stderr and "install refused" in result.stderr
    assert site_files(python) == before
    forced = torchwheel("install", "--force", "--python", str(python), *_folders(cands, "labels"))
    assert forced.returncode == 0, forced.stderr
    assert "WARNING: --force" in forced.stderr and forced_past in forced.stderr
    assert f"installed {cands['unstable'].name}" in forced.stderr
    assert _pip(python, "uninstall", "-y", "twdemo-stable").returncode == 0
    assert site_files(python) == before


def test_upgrade_replaces_and_rolls_back(cands: dict[str, Path], venvs: dict[str, Path]) -> None:
    """--upgrade moves the installed version aside, installs the choice, and puts the old one
    back when the install fails (a file in the way of the new .dist-info); then succeeds."""
    python = venvs["2.14.0"]
    (site,) = (python.parent.parent / "lib").glob("python3*/site-packages")
    clean = site_files(python)
    old = torchwheel("install", "--python", str(python), *_folders(cands, "t210"))
    assert old.returncode == 0, old.stderr
    blocker = site / "twdemo_stable-0.1.0+torch2.12.dist-info" / "WHEEL"
    blocker.parent.mkdir()
    blocker.write_text("in the way\n")
    before = site_files(python)
    failed = torchwheel("install", "--upgrade", "--python", str(python), *_folders(cands, "labels"))
    assert failed.returncode == 2, failed.stderr
    assert (
        "install failed, nothing left behind; twdemo_stable-0.1.0.dist-info is back in place" in failed.stderr
    )
    assert site_files(python) == before
    assert not list(site.glob(".torchwheel-upgrade-*"))
    shutil.rmtree(blocker.parent)
    done = torchwheel("install", "--upgrade", "--python", str(python), *_folders(cands, "labels"))
    assert done.returncode == 0, done.stderr
    assert f"replaced twdemo-stable 0.1.0 with {cands['s212'].name}" in done.stdout
    assert "twdemo_stable==0.1.0+torch2.12" in _pip(python, "list", "--format", "freeze").stdout.splitlines()
    assert not (site / "twdemo_stable-0.1.0.dist-info").exists()
    assert _pip(python, "uninstall", "-y", "twdemo-stable").returncode == 0
    assert site_files(python) == clean


def test_several_projects_need_their_names(
    cands: dict[str, Path], fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    from ..lib.publish_helpers import venv_with_torch

    folder = tmp_path / "dist"
    folder.mkdir()
    shutil.copy2(cands["s210"], folder)
    shutil.copy2(fixture_wheels["clean"], folder)
    python = venv_with_torch(tmp_path / "venv", "2.14.0", tmp_path / "stub")
    before = site_files(python)
    refused = torchwheel("install", "--python", str(python), str(folder))
    assert refused.returncode == 2
    assert (
        "the sources hold 2 projects (demo-stable, twdemo-stable): name the ones to install" in refused.stderr
    )
    assert site_files(python) == before
    one = torchwheel("install", "--python", str(python), "--name", "twdemo-stable", str(folder))
    assert one.returncode == 0, one.stderr
    listed = _pip(python, "list", "--format", "freeze").stdout.splitlines()
    assert {line.split("==")[0] for line in listed} == {"torch", "twdemo_stable"}
    both = torchwheel(
        "install",
        "--upgrade",
        "--python",
        str(python),
        "--name",
        "twdemo-stable",
        "--name",
        "demo_stable",
        str(folder),
    )
    assert both.returncode == 0, both.stderr
    assert "already installed: " in both.stdout and "installed demo_stable-1.0.0" in both.stdout


def test_failed_install_leaves_nothing_behind(cands: dict[str, Path], venvs: dict[str, Path]) -> None:
    """A file in the way (a half-removed older install): installer stops part-way; what it
    wrote is removed again and the file that was there stays."""
    python = venvs["2.14.0"]
    (site,) = (python.parent.parent / "lib").glob("python3*/site-packages")
    blocker = site / "twdemo_stable" / "__init__.py"  # written after _C.abi3.so
    blocker.parent.mkdir()
    blocker.write_text("# someone else's file\n")
    before = site_files(python)
    result = torchwheel("install", "--python", str(python), *_folders(cands, "labels"))
    assert result.returncode == 2
    assert "install failed, nothing left behind" in result.stderr and "already exists" in result.stderr
    assert site_files(python) == before
    shutil.rmtree(blocker.parent)


def test_install_refuses_a_wheel_whose_record_does_not_verify(
    cands: dict[str, Path], tmp_path: Path, venvs: dict[str, Path]
) -> None:
    import zipfile

    def tampered(label: str, change: Callable[[bytes], bytes]) -> Path:
        folder = tmp_path / label
        folder.mkdir()
        target = folder / cands["s210"].name
        with zipfile.ZipFile(cands["s210"]) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                data = src.read(info)
                dst.writestr(info, change(data) if info.filename.endswith("__init__.py") else data)
        return folder

    python = venvs["2.11.0"]
    before = site_files(python)
    # the same size, other bytes: only reading the member shows it; installer does, and refuses
    same_size = tampered("same-size", lambda data: data[:-2] + b"#\n")
    result = torchwheel("install", "--python", str(python), str(same_size))
    assert result.returncode == 2 and "nothing left behind" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert site_files(python) == before
    # another size: RECORD's size disagrees, which selection sees (TW402) before installing
    longer = tampered("longer", lambda data: data + b"# tampered\n")
    result = torchwheel("install", "--python", str(python), str(longer))
    assert result.returncode == 2 and "TW402" in result.stderr and "size-mismatch" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert site_files(python) == before


@pytest.fixture(scope="module")
def real_venv(tmp_path_factory: pytest.TempPathFactory, torch_wheel: Path) -> Path:
    """A fresh venv with the real torch 2.13.0 from this machine's disk (~1-2 min)."""
    python = fresh_venv(tmp_path_factory.mktemp("real") / "venv")
    # --no-compile: pip would compile torch's 2,000 modules (a third of the install); the few
    # the test imports compile on import
    result = pip_install(python, "--no-compile", "--find-links", str(torch_wheel.parent), "torch==2.13.0")
    assert result.returncode == 0, result.stderr[-2000:]
    return python


def _run(python: Path, code: str) -> str:
    run = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300, cwd=python.parent)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip()


def test_real_torch_select_install_run_uninstall(cands: dict[str, Path], real_venv: Path) -> None:
    before = site_files(real_venv)
    code, doc, err = _select("--python", str(real_venv), *_folders(cands, *SOURCES))
    assert code == 0, err
    assert _chosen(doc) == str(cands["unstable"])  # cp311-cp311 ranks before abi3 (pip's order)
    reasons = _verdicts(doc)
    assert "fits (stable >= 2.12 loads on torch 2.13.0)" in reasons[str(cands["s212"])]
    # the version-locked build, installed and run
    result = torchwheel("install", "--python", str(real_venv), *_folders(cands, *SOURCES))
    assert result.returncode == 0, result.stderr
    assert (
        _run(
            real_venv,
            "import torch, twdemo_unstable; print(torch.ops.twdemo_unstable.scale(torch.ones(3), 2.0).tolist())",
        )
        == "[2.0, 2.0, 2.0]"
    )
    assert _pip(real_venv, "uninstall", "-y", "twdemo-stable").returncode == 0
    assert site_files(real_venv) == before
    # without it, the newest stable target that fits: 2.12
    result = torchwheel("install", "--python", str(real_venv), *_folders(cands, "t210", "t212"))
    assert result.returncode == 0, result.stderr
    assert "t212" in result.stderr.splitlines()[1]
    out = "import torch, twdemo_stable; print(torch.ops.twdemo.scale(torch.arange(4, dtype=torch.float32), 2.5).tolist())"
    assert _run(real_venv, out) == "[0.0, 2.5, 5.0, 7.5]"
    assert _pip(real_venv, "uninstall", "-y", "twdemo-stable").returncode == 0
    assert site_files(real_venv) == before


def test_variant_label_and_identical_copies(cands: dict[str, Path], tmp_path: Path) -> None:
    """A wheel-variant name (draft: a label after the platform tag) is read like any wheel
    and keeps its label; the same bytes found again in another folder are listed once."""
    variants, copies = tmp_path / "variants", tmp_path / "copies"
    variants.mkdir()
    copies.mkdir()
    labelled = variants / cands["s212"].name.replace(".whl", "-torch212.whl")
    shutil.copy2(cands["s212"], labelled)
    shutil.copy2(cands["s210"], copies)
    code, doc, err = _select("--torch", "2.13", *PLAN, str(variants), *_folders(cands, "labels"), str(copies))
    assert code == 0, err
    (project,) = doc["projects"]
    by_path = {c["path"]: c for c in project["candidates"]}
    assert by_path[str(labelled)]["variant"] == "torch212"
    assert by_path[str(labelled)]["torch_abi"]["floor"] == "2.12.0"
    assert doc["duplicates"] == [
        {"location": str(copies / cands["s210"].name), "reason": f"the same file as {cands['s210']}"}
    ]
