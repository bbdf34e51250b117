"""``analysis.diagnosis``: the verdict and fix per distribution, the plan's words, the exit."""

from __future__ import annotations

from dataclasses import replace

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.doctor.diagnosis import (
    Diagnosis,
    DiagnosisRow,
    JudgedTorch,
    _one_verdict,
    _past_tables,
    environment_summary,
    fix_for,
    keep_words,
)
from torchwheel.tables.tableset import shipped_tables
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild
from torchwheel.torchabi.need import TorchNeed
from torchwheel.torchabi.verdicts import Verdict
from torchwheel.version import FeatureVersion

TABLES = shipped_tables()

CUDA13 = frozenset({TorchBuild("cuda", 13)})
CPU = TorchBuild("cpu")


def _need(kind: str, releases: frozenset[tuple[int, ...]] = frozenset(), floor: str | None = None,
          builds: frozenset[TorchBuild] = ANY_BUILD, reqs: tuple[str, ...] = ()) -> TorchNeed:  # fmt: skip
    return TorchNeed(
        kind,  # type: ignore[arg-type]
        FeatureVersion.parse(floor) if floor else None,
        releases,
        "exports" if releases else "",
        builds,
        frozenset(),
        tuple(Requirement(r) for r in reqs),
    )


def _judged(torch: str, build: TorchBuild | None = CPU, how: str = "installed") -> JudgedTorch:
    version = Version(torch)
    newer = TABLES.releases.release_newer_than_tables(version)
    return JudgedTorch(
        version, build, None, {}, how, minor_only=len(version.release) == 2, newer_than_tables=newer
    )


def test_keep_words() -> None:
    assert keep_words(_need("stable", floor="2.10")) == "torch>=2.10"
    assert keep_words(_need("unstable", frozenset({(2, 13)}))) == "torch==2.13.*"
    assert keep_words(_need("unstable", frozenset({(2, 4), (2, 5), (2, 6)}))) == "torch 2.4-2.6"
    assert keep_words(_need("unstable")) == ""


def test_each_axis_has_its_fix() -> None:
    plan = _judged("2.14.1", TorchBuild("cuda", 13, 0), "planned")
    built_for_213 = _need("unstable", frozenset({(2, 13)}))
    found = _one_verdict(built_for_213, plan, TABLES)
    assert found.cell == "no" and found.axis == "version"
    fix = fix_for("ext", built_for_213, found, plan)
    assert fix.startswith("reinstall ext built for torch 2.14, or keep torch==2.13.*"), fix
    assert "declares no torch requirement, so pip does not keep torch" in fix
    cuda = _need("stable", floor="2.10", builds=CUDA13)
    on_cpu = _judged("2.13.0")
    found = _one_verdict(cuda, on_cpu, TABLES)
    assert found.axis == "build" and "reinstall ext built for torch's CPU build" in fix_for(
        "ext", cuda, found, on_cpu
    )
    pinned = _need("unstable", frozenset({(2, 14)}), reqs=("torch==2.14.*",))
    found = _one_verdict(pinned, _judged("2.14.1"), TABLES)
    assert found.loads and fix_for("ext", pinned, found, on_cpu) == ""
    found = _one_verdict(_need("stable", floor="2.10", reqs=("torch<2.13",)), on_cpu, TABLES)
    assert found.axis == "requirement"
    assert "whose requirement admits torch 2.13, or install torch<2.13" in fix_for(
        "ext", _need("stable", floor="2.10", reqs=("torch<2.13",)), found, on_cpu
    )


def test_a_plan_without_a_backend_leaves_the_build_unknown() -> None:
    found = _one_verdict(
        _need("stable", floor="2.10", builds=CUDA13), _judged("2.14.1", None, "planned"), TABLES
    )
    assert found.cell == "unknown" and found.axis == "build"
    assert "--torch-backend" in fix_for(
        "ext", _need("stable", floor="2.10", builds=CUDA13), found, _judged("2.14.1", None)
    )


def test_a_torch_newer_than_the_tables_is_said_never_guessed() -> None:
    last = torch_releases.shipped_releases().newest()
    later = _judged(f"{last.major}.{last.minor + 2}", TorchBuild("cpu"), "planned")
    assert later.newer_than_tables and not _judged(str(last)).newer_than_tables
    unstable = _need("unstable", frozenset({(last.major, last.minor)}))
    found = _past_tables(unstable, later, _one_verdict(unstable, later, TABLES), TABLES)
    assert found.cell == "unknown" and "newer than this torchwheel's tables" in found.reason
    per_release = replace(unstable, releases=frozenset({(2, 12), (2, 13)}), releases_from="names")
    found = _past_tables(per_release, later, _one_verdict(per_release, later, TABLES), TABLES)
    assert found.cell == "no" and "has builds for torch 2.12, 2.13" in found.reason  # no file for it: certain
    stable = _need("stable", floor="2.10")
    found = _past_tables(stable, later, _one_verdict(stable, later, TABLES), TABLES)
    assert (
        found.loads and "newer than this torchwheel's tables" in found.reason
    )  # said, from the shared verdict


def test_the_exit_and_the_summary() -> None:
    plan = _judged("2.14.1", TorchBuild("cpu"), "planned")
    rows = (
        DiagnosisRow("a", "1", "", None, Verdict("no", "x"), before=Verdict("loads", "")),
        DiagnosisRow("b", "1", "", None, Verdict("no", "x"), before=Verdict("no", "")),
        DiagnosisRow("c", "1", "", None, Verdict("loads", "")),
        DiagnosisRow("d", "1", "", None, Verdict("unknown", "editable"), not_read=True),
    )
    found = Diagnosis(plan, rows, 7, _judged("2.13.0"))
    assert found.exit_code == 1
    assert environment_summary(found) == (
        "moving to torch 2.14.1, CPU build breaks a; does not load on it either: b; not read: d "
        "(7 without compiled torch code, not listed)"
    )
    assert Diagnosis(plan, rows[2:], 0).exit_code == 0  # not read: listed, not judged
    assert Diagnosis(plan, (DiagnosisRow("e", "1", "", None, Verdict("unknown", "?")),), 0).exit_code == 1
