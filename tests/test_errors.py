"""errors.py: the exit codes, and the error that carries data: a ``reference`` from one
documented vocabulary beside the message, and the fields a raise knows (path, field, value,
limit), kept across a process boundary."""

from __future__ import annotations

import pickle
import re
import typing
from pathlib import Path

import pytest

from torchwheel import errors
from torchwheel.errors import (
    REFERENCES,
    InputError,
    InvalidValue,
    MissingInput,
    UnreadableInput,
    system_error,
)

REPO = Path(__file__).resolve().parents[1]


def test_the_vocabulary_is_one_list_of_kebab_case_names() -> None:
    assert list(REFERENCES) == list(typing.get_args(errors.Reference))
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", name) for name in REFERENCES)
    assert all(text and not text.endswith(".") for text in REFERENCES.values())


def test_the_exit_codes_page_lists_every_reference() -> None:
    """docs/reference/exit-codes.md's table of references is ``REFERENCES``, row for row."""
    page = (REPO / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    section = page.split("## Error references", 1)[1]
    rows = re.findall(r"^\| `([a-z-]+)` \| (.+) \|$", section, flags=re.M)
    assert rows == list(REFERENCES.items())


def test_a_raise_names_its_reference_and_fields() -> None:
    error = InputError("x.whl: no", reference="not-a-wheel", path=Path("x.whl"), field="--torch", value=3)
    assert (str(error), error.reference, error.path, error.field, error.value, error.limit) == (
        "x.whl: no",
        "not-a-wheel",
        "x.whl",
        "--torch",
        3,
        None,
    )
    with pytest.raises(TypeError, match="needs a reference"):
        InputError("x.whl: no")


def test_a_class_of_one_kind_fixes_its_reference() -> None:
    assert InvalidValue("gpu: no").reference == "bad-option-value"
    assert InvalidValue("gpu: no", reference="config-invalid").reference == "config-invalid"
    missing = system_error("x.whl", FileNotFoundError(2, "No such file or directory"))
    denied = system_error("y.whl", PermissionError(13, "Permission denied"))
    assert isinstance(missing, MissingInput) and isinstance(denied, UnreadableInput)
    assert (missing.reference, missing.path, str(missing)) == (
        "not-found",
        "x.whl",
        "x.whl: No such file or directory",
    )
    assert denied.reference == "file-system-error" and denied.errno == 13


def test_the_reference_and_fields_survive_a_process_boundary() -> None:
    """A worker's error reaches the parent with its data, whatever its class's constructor takes."""
    from torchwheel.limits import Limit, LimitExceeded

    for error in (
        InputError("x.whl: no", reference="archive-damaged", path="x.whl"),
        LimitExceeded("members", 7, Limit("max-members", 5)),
        InvalidValue("gpu: no"),
    ):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
        assert vars(back) == vars(error)
    exceeded = LimitExceeded("members", 7, Limit("max-members", 5))
    assert (exceeded.reference, exceeded.limit, exceeded.value) == ("limit-exceeded", "max-members", 7)


def test_the_fields_are_data_for_a_program_and_survive_a_restatement() -> None:
    """``data`` is what the JSON error document carries beside the message: the fields set,
    numbers as numbers; said again with the file's name, an error keeps them."""
    from torchwheel.limits import Limit, LimitExceeded

    exceeded = LimitExceeded("members", 7, Limit("max-members", 5))
    assert exceeded.data() == {"value": 7, "limit": "max-members"}
    again = exceeded.restated(f"x.whl: {exceeded}", Path("dist/x.whl"))
    assert (str(again), again.reference) == (f"x.whl: {exceeded}", "limit-exceeded")
    assert again.data() == {"path": "dist/x.whl", "value": 7, "limit": "max-members"}
    odd = InputError("no", reference="bad-option-value", field="--torch", value=Path("a"))
    assert odd.data() == {"field": "--torch", "value": "a"}
    assert InputError("no", reference="misuse").data() == {}
    deep = InputError("the central directory is truncated", reference="archive-damaged")
    deep.input_path = "dist/x.whl"  # as analysis.load names the input it was reading
    assert deep.data() == {"path": "dist/x.whl"}
