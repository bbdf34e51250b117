"""``doctor.machine_explain``: the machine's errors answered from the machine. The GLIBCXX case
is the loader's own error on a real library (``fixtures/machine``: it needs GLIBCXX_3.4.99 of
``libstdc++.so.6``), taken apart and answered from the libstdc++ this interpreter's loader finds;
the GPU case from NVIDIA-built libraries (``fixtures/cuda/bin``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from torchwheel.analysis.load import load_facts
from torchwheel.binary.elfdynamic import dynamic_facts
from torchwheel.doctor.driver import Driver
from torchwheel.doctor.environment import Distribution, Environment
from torchwheel.doctor.import_error import parse_import_error
from torchwheel.doctor.libsearch import read_process
from torchwheel.doctor.machine import Machine
from torchwheel.doctor.machine_explain import explain_kernel, explain_version
from torchwheel.tables.tableset import shipped_tables
from torchwheel.wheel.installed import Installed

from ..lib.helpers import REPO, machine_fixtures

EMPTY = Environment(None, (), 0, ())


def _machine() -> Machine:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    return Machine(Driver("none", note="test"), read_process(sys.executable, env, None, []))


def test_a_version_the_system_lacks() -> None:
    lib, _ = machine_fixtures().cases["glibcxx"]
    proc = subprocess.run(
        [sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(lib)],
        capture_output=True,
        text=True,
    )
    error = proc.stderr.strip().splitlines()[-1]
    assert "version `GLIBCXX_3.4.99' not found" in error, error
    q = parse_import_error(error)
    answer = explain_version(q.version or "", q.version_library, q.path, _machine(), EMPTY)
    found = q.version_library or ""
    defined = dynamic_facts(Path(found)).versions_defined or frozenset()
    newest = max(
        (v for v in defined if v.startswith("GLIBCXX_3.4")), key=lambda v: tuple(map(int, v[8:].split(".")))
    )
    assert answer.axis == "system library" and not answer.fits
    assert answer.lines[0] == f"the loader finds {found} for libstdc++.so.6"
    assert answer.lines[1].startswith(f"it lacks GLIBCXX_3.4.99; the newest it has is {newest}")
    assert "libstdcxx-ng" in answer.fix


def test_a_version_the_system_has() -> None:
    answer = explain_version("GLIBCXX_3.4.9", None, None, _machine(), EMPTY)
    assert answer.fits and "it defines GLIBCXX_3.4.9" in answer.lines


def test_gpu_code_for_another_gpu(tmp_path: Path) -> None:
    (facts,) = load_facts((REPO / "fixtures" / "cuda" / "bin" / "cu13_cubins_only.so",), (), shipped_tables())
    installed = Installed("demo", "1.0", tmp_path, tmp_path / "demo-1.0.dist-info", tmp_path)
    env = Environment(None, (Distribution(installed, facts),), 0, ())
    none = explain_kernel(120, env)
    assert not none.fits and none.needing == ("demo",) and "none runs on sm_120" in none.lines[1]
    assert explain_kernel(86, env).fits  # sm_80 cubins run on 8.6
    unknown = explain_kernel(None, env)
    assert "--gpu" in unknown.fix and not unknown.fits
