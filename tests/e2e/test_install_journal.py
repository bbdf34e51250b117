"""Installs that survive a kill at any instant: ``install`` and ``install --upgrade`` killed
(SIGKILL, SIGINT, SIGTERM) at every file operation, then recovered, leave exactly one whole
version; the journal's replay rules one by one; the command line's ``--repair-env`` and the
repair every ``install`` runs first.

The sweep is the short form of ``benchmarks/kill_sweep.py`` (forked children of this process
on one venv reset from snapshots; see its docstring for how kill points are chosen and what
counts as broken).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from torchwheel.errors import Unfinished
from torchwheel.install import installing, journal, recovery

from ..lib.helpers import REPO, load_script, torchwheel

sweeper: Any = load_script("torchwheel_kill_sweep", REPO / "benchmarks" / "kill_sweep.py")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One venv for the module, in memory when the machine has /dev/shm: the sweep calls
    fsync thousands of times, and a kill sees the page cache whatever the disk (the disk's
    latency is not under test; on a busy disk it made the sweep four times slower)."""
    with sweeper.scratch(tmp_path_factory.mktemp("kill")) as work:
        yield sweeper.Env.create(work, installing)


def _bad(points: list[Any]) -> list[str]:
    return [
        f"{p.scenario} {p.signal} at={p.at} again={p.kind}: {p.how[:200]} | {p.problem} | {p.stuck}"
        for p in points
        if p.broken or p.stuck
    ]


def _site(env: Any) -> Path:
    (site,) = (env.root / "lib").glob("python3*/site-packages")
    return Path(site)


def _killed(env: Any, scenario: str, at: int) -> None:
    """The environment as SIGKILL at the ``at``-th file operation of ``scenario`` leaves it."""
    start, upgrade, _ = sweeper.SCENARIOS[scenario]
    env.reset(start)
    out = sweeper.run_forked(
        lambda: installing.install_wheel(env.wheels["2.0"], env.target, upgrade), at=(at,)
    )
    assert out["status"] == -signal.SIGKILL, out


# -- the sweep --------------------------------------------------------------------------------


def test_sigkill_sweep(env: Any) -> None:
    """Every twelfth file operation of a fresh install and of an upgrade (CI's short form;
    ``python benchmarks/kill_sweep.py`` does every one): after the recovery, one whole version, importable; a rerun ends with the new
    one. Both decisions are exercised: rolled back before the commit record, finished after."""
    points = list(sweeper.sweep(env, signals=("SIGKILL",), stride=12, pip_every=10))
    assert len(points) >= 68
    assert _bad(points) == []
    lines = [line for p in points for line in p.repaired]
    assert any("rolled back" in line and "twkill-1.0.dist-info is back in place" in line for line in lines)
    assert any("finished an install of twkill-2.0-py3-none-any.whl" in line for line in lines)
    ends = {(p.scenario, p.state) for p in points}
    assert ends == {("fresh", "none"), ("fresh", "2.0"), ("upgrade", "1.0"), ("upgrade", "2.0")}


def test_sigint_and_sigterm_roll_back_in_process(env: Any) -> None:
    """The race of round three (a move made, not yet recorded) is gone: an interrupt right
    after any file operation ends with the rollback complete, no recovery needed."""
    points = list(sweeper.sweep(env, signals=("SIGINT", "SIGTERM"), stride=32, pip_every=10))
    assert len(points) >= 50
    assert _bad(points) == []
    assert sum(not p.repaired for p in points) > 0.9 * len(points)  # the run cleaned up after itself
    how = {p.how.split(":")[0] for p in points}
    assert how <= {"SIGINT", "SIGTERM", "InputError", "done"}, how


def test_a_second_signal_does_not_cut_the_rollback(env: Any) -> None:
    points = list(sweeper.sweep_again(env, stride=40, gap=2))
    assert len(points) >= 30
    assert _bad(points) == []


def test_a_killed_recovery_is_recovered(env: Any) -> None:
    """SIGKILL during the install, then SIGKILL at every other file operation of the recovery:
    the next recovery still ends in one whole version (the ``undone`` record)."""
    points = list(sweeper.sweep_repair(env, every=220, stride=8))
    assert len(points) >= 10
    assert _bad(points) == []


def test_kills_by_a_real_timer(env: Any) -> None:
    points = list(sweeper.timed(env, 24, seed=1))
    assert _bad(points) == []


