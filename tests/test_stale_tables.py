"""Issue 38, CI's short form of ``benchmarks/stale_tables.py``: the day a torch minor ships,
simulated on the fixtures with tables cut at 2.12 and the real torch 2.13.0 of this machine's
``.venv`` as the new minor.

Before ``symbols update`` every verdict is right or "unknown": a library that imports a 2.13
shim loads on no torch the tables know (the symbols named) and is "unknown: newer than the
tables" on 2.13; a library importing a C++ name first exported by 2.13 is unknown where the
tables cannot tell. After one ``symbols update`` with the installed torch, the verdicts are
the full (shipped) tables'. The tables are real (the shipped ones, cut as the generators cut
them: ``benchmarks/stale_tables.py`` holds the cut to the generators' own output); the
wheels are compiled by gcc; the update reads the real torch.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from torchwheel import api
from torchwheel.tables import tablechoice
from torchwheel.tables.exports import shipped_index

from .lib.helpers import REPO, fixture_wheels_module, load_script, torchwheel

stale_tables = load_script("torchwheel_stale_tables", REPO / "benchmarks" / "stale_tables.py")

SITE = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
SHIM_2_13 = "torch_exception_get_what"
# a C++ name torch first exports in 2.13, and one every indexed release exports (the shipped
# Linux index says so: the fixture checks it)
NEW_2_13 = "_ZN2at14TensorIterator22set_output_raw_stridedElN3c108ArrayRefIlEES3_NS1_13TensorOptionsE"
SHARED = "_ZN3c1019UndefinedTensorImpl10_singletonE"
_UNSTABLE_C = f"""
extern char tw_new[] __asm__("{NEW_2_13}");
extern char tw_old[] __asm__("{SHARED}");
void* tw_refs[] = {{tw_new, tw_old}};
"""


@pytest.fixture(scope="session")
def simulated(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tables cut at 2.12 and the same after ``symbols update`` with the installed torch
    2.13.0 (one real run of the command), and the two wheels of the new minor."""
    out = tmp_path_factory.mktemp("stale")
    index = shipped_index("linux-x86_64")
    assert index is not None
    bits = {str(r): i for i, r in enumerate(index.releases)}
    assert bin(index._mask(NEW_2_13)).count("1") == len(bits) - bits["2.13.0"], "first exported by 2.13"
    assert index._mask(SHARED) == (1 << len(bits)) - 1, "exported by every indexed release"
    tables = stale_tables.stale_tables((2, 12), None, "zlib", ["linux-x86_64"])
    stale = out / "tables-2.12.json"
    stale.write_text(tables.to_json())
    updated = out / "tables-2.13.json"
    env = {**os.environ, "XDG_DATA_HOME": str(out / "data")}
    done = torchwheel("symbols", "update", "--symbols", str(stale), "-o", str(updated), str(SITE), env=env)
    assert done.returncode == 0, done.stderr
    assert "linux-x86_64: torch 2.13.0 added" in done.stderr
    wm = fixture_wheels_module()
    spec = wm.WheelSpec(
        "stable", "wnew", wm.A, (("wnew/elf_nomarker_shims_2_13.abi3.so", "elf_nomarker_shims_2_13"),),
        requires=("torch>=2.13",),
    )  # fmt: skip
    stable = wm.write_wheel(out / spec.filename, spec, built_fixtures)
    source, lib = out / "unstable.c", out / "_C.so"
    source.write_text(_UNSTABLE_C)
    torch_lib = SITE / "torch" / "lib"
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            str(source),
            "-o",
            str(lib),
            f"-L{torch_lib}",
            "-Wl,--no-as-needed",
            "-lc10",
        ],
        check=True,
    )
    unstable = _wheel(out, lib)
    return {"stale": stale, "updated": updated, "stable": stable, "unstable": unstable}


def _wheel(out: Path, lib: Path) -> Path:
    """A one-library wheel, as ``benchmarks/stale_tables.py`` writes its own."""
    made: Path = stale_tables._wheel("wunst", "cp39-abi3-manylinux_2_28_x86_64", lib, "wunst/_C.abi3.so", "")
    return made


