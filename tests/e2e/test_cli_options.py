"""Options every judging command shares: the shim table (``--symbols``, environment,
``[tool.torchwheel]``), ``--format``, collapsed text findings, ``repair``'s policy and
what ``tag --dry-run`` shows. Each runs the real CLI in a fresh process."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from torchwheel.tables.symtable import load_shipped
from torchwheel.version import FeatureVersion

from ..lib.helpers import peak_rss_mb, torchwheel

CLEAN_LIB = "demo_stable/elf_marker_2_10.abi3.so"


def _table_dating_everything(path: Path, version: str) -> Path:
    """The shipped table with every shim moved to ``version``: a table torchwheel would
    only get from ``symbols update``, so any command that ignores it shows the old floor."""
    shipped = load_shipped()
    moved = {name: FeatureVersion.parse(version) for name in shipped.symbols}
    path.write_text(dataclasses.replace(shipped, symbols=moved).to_json(), encoding="utf-8")
    return path


def _floor(show_json: dict[str, object]) -> str:
    wheel = show_json["wheels"][0]  # type: ignore[index]
    return str(wheel["torch_abi"]["target"])  # type: ignore[index]


def test_symbols_option_env_and_config(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = str(fixture_wheels["clean"])
    table = _table_dating_everything(tmp_path / "newer.json", "2.14")
    plain = torchwheel("show", "--format", "json", wheel, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    shipped_doc = json.loads(plain.stdout)
    assert _floor(shipped_doc) == "2.10.0"
    assert shipped_doc["symbol_table"]["origin"] == "shipped"

    by_option = torchwheel("show", "--format", "json", "--symbols", str(table), wheel, cwd=tmp_path)
    doc = json.loads(by_option.stdout)
    assert _floor(doc) == "2.14.0"
    assert doc["symbol_table"] == {**doc["symbol_table"], "origin": str(table), "chosen_by": "--symbols"}

    env = {**os.environ, "TORCHWHEEL_SYMBOLS": str(table)}
    by_env = torchwheel("check", "--format", "json", wheel, cwd=tmp_path, env=env)
    assert by_env.returncode == 1  # declared 2.10, the table says its shims need 2.14
    assert {f["code"] for f in json.loads(by_env.stdout)["findings"]} >= {"TW201", "TW503"}
    assert json.loads(by_env.stdout)["symbol_table"]["chosen_by"] == "TORCHWHEEL_SYMBOLS"

    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(table, project / "shims.json")
    (project / "pyproject.toml").write_text('[tool.torchwheel]\nsymbols = "shims.json"\n')
    by_config = torchwheel("show", wheel, cwd=project)
    assert "needs" in by_config.stdout and "2.14.0" in by_config.stdout
    assert f"symbol table: {project / 'shims.json'} (from pyproject.toml)" in by_config.stdout
    ignored = torchwheel("show", "--no-config", wheel, cwd=project)
    assert "symbol table: shipped table" in ignored.stdout

    inspected = torchwheel("inspect", "--format", "json", "--symbols", str(table), str(_lib(wheel, tmp_path)))
    assert json.loads(inspected.stdout)["files"][0]["slices"][0]["torch"]["min_version"] == "2.14.0"


def _lib(wheel: str, tmp_path: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        return Path(zf.extract(CLEAN_LIB, tmp_path / "unpacked"))


def test_a_bad_table_is_one_line_exit_2(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"schema_version": 99, "symbols": {}}')
    (tmp_path / "notjson.json").write_bytes(b"\xff\x00garbage")
    for bad in ("bad.json", "notjson.json", "missing.json"):
        result = torchwheel("check", "--symbols", bad, str(fixture_wheels["clean"]), cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.splitlines()) == 1 and "symbol table" in result.stderr
        assert "Traceback" not in result.stderr
        # the damaged ones: the command line says how to write one (cli.exits.HINTS), in the one line
        hint = "(write one with `torchwheel symbols update`)\n"
        assert result.stderr.endswith(hint) == (bad != "missing.json"), result.stderr
        doc = torchwheel(
            "check", "--format", "json", "--symbols", bad, str(fixture_wheels["clean"]), cwd=tmp_path
        )
        error = json.loads(doc.stdout)["error"]
        assert error["message"] == result.stderr.strip().removeprefix("torchwheel: error: ")
        assert error["path"] == bad  # as given


@pytest.mark.parametrize("command", ["show", "inspect", "compat"])
def test_format_json_and_the_json_alias_agree(
    command: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    target = (
        str(fixture_wheels["clean"])
        if command != "inspect"
        else str(_lib(str(fixture_wheels["clean"]), tmp_path))
    )
    extra = ["--against", "installed"] if command == "compat" else []
    new = torchwheel(command, *extra, "--format", "json", target, cwd=tmp_path)
    old = torchwheel(command, *extra, "--json", target, cwd=tmp_path)
    assert new.returncode == old.returncode == 0, new.stderr
    assert json.loads(new.stdout) == json.loads(old.stdout)
    text = torchwheel(command, *extra, target, cwd=tmp_path)
    assert text.returncode == 0 and not text.stdout.lstrip().startswith("{")


def test_repeated_findings_collapse_in_text_only(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = str(fixture_wheels["tw101_many"])
    text = torchwheel("check", wheel, cwd=tmp_path)
    lines = [line for line in text.stdout.splitlines() if "TW101" in line]
    assert len(lines) == 1, text.stdout
    assert "(x7 in 7 files: " in lines[0] and "... 2 more" in lines[0]
    as_json = json.loads(torchwheel("check", "--format", "json", wheel, cwd=tmp_path).stdout)
    assert sum(f["code"] == "TW101" for f in as_json["findings"]) == 7
    github = torchwheel("check", "--format", "github", wheel, cwd=tmp_path)
    assert github.stdout.count("::warning ") == 7


def test_dry_run_shows_metadata_and_facts_only_when_verbose(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    wheel = str(fixture_wheels["tw501"])
    quiet = torchwheel("tag", "--dry-run", wheel, cwd=tmp_path)
    assert quiet.returncode == 0
    assert "+Requires-Dist: torch>=2.10" in quiet.stdout and "torchwheel.json" not in quiet.stdout
    verbose = torchwheel("tag", "--dry-run", "-v", wheel, cwd=tmp_path)
    assert "b/w501-1.0.0.dist-info/torchwheel.json" in verbose.stdout


def test_repair_fixes_what_tag_fixes(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    for name in ("tw404", "tw503", "tw501"):
        out = tmp_path / name
        result = torchwheel("repair", "--no-config", "-w", str(out), str(fixture_wheels[name]), cwd=tmp_path)
        assert result.returncode == 0, (name, result.stdout, result.stderr)
        written = list(out.iterdir())
        assert len(written) == 1
        after = torchwheel("check", "--no-config", str(written[0]), cwd=tmp_path)
        assert after.returncode == 0, (name, after.stdout)
    fixed = torchwheel("repair", "-w", str(tmp_path / "x"), str(fixture_wheels["tw503"]), cwd=tmp_path)
    assert "TW503 fixed by the rewrite" in fixed.stderr and "error" not in fixed.stderr
    refused = torchwheel("repair", "-w", str(tmp_path / "r"), str(fixture_wheels["tw201"]), cwd=tmp_path)
    assert refused.returncode == 1 and "cannot fix TW201" in refused.stderr
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").iterdir())


def test_repair_select_and_ignore(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = str(fixture_wheels["tw201"])
    ignored = torchwheel("repair", "--ignore", "TW201", "-w", str(tmp_path / "i"), wheel, cwd=tmp_path)
    assert ignored.returncode == 0, ignored.stderr
    selected = torchwheel("repair", "--select", "TW4", "-w", str(tmp_path / "s"), wheel, cwd=tmp_path)
    assert selected.returncode == 0, selected.stderr
    assert len(list((tmp_path / "s").iterdir())) == 1


def test_compat_memory_stays_under_the_budget(fixture_wheels: dict[str, Path]) -> None:
    """libtorch_cpu.so is 400+ MB and exports ~100k names: only the imported ones are kept,
    and its bytes are not scanned for markers (which would page in the whole file)."""
    code, peak = peak_rss_mb("compat", "--against", "installed", str(fixture_wheels["clean"]))
    assert code == 0
    assert peak < 300, f"compat peaked at {peak:.0f} MB"
