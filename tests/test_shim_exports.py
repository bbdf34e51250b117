"""Tests of export-dated shim versions: the dating rules, the shipped table against the
installed torch's real export tables, and the generator end to end on a real torch wheel."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.lib.helpers import load_script
from torchwheel.errors import InputError
from torchwheel.tables.symtable import BASELINE, Origin, SymbolTable, TorchWheelOrigin, load_shipped
from torchwheel.torchabi.torchlibs import TorchLibraries, read_torch
from torchwheel.version import FeatureVersion

V = FeatureVersion.parse
REPO = Path(__file__).resolve().parents[1]
# the export dating behind the shipped table: a script of the repository (gen_symtable.py's
# library), not part of the installed package, which never needs it at run time
_shim_exports = load_script("shim_exports", REPO / "scripts" / "shim_exports.py")
WheelExports = _shim_exports.WheelExports
date_exports = _shim_exports.date_exports
header_dates = _shim_exports.header_dates
platform_label = _shim_exports.platform_label
read_wheel_exports = _shim_exports.read_wheel_exports
INSTALLED = V("2.13.0")  # the test extras pin torch 2.13.0 (CPU, linux-x86_64)
IVALUE_FAMILY = (
    "aoti_torch_int64_to_ivalue",
    "aoti_torch_str_to_ivalue",
    "aoti_torch_strlist_to_ivalue",
    "aoti_torch_tensor_to_ivalue",
    "aoti_torch_delete_c10_value_object",
)


def _first_on(origin: Origin, platform: str) -> FeatureVersion | None:
    """The first release read that exports the symbol on ``platform`` (None: none did)."""
    return next((V(release) for p, release in origin.platforms if p == platform), None)


def _wheel(release: str, platform: str, libraries: dict[str, set[str]]) -> WheelExports:
    source = TorchWheelOrigin(f"torch-{release}-{platform}.whl", "0" * 64, release, platform, "cpu")
    return WheelExports(source, {lib: frozenset(names) for lib, names in libraries.items()})


# --------------------------------------------------------------------------------------
# The dating rules
# --------------------------------------------------------------------------------------


def test_export_date_beats_an_ungated_declaration_and_a_low_gate() -> None:
    gates = SymbolTable(
        {"base": None, "late": None, "gated_early": V("2.10"), "never": V("2.11"), "cuda_op": None},
        sources=("2.9.0", "2.10.0", "2.11.0"),
    )
    wheels = [
        _wheel("2.9.0", "macos-arm64", {"libtorch_cpu.dylib": {"base"}}),
        _wheel("2.10.0", "macos-arm64", {"libtorch_cpu.dylib": {"base"}}),
        _wheel("2.11.0", "macos-arm64", {"libtorch_cpu.dylib": {"base", "late", "gated_early"}}),
        # The first CUDA build read is 2.11: its shims are only known to be no newer.
        _wheel("2.11.0", "linux-x86_64", {"libtorch_cpu.so": {"base"}, "libtorch_cuda.so": {"cuda_op"}}),
    ]
    table = date_exports(wheels, gates)
    assert table.introduced("base") is None  # exported by the baseline release
    assert table.introduced("late") == V("2.11.0")  # ungated, yet first exported in 2.11
    assert table.introduced("gated_early") == V("2.11.0")  # gated 2.10, exported from 2.11
    assert table.origin("late") == Origin("export", (("macos-arm64", "2.11.0"),))
    assert table.origin("base").platforms == (("linux-x86_64", "2.11.0"), ("macos-arm64", "2.9.0"))
    assert table.introduced("never") == V("2.11")  # exported by nothing read: the gate
    assert table.origin("never") == Origin("header-gate")
    assert table.introduced("cuda_op") is None  # undated sighting: the declaration stands
    assert table.origin("cuda_op") == Origin("header-gate", (("linux-x86_64+cuda", "2.11.0"),))
    assert [w.release for w in table.wheels] == ["2.9.0", "2.10.0", "2.11.0", "2.11.0"]


def test_an_undated_sighting_below_the_gate_wins() -> None:
    gates = SymbolTable({"op": V("2.12")}, sources=("2.10.0",))
    wheels = [
        _wheel("2.10.0", "macos-arm64", {"libtorch_cpu.dylib": {"x"}}),
        _wheel("2.11.0", "linux-x86_64", {"libtorch_cuda.so": {"op"}}),
    ]
    table = date_exports(wheels, gates)
    assert table.introduced("op") == V("2.11.0")
    assert table.origin("op").source == "export"


def test_platform_labels() -> None:
    assert platform_label("linux-x86_64", "libtorch_cpu.so") == "linux-x86_64"
    assert platform_label("linux-x86_64", "libtorch_cuda.so") == "linux-x86_64+cuda"
    assert platform_label("windows-x86_64", "torch_cuda.dll") == "windows-x86_64+cuda"


def test_header_dates_do_not_let_a_later_gate_undo_an_arrival() -> None:
    """merge_all() folds 2.15's 2.13 gate over the inferred 2.14 arrival; header_dates does not."""
    tables = [
        SymbolTable({"old": None}, sources=("2.13.0",)),
        SymbolTable({"old": None, "xpu_op": V("2.13")}, sources=("2.14.1",)),
        SymbolTable({"old": None, "xpu_op": V("2.13")}, sources=("2.15.0",)),
    ]
    derived, gates = header_dates(tables)
    assert derived.introduced("xpu_op") == V("2.14.0")
    assert derived.introduced("old") is None
    assert gates == {"old": None, "xpu_op": V("2.13")}
    assert derived.sources == ("2.13.0", "2.14.0", "2.15.0")


