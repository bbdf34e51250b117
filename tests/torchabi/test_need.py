"""``torchabi.need``'s reading of what a tagged wheel's WHEEL states: the ``Torch-ABI-Optional``
lines ``tag`` writes (``tagging.plan.torch_abi_fields``), the package's version gate included."""

from __future__ import annotations

import pytest
from packaging.version import Version

from torchwheel.errors import InputError
from torchwheel.tables.tableset import shipped_tables
from torchwheel.torchabi.need import need_from_fields

RELEASES = shipped_tables().releases
_LAUNCHER = "xgate/_native/x86_64/libxgate_launcher.so"


def _parts(line: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    fields = {"Torch-ABI": ["none"], "Torch-Build": ["any"], "Torch-ABI-Optional": [line]}
    need = need_from_fields(fields, (), Version("1.0"), RELEASES)
    assert need is not None
    return tuple((p.when, p.loaded_from, p.files) for p in need.optional)


@pytest.mark.parametrize(
    ("gate", "loaded_from"),
    [("", ""), ("; loaded-from=2.13", "2.13"), ("; loaded-from=2.13.1", "2.13.1")],
)
def test_an_optional_line_carries_its_gate(gate: str, loaded_from: str) -> None:
    line = f"on-use; Torch-ABI=2.13; Torch-Build=any{gate}; files={_LAUNCHER}"
    assert _parts(line) == (("on-use", loaded_from, (_LAUNCHER,)),)


@pytest.mark.parametrize(
    "gate", ["loaded-from=", "loaded-from=2.x", "loaded-from=2.13; x=1", "loaded_from=2.13"]
)
def test_a_gate_that_is_no_release_is_a_damaged_wheel(gate: str) -> None:
    """A WHEEL file is input: a gate no torch release spells is a one-line error, not a guess."""
    with pytest.raises(InputError) as caught:
        _parts(f"on-use; Torch-ABI=2.13; Torch-Build=any; {gate}; files={_LAUNCHER}")
    assert caught.value.reference == "wheel-invalid"
