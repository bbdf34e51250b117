"""``wheel.installed`` and ``analysis.environment``: an environment's distributions found in
import order, each read through its RECORD and never outside the environment's boundary."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from torchwheel.doctor.environment import read_environment
from torchwheel.errors import InputError
from torchwheel.tables.tableset import shipped_tables
from torchwheel.wheel.installed import Installed, NotRead, boundary_of, installed

from ..lib.helpers import FIXTURES

sys.path.insert(0, str(FIXTURES))
from hostile_doctor import Env  # fixtures/ is not a package


def _found(env: Env, *more: str) -> dict[str, Installed | NotRead]:
    items = installed([str(env.site), *more], [str(env.root)])
    return {i.name: i for i in items}


def test_import_order_first_of_a_name_wins(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.dist("Foo_Bar", version="2.0")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "foo.bar-1.0.dist-info").mkdir()
    found = list(installed([str(env.site), str(extra), str(env.site)], [str(env.root)]))
    assert [(i.name, i.version) for i in found] == [("Foo_Bar", "2.0")]


def test_what_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    env = Env(tmp_path)
    (env.site / "legacy-1.0.egg-info").mkdir()
    (env.site / "noversion.dist-info").mkdir()
    env.dist("norecord", record=None)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "away-1.0.dist-info").mkdir()
    (env.site / "away-1.0.dist-info").symlink_to(outside / "away-1.0.dist-info")
    meta = env.dist("metalink")
    (meta / "METADATA").unlink()
    (meta / "METADATA").symlink_to("/etc/passwd")
    found = _found(env)
    reasons = {n: i.reason for n, i in found.items() if isinstance(i, NotRead)}
    assert "egg-info" in reasons["legacy"] and "name-version" in reasons["noversion"]
    assert "no RECORD" in reasons["norecord"] and "link out of the environment" in reasons["away"]
    assert "METADATA is a link out" in reasons["metalink"]


def test_the_boundary_is_the_innermost_prefix(tmp_path: Path) -> None:
    env = Env(tmp_path)
    assert boundary_of(str(env.site), [str(tmp_path), str(env.root)]) == env.root.resolve()
    elsewhere = tmp_path / "pythonpath"
    elsewhere.mkdir()
    assert boundary_of(str(elsewhere), [str(env.root)]) == elsewhere.resolve()


def test_an_unlistable_directory_is_an_unreadable_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every distribution in it would be unknown: exit 2, not an empty table (the mode-000
    folder itself is the hostile corpus's ``env_unreadable_site``, run without DAC override)."""
    env = Env(tmp_path)
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        if Path(path) == env.site:
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(InputError, match="cannot be listed"):
        list(installed([str(env.site)], [str(env.root)]))


def test_an_editable_install_is_not_read(tmp_path: Path) -> None:
    env = Env(tmp_path)
    info = env.dist("mine")
    (info / "direct_url.json").write_text('{"url": "file:///src/mine", "dir_info": {"editable": true}}')
    read = read_environment(installed([str(env.site)], [str(env.root)]), shipped_tables())
    (item,) = read.not_read
    assert "editable install" in item.reason and "file:///src/mine" in item.reason


def test_nothing_outside_the_environment_is_opened(
    tmp_path: Path, built_fixtures: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """RECORD entries absolute, with ``..``, and links out (to a real extension beside the
    env): listed as outside, never opened; every path opened lies inside the env."""
    env = Env(tmp_path)
    ext = built_fixtures["elf_marker_2_10"].read_bytes()
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "_C.abi3.so").write_bytes(ext)
    (env.site / "linked").mkdir()
    (env.site / "linked" / "_C.abi3.so").symlink_to(beside / "_C.abi3.so")
    up = os.path.relpath(beside / "_C.abi3.so", env.site)
    env.dist("escapes", record=f"{beside / '_C.abi3.so'},,\n{up},,\nlinked/_C.abi3.so,,\n/etc/passwd,,\n")
    env.dist("inside", {"inside/_C.abi3.so": ext})
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(
        os, "open", lambda p, *a, **k: opened.append(os.path.realpath(p)) or real_open(p, *a, **k)
    )
    read = read_environment(installed([str(env.site)], [str(env.root)]), shipped_tables())
    root = str(env.root.resolve())
    assert opened and all(p.startswith(root + os.sep) for p in opened), [p for p in opened if root not in p]
    assert {d.name for d in read.with_torch} == {"escapes", "inside"}
    escapes = next(d for d in read.with_torch if d.name == "escapes")
    assert len(escapes.outside) == 3 and not escapes.facts.binaries


def test_only_distributions_that_touch_torch_are_read_whole(
    tmp_path: Path, built_fixtures: dict[str, Path]
) -> None:
    """A library of no torch (a plain C extension, a CUDA library that brings its own code)
    is counted; one that links torch, or a CUDA runtime torch's build must bring, is read."""
    env = Env(tmp_path)
    cuda = FIXTURES / "cuda" / "bin"
    env.dist("plain", {"plain/_x.so": built_fixtures["elf_no_torch"].read_bytes()})
    env.dist("static", {"static/libk.so": (cuda / "cu13_static.so").read_bytes()})
    env.dist("runtime", {"runtime/libk.so": (cuda / "cu12_runtime.so").read_bytes()})
    env.dist("ext", {"ext/_C.abi3.so": built_fixtures["elf_marker_2_10"].read_bytes()})
    read = read_environment(installed([str(env.site)], [str(env.root)]), shipped_tables())
    assert {d.name for d in read.with_torch} == {"runtime", "ext"}
    assert read.without_torch == 2
