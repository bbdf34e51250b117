"""No silent overwrite (issue 42, item 7): ``tag``, ``repair`` and ``api.tag`` refuse an output
file that exists unless asked (``--overwrite``, ``overwrite=True``), as ``unlabel`` does; the
refusal comes before anything is written, and the file that was there is left as it was.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest

from torchwheel import api
from torchwheel.errors import InputError

from ..lib.helpers import torchwheel


def _zip(text: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("note.txt", text)
    return buf.getvalue()


# an older wheel a run before this one wrote (a zip: a file of another kind is never replaced,
# --overwrite or not; tests/test_hostile_own.py holds that)
STALE = _zip("a wheel a run before this one wrote")


def _stale_output(fixture_wheels: dict[str, Path], tmp_path: Path, key: str = "tw503") -> tuple[Path, Path]:
    """(the input, an existing file at its output's name in ``tmp_path/out``)."""
    out = tmp_path / "out"
    out.mkdir()
    wheel = fixture_wheels[key]
    (out / wheel.name).write_bytes(STALE)  # tw503 keeps its name when tagged
    return wheel, out / wheel.name


@pytest.mark.parametrize("command", ["tag", "repair"])
def test_the_command_refuses_an_existing_output(
    command: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    wheel, stale = _stale_output(fixture_wheels, tmp_path)
    refused = torchwheel(command, "--no-config", "-w", str(stale.parent), str(wheel))
    assert refused.returncode == 2
    assert (
        refused.stderr.splitlines()[-1]
        == f"torchwheel: error: {stale}: exists; pass --overwrite to replace it"
    )
    assert stale.read_bytes() == STALE and list(stale.parent.iterdir()) == [stale]
    replaced = torchwheel(command, "--no-config", "--overwrite", "-w", str(stale.parent), str(wheel))
    assert replaced.returncode == 0, replaced.stderr
    assert stale.read_bytes() != STALE and stale.read_bytes()[:2] == b"PK"


def test_tag_refuses_before_writing_the_first_of_several(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """Two wheels, the second one's output taken: nothing is written, not even the first."""
    wheel, stale = _stale_output(fixture_wheels, tmp_path)
    first = fixture_wheels["clean"]
    refused = torchwheel("tag", "--no-config", "-w", str(stale.parent), str(first), str(wheel))
    assert refused.returncode == 2, refused.stderr
    assert list(stale.parent.iterdir()) == [stale]


def test_tag_variant_refuses_an_existing_variant_copy(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    made = torchwheel("tag", "--no-config", "--variant", "-w", str(out), str(fixture_wheels["clean"]))
    assert made.returncode == 0, made.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert len(before) == 2  # the plain wheel and the variant copy
    again = torchwheel("tag", "--no-config", "--variant", "-w", str(out), str(fixture_wheels["clean"]))
    assert again.returncode == 2 and "exists; pass --overwrite to replace it" in again.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_tag_in_place_still_replaces_its_input(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = Path(shutil.copy(fixture_wheels["tw503"], tmp_path))
    before = wheel.read_bytes()
    result = torchwheel("tag", "--no-config", "--in-place", str(wheel))
    assert result.returncode == 0, result.stderr
    assert wheel.read_bytes() != before  # --in-place is the request to replace it


def test_api_tag_refuses_unless_overwrite(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel, stale = _stale_output(fixture_wheels, tmp_path)
    with pytest.raises(InputError, match="exists; pass overwrite=True to replace it"):
        api.tag(wheel, stale.parent)
    assert stale.read_bytes() == STALE
    assert api.tag(wheel, stale.parent, overwrite=True) == stale
    assert stale.read_bytes()[:2] == b"PK"
