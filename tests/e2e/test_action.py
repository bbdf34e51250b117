"""action.yml, run step by step the way the GitHub runner runs a composite action.

Each step's ``${{ ... }}`` expressions are substituted in its ``env:`` (the scripts hold none:
inputs reach them as environment variables only), its script is written to a file and run by
the command line of ``shell: bash`` (``bash --noprofile --norc -eo pipefail {0}``) in the
workspace, with fresh ``GITHUB_OUTPUT``, ``GITHUB_ENV``, ``GITHUB_PATH`` and
``GITHUB_STEP_SUMMARY`` files per step and ``GITHUB_WORKSPACE``, ``RUNNER_TEMP``,
``GITHUB_ACTION_PATH`` set; a failed step ends the run, as it does there.

The install step runs as written, from a copy of this checkout, into a fresh virtual
environment made by a ``python3`` on PATH. Only pip is kept off the network: PIP_NO_INDEX,
``pip-args: --no-build-isolation``, and torchwheel's dependencies (the test environment's
site-packages, without torch and torchwheel) on PYTHONPATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from ..lib.helpers import REPO

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
DOC = (REPO / "docs" / "cibuildwheel.md").read_text()
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
STEP_KEYS = {"name", "id", "shell", "env", "run"}
GITHUB = {"github.action_repository": "OWNER/torchwheel", "github.action_ref": "v1"}
RULES = "https://github.com/OWNER/torchwheel/blob/v1/docs/reference/rules.md"


@dataclass
class ActionRun:
    ran: list[str] = field(default_factory=list)  # step names, in order
    failed: str | None = None  # the step that failed
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    summary: str = ""
    outputs: dict[str, str] = field(default_factory=dict)  # the action's outputs
    step_outputs: dict[str, dict[str, str]] = field(default_factory=dict)

    def annotations(self, level: str) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith(f"::{level} ")]


def file_commands(path: Path) -> dict[str, str]:
    """``GITHUB_OUTPUT``/``GITHUB_ENV``: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    values: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    while lines:
        line = lines.pop(0)
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter)
            values[name], lines = "\n".join(lines[:end]), lines[end + 1 :]
        elif line:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def run_action(
    inputs: dict[str, str], workspace: Path, runner_temp: Path, action_path: Path, env: dict[str, str]
) -> ActionRun:
    spec = ACTION["inputs"]
    assert set(inputs) <= set(spec), set(inputs) - set(spec)
    values = {name: inputs.get(name, str(spec[name].get("default", ""))) for name in spec}
    run = ActionRun()

    def evaluate(expression: str) -> str:
        if m := re.fullmatch(r"inputs\.([\w-]+)", expression):
            return values[m[1]]
        if expression == "github.action_path":
            return str(action_path)
        if expression in GITHUB:  # the runner's github context for the step of an action
            return GITHUB[expression]
        if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
            return run.step_outputs.get(m[1], {}).get(m[2], "")
        raise AssertionError(f"an expression this test does not evaluate: {expression}")

    def substitute(text: str) -> str:
        return EXPRESSION.sub(lambda m: evaluate(m[1]), text)

    job_env = {
        **env,
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(runner_temp),
        "RUNNER_OS": "Linux",
    }
    path_added: list[str] = []
    commands = runner_temp / "_runner_file_commands"
    commands.mkdir(parents=True, exist_ok=True)
    for index, step in enumerate(ACTION["runs"]["steps"]):
        assert set(step) <= STEP_KEYS and step["shell"] == "bash", step
        assert "${{" not in step["run"], f"an expression in the script of {step['name']!r}"
        files = {k: commands / f"{k.lower()}_{index}" for k in ("OUTPUT", "ENV", "PATH", "STEP_SUMMARY")}
        for file in files.values():
            file.touch()
        step_env = {
            **job_env,
            **{k: substitute(str(v)) for k, v in step.get("env", {}).items()},
            **{f"GITHUB_{k}": str(v) for k, v in files.items()},
            "GITHUB_ACTION_PATH": str(action_path),
            "PATH": os.pathsep.join([*reversed(path_added), job_env["PATH"]]),
        }
        script = runner_temp / f"{uuid.uuid4()}.sh"
        script.write_text(step["run"])
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace, env=step_env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        run.ran.append(step["name"])
        run.stdout += result.stdout
        run.stderr += result.stderr
        run.step_outputs[step.get("id", f"__{index}")] = file_commands(files["OUTPUT"])
        job_env.update(file_commands(files["ENV"]))
        path_added += [line for line in files["PATH"].read_text().splitlines() if line]
        run.summary += files["STEP_SUMMARY"].read_text()
        if result.returncode != 0:
            run.failed, run.code = step["name"], result.returncode
            break
    run.outputs = {name: substitute(str(o["value"])) for name, o in ACTION["outputs"].items()}
    return run


