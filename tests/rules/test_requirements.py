"""rules/requirements.py: the TW5xx rules on ``Requires-Dist: torch``, called directly on the
facts of real fixture wheels (``fixtures/wheels.py``) and on wheels written the same way
with other requirements.

These tests exist so that each rule is held to ``docs/reference/rules.md`` on its own, without the
command line: which requirement it reports, in which words, and which near misses it leaves
alone. Expected releases come from the fixtures' documented targets (2.10 for
``elf_marker_2_10``, 2.13 for ``elf_marker_2_13_shims_2_13``, per-minor builds 2.4-2.9) and
from PEP 440 read by hand against torch's real release list, never from the code under test.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from torchwheel.rules import requirements
from torchwheel.rules.registry import REGISTRY, Policy

from ..lib.helpers import fixture_wheels_module, torchwheel
from .direct import facts, hits

LINUX_ABI3 = "cp39-abi3-manylinux_2_28_x86_64"


def stable_wheel(tmp_path: Path, built: dict[str, Path], scenario: str, *requires: str) -> Path:
    """One stable-ABI library (``scenario``) with the given torch requirements."""
    wheels = fixture_wheels_module()
    spec = wheels.WheelSpec(
        "req", "xreq", LINUX_ABI3, ((f"xreq/{scenario}.abi3.so", scenario),), requires=requires
    )
    path: Path = wheels.write_wheel(tmp_path / spec.filename, spec, built)
    return path


def test_each_rule_is_registered_under_its_code() -> None:
    assert REGISTRY["TW501"].check is requirements.torch_requirement_missing
    assert REGISTRY["TW502"].check is requirements.torch_pinned_too_tight
    assert REGISTRY["TW503"].check is requirements.torch_requirement_too_loose
    assert REGISTRY["TW504"].check is requirements.unstable_torch_unpinned
    assert REGISTRY["TW505"].check is requirements.builds_gap


# -- TW501 torch-requirement-missing ----------------------------------------------------------


def test_tw501_stable_wheel_without_a_requirement(fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.torch_requirement_missing, fixture_wheels["tw501"]) == [
        (
            "",
            "binaries link libtorch (2.10) but METADATA has no Requires-Dist: torch: add 'torch>=2.10' "
            "(`torchwheel tag` writes it)",
        )
    ]


def test_tw501_silenced_by_require_torch_false(fixture_wheels: dict[str, Path]) -> None:
    assert (
        hits(requirements.torch_requirement_missing, fixture_wheels["tw501"], Policy(require_torch=False))
        == []
    )


@pytest.mark.parametrize(
    "scenario",
    [
        "clean",  # requires torch>=2.10
        "tw504_no_requirement",  # unstable and no requirement: TW504, the error, says it
        "tw103",  # no torch symbol at all: nothing to require
        "per_release_full",  # per-release builds, no requirement: TW505 judges it against the builds
    ],
)
def test_tw501_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.torch_requirement_missing, fixture_wheels[scenario]) == []


# -- TW502 torch-pinned-too-tight -------------------------------------------------------------


def test_tw502_exact_pin_on_a_stable_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.torch_pinned_too_tight, fixture_wheels["tw502"]) == [
        (
            "",
            "Requires-Dist 'torch==2.14.0' pins one torch release although the stable ABI loads on "
            "torch>=2.13: require 'torch>=2.13' so installers do not swap the user's torch "
            "(`torchwheel tag --relax-pin` writes it)",
        )
    ]


def test_tw502_minor_pin(fixture_wheels: dict[str, Path]) -> None:
    """``==2.11.*`` is one minor: a pin (it is also below the floor: TW503, tested below)."""
    ((member, message),) = hits(requirements.torch_pinned_too_tight, fixture_wheels["tw503_pin_conflict"])
    assert member == ""
    assert message.startswith("Requires-Dist 'torch==2.11.*' pins one torch release")


@pytest.mark.parametrize(
    "scenario",
    [
        "clean",  # torch>=2.10
        "tw503",  # torch>=2.9: too loose, not too tight
        "tw501",  # no requirement
        "tw204",  # torch==2.13.* on an unstable wheel: the pin it needs
    ],
)
def test_tw502_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.torch_pinned_too_tight, fixture_wheels[scenario]) == []


def test_tw502_silent_on_a_range_of_two_minors(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    path = stable_wheel(tmp_path, built_fixtures, "elf_marker_2_10", "torch>=2.12,<2.14")
    assert hits(requirements.torch_pinned_too_tight, path) == []


def test_tw502_says_pin_only_of_a_requirement_that_admits_one_release(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """``torch<2.0`` admits no torch 2.x release at all: it pins nothing (docs/reference/rules.md: TW502
    is a requirement of "exactly one torch release"). What is wrong with it, that no torch
    the binaries load on is admitted, is TW503's to say, and it does."""
    path = stable_wheel(tmp_path, built_fixtures, "elf_marker_2_10", "torch<2.0")
    assert [m for _, m in hits(requirements.torch_requirement_too_loose, path)] == [
        "Requires-Dist 'torch<2.0' admits no torch release the binaries load on (they need torch 2.10.0 "
        "or newer): require 'torch>=2.10' (`torchwheel tag --relax-pin` writes it)"
    ]
    assert hits(requirements.torch_pinned_too_tight, path) == []


