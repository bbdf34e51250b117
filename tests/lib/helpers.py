"""Plain helper functions shared by test modules (pytest fixtures live in conftest.py)."""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
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


# TORCHWHEEL_TEST_PROCESS=1 runs every ``torchwheel()`` call as a fresh process, as the suite
# did before it ran commands in-process: the documented check that the two agree
# (README, "Development").
_PROCESS = os.environ.get("TORCHWHEEL_TEST_PROCESS") == "1"


def torchwheel(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: int = 300,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """The CLI in this process: the command's own exit-code decision (``cli.exits.run``), its
    stdout and stderr, in ``cwd`` with exactly ``env`` as the environment. A fresh interpreter
    costs 0.2-0.5 s a call, and the suite makes thousands; what only a real process shows
    (the console script, signals, the interpreter's own exit) is proven by
    ``torchwheel_process`` in the tests named for it (tests/e2e/test_console_script.py)."""
    if _PROCESS:
        return torchwheel_process(*args, cwd=cwd, env=env, timeout=timeout, input=input)
    return _in_process(list(args), cwd=cwd, env=env, input=input)


def torchwheel_process(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: int = 300,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """The CLI as users run it: a fresh process, so exit codes and stderr are the real ones."""
    return subprocess.run(
        [sys.executable, "-m", "torchwheel", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def _as_main() -> ModuleType:
    """What ``python -m torchwheel`` leaves as ``__main__``: click names the program from it
    (``Usage: python -m torchwheel ...``), as in a fresh process."""
    main = ModuleType("__main__")
    main.__package__ = "torchwheel"
    return main


_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE]


def _in_process(
    args: list[str], *, cwd: Path | None, env: dict[str, str] | None, input: str | None
) -> subprocess.CompletedProcess[str]:
    import tempfile as _tempfile

    import torchwheel.cli as cli
    from torchwheel.cli.exits import run

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_argv, saved_main = sys.argv, sys.modules["__main__"]
    saved_tempdir = _tempfile.tempdir
    # what a command may change and a process would take with it: the handlers of the signals
    # it catches (install's rollback ignores SIGINT while it runs) and the signal mask (a
    # write holds SIGTERM back): a child a later test starts inherits both
    saved_handlers = {n: signal.getsignal(n) for n in _SIGNALS}
    saved_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    out, err = io.BytesIO(), io.BytesIO()
    # a fresh process's streams: UTF-8 as under PYTHONIOENCODING/UTF-8 mode, stderr with
    # backslashreplace as CPython sets it
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8")
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        _tempfile.tempdir = None  # TMPDIR is read anew, as a new process reads it
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        sys.argv = [str(Path(cli.__file__).with_name("__main__.py")), *args]
        sys.modules["__main__"] = _as_main()
        try:
            code = run(cli.cli, args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        stdout.flush()
        stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        sys.modules["__main__"] = saved_main
        os.chdir(saved_cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(saved_env)
        _tempfile.tempdir = saved_tempdir
        for number, handler in saved_handlers.items():
            signal.signal(number, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask)
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "torchwheel", *args],
        int(code),
        _as_text(out.getvalue()),
        _as_text(err.getvalue()),
    )


def _as_text(data: bytes) -> str:
    """What ``subprocess.run(text=True)`` makes of a stream: UTF-8, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()


def scenario_names(bad: bool) -> list[str]:
    """Good or bad scenarios; the odd-marker ones have their own tests."""
    fb = fixture_build()
    return [n for n, sc in fb.SCENARIOS.items() if (sc.format == "bad") == bad and n not in fb.ODD_MARKERS]


def fixture_wheels_module() -> ModuleType:
    """``fixtures/wheels.py``: the wheel scenarios and the bad archives."""
    fixture_build()  # puts fixtures/ on sys.path
    import wheels

    return wheels


def machine_fixtures() -> Any:
    """The built machine fixtures (``fixtures/machine/build.py``: stub NVIDIA drivers and the
    loader's search layouts), in ``.cache/machine``: ``.drivers[12040]`` is the folder of a
    ``libcuda.so.1`` that says CUDA 12.4, ``.cases[name]`` a library and its LD_LIBRARY_PATH."""
    build = load_script("torchwheel_machine_build", REPO / "fixtures" / "machine" / "build.py")
    return build.build_machine(REPO / ".cache" / "machine")


def fresh_venv(path: Path) -> Path:
    """A new venv without pip (fast); install into it with ``pip_install``. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path / "bin" / "python"


def install_into(python: Path, wheel: Path) -> None:
    """Install ``wheel`` into that venv with ``installer`` in this process, as pip would lay it
    out (``INSTALLER`` says pip, no byte-code): a test's set-up, where pip's resolver and a
    fresh interpreter cost a second or more and are not under test."""
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    root = python.parent.parent
    (site,) = (root / "lib").glob("python3*/site-packages")
    scheme = {
        "purelib": site,
        "platlib": site,
        "headers": root / "include" / "site" / site.parent.name / wheel.name.split("-")[0],
        "scripts": root / "bin",
        "data": root,
    }
    destination = SchemeDictionaryDestination(
        {key: str(path) for key, path in scheme.items()}, interpreter=str(python), script_kind="posix"
    )
    with WheelFile.open(wheel) as source:
        install(source, destination, {"INSTALLER": b"pip\n"})


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


def checkout_copy(dest: Path) -> Path:
    """A copy of this checkout as ``git clone`` would give it: the files git tracks (and new
    ones it does not ignore), none of ``.venv``, ``.cache`` or build output. ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = REPO / name
        if source.is_file():  # a file git lists but the work tree deleted is not copied
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def venv_seeing_this_one(path: Path) -> Path:
    """A new venv with pip whose interpreter also sees this environment's installed packages
    (a ``.pth`` line: their ``.pth`` files, this checkout's editable torchwheel among them,
    are not read), so that ``pip install torch==2.13.0`` there is already satisfied and only
    what a test installs is new; the stand-in for an image that has torch. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True)
    (site,) = (path / "lib").glob("python3*/site-packages")
    here = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_relative_to(sys.prefix))
    (site / "zz_test_environment.pth").write_text(here + "\n")
    return path / "bin" / "python"