def test_the_sweep_sees_a_broken_environment(env: Any) -> None:
    """Without the recovery step after the kill, the same checks find the half-done
    environment broken (the sweep can fail); the rerun, which repairs first, is not stuck."""
    real = env.code
    env.code = SimpleNamespace(install_wheel=installing.install_wheel)  # no repair_environment
    try:
        points = [sweeper.run_point(env, "upgrade", "SIGKILL", at=at) for at in (120, 200, 300)]
    finally:
        env.code = real
    assert all(p.broken and not p.stuck for p in points), points
    assert all(".torchwheel-txn-twkill" in p.problem for p in points), [p.problem for p in points]


# -- the replay rules -------------------------------------------------------------------------


def _home(env: Any) -> Path:
    (home,) = journal.pending([_site(env)])
    return home


def _replay(env: Any, home: Path) -> str:
    scheme = installing.scheme_of(env.target, "twkill")
    return recovery.replay(home, Path(scheme["data"]), installing._allowed(scheme))


def _records(home: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (home / "journal").read_text().splitlines()]


def _reached(env: Any, at: int, op: str) -> bool:
    """Whether SIGKILL at the ``at``-th file operation of an upgrade comes after the journal
    got its first ``op`` record (or after the whole install)."""
    _killed(env, "upgrade", at)
    pending = journal.pending([_site(env)])
    if not pending:
        return env.which() == "2.0"
    return (pending[0] / "journal").is_file() and any(r["op"] == op for r in _records(pending[0]))


@pytest.fixture(scope="module")
def marks(env: Any) -> dict[str, int]:
    """The first kill point after each kind of record, found by bisection (``_reached`` only
    turns from False to True along an install)."""
    total = sweeper.count_points(env, "upgrade")
    out = {}
    for op in ("begin", "aside", "write", "commit"):
        lo, hi = 1, total
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _reached(env, mid, op) else (mid + 1, hi)
        out[op] = lo
    assert out["begin"] < out["aside"] < out["write"] < out["commit"] < total, out
    return out


def test_commit_is_the_decision(env: Any, marks: dict[str, int]) -> None:
    _killed(env, "upgrade", marks["commit"] - 1)
    home = _home(env)
    ops = [r["op"] for r in _records(home)]
    assert ops[0] == "begin" and ops[1] == "aside" and "commit" not in ops and "write" in ops
    assert _replay(env, home).startswith("rolled back")
    assert env.which() == "1.0"
    _killed(env, "upgrade", marks["commit"])
    home = _home(env)
    assert _records(home)[-1]["op"] == "commit"
    assert _replay(env, home) == (
        "finished an install of twkill-2.0-py3-none-any.whl that was complete when it was "
        "interrupted (removed the twkill-1.0.dist-info it replaced)"
    )
    assert env.which() == "2.0"


def test_a_torn_last_line_is_ignored(env: Any, marks: dict[str, int]) -> None:
    """A record cut short was never durable whole, so its act never began."""
    _killed(env, "upgrade", marks["write"] + 5)
    home = _home(env)
    with (home / "journal").open("a") as fh:
        fh.write('{"op":"commit"')  # no newline: torn
    assert _replay(env, home).startswith("rolled back")
    assert env.which() == "1.0"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (
            '{"op":"write","path":"../../../../etc/passwd","temp":".torchwheel-part-1-99","dirs":[]}',
            "outside the environment",
        ),
        # replayed after every write is removed: checked before anything is touched
        ('{"op":"aside","moves":[["../../../../etc/passwd","0"]]}', "outside the environment"),
        ("not json", "not JSON"),
        ("[1, 2]", "expected an object, found a list"),
    ],
)
def test_a_journal_that_cannot_be_trusted_is_left_alone(
    env: Any, marks: dict[str, int], line: str, why: str
) -> None:
    _killed(env, "upgrade", marks["write"] + 10)
    home = _home(env)
    with (home / "journal").open("a") as fh:
        fh.write(line + "\n")
    before = sweeper.tree(env.root)
    with pytest.raises(journal.RepairFailed, match=why):
        _replay(env, home)
    assert sweeper.tree(env.root) == before  # nothing touched, the journal kept
    result = torchwheel("install", "--repair-env", "--python", str(env.python))
    assert result.returncode == 2 and why in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_journal_killed_before_its_first_record(env: Any) -> None:
    env.reset("1.0")
    home = _site(env) / f"{journal.PREFIX}twkill"
    home.mkdir()
    (home / "journal").write_bytes(b'{"op":"beg')
    assert _replay(env, home) == "removed the journal of an install killed before it changed anything"
    assert env.which() == "1.0"