# -- TW503 torch-requirement-too-loose --------------------------------------------------------


def test_tw503_floor_below_the_binaries(fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.torch_requirement_too_loose, fixture_wheels["tw503"]) == [
        (
            "",
            "Requires-Dist 'torch>=2.9' admits torch 2.9.0 and newer, but the binaries need torch 2.13.0 or "
            "newer: require 'torch>=2.13' (`torchwheel tag` writes it)",
        )
    ]


def test_tw503_keeps_the_authors_cap_in_view(fixture_wheels: dict[str, Path]) -> None:
    ((_, message),) = hits(requirements.torch_requirement_too_loose, fixture_wheels["tw503_capped"])
    assert message.startswith("Requires-Dist 'torch<3,>=2.9' admits torch 2.9.0 and newer, but the binaries")
    assert message.endswith("(`torchwheel tag` writes it)")


def test_tw503_pin_below_the_floor_needs_relax_pin(fixture_wheels: dict[str, Path]) -> None:
    """``==2.11.*`` admits a torch older than 2.13 and none the binaries load on: tag cannot
    narrow it, only ``--relax-pin`` replaces it."""
    assert hits(requirements.torch_requirement_too_loose, fixture_wheels["tw503_pin_conflict"]) == [
        (
            "",
            "Requires-Dist 'torch==2.11.*' admits torch 2.11.0, but the binaries need torch 2.13.0 or newer: "
            "require 'torch>=2.13' (`torchwheel tag --relax-pin` writes it)",
        )
    ]


def test_tw503_bare_torch_admits_every_release(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    path = stable_wheel(tmp_path, built_fixtures, "elf_marker_2_10", "torch")
    assert hits(requirements.torch_requirement_too_loose, path) == [
        (
            "",
            "Requires-Dist 'torch' admits every torch release, but the binaries need torch 2.10.0 or newer: "
            "require 'torch>=2.10' (`torchwheel tag` writes it)",
        )
    ]


@pytest.mark.parametrize(
    "scenario",
    [
        "clean",  # torch>=2.10 for a 2.10 floor
        "tw502",  # torch==2.14.0 for a 2.13 floor: tight, but not too loose
        "tw207",  # a target newer than the tables: no known torch to require (TW207 says so)
        "weak_shim",  # weak imports of 2.11 shims set no floor above the 2.10 target
        "tw504",  # unstable: TW504's
    ],
)
def test_tw503_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.torch_requirement_too_loose, fixture_wheels[scenario]) == []


# -- TW504 unstable-torch-unpinned ------------------------------------------------------------

