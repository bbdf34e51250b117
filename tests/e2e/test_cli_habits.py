"""The habits ruff taught users, kept by ``torchwheel``: comma lists in ``--select`` and
``--ignore``, ``check --statistics``, infos counted in the summary line, a top-level help of
one line per command, ``[tool.torchwheel]`` found from each input's folder upwards, a
pre-commit hook (run by pre-commit itself), and shell completion (run by bash itself)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

from torchwheel.cli import COMMANDS

from ..lib.helpers import REPO, torchwheel

BIN = Path(sys.executable).parent


def _check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return torchwheel("check", *args, cwd=cwd)


def test_comma_lists_in_select_and_ignore(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    w201, w413 = str(fixture_wheels["tw201"]), str(fixture_wheels["tw413"])
    assert _check(w201, w413, cwd=tmp_path).returncode == 1
    ignored = _check("--ignore", "TW201,TW413", w201, w413, cwd=tmp_path)
    assert ignored.returncode == 0 and "- all clean" in ignored.stdout, ignored.stdout
    both = _check("--format", "json", "--select", "TW201, TW413", w201, w413, cwd=tmp_path)
    assert {f["code"] for f in json.loads(both.stdout)["findings"]} == {"TW201", "TW413"}
    mixed = _check("--select", "TW4", "--select", "TW201,TW999", w201, cwd=tmp_path)
    assert mixed.returncode == 2
    assert mixed.stderr.startswith("torchwheel: error: unknown rule code TW999 in --select (")
    empty = _check("--ignore", "TW201,", w201, cwd=tmp_path)
    assert empty.returncode == 2 and "unknown rule code '' in --ignore" in empty.stderr


def test_statistics_count_every_code(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheels = [str(fixture_wheels[n]) for n in ("per_minor", "tw201", "tw413", "tw709", "clean")]
    document = json.loads(_check("--format", "json", *wheels, cwd=tmp_path).stdout)
    counts: dict[str, int] = {}
    for f in document["findings"]:
        counts[f["code"]] = counts.get(f["code"], 0) + 1
    stats = _check("--statistics", "--format", "json", *wheels, cwd=tmp_path)
    assert stats.returncode == 1  # the exit code is check's
    rows = json.loads(stats.stdout)["statistics"]
    assert {r["code"]: r["count"] for r in rows} == counts
    assert [r["count"] for r in rows] == sorted((r["count"] for r in rows), reverse=True)
    assert json.loads(stats.stdout)["summary"] == document["summary"]
    text = _check("--statistics", *wheels, cwd=tmp_path)
    lines = text.stdout.splitlines()
    assert lines[-1] == _check(*wheels, cwd=tmp_path).stdout.splitlines()[-1]  # the same summary
    for row in rows:  # "  12  TW204  warning  unstable-library", "[*] " where a rewrite fixes it
        mark = "[*] " if row["fixed_by"] else ""
        assert any(
            re.fullmatch(
                rf"\s*{row['count']}  {row['code']}  {row['severity']:<7}  {re.escape(mark)}{row['name']}",
                line,
            )
            for line in lines
        ), (row, lines)
    quiet = _check("--statistics", "-q", *wheels, cwd=tmp_path).stdout.splitlines()
    assert quiet == lines[:-1]
    # findings past max-listed are counted, as the summary counts them
    few = {**os.environ, "TORCHWHEEL_MAX_LISTED": "2"}
    capped = torchwheel("check", "--statistics", "--format", "json", *wheels, cwd=tmp_path, env=few)
    assert {r["code"]: r["count"] for r in json.loads(capped.stdout)["statistics"]} == counts
    assert max(counts.values()) > 2  # so some were omitted
    github = _check("--statistics", "--format", "github", *wheels, cwd=tmp_path)
    assert github.returncode == 2 and "--statistics is for --format text or json" in github.stderr


def test_the_summary_line_counts_infos(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = str(fixture_wheels["tw709"])  # TW709: an info
    document = json.loads(_check("--format", "json", wheel, cwd=tmp_path).stdout)
    infos = document["summary"]["infos"]
    assert infos >= 1
    assert _check(wheel, cwd=tmp_path).stdout.splitlines()[-1] == (
        f"1 input checked: 0 error(s), 0 warning(s), {infos} info(s)"
    )


def test_the_top_level_help_has_one_whole_line_per_command(tmp_path: Path) -> None:
    """No command cut off mid-sentence ("..."), each on one line of an 80-column help."""
    result = torchwheel("--help", cwd=tmp_path, env={**os.environ, "COLUMNS": "80"})
    listed = result.stdout.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == sorted(COMMANDS)
    for line in listed:
        assert len(line) <= 80 and not line.endswith("...") and line.endswith("."), line


def _project(root: Path, table: str) -> Path:
    """A project folder with ``[tool.torchwheel]`` (``table``) and an empty ``dist/``."""
    (root / "dist").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f"[project]\nname = 'p'\n\n[tool.torchwheel]\n{table}\n")
    return root


def test_the_configuration_is_found_from_the_input_upwards(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    project = _project(tmp_path / "project", 'ignore = ["TW201"]')
    nested = project / "sub" / "dist"  # a pyproject.toml without the table is passed over, as ruff does
    nested.mkdir(parents=True)
    (nested.parent / "pyproject.toml").write_text("[project]\nname = 'sub'\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for folder in (project / "dist", nested):
        wheel = shutil.copy2(fixture_wheels["tw201"], folder)
        result = _check(str(wheel), cwd=elsewhere)
        assert result.returncode == 0 and "- all clean" in result.stdout, result.stdout
        assert _check("--no-config", str(wheel), cwd=elsewhere).returncode == 1
    # a wheel with no configuration above it (cibuildwheel's temporary folder) takes the one
    # found from the current folder, as before
    assert _check(str(fixture_wheels["tw201"]), cwd=project).returncode == 0
    assert _check(str(fixture_wheels["tw201"]), cwd=elsewhere).returncode == 1
    # repair and show follow the same configuration
    out = tmp_path / "out"
    repaired = torchwheel(
        "repair", "-w", str(out), str(project / "dist" / fixture_wheels["tw201"].name), cwd=elsewhere
    )
    assert repaired.returncode == 0, repaired.stderr


def test_inputs_under_two_configurations_are_refused(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    a = _project(tmp_path / "a", 'ignore = ["TW201"]')
    b = _project(tmp_path / "b", 'ignore = ["TW413"]')
    wa, wb = (
        shutil.copy2(fixture_wheels["tw201"], a / "dist"),
        shutil.copy2(fixture_wheels["tw413"], b / "dist"),
    )
    result = _check(str(wa), str(wb), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f"torchwheel: error: {wa} and {wb} are configured by different [tool.torchwheel] tables "
        f"({a / 'pyproject.toml'}, {b / 'pyproject.toml'}): check each project in a run of its own, "
        "or pass --no-config\n"
    )
    assert _check("--no-config", str(wa), str(wb), cwd=tmp_path).returncode == 1


def _hooks() -> list[dict[str, object]]:
    loaded: list[dict[str, object]] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    return loaded


def test_the_pre_commit_manifest_is_valid() -> None:
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(str(REPO / ".pre-commit-hooks.yaml"))  # pre-commit's own schema
    assert hook["id"] == "torchwheel-check" and hook["entry"] == "torchwheel check"


def test_the_pre_commit_hook_runs(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """pre-commit itself runs the hook's entry on a repository's wheels: the manifest's hook
    as a local one (``language: system``: the torchwheel installed here stands in for the
    environment pre-commit would build from this repository)."""
    (hook,) = _hooks()
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "home"),
    }
    env |= {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    config = {"repos": [{"repo": "local", "hooks": [{**hook, "language": "system"}]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (repo / "module.py").write_text("x = 1\n")  # not a wheel: never passed to the hook
    shutil.copy2(fixture_wheels["clean"], repo)

    def run() -> subprocess.CompletedProcess[str]:
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
        cmd = [str(BIN / "pre-commit"), "run", "--all-files", "--verbose"]
        return subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env, timeout=300)

    passed = run()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 input checked: 0 error(s)" in passed.stdout  # the wheel alone, not module.py
    shutil.copy2(fixture_wheels["tw201"], repo)
    failed = run()
    assert failed.returncode == 1 and "TW201 error" in failed.stdout and "2 inputs checked" in failed.stdout


def _documented_completion() -> str:
    """The bash line README gives for completion."""
    (line,) = re.findall(
        r'eval "\$\(_TORCHWHEEL_COMPLETE=bash_source torchwheel\)"', (REPO / "README.md").read_text()
    )
    return line


def test_shell_completion_as_documented_completes_in_bash(tmp_path: Path) -> None:
    script = f"""
{_documented_completion()}
complete -p torchwheel
for words in "torchwheel ch" "torchwheel check --stat" "torchwheel sel"; do
    COMPREPLY=()
    read -r -a COMP_WORDS <<< "$words"
    COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
    _torchwheel_completion torchwheel
    echo "${{COMPREPLY[*]}}"
