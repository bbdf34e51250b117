"""``torchwheel rule`` (one code explained from the source docs/reference/rules.md is written from) and
the refusal of unknown codes in ``--select``/``--ignore`` and ``[tool.torchwheel]``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchwheel.rules.codes import CODES
from torchwheel.rules.explain import book

from ..lib.helpers import REPO, torchwheel


def _one_line_exit_2(result: object) -> str:
    assert getattr(result, "returncode", None) == 2, result
    stderr: str = getattr(result, "stderr", "")
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr
    return stderr.strip()


# -- torchwheel rule --------------------------------------------------------------------------


def test_rule_prints_the_section_of_the_page(tmp_path: Path) -> None:
    result = torchwheel("rule", "TW503", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "TW503 torch-requirement-too-loose (error): the torch requirement admits a torch the binaries "
        "cannot load on"
    )
    assert lines[1].startswith("Fixed by: `torchwheel tag`, `torchwheel repair`")
    page = (REPO / "docs" / "reference" / "rules.md").read_text()
    for label, text in book().rules["TW503"].sections:
        assert f"{label}: {text}" in result.stdout  # the same words ...
        assert f"**{label}**: {text}" in page  # ... as the page's
    assert result.stderr == ""


@pytest.mark.parametrize("spelling", ["tw503", "torch-requirement-too-loose", " TW503 "])
def test_a_code_in_any_case_or_its_name(spelling: str, tmp_path: Path) -> None:
    assert (
        torchwheel("rule", spelling, cwd=tmp_path).stdout == torchwheel("rule", "TW503", cwd=tmp_path).stdout
    )


def test_a_rule_no_command_fixes_says_so(tmp_path: Path) -> None:
    out = torchwheel("rule", "TW402", cwd=tmp_path).stdout
    assert "Fixed by: no torchwheel command" in out
    assert "tag and repair refuse to rewrite a wheel with this finding" in out


def test_all_lists_every_code_one_line_each(tmp_path: Path) -> None:
    result = torchwheel("rule", "--all", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [c.code for c in CODES]
    assert "TW415 warning platform-refused-by-pypi: " in result.stdout
    assert any(line.startswith("TW503 error ") and "(fixed by: tag, repair)" in line for line in lines)
    group = torchwheel("rule", "TW5", cwd=tmp_path).stdout.splitlines()
    assert group == [line for line in lines if line.startswith("TW5")]


def test_json_for_tools(tmp_path: Path) -> None:
    one = json.loads(torchwheel("rule", "--format", "json", "TW206", cwd=tmp_path).stdout)
    assert one["schema_version"] == 1 and one["code"] == "TW206" and one["severity"] == "info"
    assert one["fixed_by"] is None and one["what"] and one["fix"]
    assert [s["label"] for s in one["sections"]] == ["What", "Why", "Why info", "Fix"]
    every = json.loads(torchwheel("rule", "--all", "--format", "json", cwd=tmp_path).stdout)
    assert [r["code"] for r in every["rules"]] == [c.code for c in CODES]
    fixed = {r["code"]: r["fixed_by"] for r in every["rules"] if r["fixed_by"]}
    assert fixed["TW504"] == {
        "commands": ["torchwheel tag --build-torch X.Y", "torchwheel repair --build-torch X.Y"],
        "when": "",
    }


def test_an_unknown_code_is_exit_2_with_a_guess(tmp_path: Path) -> None:
    line = _one_line_exit_2(torchwheel("rule", "TW999", cwd=tmp_path))
    assert line.startswith("torchwheel: error: unknown rule code TW999 (did you mean TW")
    assert "`torchwheel rule --all` lists every code" in line
    doc = torchwheel("rule", "--format", "json", "TW999", cwd=tmp_path)
    assert doc.returncode == 2 and json.loads(doc.stdout)["error"]["message"].startswith("unknown rule code")
    assert "give one CODE, or --all" in _one_line_exit_2(torchwheel("rule", cwd=tmp_path))
    _one_line_exit_2(torchwheel("rule", "TW101", "--all", cwd=tmp_path))


# -- unknown codes in --select / --ignore / [tool.torchwheel] ----------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--ignore", "TW999"], "unknown rule code TW999 in --ignore (did you mean TW"),
        (["--select", "tw201"], "unknown rule code tw201 in --select (did you mean TW201? "),
        (["--ignore", "TW201,TW2O2"], "unknown rule code TW2O2 in --ignore (did you mean TW202, "),
        (["--ignore", "marker-missing"], "in --ignore (did you mean TW101? "),
        (["--select", ""], "unknown rule code '' in --select ("),
        (["--ignore", "TW8"], "unknown rule code TW8 in --ignore (did you mean "),
    ],
)
@pytest.mark.parametrize("command", ["check", "repair"])
def test_unknown_codes_on_the_command_line_are_refused(
    command: str, args: list[str], expected: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    extra = ["-w", str(tmp_path / "out")] if command == "repair" else []
    line = _one_line_exit_2(torchwheel(command, *args, *extra, str(fixture_wheels["clean"]), cwd=tmp_path))
    assert line.startswith("torchwheel: error: ") and expected in line, line
    assert not (tmp_path / "out").exists()


def test_codes_and_prefixes_are_taken(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = str(fixture_wheels["tw201"])
    for args in (
        ["--ignore", "TW2"],
        ["--ignore", "TW"],
        ["--select", "TW3"],
        ["--ignore", "TW201"],
        ["--ignore", "TW3,TW201"],
    ):
        assert torchwheel("check", *args, wheel, cwd=tmp_path).returncode == 0, args
    assert torchwheel("check", "--select", "T", wheel, cwd=tmp_path).returncode == 1  # a prefix of every code


@pytest.mark.parametrize("key", ["select", "ignore"])
def test_unknown_codes_in_the_project_file_are_refused(
    key: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.torchwheel]\n{key} = ["TW2", "TW99"]\n')
    line = _one_line_exit_2(torchwheel("check", str(fixture_wheels["clean"]), cwd=tmp_path))
    assert f"pyproject.toml: unknown rule code TW99 in [tool.torchwheel] {key} (did you mean " in line
    assert torchwheel("check", "--no-config", str(fixture_wheels["clean"]), cwd=tmp_path).returncode == 0


def test_json_check_prints_its_error_document(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    result = torchwheel(
        "check", "--format", "json", "--ignore", "TW999", str(fixture_wheels["clean"]), cwd=tmp_path
    )
    assert result.returncode == 2
    doc = json.loads(result.stdout)
    assert doc["error"]["message"].startswith("unknown rule code TW999 in --ignore")