_PIN_FIX = (
    "pin the torch minor it was built with, 'torch==X.Y.*' (`torchwheel tag --build-torch X.Y` "
    "writes it; `--build-torch installed` takes the torch installed where it runs)"
)


def test_tw504_range_on_an_unstable_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.unstable_torch_unpinned, fixture_wheels["tw504"]) == [
        (
            "",
            "Requires-Dist 'torch>=2.0' admits torch 2.0.0 and newer, but the binaries use unstable libtorch "
            f"symbols: {_PIN_FIX}",
        )
    ]


def test_tw504_no_requirement_on_an_unstable_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.unstable_torch_unpinned, fixture_wheels["tw504_no_requirement"]) == [
        (
            "",
            "METADATA has no Requires-Dist: torch, so installers admit every torch release, but the binaries "
            f"use unstable libtorch symbols and load only on the torch they were built with: {_PIN_FIX}",
        )
    ]


def test_tw504_no_requirement_and_require_torch_false(fixture_wheels: dict[str, Path]) -> None:
    """The project declares no torch on purpose: nothing to pin."""
    found = hits(
        requirements.unstable_torch_unpinned,
        fixture_wheels["tw504_no_requirement"],
        Policy(require_torch=False),
    )
    assert found == []


@pytest.mark.parametrize(
    "scenario",
    [
        "tw204",  # torch==2.13.*: one minor
        "unstable_patch_pin",  # torch==2.9.1: one patch release is a pin too
        "per_minor",  # per-minor builds pick their own library: TW505's
        "pin_local_cpu",  # torch==2.8.0+cpu admits torch 2.8.0 (the CPU build) only
        "clean",  # stable
    ],
)
def test_tw504_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.unstable_torch_unpinned, fixture_wheels[scenario]) == []


# -- TW505 builds-gap -------------------------------------------------------------------------


def test_tw505_bare_requirement_over_per_minor_builds(fixture_wheels: dict[str, Path]) -> None:
    """Builds for 2.4-2.9; a bare ``torch`` admits 2.0.0-2.3.1 (the releases before) and 2.10
    on: both gaps named, the newer one open-ended."""
    assert hits(requirements.builds_gap, fixture_wheels["per_minor"]) == [
        (
            "",
            "'torch' admits torch 2.0.0-2.3.1, 2.10.0 and newer, for which the wheel has no build (it has "
            "2.4-2.9): unless its Python code works there without them, require only the releases it has "
            "builds for ('torch>=2.4,<2.10')",
        )
    ]


def test_tw505_no_requirement_over_per_release_builds(fixture_wheels: dict[str, Path]) -> None:
    """Issue 41, layout 2: builds named ``_ops_2_11_0`` ... ``_ops_2_13_0``, a main module that
    links no torch, no torch requirement. No TW504 (an error): the missing requirement is judged
    against the builds, as a warning that names the requirement that would fit them."""
    wheel = fixture_wheels["per_release_full"]
    assert hits(requirements.unstable_torch_unpinned, wheel) == []
    assert hits(requirements.builds_gap, wheel) == [
        (
            "",
            "METADATA names no torch, so installers put it beside any torch, also torch 2.0.0-2.10.0, 2.14.0 "
            "and newer, for which the wheel has no build (it has 2.11.0, 2.12.0, 2.12.1, 2.13.0): unless its "
            "Python code works there without them, require only the releases it has builds for "
            "('torch>=2.11.0,<=2.13.0')",
        )
    ]


def test_per_release_builds_named_twice_are_builds(fixture_wheels: dict[str, Path]) -> None:
    """Issue 48, item 4: ``glue_2_13_0/libpywrap_2_13_0_common.so`` and its 2.14.0 twin, the
    release in the folder and again in the file: two per-release builds, no TW504."""
    wheel = fixture_wheels["per_release_named_twice"]
    assert hits(requirements.unstable_torch_unpinned, wheel) == []
    ((member, message),) = hits(requirements.builds_gap, wheel)
    assert member == "" and "(it has 2.13.0, 2.14.0)" in message


