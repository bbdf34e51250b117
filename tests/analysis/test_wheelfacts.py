"""``analysis.wheelfacts``: a wheel's facts are frozen, and what they add up to (build units,
torch builds, accelerators, runtimes it brings, per-release sets, the torch need) is derived
once per facts object, from real fixture wheels (``fixtures/wheels.py``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from torchwheel.analysis import buildunits, wheelfacts
from torchwheel.analysis.load import load_facts
from torchwheel.analysis.wheelfacts import WheelFacts, torch_need_of
from torchwheel.report.facts_document import wheel_json
from torchwheel.report.show_text import wheel_text
from torchwheel.rules import run_all
from torchwheel.rules.registry import Policy
from torchwheel.tables.tableset import shipped_tables
from torchwheel.tagging.plan import plan, planned_facts
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild
from torchwheel.wheel.metadata import parse_metadata


def _facts(fixture_wheels: dict[str, Path], name: str) -> WheelFacts:
    (facts,) = load_facts((fixture_wheels[name],), (), shipped_tables())
    return facts


def test_facts_are_frozen(fixture_wheels: dict[str, Path]) -> None:
    w = _facts(fixture_wheels, "cuda_flavours")
    assert isinstance(w.binaries, tuple) and isinstance(w.unreadable, tuple)
    assert isinstance(w.record_problems, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.binaries = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.kind = "directory"  # type: ignore[misc]


def test_flavours_picked_by_torch(fixture_wheels: dict[str, Path]) -> None:
    """A CPU and a CUDA 13 flavour of one library: one unit; the CPU flavour serves every
    torch build but a CUDA one, where the CUDA 13 flavour is taken: never CUDA 12."""
    w = _facts(fixture_wheels, "cuda_flavours")
    (unit,) = w.build_units
    assert [m for m, _ in unit.members] == ["wflavours/_ops_cpu.so", "wflavours/_ops_cuda.so"]
    assert unit.preferred == ""
    assert w.torch_builds == frozenset(
        {TorchBuild("cpu"), TorchBuild("cuda", 13), TorchBuild("rocm"), TorchBuild("xpu")}
    )
    assert unit.builds == w.torch_builds
    assert w.accelerator_needs.cuda_majors == (13,)
    assert w.torch_need.builds == w.torch_builds


def test_loader_preferred_flavour(fixture_wheels: dict[str, Path]) -> None:
    """The PyG loader takes ``_cuda`` whenever it exists: that flavour alone decides."""
    w = _facts(fixture_wheels, "pyg_loader")
    assert dict(w.loader_prefers) == {"wpyg_rocm": "cuda"}
    fps, version = w.build_units
    assert (fps.key, fps.preferred, fps.builds) == (
        "wpyg_~/_fps_~.so",
        "cuda",
        frozenset({TorchBuild("cuda", 13)}),
    )
    assert version.preferred == "cuda" and version.builds == ANY_BUILD  # neither flavour needs a GPU
    assert w.torch_builds == frozenset({TorchBuild("cuda", 13)})
    assert buildunits.build_choices(w.build_units)[0].startswith("_fps_{cpu,cuda}.so: its loader")


def test_two_majors_load_nowhere(fixture_wheels: dict[str, Path]) -> None:
    assert _facts(fixture_wheels, "tw701").torch_builds == frozenset()
    assert _facts(fixture_wheels, "tw406").torch_builds is None  # a member could not be read


def test_own_runtime(fixture_wheels: dict[str, Path]) -> None:
    """A library that links no torch and whose runtime the wheel's requirement installs."""
    w = _facts(fixture_wheels, "tw708")
    assert w.brought_runtimes == {"cudart": {13: "the requirement nvidia-cuda-runtime>=13.0"}}
    assert w.torch_builds == ANY_BUILD
    (note,) = buildunits.own_runtime_notes(w.binaries, w.brought_runtimes)
    assert note.startswith("w708/_kernels.so links no torch and brings its own CUDA 13 runtime")


def test_replace_derives_afresh(fixture_wheels: dict[str, Path]) -> None:
    """``dataclasses.replace`` is a new object: its derived facts follow its own metadata."""
    w = _facts(fixture_wheels, "tw708")
    assert w.torch_builds == ANY_BUILD
    text = "".join(
        line for line in w.contents.metadata_text.splitlines(keepends=True) if "nvidia" not in line
    )
    without = dataclasses.replace(w, metadata=parse_metadata(text))
    assert without.brought_runtimes == {}
    assert without.torch_builds == frozenset({TorchBuild("cuda", 13)})
    assert w.torch_builds == ANY_BUILD  # the original keeps its own


def test_per_release_and_stable_needs(fixture_wheels: dict[str, Path]) -> None:
    per_minor = _facts(fixture_wheels, "per_minor")
    assert [a.key for a in per_minor.alternatives] == ["wperminor/_C_cpu_*.so", "wperminor/_C_cuda_*.so"]
    assert per_minor.torch_need.kind == "unstable"
    assert per_minor.torch_need.releases == frozenset((2, m) for m in range(4, 10))
    cuda13 = _facts(fixture_wheels, "cuda13")
    assert cuda13.alternatives == () and not cuda13.provides_libtorch
    assert (cuda13.torch_need.kind, cuda13.torch_need.builds) == ("any", frozenset({TorchBuild("cuda", 13)}))
    assert cuda13.torch_need.evidence == "wcuda13/_ops.so: libc10_cuda.so, libcudart.so.13, libtorch_cuda.so"
    assert cuda13.torch_need.source == "binaries (untagged wheel)"
    assert torch_need_of(cuda13, "tag").source == "tag"
    assert torch_need_of(cuda13, "tag") == cuda13.torch_need  # the source explains, it does not decide
    stable = _facts(fixture_wheels, "tw406")
    assert (stable.torch_need.kind, str(stable.torch_need.floor)) == ("stable", "2.10.0")
    assert stable.declared_targets == {"demo_stable/elf_marker_2_10.abi3.so": stable.torch_need.floor}
    assert _facts(fixture_wheels, "torch_renamed").provides_libtorch


def _counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> Callable[[], int]:
    calls = 0
    real = getattr(module, name)

    def counting(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*args)

    monkeypatch.setattr(module, name, counting)
    return lambda: calls


@pytest.mark.parametrize("name", ["cuda_flavours", "tw708", "per_minor", "pyg_loader"])
def test_derived_once(fixture_wheels: dict[str, Path], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Every rule, both reports and ``tag``'s plan read one computation of each derived fact."""
    counts = {
        fn: _counted(monkeypatch, buildunits, fn)
        for fn in ("build_units", "brought_runtimes", "builds_loaded_on")
    }
    counts["torch need"] = _counted(monkeypatch, wheelfacts, "_torch_need")
    w = _facts(fixture_wheels, name)
    assert all(n() == 0 for n in counts.values())  # nothing derived before it is asked for
    run_all([w], Policy())
    wheel_json(w)
    wheel_text(w)
    p = plan(w, TagOptions())
    assert {fn: n() for fn, n in counts.items()} == dict.fromkeys(counts, 1)
    after = planned_facts(w, p)  # a new object: it derives its own, once
    assert after.torch_need == after.torch_need == w.torch_need
    assert counts["torch need"]() == 2
