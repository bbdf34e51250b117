"""Shared pytest fixtures."""

from __future__ import annotations

import ast
import compileall
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from .lib.helpers import FIXTURES, REPO, fixture_build, fixture_wheels_module, load_script


def pytest_sessionstart(session: pytest.Session) -> None:
    """The package's ``.pyc`` files, as an installation has them: the suite runs torchwheel in
    thousands of fresh processes, and where ``PYTHONDONTWRITEBYTECODE`` is set (as on CI
    machines) each would otherwise compile the ~80 modules a command imports again, about
    0.2 s a process. Up-to-date files are left alone; an edited module is recompiled.

    Every command reads the user tables file ``symbols update`` writes (``tablechoice``): the
    suite gets an empty data directory of its own, so a developer's file changes no verdict.

    The committed real-extension wheels (``fixtures/real_ext/prebuilt.py``) go into the
    builders' cache first: where their sources and tools are today's, no test compiles them."""
    compileall.compile_dir(REPO / "src" / "torchwheel", quiet=1)
    load_script("torchwheel_real_ext_prebuilt", FIXTURES / "real_ext" / "prebuilt.py").seed(
        REPO / ".cache" / "real_ext"
    )
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="torchwheel-tests-data-")
    os.environ.pop("TORCHWHEEL_SYMBOLS", None)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The suite's data directory goes with the process that made it (each xdist worker has one)."""
    data = os.environ.get("XDG_DATA_HOME", "")
    if Path(data).name.startswith("torchwheel-tests-data-"):
        shutil.rmtree(data, ignore_errors=True)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scheduler, with one unit of work per test, except that the tests of a
    module defining a module- or session-scoped fixture go to one worker together, so that
    fixture is built once, not once per worker (a venv, a served index, the hostile corpus's
    whole pool of runs). The fixtures of ``conftest.py`` are cached on disk (``.cache/``) and
    shared by the workers, so they group nothing. The largest units go first (xdist's
    ``loadscope`` order), so the long ones do not start last. (``--dist loadgroup`` with
    ``xdist_group`` marks would say the same, but pytest 9.2 ignores the node ids xdist 3.8
    rewrites for it.)"""
    from xdist.scheduler import LoadScopeScheduling

    grouped = _fixture_homes(config.rootpath)

    class _ByFixtureHome(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path in grouped else nodeid

    return _ByFixtureHome(config, log)


def _fixture_homes(root: Path) -> set[str]:
    """The test modules (as node ids name them) that define a module- or session-scoped
    fixture, read from their source."""
    homes = set()
    for path in sorted((root / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(_wide_fixture(d) for d in node.decorator_list):
                homes.add(path.relative_to(root).as_posix())
                break
    return homes


def _wide_fixture(decorator: ast.expr) -> bool:
    return (
        isinstance(decorator, ast.Call)
        and ast.unparse(decorator.func) in ("pytest.fixture", "fixture")
        and any(
            k.arg == "scope" and isinstance(k.value, ast.Constant) and k.value.value in ("module", "session")
            for k in decorator.keywords
        )
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The time per test folder (setup, call and teardown, summed over workers), beside
    ``--durations``: a slow newcomer shows where it lives."""
    per_folder: Counter[str] = Counter()
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid, duration = getattr(report, "nodeid", ""), getattr(report, "duration", None)
            if nodeid and isinstance(duration, float):
                path = nodeid.split("::", 1)[0]
                per_folder[path.rsplit("/", 1)[0] if path.count("/") > 1 else "tests (root)"] += duration
    if per_folder:
        terminalreporter.write_sep("=", "time per test folder (all workers)")
        for folder, seconds in per_folder.most_common():
            terminalreporter.write_line(f"{seconds:8.1f}s  {folder}")


@pytest.fixture(autouse=True)
def _signals_as_found() -> Iterator[None]:
    """A test leaves the process's signal handlers and mask as it found them: a child a later
    test starts inherits both (a SIGINT held back or ignored there makes an interrupted
    command run to its end), and a library call that leaks them is a bug for its callers."""
    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = [signal.getsignal(n) for n in watched], signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    after = [signal.getsignal(n) for n in watched], signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert after == before, f"signal handlers or mask changed: {before} -> {after}"


@pytest.fixture(autouse=True)
def _data_folder_of_its_own() -> Iterator[None]:
    """Each test gets an empty data folder: ``symbols update`` without -o writes the user
    tables file there, which every later command reads (``tablechoice``), so a file one test
    left would change the verdicts and imports of whatever test xdist runs after it. Module
    and session fixtures are set up before this one and keep the suite's folder."""
    suite = os.environ["XDG_DATA_HOME"]
    own = tempfile.mkdtemp(dir=suite)
    os.environ["XDG_DATA_HOME"] = own
    yield
    os.environ["XDG_DATA_HOME"] = suite
    shutil.rmtree(own, ignore_errors=True)


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    """One downloader per cache folder: pytest-xdist's workers ask for the same wheel."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def set_limits() -> Iterator[Callable[..., None]]:
    """The one way a test changes the input budget: as a user does, through the environment
    (``set_limits(MAX_LISTED="10")`` sets ``TORCHWHEEL_MAX_LISTED``, which a command run in the
    test reads), and the value those make applied to the test (``limits.applied``), as the
    command line applies its own; after the test both go. Nothing is reset: no process-wide
    limits exist to reset."""
    from torchwheel import limits

    with pytest.MonkeyPatch.context() as patch, ExitStack() as applied:

        def apply(**values: str) -> None:
            for name, value in values.items():
                patch.setenv(f"TORCHWHEEL_{name}", value)
            applied.enter_context(limits.applied(limits.from_environment()))

        yield apply


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
    with _locked(cache):
        return _torch_wheel(cache)


def _torch_wheel(cache: Path) -> Path:
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
    with _locked(cache):
        return _torch_platform_wheels(cache)


def _torch_platform_wheels(cache: Path) -> dict[str, Path]:
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
