"""Kill ``install`` and ``install --upgrade`` at every file operation, and at random instants,
then check what the environment holds.

    python benchmarks/kill_sweep.py                       # every point, SIGKILL/SIGINT/SIGTERM
    python benchmarks/kill_sweep.py --random 300          # plus 300 kills by a real timer
    python benchmarks/kill_sweep.py --again 1 --repair-every 10   # a second signal; kill the recovery
    python benchmarks/kill_sweep.py --modules 40 --json benchmarks/results/kill_sweep.json
    python benchmarks/kill_sweep.py --code OLD/installing.py   # measure another installing.py

Why file operations and not a hook in the code: a kill can only change what the disk holds,
and the disk changes only in a system call. A ``sys.setprofile`` hook in the killed process
counts every call of the functions that touch the file system (``os.rename``, ``os.replace``,
``os.unlink``, ``os.mkdir``, ``os.rmdir``, ``os.fsync``, ``os.write``, ``open`` and a file's
``write``/``close``...) and sends the process the signal at the N-th one. Sweeping N over all
of them visits every state a kill can leave, and the same sweep runs on any version of
``installing.py``, so the figure before the journal was measured the same way as after it
(``--code``). SIGKILL stops the process before the N-th call; SIGINT and SIGTERM arrive as
the N-th call returns, before the next line of Python runs: exactly the window between a move
and recording it. SIGTERM gets the handler ``torchwheel.cli.main`` installs (it unwinds like
Ctrl-C), so the in-process run behaves like the command.

Each point runs in a forked child of this process (no interpreter start-up), on a venv reset
from a snapshot. After the kill: the recovery ``installing.repair_environment`` (what the next
``torchwheel install`` runs first; absent before the journal), then the checks. A point is
*broken* unless the environment's whole tree (every file with its bytes and mode, every
directory) equals that of one clean install of one version (the old, or none, or the new),
the package imports as that version, and (on a sample) ``pip check`` passes. A point is
*stuck* unless rerunning the same install afterwards ends with the new version, whole.

The short form (``sweep(..., stride=...)`` over two small wheels) is what
``tests/e2e/test_install_journal.py`` runs; the figures in docs/evidence/reliability.md come from the long
form.
"""

from __future__ import annotations

import argparse
import base64
import builtins
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

PROJECT = "twkill"
SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}

# -- the two versions -------------------------------------------------------------------------


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _members(version: str, modules: int) -> dict[str, bytes]:
    """What each version holds. The two share some paths (rewritten), and each has paths and
    folders of its own (a module, a subpackage, a header only the new one has), a console
    script, a ``.data`` script and a data file, so every kind of move and write is exercised."""
    v = version
    own = "old" if v == "1.0" else "new"
    files = {
        f"{PROJECT}/__init__.py": (
            f"VERSION = {v!r}\nfrom {PROJECT} import core, sub, {own}_only, {own}pkg\n\n\n"
            "def main() -> None:\n    print(VERSION)\n"
        ).encode(),
        f"{PROJECT}/core.py": f"CORE = {v!r}\n".encode() * 20,
        f"{PROJECT}/{own}_only.py": f"ONLY = {v!r}\n".encode(),
        f"{PROJECT}/sub/__init__.py": f"SUB = {v!r}\n".encode(),
        f"{PROJECT}/{own}pkg/__init__.py": f"PKG = {v!r}\n".encode(),
        f"{PROJECT}-{v}.data/data/share/{PROJECT}/notes.txt": f"notes of {v}\n".encode(),
        f"{PROJECT}-{v}.data/scripts/{PROJECT}-tool": f"#!python\nprint({v!r})\n".encode(),
    }
    if own == "new":
        files[f"{PROJECT}-{v}.data/headers/{PROJECT}.h"] = b"#define TWKILL 2\n"
    for i in range(modules):
        files[f"{PROJECT}/mods/m{i}.py"] = f"M = {v!r}  # {i}\n".encode()
    if modules:
        files[f"{PROJECT}/mods/__init__.py"] = b""
    return files


def build_wheel(version: str, out: Path, modules: int = 0) -> Path:
    """A pure wheel written with plain ``zipfile`` (fixtures are not made by the code they test)."""
    info = f"{PROJECT}-{version}.dist-info"
    files = _members(version, modules)
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {PROJECT}\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: kill_sweep\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/entry_points.txt"] = f"[console_scripts]\n{PROJECT} = {PROJECT}:main\n".encode()
    record = "".join(f"{n},{_hash(d)},{len(d)}\n" for n, d in files.items()) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{PROJECT}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


