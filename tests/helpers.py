"""Plain helper functions shared by test modules (pytest fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
_BUILD = "torchwheel_fixtures_build"  # PyPA's ``build`` package may own the name ``build``


def load_script(name: str, path: Path) -> ModuleType:
    """A script of the repository as a module, loaded once (under a name of its own: PyPA's
    ``build`` package may own the name ``build``)."""
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def fixture_build() -> ModuleType:
    """``fixtures/build.py`` as a module: the scenario table is readable without building."""
    if str(FIXTURES) not in sys.path:
        sys.path.insert(0, str(FIXTURES))
    return load_script(_BUILD, FIXTURES / "build.py")


def torchwheel(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """The CLI as users run it: a fresh process, so exit codes and stderr are the real ones."""
    return subprocess.run(
        [sys.executable, "-m", "torchwheel", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def scenario_names(bad: bool) -> list[str]:
    """Good or bad scenarios; the odd-marker ones have their own tests."""
    fb = fixture_build()
    return [n for n, sc in fb.SCENARIOS.items() if (sc.format == "bad") == bad and n not in fb.ODD_MARKERS]


def fixture_wheels_module() -> ModuleType:
    """``fixtures/wheels.py``: the wheel scenarios and the bad archives."""
    fixture_build()  # puts fixtures/ on sys.path
    import wheels

    return wheels


def fresh_venv(path: Path) -> Path:
    """A new venv without pip (fast); install into it with ``pip_install``. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path / "bin" / "python"


def pip_install(python: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """This environment's pip, installing into another interpreter's environment."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
