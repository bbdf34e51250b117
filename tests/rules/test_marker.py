"""rules/marker.py: the TW1xx rules on the stable-ABI marker, called directly on the facts of
real fixture wheels (``fixtures/wheels.py``) rather than through ``torchwheel check``.

These tests exist so that each rule function is held to what ``docs/reference/rules.md`` says it
reports, member by member and in its own words, for a wheel built to trigger it and for one
built not to. The expected values come from ``fixtures/README.md`` (each scenario's markers,
raw records and companions), never from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchwheel.analysis.wheelfacts import iter_slices
from torchwheel.rules import marker
from torchwheel.rules.registry import REGISTRY
from torchwheel.version import FeatureVersion

from .direct import custom_wheel, facts, hits

LINUX_ABI3 = "cp39-abi3-manylinux_2_28_x86_64"


def test_each_rule_is_registered_under_its_code() -> None:
    assert REGISTRY["TW101"].check is marker.marker_missing
    assert REGISTRY["TW102"].check is marker.marker_hidden
    assert REGISTRY["TW103"].check is marker.marker_unknown_schema
    assert REGISTRY["TW104"].check is marker.marker_disagree
    assert REGISTRY["TW105"].check is marker.targets_differ
    assert REGISTRY["TW106"].check is marker.marker_unreadable
    assert REGISTRY["TW107"].check is marker.target_not_a_release


# -- TW101 marker-missing ---------------------------------------------------------------------


def test_tw101_stable_shims_without_a_marker(fixture_wheels: dict[str, Path]) -> None:
    assert hits(marker.marker_missing, fixture_wheels["tw101"]) == [
        (
            "w101/elf_nomarker_stable.abi3.so",
            "[x86_64] uses the stable torch shim but carries no __torch_stable_abi_marker_v1: include "
            "<torchwheel/stable_abi_marker.h> (flag: `torchwheel include`) in one source file",
        )
    ]


def test_tw101_one_hit_per_unmarked_library(fixture_wheels: dict[str, Path]) -> None:
    found = hits(marker.marker_missing, fixture_wheels["tw101_many"])
    assert sorted(member for member, _ in found) == [
        "w101m/a/elf_nomarker_stable.abi3.so",
        "w101m/b/elf_nomarker_stable.abi3.so",
        "w101m/c/elf_nomarker_stable.abi3.so",
        "w101m/d/elf_nomarker_stable.abi3.so",
        "w101m/e/elf_nomarker_stable.abi3.so",
        "w101m/elf_nomarker_stable.abi3.so",
        "w101m/f/elf_nomarker_stable.abi3.so",
    ]


@pytest.mark.parametrize(
    "scenario",
    [
        "clean",  # marked
        "tw204",  # no marker, but unstable C++ symbols only: not the stable shim
        "cuda13",  # no marker, no shim
    ],
)
def test_tw101_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(marker.marker_missing, fixture_wheels[scenario]) == []


# -- TW102 marker-hidden ----------------------------------------------------------------------


def test_tw102_marker_demoted_by_a_version_script(fixture_wheels: dict[str, Path]) -> None:
    assert hits(marker.marker_hidden, fixture_wheels["tw102"]) == [
        (
            "w102/elf_hidden_vscript.abi3.so",
            "[x86_64] marker 2.10.0 is in the bytes but not exported: add __torch_stable_abi_marker_v1 to "
            "the version script / export list (Mach-O: ___torch_stable_abi_marker_v1)",
        )
    ]


def test_tw102_marker_hidden_by_exclude_libs(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """--exclude-libs,ALL: the marker comes from a static archive and is not exported."""
    path = custom_wheel(tmp_path, built_fixtures, LINUX_ABI3, "hidden.abi3.so", "elf_hidden_exclude_libs")
    found = hits(marker.marker_hidden, path)
    assert [member for member, _ in found] == ["xcustom/hidden.abi3.so"]
    assert "marker 2.10.0 is in the bytes but not exported" in found[0][1]


@pytest.mark.parametrize("scenario", ["clean", "tw101", "tw201"])
def test_tw102_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """Exported markers (WEAK in clean, tw201) and no marker at all (tw101)."""
    assert hits(marker.marker_hidden, fixture_wheels[scenario]) == []


def test_tw102_exported_with_global_binding(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """gcc -flto exports the marker GLOBAL, not WEAK: still exported."""
    path = custom_wheel(tmp_path, built_fixtures, LINUX_ABI3, "elf_lto.abi3.so", "elf_lto")
    assert hits(marker.marker_hidden, path) == []


# -- TW103 marker-unknown-schema --------------------------------------------------------------


def test_tw103_future_schema_reported_once(fixture_wheels: dict[str, Path]) -> None:
    """The schema-2 record is both a raw copy and the exported marker: one finding."""
    assert hits(marker.marker_unknown_schema, fixture_wheels["tw103"]) == [
        (
            "w103/elf_marker_future_schema.abi3.so",
            "[x86_64] marker schema 2 is unknown: upgrade torchwheel to read it",
        )
    ]


@pytest.mark.parametrize("scenario", ["clean", "tw106", "tw104"])
def test_tw103_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """Known schema (clean, tw104) and bytes that are no record at all (tw106: TW106's)."""
    assert hits(marker.marker_unknown_schema, fixture_wheels[scenario]) == []


# -- TW104 marker-disagree --------------------------------------------------------------------


def test_tw104_translation_units_of_two_targets(fixture_wheels: dict[str, Path]) -> None:
    assert hits(marker.marker_disagree, fixture_wheels["tw104"]) == [
        (
            "w104/elf_mismatch_tu.abi3.so",
            "[x86_64] translation units were built for different targets (2.10.0, 2.12.0): build every "
            "source with one TORCH_TARGET_VERSION",
        )
    ]


def test_tw104_companion_symbols_alone_disagree(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """MSVC: one marker (2.10), one raw copy, but companion exports for 2.10 and 2.12."""
    path = custom_wheel(
        tmp_path, built_fixtures, "cp39-abi3-win_amd64", "mismatch.pyd", "pe_msvc_mismatch_companion"
    )
    found = hits(marker.marker_disagree, path)
    assert [member for member, _ in found] == ["xcustom/mismatch.pyd"]
    assert "(2.10.0, 2.12.0)" in found[0][1]


@pytest.mark.parametrize("scenario", ["clean", "tw102", "tw105"])
def test_tw104_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """Two raw copies of one target (clean, tw102), or two libraries of one target each (tw105)."""
    assert hits(marker.marker_disagree, fixture_wheels[scenario]) == []


def test_slice_targets_gathers_records_companions_and_marker(fixture_wheels: dict[str, Path]) -> None:
    (only,) = [s for _, _, s in iter_slices(facts(fixture_wheels["tw104"]))]
    assert marker.slice_targets(only) == {FeatureVersion(2, 10), FeatureVersion(2, 12)}
    (clean,) = [s for _, _, s in iter_slices(facts(fixture_wheels["clean"]))]
    assert marker.slice_targets(clean) == {FeatureVersion(2, 10)}
    (none,) = [s for _, _, s in iter_slices(facts(fixture_wheels["tw101"]))]
    assert marker.slice_targets(none) == set()


# -- TW105 targets-differ ---------------------------------------------------------------------


def test_tw105_two_libraries_two_targets(fixture_wheels: dict[str, Path]) -> None:
    assert hits(marker.targets_differ, fixture_wheels["tw105"]) == [
        (
            "",
            "libraries declare different torch targets (demo_stable/elf_marker_2_10.abi3.so=2.10.0, "
            "w105/elf_marker_2_13_shims_2_13.abi3.so=2.13.0); the wheel needs torch>=2.13: build all with "
            "one TORCH_TARGET_VERSION",
        )
    ]


def test_tw105_slices_of_one_universal_binary(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """A universal Mach-O whose x86_64 slice targets 2.10 and arm64 slice 2.12: keyed by slice."""
    path = custom_wheel(
        tmp_path, built_fixtures, "cp39-abi3-macosx_11_0_universal2", "u.abi3.so", "macho_universal_differ"
    )
    ((member, message),) = hits(marker.targets_differ, path)
    assert member == ""
    assert "(xcustom/u.abi3.so[arm64]=2.12.0, xcustom/u.abi3.so[x86_64]=2.10.0)" in message
    assert "the wheel needs torch>=2.12" in message


@pytest.mark.parametrize("scenario", ["clean", "tw104", "tw101"])
def test_tw105_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """One library (even one whose TUs disagree: TW104's), or no declared target."""
    assert hits(marker.targets_differ, fixture_wheels[scenario]) == []


# -- TW106 marker-unreadable ------------------------------------------------------------------


def test_tw106_exported_marker_without_a_record(fixture_wheels: dict[str, Path]) -> None:
    ((member, message),) = hits(marker.marker_unreadable, fixture_wheels["tw106"])
    assert member == "w106/elf_marker_bogus.abi3.so"
    assert message.startswith("[x86_64] __torch_stable_abi_marker_v1 is exported but unreadable (")
    assert "TORCHABI" in message
    assert message.endswith("): rebuild with the header")


@pytest.mark.parametrize("scenario", ["clean", "tw103", "tw101"])
def test_tw106_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """A record of an unknown schema is readable (TW103's), and no marker is not an unreadable one."""
    assert hits(marker.marker_unreadable, fixture_wheels[scenario]) == []


# -- TW107 target-not-a-release ---------------------------------------------------------------


def test_tw107_a_target_older_than_the_stable_abi(fixture_wheels: dict[str, Path]) -> None:
    ((member, message),) = hits(marker.target_not_a_release, fixture_wheels["tw107"])
    assert member == "w107/elf_marker_2_8.abi3.so"
    assert message == (
        "[x86_64] declares torch 2.8.0, older than the first torch with the stable ABI (2.9): "
        "set TORCH_TARGET_VERSION to the torch you build against"
    )


@pytest.mark.parametrize(
    "scenario",
    [
        "clean",  # 2.10
        "tw105",  # 2.10 and 2.13
        "tw206",  # 2.12
        "tw203",  # 2.10 with a shim no table knows
        "tw101",  # no declared target
        "tw207",  # 2.16: newer than the tables, which is TW207's
    ],
)
def test_tw107_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(marker.target_not_a_release, fixture_wheels[scenario]) == []
