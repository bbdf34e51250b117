"""``selection.choose``: pip's and uv's order (version with its local label, tags, build tag),
pre-releases held back as pip holds them, then the ranking by torch ABI, written once
(``preference``) and used by ``select`` and ``index`` (the highest kept); pure, no file is
read. The same order against pip and uv themselves: tests/e2e/test_select_ranking.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from torchwheel.publish.simple_index import Entry, plan_targets
from torchwheel.selection.candidates import Candidate
from torchwheel.selection.choose import choose, preference
from torchwheel.selection.reasons import why_not
from torchwheel.selection.target import TorchTarget, markers_for_tags
from torchwheel.tables.tableset import shipped_tables
from torchwheel.torchabi.need import declared_need
from torchwheel.torchabi.torch_releases import minor_of

TAG = Tag("cp311", "abi3", "linux_x86_64")
TABLES = shipped_tables()
# best first: the newest stable floor, an older one, an unstable build for 2.13, no torch
ABIS = ["2.12", "2.10", "unstable", "none"]


def _cand(abi: str, build: int | None = None, version: str = "1.0", tag: Tag = TAG) -> Candidate:
    extra = f"-{build}" if build is not None else ""
    need = declared_need(
        abi, (), Version(version), "any", "2.13" if abi == "unstable" else None, releases=TABLES.releases
    )
    return Candidate(
        path=Path(f"{abi}/twunit-{version}{extra}-{tag}.whl"),
        origin=abi,
        name=canonicalize_name("twunit"),
        version=Version(version),
        build=(build, "") if build is not None else (),
        tags=frozenset({tag}),
        variant=None,
        torch=need,
        requires_python=None,
        tables=TABLES,
    )


def _target(torch: str = "2.13.0") -> TorchTarget:
    return TorchTarget("unit", Version(torch), (TAG,), "3.11", markers_for_tags(frozenset({TAG})))


def test_preference_orders_stable_floors_then_unstable_then_none() -> None:
    ranks = [preference(_cand(a).torch) for a in ABIS]
    assert ranks == sorted(ranks, reverse=True) and len(set(ranks)) == len(ranks)
    assert preference(_cand("any").torch) == preference(_cand("none").torch)


@pytest.mark.parametrize("drop", range(len(ABIS) - 1))
def test_select_and_index_choose_the_same_wheel(drop: int) -> None:
    """Whichever candidates remain, ``choose`` (select) and ``plan_targets`` (index's
    torch-2.13 page) keep the one ``preference`` ranks highest."""
    cands = [_cand(a) for i, a in enumerate(ABIS) if i >= drop]
    (choice,) = choose(list(reversed(cands)), _target())
    assert choice.chosen == cands[0]
    assert [v.candidate for v in choice.verdicts] == cands
    planned = plan_targets([Entry(c, b"", None) for c in reversed(cands)], (), None, TABLES)
    (kept,) = planned[minor_of(Version("2.13.0"))]
    assert kept.cand == cands[0]


def test_the_build_tag_outranks_the_torch_abi_as_pip_ranks() -> None:
    """pip and uv take the higher build tag of one version and tag set; the torch ABI decides
    only between files they cannot tell apart (one file name in two folders)."""
    low, high = _cand("2.12", build=1), _cand("2.10", build=9)
    (choice,) = choose([low, high], _target())
    assert choice.chosen == high
    assert "higher build tag (9 > 1" in why_not(choice.verdicts[1], choice, {TAG: 0})
    (same,) = choose([_cand("2.10"), _cand("2.12")], _target())
    assert same.chosen is not None and str(same.chosen.torch) == "stable >= 2.12"


def test_a_local_label_ranks_above_the_plain_version() -> None:
    """The issue's case: ``0.1.0+torch2.10`` over ``0.1.0`` (PEP 440), and labels part by part."""
    plain, label, older = (
        _cand("2.10", version="0.1.0"),
        _cand("2.10", version="0.1.0+torch2.10"),
        _cand("2.10", version="0.1.0+torch2.9"),
    )
    (choice,) = choose([plain, older, label], _target())
    assert [v.candidate for v in choice.verdicts] == [label, older, plain]
    assert "PEP 440 ranks a local label above" in why_not(choice.verdicts[2], choice, {TAG: 0})


def test_pre_releases_are_held_back_while_a_final_release_has_a_file_for_the_target() -> None:
    final, pre = _cand("2.10", version="1.0"), _cand("2.10", version="1.1rc1")
    (choice,) = choose([pre, final], _target())
    assert choice.chosen == final
    (held,) = [v for v in choice.verdicts if v.candidate == pre]
    assert held.held_back and held.verdict.loads and not held.eligible
    assert "--pre considers it" in why_not(held, choice, {TAG: 0})
    (asked,) = choose([pre, final], _target(), pre=True)
    assert asked.chosen == pre and not any(v.held_back for v in asked.verdicts)


def test_a_pre_release_counts_when_no_final_release_has_a_file_for_the_target() -> None:
    other = Tag("cp311", "cp311", "win_amd64")
    final, pre = _cand("2.10", version="1.0", tag=other), _cand("2.10", version="1.1rc1")
    (choice,) = choose([final, pre], _target())
    assert choice.chosen == pre


def test_a_held_back_pre_release_is_not_chosen_where_the_final_does_not_load() -> None:
    """pip's rule: the final release's file fits the tags, so the pre-release stays held back
    even though only it loads (uv would take it); nothing fits, and the reason names --pre."""
    final, pre = _cand("2.14", version="1.0"), _cand("2.10", version="1.1rc1")
    (choice,) = choose([final, pre], _target())
    assert choice.chosen is None
    (held,) = [v for v in choice.verdicts if v.held_back]
    assert held.candidate == pre and "--pre considers it" in why_not(held, choice, {TAG: 0})