def _verdict(wheel: Path, torch: str, tables: Path | None) -> Any:
    return api.loads_on(wheel, torch=torch, backend="cpu", symbols=tables)


def test_a_shim_of_the_new_minor_refuses_known_torches_and_is_unknown_past_them(
    simulated: dict[str, Path],
) -> None:
    old = _verdict(simulated["stable"], "2.12.1", simulated["stale"])
    assert (old.cell, old.axis, old.verdict.newer) == ("no", "version", False)
    assert SHIM_2_13 in old.reason and "exported by no torch up to 2.12" in old.reason
    new = _verdict(simulated["stable"], "2.13.0", simulated["stale"])
    assert (new.cell, new.verdict.newer) == ("unknown", True)
    assert "torch 2.13 is newer than this torchwheel's tables (newest 2.12)" in new.reason
    assert "torchwheel symbols update" in new.reason
    need = api.need(simulated["stable"], symbols=simulated["stale"]).to_json()["need"]
    assert need["newer_than_tables"] == {"imports": [SHIM_2_13], "tables": "2.12"}


def test_the_update_gives_the_verdicts_of_the_full_tables(simulated: dict[str, Path]) -> None:
    for wheel in ("stable", "unstable"):
        for torch in ("2.10.0", "2.12.1", "2.13.0"):
            after = _verdict(simulated[wheel], torch, simulated["updated"])
            full = _verdict(simulated[wheel], torch, None)
            assert (after.cell, after.axis) == (full.cell, full.axis), (
                wheel,
                torch,
                after.reason,
                full.reason,
            )
    assert _verdict(simulated["stable"], "2.13.0", simulated["updated"]).cell == "loads"
    assert _verdict(simulated["unstable"], "2.13.0", simulated["updated"]).cell == "only"
    assert (
        api.need(simulated["stable"], symbols=simulated["updated"]).to_json()["need"]["newer_than_tables"]
        is None
    )


def test_an_unstable_name_of_the_new_minor_is_unknown_where_the_tables_cannot_tell(
    simulated: dict[str, Path],
) -> None:
    """Its other import is exported by every indexed release, so on 2.12 the new name may be
    another library's: unknown, never "no"; on 2.13 the tables end: unknown, named so."""
    on_old = _verdict(simulated["unstable"], "2.12.1", simulated["stale"])
    assert on_old.cell == "unknown" and "newer than the tables or from another library" in on_old.reason
    on_new = _verdict(simulated["unstable"], "2.13.0", simulated["stale"])
    assert (on_new.cell, on_new.verdict.newer) == ("unknown", True)
    need = api.need(simulated["unstable"], symbols=simulated["stale"]).to_json()["need"]
    assert need["newer_than_tables"] == {"imports": [NEW_2_13], "tables": "2.12"}
    found = api.check(simulated["unstable"], symbols=simulated["stale"]).findings
    (message,) = [f.message for f in found if f.code == "TW207"]
    assert message.startswith(
        "unstable imports no torch up to 2.12 exports (at::TensorIterator::set_output_raw_strided(...)): "
        "built for a newer torch"
    )  # the name demangled and cut: the whole of it is in the need's JSON above
    assert not [
        f
        for f in api.check(simulated["unstable"], symbols=simulated["updated"]).findings
        if f.code == "TW207"
    ]