@pytest.fixture(scope="module")
def action_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The action's checkout, as the runner puts it in _actions/OWNER/torchwheel/v1: the
    files of this repository that action.yml and the pip install need."""
    path = tmp_path_factory.mktemp("action") / "torchwheel"
    path.mkdir()
    for name in ("action.yml", "pyproject.toml", "README.md", "scripts/action_summary.py"):
        (path / name).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / name, path / name)
    shutil.copytree(REPO / "src", path / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return path


@pytest.fixture(scope="module")
def runner_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A runner's environment: a ``python3`` on PATH (this interpreter's base, 3.11) and no
    torchwheel on it; pip kept off the network (see the module's docstring)."""
    root = tmp_path_factory.mktemp("runner")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(Path(getattr(sys, "_base_executable", sys.executable)))
    venv_bin = Path(sys.executable).parent
    path = os.pathsep.join(
        [str(bin_dir), *(p for p in os.environ["PATH"].split(os.pathsep) if p and Path(p) != venv_bin)]
    )
    assert shutil.which("torchwheel", path=path) is None
    site = next(p for p in map(Path, sys.path) if p.name == "site-packages" and p.is_relative_to(sys.prefix))
    deps = root / "deps"
    deps.mkdir()
    for entry in site.iterdir():
        if not entry.name.startswith(("torch", "__editable__", "_torchwheel")) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "PIP_", "VIRTUAL_ENV"))
    }
    return {
        **env,
        "PATH": path,
        "PYTHONPATH": str(deps),
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": os.devnull,
    }


def workflow_inputs() -> dict[str, str]:
    """The ``with:`` of the torchwheel step of the page's workflow snippet."""
    (snippet,) = re.findall(r"```yaml\n(.*?)```", DOC.split("## In GitHub Actions", 1)[1], re.S)
    steps = yaml.safe_load(snippet)["jobs"]["wheels"]["steps"]
    (step,) = [s for s in steps if str(s.get("uses", "")).endswith("/torchwheel@v1")]
    return {k: str(v) for k, v in step.get("with", {}).items()}


OFFLINE = {"pip-args": "--no-build-isolation"}


def workspace_with(tmp_path: Path, wheels: dict[str, Path], folder: str = "wheelhouse") -> Path:
    workspace = tmp_path / "workspace"
    (workspace / folder).mkdir(parents=True)
    for wheel in wheels.values():
        shutil.copy(wheel, workspace / folder / wheel.name)
    return workspace


