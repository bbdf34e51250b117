"""rules/torch.py's TW203 and TW207, called directly on real fixture wheels: what is newer
than the tables, each in its own words (the simulated new minor of tests/test_stale_tables.py
runs them through the command line)."""

from __future__ import annotations

from pathlib import Path

from packaging.specifiers import SpecifierSet

from torchwheel.rules import torch
from torchwheel.rules.registry import REGISTRY
from torchwheel.torchabi import torch_releases

from ..lib.helpers import fixture_wheels_module
from .direct import hits

NEWEST = torch_releases.shipped_releases().newest()
PAST = f"{NEWEST.major}.{NEWEST.minor + 1}"


def test_the_rules_are_registered_and_block_a_rewrite() -> None:
    assert (
        REGISTRY["TW203"].check is torch.unknown_shim and REGISTRY["TW207"].check is torch.newer_than_tables
    )
    assert REGISTRY["TW203"].blocks_rewrite and REGISTRY["TW207"].blocks_rewrite


def test_tw203_says_no_torch_of_the_tables_exports_the_shims(fixture_wheels: dict[str, Path]) -> None:
    ((member, message),) = hits(torch.unknown_shim, fixture_wheels["tw203"])
    assert member == "w203/elf_unknown_shim.abi3.so"
    assert message.startswith(
        f"[x86_64] imports shims no torch up to {NEWEST.major}.{NEWEST.minor} exports (torch_future_shim_v99)"
    )
    assert "run `torchwheel symbols update TORCH_WHEEL_OR_ENV`" in message


def test_tw207_a_target_past_the_tables_names_both_readings(fixture_wheels: dict[str, Path]) -> None:
    ((member, message),) = hits(torch.newer_than_tables, fixture_wheels["tw207"])
    assert member == "w207/elf_marker_2_16_hex.abi3.so"
    assert message.startswith(
        "[x86_64] declares torch 2.16.0 (0x0210000000000000), newer than this torchwheel's tables: a torch "
        "released since, or TORCH_TARGET_VERSION spelled in decimal digits (it is byte-packed hex) (the "
        "symbols fit 2.10: did you mean 0x020a000000000000?); run `torchwheel symbols update"
    )


def test_tw207_a_requirement_that_admits_only_newer_torches(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    wm = fixture_wheels_module()
    spec = wm.WheelSpec(
        "pin",
        "wpin",
        wm.A,
        (("wpin/elf_marker_2_10.abi3.so", "elf_marker_2_10"),),
        requires=(f"torch=={PAST}.*",),
    )
    wheel = wm.write_wheel(tmp_path / spec.filename, spec, built_fixtures)
    ((member, message),) = hits(torch.newer_than_tables, wheel)
    assert member == "" and message.startswith(
        f"Requires-Dist 'torch=={PAST}.*' admits only torch newer than this torchwheel's tables; run"
    )
    assert torch_releases.shipped_releases().pinned_minor(SpecifierSet(f"=={PAST}.*")) == (
        NEWEST.major,
        NEWEST.minor + 1,
    )


def test_tw207_silent_where_the_tables_know_everything(fixture_wheels: dict[str, Path]) -> None:
    for name in ("clean", "tw203", "tw204", "tw107", "weak_shim"):
        assert hits(torch.newer_than_tables, fixture_wheels[name]) == [], name
