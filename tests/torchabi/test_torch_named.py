"""torchabi/torch_named.py: the one reading of a torch the user names (``--torch`` of every
command, ``torch=`` of the API)."""

from __future__ import annotations

import pytest
from packaging.version import Version

from torchwheel.errors import InvalidValue
from torchwheel.torchabi.torch_named import named_torch


def test_a_minor_or_a_release_as_torch_prints_it() -> None:
    assert named_torch("2.13") == Version("2.13")
    assert named_torch("2.13.1+cu130") == Version("2.13.1+cu130")  # torch.__version__, kept whole


@pytest.mark.parametrize(
    ("bad", "why"),
    [("two", "not a version"), ("2", "give a torch release"), ("2.13.0.1", "give a torch release")],
)
def test_anything_else_is_refused_naming_the_option(bad: str, why: str) -> None:
    with pytest.raises(InvalidValue, match=rf"^--torch '{bad}': {why}") as info:
        named_torch(bad)
    assert (info.value.reference, info.value.field, info.value.value) == ("bad-option-value", "--torch", bad)
    with pytest.raises(InvalidValue, match=rf"^torch '{bad}': {why}"):
        named_torch(bad, "torch")
