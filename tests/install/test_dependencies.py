"""install/dependencies.py: the chosen wheel's other ``Requires-Dist`` held against what the
target has, markers evaluated for the target with no extras (PEP 508), torch left to the
choice itself."""

from __future__ import annotations

from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

from torchwheel.install.dependencies import requirements, unmet

from ..lib.helpers import zipped_wheel

_LINUX = {"sys_platform": "linux", "python_version": "3.11", "platform_machine": "x86_64"}


def _have(**versions: str) -> dict[NormalizedName, str]:
    return {canonicalize_name(k): v for k, v in versions.items()}


def _reqs(*lines: str) -> list[Requirement]:
    return [Requirement(line) for line in lines]


def test_what_the_target_lacks_and_what_it_has_instead() -> None:
    reqs = _reqs("numpy>=1.26", "Typing_Extensions", "packaging<24", "torch>=2.10")
    assert unmet(reqs, _have(numpy="1.25.2", packaging="24.1", typing_extensions="4.12"), _LINUX) == [
        "numpy>=1.26 (1.25.2 installed)",
        "packaging<24 (24.1 installed)",
    ]


def test_a_missing_requirement_and_torch_left_out() -> None:
    assert unmet(_reqs("einops", "torch==2.13.*"), _have(), _LINUX) == ["einops (not installed)"]


def test_markers_are_evaluated_for_the_target_without_extras() -> None:
    reqs = _reqs(
        "pywin32; sys_platform == 'win32'",
        "pytest; extra == 'test'",
        "triton; sys_platform == 'linux'",
    )
    assert unmet(reqs, _have(), _LINUX) == ['triton; sys_platform == "linux" (not installed)']


def test_prereleases_installed_count_and_unparsable_versions_pass() -> None:
    assert unmet(_reqs("numpy>=2.0"), _have(numpy="2.1.0rc1"), _LINUX) == []
    assert unmet(_reqs("numpy>=2.0"), _have(numpy="not-a-version"), _LINUX) == []


def test_requirements_read_from_a_wheel(tmp_path: Path) -> None:
    meta = (
        b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: numpy>=1.26\n"
        b"Requires-Dist: not a valid ==requirement\nRequires-Dist: torch>=2.10\n"
    )
    wheel = zipped_wheel(
        tmp_path / "demo-1.0-py3-none-any.whl",
        {
            "demo/__init__.py": b"",
            "demo-1.0.dist-info/METADATA": meta,
            "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        },
        "demo-1.0.dist-info/RECORD",
    )
    assert [str(r) for r in requirements(wheel)] == ["numpy>=1.26", "torch>=2.10"]
