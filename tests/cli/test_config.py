"""cli/config.py: ``[tool.torchwheel]`` of the nearest ``pyproject.toml`` (found upward),
every key type-checked and an unknown key or rule code refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchwheel.cli.config import (
    config_start,
    configured_relax_pin,
    configured_symbols,
    find_pyproject,
    load_policy,
)
from torchwheel.errors import InputError


def _project(tmp_path: Path, table: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.torchwheel]\n{table}\n")
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    return sub


def _refusal(start: Path) -> str:
    with pytest.raises(InputError) as info:
        load_policy(start)
    return str(info.value)


def test_the_nearest_pyproject_with_the_table_is_found_upward(tmp_path: Path) -> None:
    """As ruff finds [tool.ruff]: a pyproject.toml without the table is passed over."""
    sub = _project(tmp_path, "")
    assert find_pyproject(sub) == tmp_path / "pyproject.toml"
    (sub / "pyproject.toml").write_text("[project]\nname = 'torchwheel-user'\n")  # the word, no table
    assert find_pyproject(sub) == tmp_path / "pyproject.toml"
    (sub / "pyproject.toml").write_text("[tool.torchwheel]\n")
    assert find_pyproject(sub) == sub / "pyproject.toml"


def test_the_configuration_of_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``config_start``: the folder of the one table above the inputs, else the current one."""
    a, b = _project(tmp_path / "a", ""), _project(tmp_path / "b", "")
    lone = tmp_path / "lone"
    lone.mkdir()
    monkeypatch.chdir(lone)
    assert config_start([a / "x.whl", a]) == tmp_path / "a"
    assert config_start([lone / "x.whl"]) == config_start([]) == lone
    assert config_start([a / "x.whl", lone / "y.whl"]) == tmp_path / "a"
    with pytest.raises(InputError, match=r"configured by different \[tool.torchwheel\] tables"):
        config_start([a / "x.whl", b / "y.whl"])


def test_a_full_policy(tmp_path: Path) -> None:
    sub = _project(
        tmp_path,
        'select = ["TW1", "TW5"]\nignore = ["TW101"]\nunstable-allowlist = ["at::*"]\n'
        'require-torch = false\ngpu-archs = ["sm_90a", "compute_120", "sm_100f"]',
    )
    policy = load_policy(sub, select=("TW2",), ignore=("TW202",))
    assert policy.select == frozenset({"TW1", "TW5", "TW2"})
    assert policy.ignore == frozenset({"TW101", "TW202"})
    assert policy.unstable_allowlist == ("at::*",)
    assert policy.require_torch is False
    assert policy.gpu_archs == ("sm_90a", "compute_120", "sm_100f")


def test_no_config_is_the_default_policy(tmp_path: Path) -> None:
    sub = _project(tmp_path, 'select = ["TW1"]')
    policy = load_policy(sub, use_config=False)
    assert (policy.select, policy.ignore, policy.require_torch, policy.gpu_archs) == (
        frozenset(),
        frozenset(),
        True,
        (),
    )


def test_an_unknown_key_is_refused(tmp_path: Path) -> None:
    sub = _project(tmp_path, 'selects = ["TW1"]\nfoo = 1')
    assert _refusal(sub) == f"{tmp_path / 'pyproject.toml'}: unknown [tool.torchwheel] keys: foo, selects"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('select = "TW1"', "[tool.torchwheel] select must be a list of strings"),
        ("ignore = [1]", "[tool.torchwheel] ignore must be a list of strings"),
        ('require-torch = "yes"', "[tool.torchwheel] require-torch must be true or false"),
        (
            'gpu-archs = ["sm_90", "ampere"]',
            "[tool.torchwheel] gpu-archs: 'ampere' is not an nvcc code name like 'sm_90', 'sm_90a' or 'compute_90'",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_refused(tmp_path: Path, table: str, message: str) -> None:
    sub = _project(tmp_path, table)
    assert _refusal(sub) == f"{tmp_path / 'pyproject.toml'}: {message}"


def test_an_unknown_code_in_the_file_names_the_file(tmp_path: Path) -> None:
    sub = _project(tmp_path, 'ignore = ["TW999"]')
    message = _refusal(sub)
    assert message.startswith(
        f"{tmp_path / 'pyproject.toml'}: unknown rule code TW999 in [tool.torchwheel] ignore ("
    )
    assert message.endswith("`torchwheel rule --all` lists every code)")


def test_comma_lists_on_the_command_line(tmp_path: Path) -> None:
    """As ruff's --select/--ignore: a value may list codes with commas."""
    policy = load_policy(tmp_path, select=("TW1, TW2",), ignore=("TW201,TW503", "TW7"), use_config=False)
    assert policy.select == frozenset({"TW1", "TW2"})
    assert policy.ignore == frozenset({"TW201", "TW503", "TW7"})
    with pytest.raises(InputError, match=r"^unknown rule code TW999 in --select \(did you mean "):
        load_policy(tmp_path, select=("TW1,TW999",), use_config=False)


def test_a_comma_list_inside_the_file_is_refused_with_the_codes(tmp_path: Path) -> None:
    """In the TOML list each code is its own string: "TW1,TW2" there is a mistake, named."""
    sub = _project(tmp_path, 'select = ["TW1,TW2"]')
    assert "unknown rule code TW1,TW2 in [tool.torchwheel] select (one code each: TW1, TW2; " in _refusal(sub)


def test_broken_toml_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchwheel\nselect = [")
    message = _refusal(tmp_path)
    assert message.startswith(f"{tmp_path / 'pyproject.toml'}: cannot be read (")
    assert "\n" not in message


def test_a_tool_entry_that_is_no_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool]\ntorchwheel = "yes"\n')
    assert _refusal(tmp_path) == f"{tmp_path / 'pyproject.toml'}: [tool.torchwheel] must be a table"


def test_symbols_are_relative_to_the_pyproject(tmp_path: Path) -> None:
    sub = _project(tmp_path, 'symbols = "tables/shim.json"')
    assert configured_symbols(sub) == tmp_path / "tables" / "shim.json"
    assert configured_symbols(sub, use_config=False) is None
    assert configured_symbols(_project(tmp_path / "other", "")) is None


@pytest.mark.parametrize("value", ['""', '"a\\u0000b"', "5"])
def test_symbols_must_be_a_path(tmp_path: Path, value: str) -> None:
    sub = _project(tmp_path, f"symbols = {value}")
    with pytest.raises(InputError, match=r"symbols must be a file path \(a string without NUL\)$"):
        configured_symbols(sub)


def test_relax_pin(tmp_path: Path) -> None:
    assert configured_relax_pin(_project(tmp_path / "a", "relax-pin = true")) is True
    assert configured_relax_pin(_project(tmp_path / "b", "")) is False
    assert configured_relax_pin(_project(tmp_path / "c", "relax-pin = true"), use_config=False) is False
    with pytest.raises(InputError, match=r"relax-pin must be true or false$"):
        configured_relax_pin(_project(tmp_path / "d", "relax-pin = 1"))
