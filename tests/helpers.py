"""Plain helper functions shared by test modules (pytest fixtures live in conftest.py)."""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

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


def peak_rss_mb(*args: str) -> tuple[int, float]:
    """Run the CLI and read the child's own peak RSS from wait4 (not RUSAGE_CHILDREN, which
    is the largest of every child this test process ever had)."""
    run = measured_run([sys.executable, "-m", "torchwheel", *args])
    return run.code, run.peak_mb


@dataclass
class MeasuredRun:
    code: int
    stdout: str
    stderr: str
    peak_mb: float
    seconds: float
    timed_out: bool


# Linux keeps the largest RSS a process ever had across exec (and a forked child starts from
# its parent's): a CLI spawned straight from a 300 MB pytest would report 300 MB. So a small
# launcher (a fresh interpreter, nothing imported) forks the command and reports the child's
# own figure from os.wait4 on a pipe.
_LAUNCHER = """
import json, os, resource, signal, sys, time
cmd, limit, timeout, report = json.loads(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.setsid()
    os.close(report)
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
deadline, killed = time.monotonic() + timeout, False
while True:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        break
    if not killed and time.monotonic() > deadline:
        killed = True
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.005)
os.write(report, json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, killed]).encode())
"""


def measured_run(
    cmd: list[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    address_space: int | None = None,
) -> MeasuredRun:
    """Run ``cmd`` and read its own peak RSS from ``os.wait4`` (includes the children it
    waited for), through ``_LAUNCHER``. A run past ``timeout`` is killed with its whole
    process group, so a hang fails the test instead of blocking it; ``address_space`` caps
    the child's virtual memory so a runaway allocation cannot take the machine down before
    the assertion does."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        read_end, write_end = os.pipe()
        try:
            subprocess.run(
                [sys.executable, "-S", "-c", _LAUNCHER, json.dumps([cmd, address_space or 0, timeout, write_end])],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                pass_fds=(write_end,),
            )  # fmt: skip
        finally:
            os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            code, peak, timed_out = json.loads(pipe.read() or b"[-1, 0, false]")
        out.seek(0)
        err.seek(0)
        return MeasuredRun(
            code,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            peak,
            time.monotonic() - start,
            timed_out,
        )


def zipped_wheel(path: Path, members: dict[str, bytes], record: str) -> Path:
    """Write ``members`` and a RECORD (``record``: its member name) that hashes them, with
    plain ``csv`` and ``zipfile``: test wheels are not made by the code they test. Names a
    wheel may carry (commas, quotes, controls) are quoted as csv quotes them."""
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    for member, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([member, f"sha256={digest}", len(data)])
    writer.writerow([record, "", ""])
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in {**members, record: rows.getvalue().encode()}.items():
            zf.writestr(member, data)
    return path


def marker_hits(buf: Any, start: int = 0, end: int | None = None) -> list[Any]:
    """The marker records ``binary.marker_record`` keeps from ``buf[start:end]``, as the
    readers collect them (``collect_hits`` into one ``Hits``)."""
    from torchwheel.binary import marker_record

    hits = marker_record.Hits()
    marker_record.collect_hits(buf, hits, start, end)
    return hits.found


ReleaseMember = tuple[str, str, tuple[str, ...]]  # binary scenario, wheel tag, torch requirements


def release_wheels(
    built: dict[str, Path], out: Path, members: list[ReleaseMember], dist: str = "relset"
) -> list[Path]:
    """One release of ``dist`` 1.0.0, a wheel per member, each holding its one library under the
    name its tag asks for (``_C.pyd``, ``_C.abi3.so``, or CPython 3.11's), written by the
    fixtures' own writer: the release sets of the TW6xx and ``tag --release`` tests."""
    wheels = fixture_wheels_module()
    paths = []
    for scenario, tag, requires in members:
        suffix = (
            ".pyd"
            if scenario.startswith("pe_")
            else ".abi3.so"
            if "abi3" in tag
            else ".cpython-311-x86_64-linux-gnu.so"
        )
        spec = wheels.WheelSpec("rel", dist, tag, ((f"{dist}/_C{suffix}", scenario),), requires=requires)
        paths.append(wheels.write_wheel(out / spec.filename, spec, built))
    return paths
