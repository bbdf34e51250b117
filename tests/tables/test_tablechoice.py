"""``tablechoice``: which tables a run judges with. A tables file carries the release list and
export indexes beside the shim table; choosing it gives one value holding them all (nothing
is switched for the process); its defects are one bounded line; the user tables file is read only while it knows a newer torch than the
shipped tables."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from packaging.version import Version

from torchwheel.errors import InputError
from torchwheel.tables import exports, tablechoice
from torchwheel.tables.exports_update import encode_exports, masks_of
from torchwheel.tables.symtable import SymbolTable, load_shipped
from torchwheel.tables.tableset import SHIPPED
from torchwheel.torchabi import torch_releases


@pytest.fixture(autouse=True)
def no_user_tables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(tablechoice.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def _index(platform: str = "linux-x86_64", version: str = "2.16.0") -> str:
    entry = {
        "version": version,
        "builds": ["cpu"],
        "wheels": [{"file": "t.whl", "sha256": "0" * 64}],
        "names": 1,
    }
    data = encode_exports(platform, [entry], masks_of([["_ZN2at3newEv"]]), "2026-12-22", "test", "zlib")
    return base64.b64encode(data).decode()


def _file(path: Path, **extra: object) -> Path:
    table = SymbolTable({"torch_new": None}, sources=("2.16.0",))
    path.write_text(table.to_json(extra or None))
    return path


def test_a_tables_file_brings_its_releases_and_indexes(tmp_path: Path) -> None:
    path = _file(tmp_path / "t.json", releases=["2.15.0", "2.16.0"], exports={"linux-x86_64": _index()})
    chosen = tablechoice.choose_tables(path, None)
    assert chosen.how == "--symbols" and chosen.newest == Version("2.16.0")
    assert chosen.releases.newest() == Version("2.16.0")
    index = chosen.exports_index("linux-x86_64")
    assert index is not None and index.newest == (2, 16)
    assert chosen.exports_index("macos-arm64") == exports.shipped_index("macos-arm64")
    assert chosen.to_json()["exports_from_file"] == ["linux-x86_64"]
    shipped = tablechoice.choose_tables(None, None)  # another value: the chosen one is untouched
    assert shipped.exports_index("linux-x86_64") is exports.shipped_index("linux-x86_64")
    assert shipped.releases.newest() != Version("2.16.0") and chosen.releases.newest() == Version("2.16.0")


def test_a_shim_table_file_of_schema_2_keeps_the_shipped_list(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    doc = json.loads(SymbolTable({"torch_x": None}, sources=("2.9.0",)).to_json())
    path.write_text(json.dumps({**doc, "schema_version": 2}))
    chosen = tablechoice.choose_tables(path, None)
    assert chosen.releases is torch_releases.shipped_releases() and "releases" not in chosen.from_file
    assert chosen.shims.symbols == {"torch_x": None}


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"exports": {"linux-x86_64": "!!!"}}, "not base64"),
        ({"exports": {"linux-x86_64": base64.b64encode(b"x" * 100).decode()}}, "not a torch export index"),
        ({"exports": {"macos-arm64": _index("linux-x86_64")}}, "the index inside is for 'linux-x86_64'"),
        ({"releases": ["2.16.0+cpu"]}, '"2.16.0+cpu" does not match'),
        ({"releases": ["2.16"] * 3 + ["x"]}, "does not match"),
    ],
)
def test_a_damaged_tables_file_is_one_bounded_line(
    tmp_path: Path, extra: dict[str, object], said: str
) -> None:
    """An index is read where a verdict first needs it (as the shipped ones are): its defects
    are one line then, naming the file."""
    path = _file(tmp_path / "bad.json", **extra)
    with pytest.raises(InputError) as info:
        chosen = tablechoice.choose_tables(path, None)
        for platform in ("linux-x86_64", "macos-arm64"):
            chosen.exports_index(platform)
    message = str(info.value)
    assert said in message and "\n" not in message and len(message) < 600, message
    assert str(path) in message


def test_the_user_tables_file_is_read_while_it_knows_a_newer_torch(tmp_path: Path) -> None:
    user = tablechoice.user_tables_path()
    assert user == tmp_path / "data" / "torchwheel" / "tables.json"
    user.parent.mkdir(parents=True)
    _file(user, releases=["2.16.0"])
    chosen = tablechoice.choose_tables(None, None)
    assert chosen.how == tablechoice.USER_FILE and chosen.origin == str(user)
    shipped = load_shipped()
    user.write_text(SymbolTable(dict(shipped.symbols), shipped.sources[:2]).to_json())  # older
    assert tablechoice.choose_tables(None, None).how == SHIPPED


@pytest.mark.parametrize("damage", [b"{", b'{"schema_version": 99}', b"\x00" * 100])
def test_an_unreadable_user_tables_file_is_set_aside(tmp_path: Path, damage: bytes) -> None:
    """Issue 47: one warning, the file renamed beside itself (never deleted, never over an
    earlier one), the shipped tables used; the next run finds nothing to warn about."""
    user = tablechoice.user_tables_path()
    user.parent.mkdir(parents=True)
    (user.parent / "tables.json.unreadable").write_bytes(b"an earlier one")
    user.write_bytes(damage)
    chosen = tablechoice.choose_tables(None, None)
    assert chosen.how == SHIPPED and "cannot be read" in chosen.warning
    assert "\n" not in chosen.warning and "tables.json.unreadable.2" in chosen.warning
    assert not user.exists() and (user.parent / "tables.json.unreadable.2").read_bytes() == damage
    assert (user.parent / "tables.json.unreadable").read_bytes() == b"an earlier one"
    assert tablechoice.choose_tables(None, None).warning == ""


def test_a_named_tables_file_stays_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"{")
    with pytest.raises(InputError, match="not JSON"):
        tablechoice.choose_tables(bad, None)
    assert bad.read_bytes() == b"{"


def test_a_second_symbols_update_waits_for_the_first(tmp_path: Path) -> None:
    """The lock held (as a first ``symbols update`` holds it from reading its base to
    writing), a second one says it waits and writes nothing; released, it writes."""
    import os
    import subprocess
    import sys
    import time

    inc = tmp_path / "torch" / "include" / "torch"
    (inc / "csrc" / "stable" / "c").mkdir(parents=True)
    (inc / "headeronly").mkdir()
    (inc / "headeronly" / "version.h").write_text(
        "#define TORCH_VERSION_MAJOR 2\n#define TORCH_VERSION_MINOR 99\n#define TORCH_VERSION_PATCH 0\n"
    )
    (inc / "csrc" / "stable" / "c" / "shim.h").write_text("AOTI_TORCH_EXPORT int torch_new_shim(void);\n")
    user = tablechoice.user_tables_path()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    with tablechoice.tables_lock(user):
        proc = subprocess.Popen(
            [sys.executable, "-m", "torchwheel", "symbols", "update", str(tmp_path / "torch")],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        first = proc.stderr.readline()  # its first word, while the lock is held
        assert first.startswith("torchwheel: waiting for another torchwheel writing"), first
        time.sleep(1)
        assert proc.poll() is None and not user.exists()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "wrote" in err
    assert "torch_new_shim" in user.read_text()
