"""``install.choose``: the ranking by torch ABI, written once (``preference``) and used by
``select`` (best first) and ``index`` (the highest kept); pure, no file is read."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from torchwheel.install.candidates import Candidate
from torchwheel.install.choose import best_first, choose, preference
from torchwheel.install.simple_index import Entry, plan_targets
from torchwheel.install.target import TorchTarget, markers_for_tags
from torchwheel.torchabi.need import declared_need
from torchwheel.torchabi.torch_releases import minor_of

TAG = Tag("cp311", "abi3", "linux_x86_64")
# best first: the newest stable floor, an older one, an unstable build for 2.13, no torch
ABIS = ["2.12", "2.10", "unstable", "none"]


def _cand(abi: str, build: int | None = None) -> Candidate:
    extra = f"-{build}" if build is not None else ""
    need = declared_need(abi, (), Version("1.0"), "any", "2.13" if abi == "unstable" else None)
    return Candidate(
        path=Path(f"{abi}/twunit-1.0{extra}-cp311-abi3-linux_x86_64.whl"),
        origin=abi,
        name=canonicalize_name("twunit"),
        version=Version("1.0"),
        build=(build, "") if build is not None else (),
        tags=frozenset({TAG}),
        variant=None,
        torch=need,
        requires_python=None,
    )


def _target(torch: str = "2.13.0") -> TorchTarget:
    return TorchTarget("unit", Version(torch), (TAG,), "3.11", markers_for_tags(frozenset({TAG})))


def test_preference_orders_stable_floors_then_unstable_then_none() -> None:
    ranks = [preference(_cand(a).torch) for a in ABIS]
    assert ranks == sorted(ranks, reverse=True) and len(set(ranks)) == len(ranks)
    assert preference(_cand("any").torch) == preference(_cand("none").torch)


def test_best_first_is_the_same_ranking_ascending() -> None:
    needs = [_cand(a).torch for a in reversed(ABIS)]
    assert [str(n) for n in sorted(needs, key=lambda n: best_first(preference(n)))] == [
        str(_cand(a).torch) for a in ABIS
    ]


@pytest.mark.parametrize("drop", range(len(ABIS) - 1))
def test_select_and_index_choose_the_same_wheel(drop: int) -> None:
    """Whichever candidates remain, ``choose`` (select) and ``plan_targets`` (index's
    torch-2.13 page) keep the one ``preference`` ranks highest."""
    cands = [_cand(a) for i, a in enumerate(ABIS) if i >= drop]
    (choice,) = choose(list(reversed(cands)), _target())
    assert choice.chosen == cands[0]
    assert [v.candidate for v in choice.verdicts] == cands
    planned = plan_targets([Entry(c, b"", None) for c in reversed(cands)])
    (kept,) = planned[minor_of(Version("2.13.0"))]
    assert kept.cand == cands[0]


def test_the_torch_abi_outranks_the_build_tag() -> None:
    low, high = _cand("2.12", build=1), _cand("2.10", build=9)
    (choice,) = choose([high, low], _target())
    assert choice.chosen == low
    (same,) = choose([_cand("2.12", build=1), _cand("2.12", build=2)], _target())
    assert same.chosen is not None and same.chosen.build == (2, "")
