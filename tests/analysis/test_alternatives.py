"""analysis/alternatives.py: the torch release a per-release build's name claims, at every
granularity the published wheels use (issue 41, layout 2), and the names that claim none."""

from __future__ import annotations

import pytest

from torchwheel.analysis.alternatives import build_of, find_alternatives


@pytest.mark.parametrize(
    ("member", "key", "release"),
    [
        ("pkg/_ops_2_12_1.so", "pkg/_ops_*.so", (2, 12, 1)),  # the full version, bare
        ("pkg/_ops_2_12.so", "pkg/_ops_*.so", (2, 12)),
        ("pkg/ops_torch212.so", "pkg/ops_*.so", (2, 12)),
        ("pkg/pt2.12/_C.so", "pkg/*/_C.so", (2, 12)),
        ("moodist/pt27/_C.abi3.so", "moodist/*/_C.abi3.so", (2, 7)),  # moodist 0.11.4
        ("moodist/pt210/_C.abi3.so", "moodist/*/_C.abi3.so", (2, 10)),
        ("x/libtorch_c_dlpack_addon_torch24-cpu.so", "x/libtorch_c_dlpack_addon_*-cpu.so", (2, 4)),
        ("dgl/libdgl_sparse_pytorch_2.2.1.so", "dgl/libdgl_sparse_*.so", (2, 2, 1)),
        ("pkg/torch-2.6/lib/x.so", "pkg/*/lib/x.so", (2, 6)),
        # the release named twice, in the folder and again in the file (issue 48, item 4)
        ("pkg/glue_2_14_0/libpywrap_2_14_0_common.so", "pkg/glue_*/libpywrap_*_common.so", (2, 14, 0)),
        ("pkg/torch2.13/_C_torch213.so", "pkg/*/_C_*.so", (2, 13)),
    ],
)
def test_names_that_claim_a_release(member: str, key: str, release: tuple[int, ...]) -> None:
    assert build_of(member) == (key, release)


@pytest.mark.parametrize(
    "member",
    [
        "pkg/libfoo.so.2.1",  # a soname's version
        "pkg/_C.cpython-312-x86_64-linux-gnu.so",
        "pkg/lib_cuda12_1.so",  # a toolkit release
        "pkg/opt2_1.so",  # not a word of its own
        "pkg/sm_120.so",
        "pkg/2_12/_ops_2_12_1.so",  # two claims in one path that differ: ambiguous
        "pkg/torch2.13/_C_2_14.so",
        "pkg/glue_2_14_0/libpywrap_2_13_0_common.so",
    ],
)
def test_names_that_claim_none(member: str) -> None:
    assert build_of(member) is None


def test_a_per_patch_set_keeps_its_granularity() -> None:
    names = [f"pkg/_ops_{r}.so" for r in ("2_11_0", "2_12_0", "2_12_1", "2_13_0")]
    (found,) = find_alternatives(names)
    assert found.builds == frozenset({(2, 11, 0), (2, 12, 0), (2, 12, 1), (2, 13, 0)})
    assert find_alternatives(["pkg/_ops_2_12_1.so"]) == []  # one release is no set


def test_a_release_named_twice_makes_one_set() -> None:
    names = [f"pkg/glue_{r}/libpywrap_{r}_common.so" for r in ("2_13_0", "2_14_0", "2_15_0")]
    (found,) = find_alternatives([*names, "pkg/glue_2_13_0/README.so"])
    assert found.key == "pkg/glue_*/libpywrap_*_common.so"
    assert found.builds == frozenset({(2, 13, 0), (2, 14, 0), (2, 15, 0)})
