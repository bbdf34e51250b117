"""Every fixture scenario, read by torchwheel, shows exactly the facts its recipe built in.

The expected facts live next to the recipes (``SCENARIOS`` in ``fixtures/build.py``): one
source of truth for what each binary is, so sources and tests cannot drift.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchwheel.analysis.member import analyze_binary
from torchwheel.binary import BinaryError, read_path
from torchwheel.tables.symtable import load_shipped
from torchwheel.torchabi.cxxnames import is_unstable
from torchwheel.version import FeatureVersion

from .lib.helpers import fixture_build, scenario_names


def _fv(value: int | None) -> FeatureVersion | None:
    return None if value is None else FeatureVersion.from_int(value)


@pytest.mark.parametrize("name", scenario_names(bad=False))
def test_scenario_facts(name: str, built_fixtures: dict[str, Path]) -> None:
    build = fixture_build()
    sc = build.SCENARIOS[name]
    facts = read_path(built_fixtures[name])
    assert facts.format == sc.format
    assert [s.arch for s in facts.slices] == [f.arch for f in sc.slices]
    for got, want in zip(facts.slices, sc.slices, strict=True):
        exported = got.marker.record.version if got.marker and got.marker.record else None
        assert exported == _fv(want.marker)
        assert (
            tuple(sorted(h.record.version.to_int() for h in got.raw_markers if h.record.version)) == want.raw
        )
        assert set(got.hooks) == set(want.hooks)
        imports = {i.name for i in got.imports}
        assert {n for n in imports if n.startswith(("aoti_torch_", "torch_"))} == set(want.shims)
        assert {n for n in imports if is_unstable(n)} == set(want.unstable)
        assert set(want.stable_cpp) <= imports  # present, and (above) not counted unstable
        assert tuple(v.to_int() for v in got.companions) == want.companions
        weak = {i.name for i in got.imports if i.weak}
        assert {n for n in weak if n.startswith(("aoti_torch_", "torch_", "_Z", "?"))} == set(want.weak)
        for provider in want.providers:
            assert any(n.endswith(provider) for n in got.needed), (provider, got.needed)


@pytest.mark.parametrize("name", scenario_names(bad=False))
def test_scenario_torch_analysis(name: str, built_fixtures: dict[str, Path]) -> None:
    build = fixture_build()
    sc = build.SCENARIOS[name]
    analysis = analyze_binary(read_path(built_fixtures[name]), load_shipped())
    for got, want in zip(analysis.slices, sc.slices, strict=True):
        t = got.torch
        strong = [n for n in want.shims if n not in want.weak]  # weak shims set no floor
        known = {n: build.SHIM_INTRODUCED[n] for n in strong if n in build.SHIM_INTRODUCED}
        unknown = sorted(n for n in strong if n not in build.SHIM_INTRODUCED)
        baseline = FeatureVersion(2, 9).to_int()  # what an ungated shim counts as
        assert [(n, v.to_int() if v else None) for n, v in t.weak_symbols] == [
            (n, build.SHIM_INTRODUCED[n] or baseline if n in build.SHIM_INTRODUCED else None)
            for n in sorted(want.weak)
        ]
        assert t.usage == ("unstable" if want.unstable else "stable" if want.shims else "none")
        assert list(t.unknown_symbols) == unknown
        assert t.min_is_lower_bound == bool(unknown)
        gated = [v for v in known.values() if v is not None]
        if gated:
            assert t.min_version == FeatureVersion.from_int(max(gated))
            assert set(t.pinning_symbols) == {n for n, v in known.items() if v == max(gated)}
        elif strong:
            assert t.min_version == FeatureVersion(2, 9)  # the baseline of ungated shims
            assert t.pinning_symbols == ()
        else:
            assert t.min_version is None
        assert len(t.unstable_symbols) == len(want.unstable)
        for text in t.unstable_symbols:
            assert any(ns in text for ns in ("c10::", "at::", "torch::jit::")), text
        assert all("torch::stable" not in text for text in t.unstable_symbols)


def test_declared_vs_computed_are_separate(built_fixtures: dict[str, Path]) -> None:
    """The proposal's example: declared 2.12 (tag 7) while the symbols need only 2.10."""
    a = analyze_binary(read_path(built_fixtures["elf_marker_2_12_tag"]), load_shipped()).slices[0]
    assert a.declared is not None and a.declared.exported
    assert a.declared.record.version == FeatureVersion(2, 12, 0, 7)
    assert a.torch.min_version == FeatureVersion(2, 10)


