"""``torchwheel.api`` typed as its JSON: the docs' example and the typed attributes pass
``mypy --strict`` (run on them, against the installed package and its ``py.typed``); the
``Literal`` aliases hold exactly the values docs/reference/json.md documents; null is None; the
errors are the standard exceptions they say they are."""

from __future__ import annotations

import errno
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from packaging.version import Version

from torchwheel import api
from torchwheel.rules.codes import CODES

from .lib.helpers import REPO

# what the API's attributes are, said to mypy: a wrong type fails the run
_TYPED = """
from pathlib import Path
from typing import assert_type

from packaging.version import Version

from torchwheel import api


def probe(path: Path) -> None:
    result = api.check(path)
    assert_type(result, api.CheckResult)
    assert_type(result.exit_code, api.Exit)
    assert_type(result.infos, int)
    for f in result.findings:
        assert_type(f, api.Finding)
        assert_type(f.member, str | None)
        assert_type(f.severity, api.Severity)
    need = api.need(path)
    assert_type(need.kind, api.NeedKind)
    assert_type(need.unknown, tuple[api.UnknownAxis, ...])
    v = api.loads_on(path, torch=Version("2.13"))
    assert_type(v, api.LoadVerdict)
    assert_type(v.cell, api.Cell)
    assert_type(v.axis, api.Axis)
    assert_type(v.backend, str | None)
    assert_type(api.inspect_wheel(path), api.Facts)
    try:
        api.need(path)
    except api.MissingInput as exc:
        missing: FileNotFoundError = exc  # a FileNotFoundError to the type checker too
        print(missing.errno)
    except api.UnreadableInput as exc:
        unreadable: OSError = exc
        print(unreadable.strerror)
    except api.InvalidValue as exc:
        invalid: ValueError = exc
        print(invalid)
"""


def _docs_example() -> str:
    """The python blocks of docs/reference/api.md, in order (the later ones use the first's import)."""
    text = (REPO / "docs" / "reference" / "api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    return "\n".join(blocks)


def test_the_docs_example_and_the_typed_attributes_pass_mypy_strict(tmp_path: Path) -> None:
    (tmp_path / "api_example.py").write_text(_docs_example())
    (tmp_path / "api_typed.py").write_text(_TYPED)
    # the suite's own cache (tests/test_quality.py fills it for src/): only the two files are new
    cmd = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(REPO / ".mypy_cache")]
    run = subprocess.run(
        [*cmd, "api_example.py", "api_typed.py"], capture_output=True, text=True, cwd=tmp_path
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # and it can fail: a wrong claim about a type is an error
    (tmp_path / "api_wrong.py").write_text(
        _TYPED.replace("assert_type(f.member, str | None)", "assert_type(f.member, str)")
    )
    wrong = subprocess.run([*cmd, "api_wrong.py"], capture_output=True, text=True, cwd=tmp_path)
    assert wrong.returncode == 1 and 'Expression is of type "str | None", not "str"' in wrong.stdout, (
        wrong.stdout
    )


def _documented(field: str) -> set[str]:
    """A JSON field's closed set as docs/reference/json.md writes it: ``"field": "a|b|c"``."""
    text = (REPO / "docs" / "reference" / "json.md").read_text()
    (found,) = set(re.findall(rf'"{field}": "([a-z| ]+\|[a-z| ]+)"', text))
    return set(found.split("|"))


def test_the_literal_aliases_are_the_documented_json_sets() -> None:
    assert set(typing.get_args(api.Cell)) == _documented("verdict")
    assert set(typing.get_args(api.Axis)) == _documented("axis")
    assert set(typing.get_args(api.NeedKind)) == _documented("kind")
    assert set(typing.get_args(api.Severity)) == {c.severity for c in CODES}
    assert set(typing.get_args(api.UnknownAxis)) < set(typing.get_args(api.Axis))
    with pytest.raises(AttributeError):
        api.Nothing  # noqa: B018 - the lazy aliases serve their own names only


def test_every_returned_type_is_exported() -> None:
    for name in ("Facts", "CheckResult", "Finding", "Need", "LoadVerdict", "Exit", "InputError"):
        assert name in api.__all__ and getattr(api, name).__module__.startswith("torchwheel")
    for name in ("MissingInput", "UnreadableInput", "InvalidValue", "RewriteRefused"):
        assert issubclass(getattr(api, name), api.InputError)


def test_member_is_none_where_the_json_has_null(fixture_wheels: dict[str, Path]) -> None:
    result = api.check(fixture_wheels["per_minor"])  # TW505 on the wheel, TW204 on its files
    members = {f.member for f in result.findings}
    assert None in members and "" not in members and any(members - {None})
    assert [f.to_json() for f in result.findings] == result.to_json()["findings"]
    assert all(isinstance(f, api.Finding) for f in result.findings)


def test_errors_are_the_standard_exceptions_they_say(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "gone-1.0-py3-none-any.whl"
    for call in (api.check, api.inspect_wheel, api.need):
        with pytest.raises(FileNotFoundError) as found:
            call(missing)
        assert isinstance(found.value, api.MissingInput) and found.value.errno == errno.ENOENT
        assert str(found.value) == f"{missing}: " + (
            "No such file or directory" if call is api.need else "no such file or directory"
        )
    through = fixture_wheels["clean"] / "x.whl"  # a path through a file: not missing, unreadable
    with pytest.raises(OSError) as unread:
        api.need(through)
    assert isinstance(unread.value, api.UnreadableInput) and not isinstance(unread.value, FileNotFoundError)
    clean = fixture_wheels["clean"]
    for bad in (
        lambda: api.loads_on(clean, torch="latest"),
        lambda: api.loads_on(clean, torch="2.13", backend="cuda99"),
        lambda: api.loads_on(clean, torch="2.13", gpu="fast"),
        lambda: api.check(clean, ignore=["TW999"]),
        lambda: api.tag(clean, tmp_path / "out", build_torch="two"),
    ):
        with pytest.raises(ValueError) as invalid:
            bad()
        assert isinstance(invalid.value, api.InvalidValue) and "\n" not in str(invalid.value)


def test_torch_takes_a_version_as_well_as_a_string(fixture_wheels: dict[str, Path]) -> None:
    wheel = fixture_wheels["per_minor"]
    for text in ("2.6", "2.6.0", "2.12"):
        given, parsed = api.loads_on(wheel, torch=text), api.loads_on(wheel, torch=Version(text))
        assert given.to_json() == parsed.to_json()
