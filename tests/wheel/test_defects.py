"""``wheel.defects``: the archive's own defects, the facts ``check``'s TW4xx errors and every
installer-side command share; real wheels zipped by ``zipfile``, no rule loaded to judge."""

from __future__ import annotations

import zipfile
from pathlib import Path

from torchwheel.rules.codes import BY_CODE
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.defects import CHECKS, Defect, archive_defects, comparable_version

from ..lib.helpers import zipped_wheel
from ..selection.made import tagged_wheel

BINARY_CODES = {"TW405", "TW406"}  # judged from the compiled members: check's alone


def _defects(wheel: Path, hashed: bool = False) -> list[Defect]:
    with WheelArchive(wheel, lenient_name=True) as archive:
        c = archive.contents
        hashes = {m: archive.hash_member(m) for m in c.members} if hashed else None
        return archive_defects(c, archive.member_size, dict(hashes) if hashes else None)


def test_every_archive_error_code_has_its_check() -> None:
    errors = {c for c, code in BY_CODE.items() if c.startswith("TW4") and code.severity == "error"}
    assert set(CHECKS) == errors - BINARY_CODES
    assert list(CHECKS) == sorted(CHECKS)  # reported in code order


def test_a_sound_wheel_has_none(tmp_path: Path) -> None:
    assert _defects(tagged_wheel(tmp_path)) == []
    assert _defects(tagged_wheel(tmp_path), hashed=True) == []


def test_no_record(tmp_path: Path) -> None:
    (found,) = _defects(tagged_wheel(tmp_path, record=False))
    assert (found.code, found.member) == ("TW401", "twunit-1.0.dist-info/RECORD")


def test_a_changed_member_shows_only_when_hashed(tmp_path: Path) -> None:
    """Sizes alone (select) cannot see a same-size change; every member hashed (index) can."""
    dist = "twunit-1.0.dist-info"
    members = {
        "twunit/__init__.py": b"a = 1\n",
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: twunit\nVersion: 1.0\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    wheel = zipped_wheel(tmp_path / "twunit-1.0-py3-none-any.whl", members, f"{dist}/RECORD")
    with zipfile.ZipFile(wheel) as zf:
        record = zf.read(f"{dist}/RECORD")
    changed = tmp_path / "changed" / wheel.name
    changed.parent.mkdir()
    with zipfile.ZipFile(changed, "w") as zf:  # RECORD of the old bytes, same size
        for name, data in {**members, "twunit/__init__.py": b"a = 2\n", f"{dist}/RECORD": record}.items():
            zf.writestr(name, data)
    assert _defects(changed) == []
    (found,) = _defects(changed, hashed=True)
    assert (found.code, found.member) == ("TW402", "twunit/__init__.py")
    assert found.message.startswith("hash-mismatch (RECORD sha256=")


def test_member_names_no_installer_can_write(tmp_path: Path) -> None:
    dist = "twunit-1.0.dist-info"
    members = {
        "twunit/./x.py": b"",
        "twunit/" + "y" * 256 + ".py": b"",
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: twunit\nVersion: 1.0\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    wheel = zipped_wheel(tmp_path / "twunit-1.0-py3-none-any.whl", members, f"{dist}/RECORD")
    found = [d for d in _defects(wheel) if d.code == "TW411"]
    assert [d.member for d in found] == sorted(d.member for d in found)  # check's order
    assert {d.member for d in found} == {"twunit/./x.py", "twunit/" + "y" * 256 + ".py"}


def test_comparable_version_keeps_what_does_not_parse() -> None:
    assert comparable_version("1.0") == comparable_version("1.0.0")
    assert comparable_version("not a version") == "not a version"