def test_json_round_trip_keeps_provenance() -> None:
    gates = SymbolTable({"a": None, "b": V("2.12")}, sources=("2.9.0",))
    table = date_exports(
        [
            _wheel("2.9.0", "macos-arm64", {"libtorch_cpu.dylib": {"a"}}),
            _wheel("2.10.0", "macos-arm64", {"libtorch_cpu.dylib": {"a", "b"}}),
        ],
        gates,
    )
    text = table.to_json()
    assert SymbolTable.from_json(text) == table
    document = json.loads(text)
    assert document["schema_version"] == 4  # 3: releases and exports too; 4: backends
    assert document["symbols"]["b"] == {
        "introduced": "2.10.0",
        "platforms": {"macos-arm64": "2.10.0"},
        "source": "export",
    }
    assert document["wheels"][0]["sha256"] == "0" * 64


def test_schema_1_tables_still_load() -> None:
    old = json.dumps({"schema_version": 1, "sources": ["2.13.0"], "symbols": {"a": None, "b": "2.12.0"}})
    table = SymbolTable.from_json(old)
    assert table.introduced("b") == V("2.12.0")
    assert table.origin("a") == Origin("header-gate")
    with pytest.raises(InputError, match="source"):
        SymbolTable.from_json(json.dumps({"schema_version": 2, "symbols": {"a": {"introduced": None}}}))


def test_merge_keeps_export_dates_over_newer_headers() -> None:
    shipped = date_exports(
        [
            _wheel("2.9.0", "macos-arm64", {"libtorch_cpu.dylib": {"x"}}),
            _wheel("2.10.0", "macos-arm64", {"libtorch_cpu.dylib": {"x", "late"}}),
        ],
        SymbolTable({"x": None, "late": None}, sources=("2.9.0", "2.10.0")),
    )
    newer_headers = SymbolTable({"x": None, "late": None, "new": None}, sources=("2.16.0",))
    merged = shipped.merge(newer_headers)
    assert merged.introduced("late") == V("2.10.0")
    assert merged.origin("late").source == "export"
    assert merged.introduced("new") == V("2.16.0")
    assert merged.wheels == shipped.wheels


# --------------------------------------------------------------------------------------
# The shipped table
# --------------------------------------------------------------------------------------


