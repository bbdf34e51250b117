"""``verdicts`` where the tables end (``torch_releases``' list, a need's ``newer`` imports and
``tables``): "does not load" on the torches the tables know, "unknown: newer than the tables"
past them, "loads" with the state named where the stable ABI alone decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from torchwheel.tables.tableset import shipped_tables
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.backend import ANY_BUILD
from torchwheel.torchabi.need import TorchNeed
from torchwheel.torchabi.verdicts import minor_verdict, verdict
from torchwheel.version import FeatureVersion

TABLES = shipped_tables()
NEWEST = torch_releases.minor_of(TABLES.releases.newest())
PAST = f"{NEWEST[0]}.{NEWEST[1] + 1}.0"
LAST = f"{NEWEST[0]}.{NEWEST[1]}.0"


def _stable(newer: tuple[str, ...] = (), reqs: tuple[str, ...] = ()) -> TorchNeed:
    tables = NEWEST if newer else None
    requirements = tuple(Requirement(r) for r in reqs)
    return TorchNeed(
        "stable",
        FeatureVersion(2, 10),
        frozenset(),
        "",
        ANY_BUILD,
        frozenset(),
        requirements,
        newer=newer,
        tables=tables,
    )


def test_imports_no_torch_of_the_tables_exports_refuse_every_torch_they_know() -> None:
    need = _stable(("torch_new_shim",))
    found = verdict(need, None, Version(LAST), tables=TABLES)
    assert (found.cell, found.axis, found.newer) == ("no", "version", False)
    assert found.reason.endswith(
        f"(torch_new_shim: exported by no torch up to {NEWEST[0]}.{NEWEST[1]}): torch {NEWEST[0]}.{NEWEST[1]}.0 does not export them"
    ), found.reason
    past = verdict(need, None, Version(PAST), tables=TABLES)
    assert (past.cell, past.newer) == ("unknown", True)
    assert f"is newer than this torchwheel's tables (newest {NEWEST[0]}.{NEWEST[1]})" in past.reason
    assert need.named_minors == {(2, 10), (NEWEST[0], NEWEST[1] + 1)}  # matrix shows that column
    assert str(need).startswith("stable, newer than the tables (torch_new_shim: exported by no torch up to")


def test_a_stable_wheel_loads_past_the_tables_and_says_what_that_rests_on() -> None:
    found = verdict(_stable(), None, Version(PAST), tables=TABLES)
    assert (found.cell, found.newer) == ("loads", True)
    assert "newer than this torchwheel's tables" in found.reason and "symbols update" in found.reason
    assert verdict(_stable(), None, Version(LAST), tables=TABLES).newer is False


def test_a_requirement_that_excludes_the_torch_decides_where_the_version_is_unknown() -> None:
    found = verdict(_stable(("torch_new_shim",), ("torch<2.12",)), None, Version(PAST), tables=TABLES)
    assert (found.cell, found.axis) == ("no", "requirement")
    assert found.reason.startswith(f"Requires-Dist torch<2.12 excludes torch {PAST} (and ")


def test_an_unstable_build_dated_by_an_index_is_unknown_past_it() -> None:
    dated = TorchNeed(
        "unstable", None, frozenset({(2, 12)}), "exports", ANY_BUILD, frozenset(), (), tables=(2, 12)
    )
    assert verdict(dated, None, Version("2.12.1"), tables=TABLES).cell == "only"
    assert verdict(dated, None, Version("2.11.0"), tables=TABLES).cell == "no"
    past = minor_verdict(dated, None, (2, 13), tables=TABLES)
    assert (past.cell, past.newer) == ("unknown", True) and "(newest 2.12)" in past.reason


def test_an_unstable_build_with_new_names_is_unknown_only_where_its_other_imports_are() -> None:
    need = TorchNeed(
        "unstable", None, frozenset({(2, 11), (2, 12)}), "exports", ANY_BUILD, frozenset(), (),
        newer=("_ZN2at3newEv",), tables=(2, 12),
    )  # fmt: skip
    assert verdict(need, None, Version("2.12.1"), tables=TABLES).cell == "unknown"  # may be another library's
    assert verdict(need, None, Version("2.10.0"), tables=TABLES).cell == "no"  # its known imports fail there


@pytest.mark.parametrize(
    ("spec", "minor"),
    [
        ("==2.16.*", (2, 16)),
        ("==2.16.1", (2, 16)),
        (">=2.16,<2.17", (2, 16)),
        (">=2.16", None),
        ("==2.13.*", (2, 13)),
    ],
)
def test_a_pin_past_the_list_names_its_minor(spec: str, minor: tuple[int, int] | None) -> None:
    releases = torch_releases.releases_from(Version(v) for v in ("2.13.0", "2.14.0", "2.15.0"))
    assert releases.pinned_minor(SpecifierSet(spec)) == minor
    assert releases.release_newer_than_tables((2, 16)) and not releases.release_newer_than_tables((2, 15))


def test_a_list_is_a_value_beside_the_shipped_one() -> None:
    """A tables file's list is its own value: the shipped one, held beside it, is unchanged."""
    chosen = torch_releases.releases_from([Version("2.16.0"), Version("2.15.0")])
    assert chosen.newest() == Version("2.16.0") and chosen.future() == Version("2.17.0")
    shipped = json.loads(
        (Path(torch_releases.__file__).parent.parent / "data" / "torch_releases.json").read_text()
    )
    assert torch_releases.shipped_releases().newest() == Version(shipped["releases"][-1])
    assert TABLES.releases is torch_releases.shipped_releases()