def test_clean_and_warning_wheels_pass(
    fixture_wheels: dict[str, Path], tmp_path: Path, action_path: Path, runner_env: dict[str, str]
) -> None:
    inputs = workflow_inputs()
    assert inputs == {"wheels": "wheelhouse/*.whl"}
    assert ACTION["inputs"]["version"]["default"] == ""  # until a release: the action's own checkout
    wheels = {k: fixture_wheels[k] for k in ("clean", "tw101")}  # tw101: one warning
    workspace = workspace_with(tmp_path, wheels)
    run = run_action({**inputs, **OFFLINE}, workspace, tmp_path / "temp", action_path, runner_env)
    assert run.failed is None, run.stdout + run.stderr
    assert run.ran == [s["name"] for s in ACTION["runs"]["steps"]]
    assert run.annotations("error") == []
    (warning,) = run.annotations("warning")
    assert warning.startswith(f"::warning file=wheelhouse/{wheels['tw101'].name},title=torchwheel (TW101)::")
    assert run.outputs == {"exit-code": "0", "errors": "0", "warnings": "1", "wheels": "2"}
    assert "torchwheel, version 0.1.0" in run.stdout
    # the torchwheel that ran is the one the install step put in its own environment
    tool = run.step_outputs["install"]["python"]
    assert Path(tool).is_relative_to(tmp_path / "temp")
    where = subprocess.run(
        [tool, "-c", "import torchwheel; print(torchwheel.__file__)"],
        capture_output=True, text=True, env=runner_env, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(Path(tool).parents[1])
    assert "`torchwheel check` passed: 0 error(s), 1 warning(s) in 2 input(s)." in run.summary
    # the warning is listed too, with its rule's link
    (row,) = [line for line in run.summary.splitlines() if "TW101" in line]
    assert row.startswith(
        f"| `wheelhouse/{wheels['tw101'].name}` | [TW101]({RULES}#tw101-marker-missing-warning) "
    )
    assert re.search(r"^\| wheel \|.*\n\|---\|", run.summary, re.M)
    for wheel in wheels.values():
        assert re.search(rf"^\| `{re.escape(wheel.name)}` \|", run.summary, re.M)  # no wheel marked failing


def test_errors_fail_the_job_after_the_summary(
    fixture_wheels: dict[str, Path], tmp_path: Path, action_path: Path, runner_env: dict[str, str]
) -> None:
    wheels = {k: fixture_wheels[k] for k in ("tw201", "tw101")}
    workspace = workspace_with(tmp_path, wheels, folder="dist")
    inputs = {"wheels": "dist/w201-*.whl\ndist/w101-*.whl", "args": "--ignore TW101", **OFFLINE}
    run = run_action(inputs, workspace, tmp_path / "temp", action_path, runner_env)
    assert (run.failed, run.code) == ("Verdict", 1), run.stdout + run.stderr
    (error,) = run.annotations("error")
    name = wheels["tw201"].name
    assert error.startswith(f"::error file=dist/{name},title=torchwheel (TW201)::w201/elf_contract_violation")
    assert run.annotations("warning") == []  # --ignore TW101 reached check
    assert "torchwheel check found errors (exit 1)" in run.stderr
    assert run.outputs == {"exit-code": "1", "errors": "1", "warnings": "0", "wheels": "2"}
    assert "`torchwheel check` failed: errors found: 1 error(s), 0 warning(s) in 2 input(s)." in run.summary
    # every finding in the summary: wheel, code with its rule's link, severity, message
    link = f"[TW201]({RULES}#tw201-target-too-old-error)"
    (row,) = [line for line in run.summary.splitlines() if line.startswith(f"| `dist/{name}` |")]
    message = r"w201/elf\_contract\_violation.abi3.so: \[x86\_64\] declares torch 2.10.0 but imports "
    assert row.startswith(
        f"| `dist/{name}` | {link} | error | {message}"
    )  # markdown's own characters escaped
    assert "torch\\_from\\_blob (2.11)" in row
    # and the failing wheel is marked in the matrix; the other is not
    assert f"| ⛔ `{name}` (errors: TW201) |" in run.summary
    assert f"| `{wheels['tw101'].name}` |" in run.summary


def test_an_unreadable_wheel_is_exit_2_with_an_annotation(
    fixture_wheels: dict[str, Path], tmp_path: Path, action_path: Path, runner_env: dict[str, str]
) -> None:
    workspace = workspace_with(tmp_path, {"clean": fixture_wheels["clean"]})
    shutil.copy(fixture_wheels["bad_not_a_zip"], workspace / "wheelhouse" / "bad-1.0%-py3-none-any.whl")
    run = run_action(OFFLINE, workspace, tmp_path / "temp", action_path, runner_env)
    assert (run.failed, run.code) == ("Verdict", 2), run.stdout + run.stderr
    # said once in the log: the annotation, with file= and its % escaped; no stderr line of
    # check's or of the matrix's repeats it
    (error,) = run.annotations("error")
    assert error.startswith(
        "::error file=wheelhouse/bad-1.0%25-py3-none-any.whl,title=torchwheel (input error)::"
        "bad-1.0%25-py3-none-any.whl: not a zip archive"
    )
    assert (run.stdout + run.stderr).count("not a zip archive") == 1
    assert "torchwheel check could not read an input (exit 2)" in run.stderr
    # the clean wheel was checked all the same: its counts, beside the input it could not read
    assert run.outputs == {"exit-code": "2", "errors": "0", "warnings": "0", "wheels": "2"}
    assert (
        "`torchwheel check` failed: an input could not be read (exit 2); the others: "
        "0 error(s), 0 warning(s) in 2 input(s)."
    ) in run.summary
    assert (
        "| `wheelhouse/bad-1.0%-py3-none-any.whl` | bad-1.0%-py3-none-any.whl: not a zip archive"
        in run.summary
    )
    assert "see the job log" not in run.summary


def test_an_unreadable_wheel_hides_no_other_wheels_findings(
    fixture_wheels: dict[str, Path], tmp_path: Path, action_path: Path, runner_env: dict[str, str]
) -> None:
    """Issue 47: one unreadable wheel of a wheelhouse stopped check, and the other wheels'
    errors were printed nowhere. Now each is judged: the error's annotation and row, the
    unreadable wheel's annotation and row, the counts, and exit 2 (an input was unreadable)."""
    workspace = workspace_with(tmp_path, {"clean": fixture_wheels["clean"], "tw201": fixture_wheels["tw201"]})
    shutil.copy(fixture_wheels["bad_not_a_zip"], workspace / "wheelhouse" / "aaa-1.0-py3-none-any.whl")
    run = run_action(OFFLINE, workspace, tmp_path / "temp", action_path, runner_env)
    assert (run.failed, run.code) == ("Verdict", 2), run.stdout + run.stderr
    titles = sorted(line.split("title=", 1)[1].split("::", 1)[0] for line in run.annotations("error"))
    assert titles == ["torchwheel (TW201)", "torchwheel (input error)"], run.stdout
    assert run.outputs == {"exit-code": "2", "errors": "1", "warnings": "0", "wheels": "3"}
    assert "could not be read (exit 2); the others: 1 error(s), 0 warning(s) in 3 input(s)." in run.summary
    assert (
        "| `wheelhouse/aaa-1.0-py3-none-any.whl` | aaa-1.0-py3-none-any.whl: not a zip archive" in run.summary
    )
    assert "| error |" in run.summary and "TW201" in run.summary  # the finding's row
    assert f"| ⛔ `{fixture_wheels['tw201'].name}` (errors: TW201) |" in run.summary


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("--ignore TW999", "unknown rule code TW999 in --ignore (did you mean "),
        ("--bogus", "No such option '--bogus'"),  # click's own: the action makes the annotation
    ],
)
def test_a_usage_error_is_reported_as_one(
    args: str,
    message: str,
    fixture_wheels: dict[str, Path],
    tmp_path: Path,
    action_path: Path,
    runner_env: dict[str, str],
) -> None:
    workspace = workspace_with(tmp_path, {"clean": fixture_wheels["clean"]})
    summary = "false" if args == "--bogus" else "true"
    inputs = {"args": args, "summary": summary, **OFFLINE}
    run = run_action(inputs, workspace, tmp_path / "temp", action_path, runner_env)
    assert (run.failed, run.code) == ("Verdict", 2), run.stdout + run.stderr
    (error,) = run.annotations("error")
    assert error.startswith(f"::error title=torchwheel (usage error)::{message}"), error
    assert "torchwheel check refused its arguments (a usage error, exit 2)" in run.stderr
    assert "torchwheel: error:" not in run.stderr  # said once, as the annotation
    if summary == "false":
        assert run.summary == ""
        return
    assert "an input could not be read" not in run.summary
    assert (
        f"`torchwheel check` failed: a usage error (exit 2), no wheel was checked: {message}" in run.summary
    )