def test_commands_name_the_state_and_agree(simulated: dict[str, Path], tmp_path: Path) -> None:
    """check, select, matrix and compat, as a user runs them with the stale tables chosen by
    ``TORCHWHEEL_SYMBOLS``; compat's real torch settles what the tables could not."""
    env = {**os.environ, "TORCHWHEEL_SYMBOLS": str(simulated["stale"]), "XDG_DATA_HOME": str(tmp_path)}
    wheel = str(simulated["stable"])
    check = json.loads(torchwheel("check", "--format", "json", wheel, env=env).stdout)
    codes = {f["code"]: f["message"] for f in check["findings"]}
    assert "no torch up to 2.12 exports" in codes["TW203"] and "TW207" in codes  # torch>=2.13 too
    chose = torchwheel("select", "--torch", "2.13", "--format", "json", wheel, env=env)
    (project,) = json.loads(chose.stdout)["projects"]
    (cand,) = project["candidates"]
    assert chose.returncode == 1 and cand["verdict"] == "unknown" and cand["newer_than_tables"] is True
    grid = json.loads(torchwheel("matrix", "--format", "json", "--torch", "2.12", wheel, env=env).stdout)
    cells = grid["wheels"][0]["cells"]
    assert (
        cells["2.12"]["fit"] == "no"
        and cells["2.13"]["fit"] == "unknown"
        and grid["newer_than_tables"] == ["2.13"]
    )
    text = torchwheel("matrix", "--torch", "2.12", wheel, env=env).stdout
    assert "torch 2.13: newer than this torchwheel's tables" in text
    compat = json.loads(
        torchwheel("compat", "--against", "installed", "--format", "json", wheel, env=env).stdout
    )
    assert compat["inputs"][0]["loads"] is True  # torch 2.13.0 exports the shim: its word stands


def relabelled_torch(root: Path, minor: int) -> Path:
    """The installed torch 2.13.0 as a torch 2.``minor``.0 nobody has released: its real headers
    and libraries (symlinked), only ``version.py`` and the version header saying otherwise."""
    real = SITE / "torch"
    torch = root / "torch"
    (torch / "include" / "torch" / "headeronly").mkdir(parents=True)
    (torch / "lib").symlink_to(real / "lib")
    (torch / "include" / "torch" / "csrc").symlink_to(real / "include" / "torch" / "csrc")
    text = (real / "include" / "torch" / "headeronly" / "version.h").read_text()
    assert "#define TORCH_VERSION_MINOR 13" in text
    (torch / "include" / "torch" / "headeronly" / "version.h").write_text(
        text.replace("#define TORCH_VERSION_MINOR 13", f"#define TORCH_VERSION_MINOR {minor}")
    )
    (torch / "version.py").write_text((real / "version.py").read_text().replace("2.13.0", f"2.{minor}.0"))
    return root