def test_a_build_whose_imports_left_torch_before_the_index_ends_is_refused_past_it() -> None:
    """Dated 2.9 by an index that ends at 2.12: 2.10-2.12 already lack its imports, so a later
    torch does too; only a build whose imports reach the index's newest minor is unknown past it."""
    old = TorchNeed(
        "unstable", None, frozenset({(2, 9)}), "exports", ANY_BUILD, frozenset(), (), tables=(2, 12)
    )
    found = verdict(old, None, Version("2.13.0"), tables=TABLES)
    assert found.cell == "no"
    assert "torch 2.9 (dated by its imports)" in found.reason


def test_an_unknown_version_on_a_torch_of_another_build_is_refused() -> None:
    from torchwheel.torchabi.backend import TorchBuild

    rocm = TorchNeed(
        "unstable", None, frozenset({(2, 12)}), "exports", frozenset({TorchBuild("rocm", 7)}), frozenset(), (),
        tables=(2, 12), evidence="x/_C.so: libamdhip64.so.7",
    )  # fmt: skip
    found = verdict(rocm, None, Version("2.13.0"), TorchBuild("cuda", 13), tables=TABLES)
    assert (found.cell, found.axis) == ("no", "build") and "x/_C.so: libamdhip64.so.7" in found.reason


def test_imports_the_tables_could_not_settle_are_named_short_and_once() -> None:
    """An unstable build whose known imports date it to 2.12-2.13 and four of whose imports no
    indexed release exports (issue 48's export dating): on 2.13 unknown, the reason naming
    three of them demangled and cut (issue 50, item 4), once; on 2.11 no."""
    mangled = "_ZN2at14TensorIterator22set_output_raw_stridedElN3c108ArrayRefIlEES3_NS1_13TensorOptionsE"
    need = TorchNeed(
        "unstable",
        None,
        frozenset({(2, 12), (2, 13)}),
        "exports",
        ANY_BUILD,
        frozenset(),
        (),
        unresolved=(mangled, "_ZN3foo3barEv", "_ZN3foo3bazEv", "_ZN3foo3quxEv"),
        tables=NEWEST,
        indexed_from=(2, 4),
    )
    here = verdict(need, None, Version("2.13.0"), tables=TABLES)
    assert here.cell == "unknown", here.reason
    assert mangled not in here.reason and "_ZN3foo" not in here.reason
    assert (
        here.reason.count(
            "at::TensorIterator::set_output_raw_strided(...), foo::bar(), foo::baz() and 1 more"
        )
        == 1
    )
    assert "`torchwheel compat --against TORCH` decides for one torch" in here.reason
    below = verdict(need, None, Version("2.11.0"), tables=TABLES)
    assert below.cell == "no" and "exported by torch 2.12, 2.13 only, not 2.11.0" in below.reason