def test_a_pattern_that_matches_nothing_fails_at_once(
    fixture_wheels: dict[str, Path], tmp_path: Path, action_path: Path, runner_env: dict[str, str]
) -> None:
    workspace = workspace_with(tmp_path, {"clean": fixture_wheels["clean"]})
    inputs = {"wheels": "wheelhouse/*.whl dist/*.whl $(touch INJECTED) 100%", **OFFLINE}
    run = run_action(inputs, workspace, tmp_path / "temp", action_path, runner_env)
    assert (run.failed, run.code, run.ran) == ("Find the wheels", 2, ["Find the wheels"])
    assert run.annotations("error") == [
        f"::error title=torchwheel::no file matches the wheels pattern dist/*.whl (in {workspace})",
        f"::error title=torchwheel::no file matches the wheels pattern $(touch (in {workspace})",
        f"::error title=torchwheel::no file matches the wheels pattern INJECTED) (in {workspace})",
        f"::error title=torchwheel::no file matches the wheels pattern 100%25 (in {workspace})",  # escaped
    ]
    assert not list(workspace.rglob("INJECTED*"))  # an input is data, never shell code
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_action({}, empty, tmp_path / "temp2", action_path, runner_env)
    assert (run.failed, run.code) == ("Find the wheels", 2)
    assert run.annotations("error") == [
        f"::error title=torchwheel::no file matches the wheels pattern wheelhouse/*.whl (in {empty})"
    ]


def test_a_version_is_a_requirement_on_the_index(
    fixture_wheels: dict[str, Path], tmp_path: Path, action_path: Path, runner_env: dict[str, str]
) -> None:
    workspace = workspace_with(tmp_path, {"clean": fixture_wheels["clean"]})
    run = run_action({"version": "9.9.9", **OFFLINE}, workspace, tmp_path / "temp", action_path, runner_env)
    assert run.failed == "Install torchwheel" and run.code == 1  # pip's exit: no such version
    assert "torchwheel==9.9.9" in run.stderr  # pip asked for it (and, with no index here, found none)
    assert run.outputs["exit-code"] == ""