def test_one_update_with_a_new_minor_fills_the_user_tables_file(
    simulated: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A torch newer than the shipped tables (2.16, relabelled): before the update its verdicts
    say so ("unknown" where the tables decide); ``symbols update`` without -o writes the user
    tables file, which every command then reads, and the verdicts are the right ones."""
    env = {k: v for k, v in os.environ.items() if k != "TORCHWHEEL_SYMBOLS"}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    monkeypatch.setenv("XDG_DATA_HOME", env["XDG_DATA_HOME"])  # the in-process API looks there too
    before = _verdict(simulated["unstable"], "2.16.0", None)
    assert (before.cell, before.verdict.newer) == ("unknown", True)
    stable = _verdict(simulated["stable"], "2.16.0", None)
    assert (stable.cell, stable.verdict.newer) == ("loads", True)  # the stable ABI holds forward
    new = relabelled_torch(tmp_path / "torch216", 16)
    done = torchwheel("symbols", "update", str(new), env=env)
    assert done.returncode == 0, done.stderr
    user = tmp_path / "data" / "torchwheel" / "tables.json"
    assert f"wrote {user}" in done.stderr and "linux-x86_64: torch 2.16.0 added" in done.stderr
    shown = json.loads(torchwheel("show", "--format", "json", str(simulated["stable"]), env=env).stdout)
    assert shown["symbol_table"]["chosen_by"] == tablechoice.USER_FILE
    assert shown["symbol_table"]["releases_newest"] == "2.16.0"
    after = _verdict(simulated["unstable"], "2.16.0", None)
    assert (after.cell, after.verdict.newer) == ("only", False), after.reason
    stable = _verdict(simulated["stable"], "2.16.0", None)
    assert (stable.cell, stable.verdict.newer) == ("loads", False)
    user.write_bytes(simulated["updated"].read_bytes())  # tables to 2.13: an upgrade outgrew them
    shown = json.loads(torchwheel("show", "--format", "json", str(simulated["stable"]), env=env).stdout)
    assert shown["symbol_table"]["chosen_by"] == "shipped"


tables_stale = load_script("torchwheel_tables_stale", REPO / "scripts" / "tables_stale.py")


def test_the_staleness_script_names_every_table_behind_the_index(capsys: pytest.CaptureFixture[str]) -> None:
    """``scripts/tables_stale.py`` (the release checklist's first step) against versions given
    here: the shipped newest is current; a newer minor is missing from all three tables."""
    from torchwheel.torchabi import torch_releases

    newest = torch_releases.shipped_releases().newest()
    assert tables_stale.main(["--versions", f"2.9.1,{newest},{newest}+cpu"]) == 0
    assert "current" in capsys.readouterr().out
    past = f"{newest.major}.{newest.minor + 1}.0"
    assert tables_stale.main(["--versions", f"{newest},{past},{past}rc1"]) == 1
    out = capsys.readouterr().out
    assert f"release list: lacks {past} (it ends at {newest}): scripts/torch_releases.py" in out
    assert f"shim table: no source release of {past[:-2]}" in out
    assert all(f"exports {p}: lacks {past}" in out for p in tables_stale.PLATFORMS)
    pip_said = (
        "torch (2.16.0)\nAvailable versions: 2.16.0, 2.15.0, 2.13.0+cpu, junk\n  INSTALLED: 2.13.0+cpu\n"
    )
    assert [str(v) for v in tables_stale.parse_pip_index(pip_said)] == ["2.16.0", "2.15.0", "2.13.0+cpu"]


def _future_torch(root: Path, version_py: str | None, metadata: str | None) -> Path:
    """``relabelled_torch``'s tree as a site-packages: with this ``version.py`` (None: none,
    as a torch installed without one) and a ``torch-2.16.0.dist-info/METADATA``."""
    site = relabelled_torch(root, 16)
    (site / "torch" / "version.py").unlink()
    if version_py is not None:
        (site / "torch" / "version.py").write_text(version_py)
    if metadata is not None:
        (site / "torch-2.16.0.dist-info").mkdir()
        (site / "torch-2.16.0.dist-info" / "METADATA").write_text(metadata)
    return site


@pytest.mark.parametrize("route", ["version.py", "METADATA"])
def test_symbols_update_adds_the_backend_it_reads(
    route: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 48 item 2: a torch of a backend the tables lack (CUDA 13.6), read from its
    ``version.py`` or, without one, from the CUDA runtime its METADATA requires (torch
    2.15.0's published line with the toolkit's version moved on): ``symbols update`` adds
    ``cu136`` to the backend table, and the verdicts stop calling it newer than the tables."""
    toolkit = fixture_wheels_module().torch_requirement("2.15.0").replace("==13.2.2", "==13.6.1")
    if route == "version.py":
        tree = _future_torch(
            tmp_path / "t", "__version__ = '2.16.0+cu136'\ncuda = '13.6'\nhip = None\n", None
        )
    else:
        metadata = f"Metadata-Version: 2.4\nName: torch\nVersion: 2.16.0\nRequires-Dist: {toolkit}\n"
        tree = _future_torch(tmp_path / "t", None, metadata)
    out = tmp_path / "tables.json"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    done = torchwheel("symbols", "update", "-o", str(out), str(tree), env=env)
    assert done.returncode == 0, done.stderr
    assert "backend cu136 (CUDA 13) added" in done.stderr
    assert "cu136" in json.loads(out.read_text())["backends"]
    wheel = fixture_wheels["cuda13"]
    before = api.loads_on(wheel, torch="2.16.0", backend="cu136")
    assert (
        before.verdict.newer and "torch build cu136 is newer than this torchwheel's tables" in before.reason
    )
    after = api.loads_on(wheel, torch="2.16.0", backend="cu136", symbols=out)
    assert after.cell == "loads" and not after.verdict.newer, after.reason