# -- the environment --------------------------------------------------------------------------


Tree = frozenset[tuple[str, str, str]]


def tree(root: Path) -> Tree:
    """Every directory, file (bytes and executable bit) and symlink under ``root``."""
    out: set[tuple[str, str, str]] = set()
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(folder) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out.add(("link", rel, os.readlink(p)))
            elif p.is_dir():
                out.add(("dir", rel, ""))
            else:
                mode = "x" if p.stat().st_mode & stat.S_IXUSR else "-"
                out.add(("file", rel, mode + hashlib.sha256(p.read_bytes()).hexdigest()))
    return frozenset(out)


def differences(got: Tree, want: Tree, keep: int = 3) -> str:
    missing = sorted(e[1] for e in want - got)
    extra = sorted(e[1] for e in got - want)
    return f"missing {missing[:keep]}{'...' if len(missing) > keep else ''}, extra {extra[:keep]}" + (
        "..." if len(extra) > keep else ""
    )


@dataclass
class Env:
    """One venv, reset from snapshots between points; the reference trees of a clean install
    of each version (and of none)."""

    root: Path
    work: Path
    code: ModuleType
    python: Path = field(init=False)
    target: Any = field(init=False)
    wheels: dict[str, Any] = field(default_factory=dict)  # version -> Candidate
    snapshots: dict[str, Path] = field(default_factory=dict)
    refs: dict[str, Tree] = field(default_factory=dict)

    @classmethod
    def create(cls, work: Path, code: ModuleType, modules: int = 0) -> Env:
        from torchwheel.selection.candidates import read_candidate
        from torchwheel.selection.target import probe

        env = cls(work / "venv", work, code)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env.root)], check=True)
        env.python = env.root / "bin" / "python"
        env.target = probe(str(env.python))
        for v in ("1.0", "2.0"):
            path = build_wheel(v, work / "wheels", modules)
            env.wheels[v] = read_candidate(path, str(path.parent))
        env._snapshot("none")
        env.code.install_wheel(env.wheels["1.0"], env.target)
        env.import_check("1.0", bytecode=True)  # the old version has been used: its __pycache__
        env._snapshot("1.0")
        env.reset("none")
        env.code.install_wheel(env.wheels["2.0"], env.target)
        env._snapshot("2.0")
        return env

    def _snapshot(self, name: str) -> None:
        self.refs[name] = tree(self.root)
        copy = self.work / "snapshots" / name
        shutil.copytree(self.root, copy, symlinks=True)
        self.snapshots[name] = copy

    def reset(self, name: str) -> None:
        shutil.rmtree(self.root)
        shutil.copytree(self.snapshots[name], self.root, symlinks=True)

    def which(self) -> str | None:
        """The version whose clean install the environment is, byte for byte; None: broken."""
        now = tree(self.root)
        return next((v for v, ref in self.refs.items() if ref == now), None)

    def import_check(self, version: str, bytecode: bool = False) -> str:
        """'' when the package imports as ``version`` and its console script runs (or, for
        "none", does not import); else what went wrong."""
        flags = [] if bytecode else ["-B"]
        code = f"import {PROJECT}; print({PROJECT}.VERSION)"
        done = subprocess.run([str(self.python), *flags, "-c", code], capture_output=True, text=True)
        if version == "none":
            return "" if "ModuleNotFoundError" in done.stderr else f"imports: {done.stdout.strip()}"
        if done.stdout.strip() != version:
            return f"import: {done.stderr.strip().splitlines()[-1:]}"
        script = subprocess.run([str(self.root / "bin" / PROJECT)], capture_output=True, text=True)
        return "" if script.stdout.strip() == version else f"script: {script.stderr.strip()[-200:]}"

    def pip_check(self) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(self.python), "check"],
            capture_output=True,
            text=True,
        )
        return "" if done.returncode == 0 else f"pip check: {done.stdout.strip()[:200]}"


# -- killing at the N-th file operation -------------------------------------------------------

