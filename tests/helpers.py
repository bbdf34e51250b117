"""Plain helper functions shared by test modules (pytest fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
_BUILD = "torchwheel_fixtures_build"  # PyPA's ``build`` package may own the name ``build``


def fixture_build() -> ModuleType:
    """``fixtures/build.py`` as a module: the scenario table is readable without building."""
    module = sys.modules.get(_BUILD)
    if module is None:
        if str(FIXTURES) not in sys.path:
            sys.path.insert(0, str(FIXTURES))
        spec = importlib.util.spec_from_file_location(_BUILD, FIXTURES / "build.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_BUILD] = module
        spec.loader.exec_module(module)
    return module


def scenario_names(bad: bool) -> list[str]:
    """Good or bad scenarios; the odd-marker ones have their own tests."""
    fb = fixture_build()
    return [n for n, sc in fb.SCENARIOS.items() if (sc.format == "bad") == bad and n not in fb.ODD_MARKERS]


def fixture_wheels_module() -> ModuleType:
    """``fixtures/wheels.py``: the wheel scenarios and the bad archives."""
    fixture_build()  # puts fixtures/ on sys.path
    import wheels

    return wheels