# -- the command line -------------------------------------------------------------------------


def test_repair_env_rolls_back_then_has_nothing_to_do(env: Any, marks: dict[str, int]) -> None:
    _killed(env, "upgrade", marks["write"] + 20)
    result = torchwheel("install", "--repair-env", "--python", str(env.python))
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"torchwheel: repaired {_site(env)}: rolled back an install of twkill-2.0")
    assert line.endswith("twkill-1.0.dist-info is back in place")
    assert env.which() == "1.0"
    again = torchwheel("install", "--repair-env", "--python", str(env.python))
    assert again.returncode == 0 and again.stderr == ""
    assert again.stdout.startswith(f"nothing to repair in {env.python}")


def test_install_repairs_first_and_says_so(env: Any, marks: dict[str, int]) -> None:
    _killed(env, "upgrade", marks["aside"] + 3)
    wheel = str(env.wheels["2.0"].path)
    result = torchwheel("install", "--upgrade", "--python", str(env.python), wheel)
    assert result.returncode == 0, result.stderr
    repaired = [line for line in result.stderr.splitlines() if line.startswith("torchwheel: repaired")]
    assert len(repaired) == 1 and "rolled back" in repaired[0]
    assert "replaced twkill 1.0 with twkill-2.0-py3-none-any.whl" in result.stdout
    assert env.which() == "2.0"


def _wrote(home: Path, root: Path) -> list[Path]:
    return [root / r["path"] for r in _records(home) if r["op"] == "wrote"]


