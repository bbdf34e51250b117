"""The NVIDIA driver of the machine, as an interpreter's loader finds it: the CUDA version it
supports, read the way the CUDA runtime reads it (``cuDriverGetVersion`` of ``libcuda.so.1``).

Read in a small process of our own, started from the target interpreter with ``-I -S`` (no
``site``, no ``.pth`` file, nothing of the environment runs): it opens ``libcuda.so.1`` with
``ctypes`` by name, so the loader searches exactly where it would for that interpreter
(``LD_LIBRARY_PATH``, the ldconfig cache, the executable's RPATH), and asks it. Opening the
driver's library runs the driver's own initialisers: that is the machine's driver, not the
environment's code, and ``cuInit`` is never called (the version needs none). The file the
loader opened is read back from ``/proc/self/maps``. Where no ``libcuda.so.1`` loads,
``nvidia-smi``'s "CUDA Version: 12.4" is the fallback; where neither answers there is no
driver (a CPU-only machine), said so and never guessed. On Windows the library is
``nvcuda.dll``; macOS has no CUDA driver.

A GPU is not needed to test this: a compiled ``libcuda.so.1`` whose ``cuDriverGetVersion``
writes 12040, put on ``LD_LIBRARY_PATH``, is a real library to the loader
(``fixtures/src/cuda_driver_stub.c``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from typing import Literal

from torchwheel.frozen import frozen
from torchwheel.torchabi.cuda_driver import Cuda, cuda_text, parse_driver_version

_TIMEOUT = 60
_SMI_VERSION = re.compile(r"CUDA Version\s*:\s*(\d+)\.(\d+)")

_PROBE = r"""
import ctypes, json, sys
out = {"platform": sys.platform}
name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
out["library"] = name
if sys.platform == "darwin":
    print(json.dumps(out)); raise SystemExit(0)
try:
    lib = ctypes.CDLL(name)
except OSError as exc:
    out["error"] = str(exc)[:300]
else:
    version = ctypes.c_int(0)
    try:
        out["status"] = int(lib.cuDriverGetVersion(ctypes.byref(version)))
        out["version"] = int(version.value)
    except AttributeError:
        out["status"] = -1
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if "libcuda.so" in line and "/" in line:
                    out["path"] = line[line.index("/"):].strip()[:4096]
                    break
    except OSError:
        pass
print(json.dumps(out))
"""


@frozen
class Driver:
    """What the machine's NVIDIA driver is, for one interpreter.

    ``state``: ``found`` (``cuda`` is the CUDA version it supports), ``none`` (no driver:
    no ``libcuda.so.1`` the loader finds and no ``nvidia-smi``), ``unknown`` (a driver whose
    version could not be read, or a platform not judged: ``note`` says why). ``source``:
    how it was read (the library's path, or ``nvidia-smi``)."""

    state: Literal["found", "none", "unknown"]
    cuda: Cuda | None = None
    source: str = ""
    note: str = ""

    @property
    def words(self) -> str:
        if self.state == "found" and self.cuda is not None:
            return f"NVIDIA driver supporting CUDA {cuda_text(self.cuda)} ({self.source})"
        if self.state == "none":
            return f"no NVIDIA driver ({self.note})"
        return f"NVIDIA driver not judged ({self.note})"


def read_driver(python: str, environ: dict[str, str] | None = None) -> Driver:
    """The driver as ``python``'s loader finds it (module docstring)."""
    env = dict(os.environ if environ is None else environ)
    env.pop("PYTHONPATH", None)
    try:
        proc = subprocess.run(
            [python, "-I", "-S", "-c", _PROBE], capture_output=True, text=True, timeout=_TIMEOUT, env=env
        )
        doc = (
            json.loads(proc.stdout.strip().splitlines()[-1])
            if proc.returncode == 0 and proc.stdout.strip()
            else None
        )
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        doc = None
    if not isinstance(doc, dict):
        return Driver("unknown", note=f"the probe of {python} did not answer")
    return from_probe(doc, _smi)


def from_probe(doc: dict[str, object], smi: Callable[[], str | None] | None = None) -> Driver:
    """The driver from the probe's answer, ``nvidia-smi`` (a callable returning its output,
    or None) asked where the library did not load."""
    if doc.get("platform") == "darwin":
        return Driver("unknown", note="macOS has no NVIDIA CUDA driver: not judged")
    library = str(doc.get("library") or "libcuda.so.1")
    if "error" not in doc:
        status, version = doc.get("status"), doc.get("version")
        where = str(doc.get("path") or library)
        if status == 0 and isinstance(version, int) and (cuda := parse_driver_version(version)) is not None:
            return Driver("found", cuda, where)
        return Driver(
            "unknown",
            source=where,
            note=f"{where} loads, but cuDriverGetVersion answered {status}, {version}",
        )
    said = smi() if smi is not None else None
    if isinstance(said, str) and (m := _SMI_VERSION.search(said)):
        return Driver(
            "found",
            (int(m.group(1)), int(m.group(2))),
            "nvidia-smi",
            f"{library} did not load: {doc['error']}",
        )
    return Driver("none", note=f"the loader finds no {library} and there is no nvidia-smi")


def _smi() -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe], capture_output=True, text=True, timeout=_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout[: 1 << 16] if proc.returncode == 0 else None
