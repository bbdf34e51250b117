"""Shared pytest fixtures."""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .helpers import REPO, fixture_build, fixture_wheels_module


def pytest_sessionstart(session: pytest.Session) -> None:
    """The package's ``.pyc`` files, as an installation has them: the suite runs torchwheel in
    thousands of fresh processes, and where ``PYTHONDONTWRITEBYTECODE`` is set (as on CI
    machines) each would otherwise compile the ~80 modules a command imports again, about
    0.2 s a process. Up-to-date files are left alone; an edited module is recompiled.

    Every command reads the user tables file ``symbols update`` writes (``tablechoice``): the
    suite gets an empty data directory of its own, so a developer's file changes no verdict."""
    compileall.compile_dir(REPO / "src" / "torchwheel", quiet=1)
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="torchwheel-tests-data-")
    os.environ.pop("TORCHWHEEL_SYMBOLS", None)


@pytest.fixture(scope="session")
def built_fixtures() -> dict[str, Path]:
    """Every test binary of ``fixtures/build.py``: scenario name -> file.

    Built once into ``.cache/fixtures`` at the repository root (gitignored) and reused while
    the sources, the build script and the toolchains are unchanged.  The expected facts of each
    scenario are in ``fixtures/README.md`` and in ``SCENARIOS`` of ``fixtures/build.py``.
    """
    files: dict[str, Path] = fixture_build().build_all(REPO / ".cache" / "fixtures")
    return files


@pytest.fixture(scope="session")
def fixture_wheels(
    built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """The wheels of ``fixtures/wheels.py`` (scenario -> .whl), assembled fresh per session."""
    out = tmp_path_factory.mktemp("wheels")
    files: dict[str, Path] = fixture_wheels_module().build_wheels(built_fixtures, out)
    return files


@pytest.fixture(scope="session")
def torch_wheel() -> Path:
    """The torch 2.13.0 wheel this machine's pip resolves locally (as the README's setup does),
    kept in ``.cache/torch-wheel``."""
    cache = REPO / ".cache" / "torch-wheel"
    found = sorted(cache.glob("torch-2.13.0*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "torch==2.13.0", "-d", str(cache)],
            check=True,
        )
        found = sorted(cache.glob("torch-2.13.0*.whl"))
    return found[0]


@pytest.fixture(scope="session")
def torch_platform_wheels() -> dict[str, Path]:
    """torch 2.13.0's macOS arm64 and Windows wheels (Mach-O and PE libraries of 300 MB),
    downloaded once into ``.cache/torch-wheels`` by pip, like ``torch_wheel``."""
    cache = REPO / ".cache" / "torch-wheels"
    out: dict[str, Path] = {}
    for key, platform in (("macos", "macosx_14_0_arm64"), ("windows", "win_amd64")):
        found = sorted(cache.glob(f"torch-2.13.0-*-{platform}.whl"))
        if not found:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                 "--platform", platform, "--python-version", "3.11", "torch==2.13.0", "-d", str(cache)],
                check=True,
            )  # fmt: skip
            found = sorted(cache.glob(f"torch-2.13.0-*-{platform}.whl"))
        out[key] = found[0]
    return out