def test_tw505_per_patch_builds_miss_one_patch(fixture_wheels: dict[str, Path]) -> None:
    """Builds for 2.1.0-2.1.2, 2.2.0 and 2.2.1; ``>=2.1,<2.3`` also admits torch 2.2.2."""
    ((member, message),) = hits(requirements.builds_gap, fixture_wheels["per_patch"])
    assert member == ""
    assert message.startswith(
        "'torch<2.3,>=2.1' admits torch 2.2.2, for which the wheel has no build (it has 2.1.0, 2.1.1, 2.1.2, "
        "2.2.0, 2.2.1)"
    )


@pytest.mark.parametrize(
    "scenario",
    [
        "per_minor_ranged",  # >=2.6,<2.9 over builds 2.6-2.8: exact
        "per_release_pt",  # >=2.11,<2.13 over builds in pt2.11/ and pt2.12/: exact
        "tw504",  # one unstable build, not per-minor builds
        "clean",  # stable
    ],
)
def test_tw505_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(requirements.builds_gap, fixture_wheels[scenario]) == []


# -- a launcher loaded by a path a package function returns, gated on the torch version ----------
# humming-kernels 0.1.20 (benchmarks/corpus.toml): its 2.11 stable launcher is loaded only
# where ``_get_precompiled_launcher_path()`` passes its torch version check; the name is
# composed in another module (a dict looked up by a constant key). Cut down to that shape.

_GATE_JIT = b"""import platform
from pathlib import Path


def get_native_artifact_name(component: str) -> str:
    return {
        "launcher": "xgate_launcher.dll" if IS_WINDOWS else "libxgate_launcher.so",
        "device_info": "_device_info.pyd" if IS_WINDOWS else "_device_info.abi3.so",
    }[component]


def get_precompiled_artifact_path(source_path, artifact_name):
    arch = platform.machine()
    if arch is None:
        return None
    native_dir = Path(__file__).parents[1] / "_native" / arch
    artifact_path = native_dir / artifact_name
    return artifact_path if artifact_path.is_file() else None
"""

_GATE_OPS = b"""from pathlib import Path

import torch

import xgate.utils.jit as jit_utils

_inited = False


def _get_precompiled_launcher_path():
    from packaging.version import Version

    if Version(torch.__version__) < Version("2.13"):
        return None
    csrc_dir = Path(__file__).parents[1] / "csrc" / "launcher"
    artifact_name = jit_utils.get_native_artifact_name("launcher")
    return jit_utils.get_precompiled_artifact_path(csrc_dir, artifact_name)


def init_launcher():
    global _inited
    if _inited:
        return
    precompiled_path = _get_precompiled_launcher_path()
    if precompiled_path is not None:
        torch.ops.load_library(str(precompiled_path))
        _inited = True
        return
    build_the_launcher_here()
"""

_GATE_MEMBER = "xgate/_native/x86_64/libxgate_launcher.so"


def gated_wheel(tmp_path: Path, built: dict[str, Path], ops: bytes) -> Path:
    """A 2.13 stable launcher (``elf_nomarker_shims_2_13``) required as ``torch>=2.10``,
    loaded by ``ops`` (``_GATE_OPS`` or a variant) on first use."""
    wheels = fixture_wheels_module()
    extra = (
        ("xgate/__init__.py", b"from . import ops\n"),
        ("xgate/utils/__init__.py", b""),
        ("xgate/utils/jit.py", _GATE_JIT),
        ("xgate/ops/__init__.py", b"from .gemm import gemm\n"),
        ("xgate/ops/utils.py", ops),
        ("xgate/ops/gemm.py", b"from xgate.ops.utils import init_launcher\n\ndef gemm(x):\n    init_launcher()\n    return x\n"),
    )  # fmt: skip
    spec = wheels.WheelSpec(
        "gate", "xgate", LINUX_ABI3, ((_GATE_MEMBER, "elf_nomarker_shims_2_13"),), requires=("torch>=2.10",),
        extra=extra,
    )  # fmt: skip
    path: Path = wheels.write_wheel(tmp_path / spec.filename, spec, built)
    return path