def test_shipped_table_is_export_dated() -> None:
    table = load_shipped()
    for name in IVALUE_FAMILY:  # declared ungated, first exported by 2.10 everywhere
        assert table.introduced(name) == V("2.10.0"), name
        origin = table.origin(name)
        assert origin.source == "export"
        assert _first_on(origin, "macos-arm64") == _first_on(origin, "linux-x86_64") == V("2.10.0")
    # Gated at 2.11 in c_shim_mps.h, first exported by the 2.12 macOS build.
    assert table.introduced("aoti_torch_mps_nonzero_static") == V("2.12.0")
    assert table.introduced("aoti_torch_mps__cdist_backward") == V("2.13.0")
    assert table.introduced("aoti_torch_get_sizes") is None
    assert _first_on(table.origin("aoti_torch_get_sizes"), "windows-x86_64") == BASELINE
    # No XPU wheel was read: XPU shims keep what the headers say.
    assert table.origin("aoti_torch_xpu_cat").source == "header-gate"
    assert table.introduced("aoti_torch_xpu_grid_sampler_3d") == V("2.14.0")
    assert table.sources == ("2.9.0", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0", "2.15.0")


def test_shipped_table_provenance() -> None:
    table = load_shipped()
    assert table.wheels
    for wheel in table.wheels:
        assert re.fullmatch(r"[0-9a-f]{64}", wheel.sha256), wheel
        assert wheel.file.startswith(f"torch-{wheel.release}")
    covered = {(w.release, w.platform) for w in table.wheels}
    for release in table.sources:
        assert (release, "macos-arm64") in covered  # every minor's .0 dates the generic shims
    assert any(w.variant == "cuda" for w in table.wheels)
    exported = {n for n in table.symbols if table.origin(n).source == "export"}
    assert len(exported) > 600


@pytest.fixture(scope="module")
def installed() -> TorchLibraries:
    torch = read_torch("installed")  # torch/lib/*.so of the test extras' torch, read as ELF
    assert torch.version is not None and V(torch.version.split("+")[0]) == INSTALLED, torch.version
    return torch


def test_every_shim_the_installed_torch_exports_is_dated_no_later(installed: TorchLibraries) -> None:
    table = load_shipped()
    exported = installed.all_exports & table.symbols.keys()
    assert len(exported) > 350
    too_new = {n: str(table.introduced(n)) for n in exported if (table.introduced(n) or BASELINE) > INSTALLED}
    assert too_new == {}


def test_every_shim_dated_on_linux_by_2_13_is_exported_by_it(installed: TorchLibraries) -> None:
    table = load_shipped()
    expected = set()
    for name in table.symbols:
        first = _first_on(table.origin(name), "linux-x86_64")
        if first is not None and first <= INSTALLED:
            expected.add(name)
    assert len(expected) > 350
    assert expected - installed.all_exports == set()
    # ... and the table knows exactly which shims this build exports.
    exported = installed.all_exports & table.symbols.keys()
    assert exported == expected


# --------------------------------------------------------------------------------------
# Reading a real torch wheel, and the generator end to end
# --------------------------------------------------------------------------------------


def test_wheel_exports_match_the_installed_libraries(
    torch_wheel: Path, installed: TorchLibraries, tmp_path: Path
) -> None:
    exports = read_wheel_exports(torch_wheel, tmp_path)
    assert exports.source.release == "2.13.0" and exports.source.platform == "linux-x86_64"
    assert len(exports.source.sha256) == 64
    shims = frozenset().union(*exports.libraries.values())
    table = load_shipped()
    assert shims & table.symbols.keys() == installed.all_exports & table.symbols.keys()
    assert read_wheel_exports(torch_wheel, tmp_path) == exports  # from the cache this time
    assert len(list(tmp_path.glob("*.exports.json"))) == 1


def test_generator_offline_on_one_wheel(torch_wheel: Path, tmp_path: Path) -> None:
    gen = load_script("gen_symtable", REPO / "scripts" / "gen_symtable.py")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / torch_wheel.name).symlink_to(torch_wheel)
    out, report = tmp_path / "table.json", tmp_path / "report.md"
    argv = ["--offline", "--torch", "2.13.0", "--platform", "linux-x86_64", "--wheel-dir", str(wheels)]
    assert gen.main([*argv, "--output", str(out), "--report", str(report)]) == 0
    table = SymbolTable.from_json(out.read_text(encoding="utf-8"))
    assert table.sources == ("2.13.0",)
    assert [w.file for w in table.wheels] == [torch_wheel.name]
    # One release read: everything it exports is baseline-or-gate, nothing is dated later.
    assert table.origin("torch_from_blob").platforms == (("linux-x86_64", "2.13.0"),)
    assert "## Export date differs from the header gate" in report.read_text(encoding="utf-8")