_WATCHED = {
    getattr(os, n)
    for n in (
        "rename", "replace", "unlink", "remove", "rmdir", "mkdir", "open", "write", "close",
        "fsync", "chmod", "link", "symlink", "truncate", "ftruncate", "utime", "renames",
    )
} | {io.open, builtins.open}  # fmt: skip
_WATCHED_METHODS = {"write", "writelines", "flush", "close", "truncate", "__exit__"}


def _watched(fn: object) -> bool:
    if fn in _WATCHED:
        return True
    owner = getattr(fn, "__self__", None)
    return isinstance(owner, io.IOBase) and getattr(fn, "__name__", "") in _WATCHED_METHODS


class _Terminated(BaseException):
    """What ``torchwheel.cli.main``'s SIGTERM handler raises: unwinds like Ctrl-C."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise _Terminated(signum)


def _in_child(job: Callable[[], object], at: tuple[int, ...], signum: int, report: int) -> None:
    """The forked child: count file operations, send the signal at each of the ``at``-th;
    report how it ended (and, with no ``at``, how many operations the job made)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    count = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal count
        if event == "c_call" and _watched(arg):
            count += 1
            if count in at:
                if count == at[-1]:
                    sys.setprofile(None)
                os.kill(os.getpid(), signum)

    how = "done"
    try:
        sys.setprofile(profile)
        job()
    except KeyboardInterrupt:
        how = "SIGINT"
    except _Terminated:
        how = "SIGTERM"
    except Exception as exc:  # the one-line errors (InputError) and anything unexpected
        how = f"{type(exc).__name__}: {exc}"
        if type(exc).__name__ not in ("InputError", "InstallRefused"):
            how += "\n" + traceback.format_exc()
    finally:
        sys.setprofile(None)
        os.write(report, json.dumps({"how": how, "count": count}).encode())
        os._exit(0)