def test_tw503_a_launcher_the_version_check_gates_is_no_error(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """The launcher is loaded on first use, and only from torch 2.13 on: ``torch>=2.10`` is
    right (older torches never load it), and ``matrix`` says it loads on 2.10-2.12."""
    path = gated_wheel(tmp_path, built_fixtures, _GATE_OPS)
    assert hits(requirements.torch_requirement_too_loose, path) == []
    reach = facts(path).reach.of(_GATE_MEMBER)
    assert (reach.how, reach.when, reach.torch_from) == ("library", "on-use", "2.13")
    assert "only from torch 2.13 on (`Version(torch.__version__) < Version('2.13')" in reach.why
    grid = torchwheel("matrix", "--format", "json", str(path), cwd=tmp_path)
    assert grid.returncode == 0, grid.stderr
    cells = json.loads(grid.stdout)["wheels"][0]["cells"]
    assert {m: cells[m]["fit"] for m in ("2.10", "2.12", "2.13")} == {
        "2.10": "loads",
        "2.12": "loads",
        "2.13": "loads",
    }
    assert not any("partly" in cells[m]["reason"] for m in ("2.10", "2.12", "2.13")), cells


def test_a_tagged_wheel_keeps_the_gate(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """``tag`` writes the gate into the part's ``Torch-ABI-Optional`` line (``loaded-from=2.13``),
    so the tagged wheel, judged from its WHEEL, gets the untagged wheel's cells: without it
    the launcher would count on 2.10-2.12 too."""
    path = gated_wheel(tmp_path, built_fixtures, _GATE_OPS)
    out = tmp_path / "tagged"
    done = torchwheel("tag", "-w", str(out), str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tagged,) = out.glob("*.whl")
    with zipfile.ZipFile(tagged) as zf:
        wheel_file = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))).decode()
    (line,) = [x for x in wheel_file.splitlines() if x.startswith("Torch-ABI-Optional:")]
    assert "; loaded-from=2.13; " in line and line.endswith(f"files={_GATE_MEMBER}"), line

    def cells(wheel: Path) -> dict[str, tuple[str, str]]:
        grid = torchwheel("matrix", "--format", "json", str(wheel), cwd=tmp_path)
        assert grid.returncode == 0, grid.stderr
        return {m: (c["fit"], c["reason"]) for m, c in json.loads(grid.stdout)["wheels"][0]["cells"].items()}

    assert cells(tagged) == cells(path)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ((b'    if Version(torch.__version__) < Version("2.13"):\n        return None\n', b""), "no version check"),
        ((b'Version(torch.__version__) < Version("2.13")', b'Version(torch.__version__) <= Version("2.13")'),
         "a check this reading does not name a release for"),
        ((b"precompiled_path = _get_precompiled_launcher_path()", b"precompiled_path = somewhere_else()"),
         "a path no package function returns"),
    ],
)  # fmt: skip
def test_tw503_stays_without_the_gate(
    built_fixtures: dict[str, Path], tmp_path: Path, change: tuple[bytes, bytes], why: str
) -> None:
    """Near misses: the same loader short of the evidence keeps today's verdict, the file
    named by no code the reading follows, loaded at import: TW503."""
    ops = _GATE_OPS.replace(*change)
    assert ops != _GATE_OPS, why
    path = gated_wheel(tmp_path, built_fixtures, ops)
    ((_, message),) = hits(requirements.torch_requirement_too_loose, path)
    assert message.startswith(
        "Requires-Dist 'torch>=2.10' admits torch 2.10.0 and newer, but the binaries need torch 2.13.0"
    ), why
    assert facts(path).reach.of(_GATE_MEMBER).when == "import", why