def _killed_fresh_mid_write(env: Any) -> Path:
    """A fresh install killed two thirds of the way: a journal with files written."""
    total = sweeper.count_points(env, "fresh")
    _killed(env, "fresh", total * 2 // 3)
    home = _home(env)
    assert len(_wrote(home, env.root)) >= 3
    return home


def test_another_installers_copy_of_the_same_wheel_is_never_removed(env: Any) -> None:
    """Issue 47: an install killed mid-way, the same wheel then installed by pip
    ``--ignore-installed`` (what pip suggests), then ``--repair-env``: pip's files have the
    bytes the journal records, in other files; the rollback deletes none of them (it deleted
    every one torchwheel had written before the kill), names them, and exits 3."""
    home = _killed_fresh_mid_write(env)
    written = _wrote(home, env.root)
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(env.python), "install", "--no-deps", "--no-index",
         "--ignore-installed", "-q", str(env.wheels["2.0"].path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    before = {e for e in sweeper.tree(env.root) if ".torchwheel-txn-" not in e[1]}
    result = torchwheel("install", "--repair-env", "--python", str(env.python))
    assert result.returncode == 3 and result.stderr.count("\n") == 1, result.stderr
    assert f"and {len(written) - 3} more (not the file the install wrote" in result.stderr
    assert {e for e in sweeper.tree(env.root) if ".torchwheel-txn-" not in e[1]} == before
    assert env.import_check("2.0") == ""  # pip's install, whole
    again = torchwheel("install", "--repair-env", "--python", str(env.python))
    assert again.returncode == 0, again.stderr
    assert {e for e in sweeper.tree(env.root)} == before


@pytest.mark.parametrize("how", ["copied", "rewritten in place"])
def test_a_written_file_that_is_no_longer_the_same_file_is_left(env: Any, how: str) -> None:
    """The same bytes in another file (a new inode), the same inode with bytes written again
    (a new modification time): neither is the file the install wrote, so neither is deleted;
    the others it wrote are. (A link there is refused before anything is touched.)"""
    home = _killed_fresh_mid_write(env)
    victim, *others = _wrote(home, env.root)
    data = victim.read_bytes()
    time.sleep(0.01)
    if how == "copied":
        victim.unlink()
    victim.write_bytes(data)
    with pytest.raises(Unfinished, match="not the file the install wrote"):
        _replay(env, home)
    assert victim.read_bytes() == data and not any(p.exists() for p in others)


def test_repair_env_takes_no_sources(env: Any) -> None:
    result = torchwheel("install", "--repair-env", "--python", str(env.python), str(env.wheels["2.0"].path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--repair-env takes no sources" in result.stderr


def test_a_locked_environment_is_refused(env: Any, marks: dict[str, int]) -> None:
    """A second install never replays the journal of a live one."""
    _killed(env, "upgrade", marks["aside"] + 1)
    with journal.locked(_site(env)):
        result = torchwheel("install", "--repair-env", "--python", str(env.python))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "another torchwheel install is running in" in result.stderr
    assert journal.pending([_site(env)])  # untouched


_LAUNCHER = """
import json, os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, [])  # as a shell starts a command: nothing held back
signal.signal(signal.SIGINT, signal.default_int_handler)
from torchwheel.cli import main
from torchwheel.install import installing, journal
stage, after, signum, site = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
from kill_sweep import _watched as watched
real = installing.install_wheel
def _reached():
    for home in journal.pending([__import__("pathlib").Path(site)]):
        try:
            lines = (home / "journal").read_text().splitlines()
        except OSError:
            continue
        if any(json.loads(line).get("op") == stage for line in lines if line.endswith("}")):
            return True
    return False
def armed(*args, **kwargs):
    count = None
    def profile(frame, event, arg):
        nonlocal count
        if event == "c_call" and watched(arg):
            if count is None and _reached():
                count = 0
            if count is not None:
                count += 1
                if count == after:
                    sys.setprofile(None)
                    os.kill(os.getpid(), signum)
    sys.setprofile(profile)
    try:
        return real(*args, **kwargs)
    finally:
        sys.setprofile(None)
installing.install_wheel = armed
sys.argv = ["torchwheel", *sys.argv[5:]]
main()
"""


def _cli_killed(env: Any, stage: str, after: int, signum: int) -> subprocess.CompletedProcess[str]:
    """The real command (``torchwheel.cli.main``, its own signal handlers), signalled at the
    ``after``-th file operation once the journal holds its first ``stage`` record. Counted from
    the record, not from the start: a fresh process makes more or fewer file operations
    before it than a forked test worker, by what the worker has loaded already."""
    env.reset("1.0")
    code = f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r})\n" + _LAUNCHER
    args = ["install", "--upgrade", "--python", str(env.python), str(env.wheels["2.0"].path)]
    return subprocess.run(
        [sys.executable, "-c", code, stage, str(after), str(int(signum)), str(_site(env)), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("stage", ["begin", "aside", "write"])
def test_the_command_rolls_back_on_sigint_and_sigterm(env: Any, stage: str) -> None:
    interrupted = _cli_killed(env, stage, 2, signal.SIGINT)
    assert interrupted.returncode == 2, interrupted.stderr
    assert interrupted.stderr.splitlines()[-1] == (
        "torchwheel: error: twkill-2.0-py3-none-any.whl: install interrupted (SIGINT), nothing left "
        "behind; twkill-1.0.dist-info is back in place"
    )
    assert env.which() == "1.0"
    terminated = _cli_killed(env, stage, 2, signal.SIGTERM)
    assert terminated.returncode == -signal.SIGTERM, (
        terminated.stderr
    )  # dies by the signal, after the rollback
    assert terminated.stderr.splitlines()[-1] == "torchwheel: error: terminated by SIGTERM"
    assert env.which() == "1.0"


def test_the_command_after_sigkill(env: Any) -> None:
    killed = _cli_killed(env, "write", 8, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    assert journal.pending([_site(env)])
    assert env.which() is None  # half-way: what the journal is for
    rerun = torchwheel("install", "--upgrade", "--python", str(env.python), str(env.wheels["2.0"].path))
    assert rerun.returncode == 0, rerun.stderr
    assert "torchwheel: repaired" in rerun.stderr and env.which() == "2.0"


@pytest.fixture(autouse=True)
def _no_stray_journal(env: Any) -> Iterator[None]:
    yield
    env.reset("none")


def test_the_kill_sweep_rows_of_the_hostile_corpus_name_these_tests() -> None:
    """``fixtures/hostile_install.py`` lists the sweeps as the corpus's ``kill-sweep`` class;
    each row must name a test of this module, so the corpus cannot claim a sweep nobody runs."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
    import hostile_install

    assert len(hostile_install.SWEEPS) == 5
    for _, test in hostile_install.SWEEPS.values():
        assert callable(globals().get(test)), test