def run_forked(
    job: Callable[[], object],
    at: tuple[int, ...] = (),
    signum: int = signal.SIGKILL,
    delay: float | None = None,
) -> dict[str, Any]:
    """``job`` in a forked child, signalled at the ``at``-th file operations (a second
    Ctrl-C during the rollback), or after ``delay`` seconds by this process (a real timer),
    or not at all."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child ends in os._exit
        try:
            os.close(read)
            _in_child(job, at, signum, write)
        finally:
            os._exit(3)
    os.close(write)
    if delay is not None:
        time.sleep(delay)
        with _suppress_lookup():
            os.kill(pid, signum)
    _, status = os.waitpid(pid, 0)
    data = b"".join(iter(lambda: os.read(read, 65536), b""))
    os.close(read)
    out: dict[str, Any] = json.loads(data) if data else {"how": "killed", "count": None}
    out["status"] = os.waitstatus_to_exitcode(status)
    return out


class _suppress_lookup:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return kind is ProcessLookupError


# -- one point, one sweep ---------------------------------------------------------------------


@dataclass
class Point:
    scenario: str
    signal: str
    at: int | None  # the file operation; None: a timer kill
    delay: float | None
    how: str  # how the killed run ended
    repaired: list[str]
    state: str | None  # the version the environment holds after the recovery; None: broken
    problem: str
    stuck: str  # '' when rerunning the install ended with the new version, whole
    kind: str = "sweep"  # or "again" (a second signal), "repair-killed", "timer"

    @property
    def broken(self) -> bool:
        return bool(self.problem)


SCENARIOS = {"fresh": ("none", False, ("none", "2.0")), "upgrade": ("1.0", True, ("1.0", "2.0"))}


def _job(env: Env, scenario: str) -> Callable[[], object]:
    _, upgrade, _ = SCENARIOS[scenario]
    return lambda: env.code.install_wheel(env.wheels["2.0"], env.target, upgrade)


def _repair(env: Env) -> list[str]:
    repair = getattr(env.code, "repair_environment", None)
    if repair is None:  # before the journal there was nothing to run
        return []
    lines: list[str] = repair(env.target)
    return lines


def count_points(env: Env, scenario: str) -> int:
    env.reset(SCENARIOS[scenario][0])
    done = run_forked(_job(env, scenario))
    assert done["how"] == "done", done
    count: int = done["count"]
    return count


def count_repair_points(env: Env, scenario: str, at: int) -> int:
    """The file operations of the recovery after a SIGKILL at the ``at``-th of the install."""
    env.reset(SCENARIOS[scenario][0])
    run_forked(_job(env, scenario), at=(at,))
    done = run_forked(lambda: _repair(env))
    count: int = done["count"]
    return count


def run_point(
    env: Env,
    scenario: str,
    sig: str,
    at: int | None = None,
    delay: float | None = None,
    pip_check: bool = False,
    again: int | None = None,
    repair_at: int | None = None,
) -> Point:
    """One kill and what follows. ``again``: the same signal once more, that many file
    operations later (the rollback must still complete). ``repair_at``: the recovery itself
    is killed (SIGKILL) at its ``repair_at``-th file operation, and then run again."""
    start, _, allowed = SCENARIOS[scenario]
    env.reset(start)
    ats = () if at is None else (at,) if again is None else (at, at + again)
    killed = run_forked(_job(env, scenario), at=ats, signum=SIGNALS[sig], delay=delay)
    how = killed["how"] if killed["status"] >= 0 else f"killed by {signal.Signals(-killed['status']).name}"
    problems: list[str] = []
    if "Traceback" in how:
        problems.append(f"unexpected error: {how}")
    repaired: list[str] = []
    if repair_at is not None:
        cut = run_forked(lambda: _repair(env), at=(repair_at,))
        if "Traceback" in cut["how"]:
            problems.append(f"recovery failed: {cut['how']}")
    try:
        repaired = _repair(env)
    except Exception as exc:
        problems.append(f"recovery failed: {type(exc).__name__}: {exc}")
    state = env.which()
    if state is None or state not in allowed:
        now = tree(env.root)
        near = min(allowed, key=lambda v: len(now ^ env.refs[v]))
        problems.append(
            f"holds {state or 'no whole version'}: against {near}: {differences(now, env.refs[near])}"
        )
    else:
        problems += [p for p in (env.import_check(state), env.pip_check() if pip_check else "") if p]
    rerun = run_forked(lambda: env.code.install_wheel(env.wheels["2.0"], env.target, True))
    # the venv's own path is this run's temporary folder: the record says <venv>, so the
    # committed results do not depend on where a sweep ran
    said = rerun["how"].replace(str(env.root), "<venv>")
    stuck = "" if rerun["how"] == "done" and env.which() == "2.0" else f"rerun: {said[:300]}"
    kind = "timer" if at is None else "again" if again else "repair-killed" if repair_at else "sweep"
    return Point(scenario, sig, at, delay, how, repaired, state, "; ".join(problems), stuck, kind)


def sweep(
    env: Env,
    scenarios: tuple[str, ...] = tuple(SCENARIOS),
    signals: tuple[str, ...] = tuple(SIGNALS),
    stride: int = 1,
    pip_every: int = 25,
) -> Iterator[Point]:
    """Every ``stride``-th file operation of each scenario, for each signal (each signal
    starting one further along, so a stride still visits every operation once in all; the
    last always), ``pip check`` on every ``pip_every``-th point."""
    n = 0
    for scenario in scenarios:
        total = count_points(env, scenario)
        for i, sig in enumerate(signals):
            for at in sorted({*range(1 + i * stride // len(signals), total + 1, stride), total}):
                yield run_point(env, scenario, sig, at=at, pip_check=n % pip_every == 0)
                n += 1


def sweep_again(env: Env, stride: int = 1, gap: int = 2, pip_every: int = 25) -> Iterator[Point]:
    """SIGINT and SIGTERM at every ``stride``-th file operation, and the same signal again
    ``gap`` operations later, while the rollback runs."""
    n = 0
    for scenario in SCENARIOS:
        total = count_points(env, scenario)
        for sig in ("SIGINT", "SIGTERM"):
            for at in range(1, total + 1, stride):
                yield run_point(env, scenario, sig, at=at, again=gap, pip_check=n % pip_every == 0)
                n += 1


def sweep_repair(env: Env, every: int = 25, pip_every: int = 25, stride: int = 1) -> Iterator[Point]:
    """SIGKILL at every ``every``-th file operation of each scenario, then SIGKILL again at
    every (``stride``-th) file operation of the recovery, then the recovery once more."""
    n = 0
    for scenario in SCENARIOS:
        total = count_points(env, scenario)
        for at in range(every // 2 or 1, total + 1, every):
            for repair_at in range(1, count_repair_points(env, scenario, at) + 1, stride):
                yield run_point(
                    env, scenario, "SIGKILL", at=at, repair_at=repair_at, pip_check=n % pip_every == 0
                )
                n += 1


def timed(env: Env, kills: int, seed: int = 0, pip_every: int = 25) -> Iterator[Point]:
    """Kills by a real timer: a uniform instant over the length of an install (measured)."""
    rng = random.Random(seed)
    lengths = {}
    for scenario in SCENARIOS:
        env.reset(SCENARIOS[scenario][0])
        t0 = time.perf_counter()
        run_forked(_job(env, scenario))
        lengths[scenario] = time.perf_counter() - t0
    for i in range(kills):
        scenario = rng.choice(list(SCENARIOS))
        sig = rng.choice(list(SIGNALS))
        yield run_point(
            env, scenario, sig, delay=rng.uniform(0, lengths[scenario] * 1.1), pip_check=i % pip_every == 0
        )


@contextlib.contextmanager
def scratch(fallback: Path) -> Iterator[Path]:
    """A work folder in memory (/dev/shm) when there is one, else ``fallback``: a kill sees
    the page cache on any file system, and a sweep's thousands of fsyncs then cost nothing."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield fallback
        return
    work = Path(tempfile.mkdtemp(prefix="kill-sweep-", dir=shm))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load_code(path: Path | None) -> ModuleType:
    """The installing module to sweep: the package's, or another ``installing.py``."""
    if path is None:
        from torchwheel.install import installing

        return installing
    spec = importlib.util.spec_from_file_location("torchwheel_sweep_installing", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def summary(points: list[Point]) -> dict[str, Any]:
    rows: dict[str, dict[str, int]] = {}
    for p in points:
        key = f"{p.scenario} {p.signal}" + ("" if p.kind == "sweep" else f" {p.kind}")
        row = rows.setdefault(key, {"points": 0, "broken": 0, "stuck": 0})
        row["points"] += 1
        row["broken"] += p.broken
        row["stuck"] += bool(p.stuck)
    return {
        "points": len(points),
        "broken": sum(p.broken for p in points),
        "stuck": sum(bool(p.stuck) for p in points),
        "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--code", type=Path, help="another installing.py to sweep (e.g. the one before the journal)"
    )
    ap.add_argument("--modules", type=int, default=0, help="extra modules per version (more points)")
    ap.add_argument("--stride", type=int, default=1, help="every N-th file operation")
    ap.add_argument("--random", type=int, default=0, help="also this many kills by a real timer")
    ap.add_argument("--again", type=int, default=0, help="also a second signal at every N-th operation")
    ap.add_argument("--repair-every", type=int, default=0, help="also kill the recovery, after every N-th")
    ap.add_argument("--json", type=Path, help="write the summary and the broken points here")
    ap.add_argument("--show", type=int, default=5, help="print this many broken points")
    ap.add_argument("--on-disk", action="store_true", help="the venv on disk, not in /dev/shm (slower)")
    args = ap.parse_args()
    code = load_code(args.code)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp) if args.on_disk else stack.enter_context(scratch(Path(tmp)))
        env = Env.create(work, code, args.modules)
        t0 = time.perf_counter()
        points = list(sweep(env, stride=args.stride))
        if args.again:
            points += list(sweep_again(env, stride=args.again))
        if args.repair_every:
            points += list(sweep_repair(env, every=args.repair_every))
        points += list(timed(env, args.random))
        seconds = time.perf_counter() - t0
    result = summary(points)
    result["seconds"] = round(seconds, 1)
    result["code"] = str(args.code or "torchwheel.install.installing")
    result["modules"] = args.modules
    for key, row in result["rows"].items():
        print(f"{key:24} {row['points']:5} points {row['broken']:5} broken {row['stuck']:5} stuck")
    print(
        f"total {result['points']} points, {result['broken']} broken, {result['stuck']} stuck, {seconds:.0f} s"
    )
    bad = [p for p in points if p.broken or p.stuck]
    for p in bad[: args.show]:
        print(f"  {p.scenario} {p.signal} at={p.at} delay={p.delay}: {p.how[:80]} | {p.problem} | {p.stuck}")
    if args.json:
        result["broken_points"] = [p.__dict__ for p in bad[:50]]
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
