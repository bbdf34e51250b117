"""``doctor.driver``: the driver read as an interpreter's loader finds it, in a probe that runs
nothing of the environment (``-I -S``), from stub drivers on ``LD_LIBRARY_PATH``."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from torchwheel.doctor.driver import Driver, from_probe, read_driver

from ..lib.helpers import fresh_venv, machine_fixtures


def _without_driver() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}


def test_a_stub_driver_is_the_driver() -> None:
    for version, cuda in ((12040, (12, 4)), (13000, (13, 0)), (13020, (13, 2))):
        folder = machine_fixtures().drivers[version]
        found = read_driver(sys.executable, {**_without_driver(), "LD_LIBRARY_PATH": str(folder)})
        assert found.state == "found" and found.cuda == cuda, found
        assert Path(found.source) == folder / "libcuda.so.1", found
        assert f"CUDA {cuda[0]}.{cuda[1]}" in found.words


def test_no_driver_is_said() -> None:
    found = read_driver(sys.executable, _without_driver())
    if shutil.which("nvidia-smi") is None and not Path("/proc/driver/nvidia").exists():
        assert found == Driver("none", note="the loader finds no libcuda.so.1 and there is no nvidia-smi")
    else:  # a machine with a real driver: it is read, whatever it is
        assert found.state == "found", found


def test_nothing_of_the_environment_runs(tmp_path: Path) -> None:
    """A sitecustomize and a .pth line in the target env would run under plain ``-I``; the
    probe's ``-S`` keeps them out."""
    python = fresh_venv(tmp_path / "env")
    (site,) = (tmp_path / "env" / "lib").glob("python3*/site-packages")
    marker = tmp_path / "ran"
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('sitecustomize')\n")
    (site / "evil.pth").write_text(f"import os; open({str(marker)!r}, 'w').write('pth')\n")
    folder = machine_fixtures().drivers[12040]
    found = read_driver(str(python), {**_without_driver(), "LD_LIBRARY_PATH": str(folder)})
    assert found.cuda == (12, 4) and not marker.exists()


def test_what_the_probe_may_answer() -> None:
    assert from_probe({"platform": "darwin"}).state == "unknown"
    smi = "| NVIDIA-SMI 550.54.14   Driver Version: 550.54.14   CUDA Version: 12.4 |"
    found = from_probe({"platform": "linux", "library": "libcuda.so.1", "error": "not found"}, lambda: smi)
    assert found.state == "found" and found.cuda == (12, 4) and found.source == "nvidia-smi"
    broken = from_probe({"platform": "linux", "library": "libcuda.so.1", "status": 999, "version": 0})
    assert broken.state == "unknown" and "999" in broken.note
    assert from_probe({"platform": "linux", "error": "x"}, lambda: None).state == "none"