done
"""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "complete -o nosort -F _torchwheel_completion torchwheel",
        "check",
        "--statistics",
        "select",
    ]
    for shell in ("zsh", "fish"):  # the other scripts click writes, as documented beside it
        env = {**os.environ, "_TORCHWHEEL_COMPLETE": f"{shell}_source"}
        source = subprocess.run(
            [str(BIN / "torchwheel")], capture_output=True, text=True, env=env, timeout=120
        )
        assert source.returncode == 0 and "_TORCHWHEEL_COMPLETE" in source.stdout, source.stdout[:200]


# Every command that prints more than its answer takes -q; what each drops is in its --help.
# ``rule`` and ``include`` print the answer alone; ``doctor`` is outside this list (its report is
# issue 46's, still open; it is named so that a new command cannot slip past).
QUIET_EXEMPT = {"rule", "include", "doctor"}


def test_every_command_that_prints_takes_q(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """For each command, the same run with and without -q: the exit code is the same, and -q
    says less: the wheels still written, the errors still said."""
    from ..lib.publish_helpers import venv_with_torch

    clean, unstable, label = (str(fixture_wheels[n]) for n in ("clean", "tw204", "tw413"))
    target = venv_with_torch(tmp_path / "target", "2.13.0", tmp_path / "stubs")
    site = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
    tables = tmp_path / "symbols-False" / "tables.json"  # written by the first run below
    runs: dict[str, list[str]] = {
        "symbols": ["update", str(site), "-o", "{out}/tables.json"],
        "inspect": [
            str(fixture_wheels["clean"]),
            "--symbols",
            str(tables),
        ],  # its table line: for other tables
        "show": [clean, unstable],
        "check": [clean, unstable],
        "compat": ["--against", "installed", clean],
        "tag": ["-w", "{out}", clean],
        "repair": ["-w", "{out}", clean],
        "unlabel": ["-w", "{out}", label],
        "select": ["--torch", "2.12", clean, unstable],
        "install": ["--python", str(target), clean],
        "matrix": [clean, unstable],
        "scan": [str(Path(clean).parent), "-o", "{out}/scan.jsonl", "--progress"],
        "index": [clean, unstable, "-o", "{out}/site"],
    }
    assert set(runs) | QUIET_EXEMPT == set(COMMANDS)
    for command, args in runs.items():
        said: dict[bool, subprocess.CompletedProcess[str]] = {}
        for quiet in (False, True):
            out = tmp_path / f"{command}-{quiet}"
            out.mkdir()
            given = [a.replace("{out}", str(out)) for a in args]
            if command == "inspect":  # a compiled file: unpack the wheel's one library
                with zipfile.ZipFile(given[0]) as zf:
                    given[0] = zf.extract("demo_stable/elf_marker_2_10.abi3.so", out)
            if command == "install" and quiet:
                assert (
                    torchwheel("install", "--python", str(target), "--repair-env", cwd=tmp_path).returncode
                    == 0
                )
                _uninstall(target, "demo_stable")
            flags = (
                ["update", "-q", *given[1:]]
                if command == "symbols" and quiet
                else (["-q"] if quiet else []) + given
            )
            said[quiet] = torchwheel(command, *flags, cwd=tmp_path)
        loud, quiet_run = said[False], said[True]
        assert loud.returncode == quiet_run.returncode, (command, loud.stderr, quiet_run.stderr)
        assert (
            len(quiet_run.stdout + quiet_run.stderr) < len(loud.stdout + loud.stderr) or command == "inspect"
        ), command
        help_text = torchwheel(command, *(["update"] if command == "symbols" else []), "--help", cwd=tmp_path)
        assert "-q, --quiet" in help_text.stdout, command
    # what stays: the choice, the files written, every finding
    assert said_lines(torchwheel("select", "-q", "--torch", "2.12", clean, unstable, cwd=tmp_path)) == [
        line
        for line in said_lines(torchwheel("select", "--torch", "2.12", clean, unstable, cwd=tmp_path))
        if not line.startswith(("target:", "  "))
    ]
    for command in ("tag", "repair", "unlabel"):
        assert list((tmp_path / f"{command}-True").glob("*.whl")), command
    assert (tmp_path / "index-True" / "site" / "index.html").is_file()
    chained = torchwheel(
        "repair",
        "-q",
        "--repair-with",
        "cp {wheel} {repair_dir}/",
        "-w",
        str(tmp_path / "chained"),
        clean,
        cwd=tmp_path,
    )
    assert (chained.returncode, chained.stdout, chained.stderr) == (0, "", "")  # nor the lines about the tool
    assert list((tmp_path / "chained").glob("*.whl"))


def said_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return result.stdout.splitlines()


def _uninstall(python: Path, dist: str) -> None:
    """Take the installed distribution out of the venv again, by its RECORD."""
    from ..lib.publish_helpers import installed_dist_info

    info = installed_dist_info(python, dist)
    site = info.parent
    for row in (info / "RECORD").read_text().splitlines():
        path = site / row.split(",", 1)[0]
        if path.is_file():
            path.unlink()
    shutil.rmtree(info, ignore_errors=True)


def test_show_says_what_the_tags_admit_in_the_users_words(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """No Requires-Python in METADATA: a cp39-abi3 wheel installs on CPython 3.9 and later,
    a cp311-cp311 one on 3.11 only; never "any". The torch requirement is "requires torch"."""
    from ..lib.helpers import fixture_wheels_module

    wm = fixture_wheels_module()
    member = (("wpy/elf_marker_2_10.abi3.so", "elf_marker_2_10"),)
    for tag, said in (
        ("cp39-abi3-manylinux_2_28_x86_64", ">=3.9 (from the tag cp39-abi3: METADATA has none)"),
        ("cp311-cp311-manylinux_2_28_x86_64", "3.11 only (from the tag cp311-cp311: METADATA has none)"),
    ):
        spec = wm.WheelSpec("nopy", "wpy", tag, member, metadata_drop=("Requires-Python",))
        wheel = Path(wm.write_wheel(tmp_path / tag / spec.filename, spec, built_fixtures))
        shown = torchwheel("show", str(wheel), cwd=tmp_path).stdout.splitlines()
        assert f"  requires-python  {said}" in shown, shown
        assert "  requires torch   torch>=2.10" in shown
        assert not [line for line in shown if "torch requires" in line]