def test_hidden_marker_is_reported_from_bytes(built_fixtures: dict[str, Path]) -> None:
    for name in ("elf_hidden_vscript", "elf_hidden_exclude_libs"):
        a = analyze_binary(read_path(built_fixtures[name]), load_shipped()).slices[0]
        assert a.facts.marker is None
        assert a.declared is not None and not a.declared.exported
        assert a.declared.record.version == FeatureVersion(2, 10)


def test_universal_slices_keep_their_own_raw_hits(built_fixtures: dict[str, Path]) -> None:
    facts = read_path(built_fixtures["macho_universal_differ"])
    for s in facts.slices:
        lo, hi = s.file_range
        assert all(lo <= h.offset < hi for h in s.raw_markers)
        assert s.marker is not None and s.marker.offset is not None and lo <= s.marker.offset < hi
    assert facts.slices[0].file_range[1] <= facts.slices[1].file_range[0]


def test_marker_offset_points_at_the_record(built_fixtures: dict[str, Path]) -> None:
    for name in ("elf_marker_2_10", "macho_universal_differ", "pe_mingw_marker_2_10", "pe_msvc_marker_2_11"):
        path = built_fixtures[name]
        data = path.read_bytes()
        for s in read_path(path).slices:
            assert s.marker is not None and s.marker.offset is not None
            assert data[s.marker.offset : s.marker.offset + 8] == b"TORCHABI"


def test_section_headers_missing_uses_pt_dynamic(built_fixtures: dict[str, Path]) -> None:
    """Same facts through the loader's route as through the section headers."""
    a = read_path(built_fixtures["elf_nosections"]).slices[0]
    b = read_path(built_fixtures["elf_marker_2_10"]).slices[0]
    assert sorted(a.exports) == sorted(b.exports)
    assert sorted(a.imports) == sorted(b.imports)
    assert a.needed == b.needed


def test_lying_section_table_falls_back_to_pt_dynamic(built_fixtures: dict[str, Path]) -> None:
    """A .dynsym size past the end of the file is a lie; ld.so would still load it."""
    a = read_path(built_fixtures["bad_lying_sections"]).slices[0]
    assert a.marker is not None and a.marker.record is not None
    assert a.marker.record.version == FeatureVersion(2, 10)
    assert "PyInit_elf_marker_2_10" in a.hooks


@pytest.mark.parametrize("name", [n for n in scenario_names(bad=True) if n != "bad_lying_sections"])
def test_bad_input_is_a_binary_error(name: str, built_fixtures: dict[str, Path]) -> None:
    with pytest.raises(BinaryError):
        read_path(built_fixtures[name])


@pytest.mark.parametrize("name", [n for n in scenario_names(bad=True) if n != "bad_lying_sections"])
def test_bad_input_cli_is_one_line_exit_2(name: str, built_fixtures: dict[str, Path]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "torchwheel", "inspect", str(built_fixtures[name])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(built_fixtures[name]) in lines[0], result.stderr


def test_future_schema_is_reported_not_guessed(built_fixtures: dict[str, Path]) -> None:
    a = analyze_binary(read_path(built_fixtures["elf_marker_future_schema"]), load_shipped()).slices[0]
    assert a.facts.marker is not None and a.facts.marker.record is not None
    assert a.facts.marker.record.schema == 2 and a.facts.marker.record.version is None
    assert a.declared is not None and a.declared.exported and not a.declared.record.known
    assert [h.record.schema for h in a.facts.raw_markers] == [2]


def test_bogus_marker_bytes_are_a_problem_not_a_version(built_fixtures: dict[str, Path]) -> None:
    a = analyze_binary(read_path(built_fixtures["elf_marker_bogus"]), load_shipped()).slices[0]
    assert a.facts.marker is not None and a.facts.marker.record is None
    assert a.declared is None
    assert a.marker_problem is not None and "TORCHABI" in a.marker_problem
