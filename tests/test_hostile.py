"""Every hostile-corpus case (fixtures/hostile.py) through every command.

For each (case, command): the exit code and one-line message the case expects, never a
traceback or an "internal error", no GitHub workflow command injected into text output, peak
RSS under ``limits.MEMORY_BUDGET_MB``, done before the timeout, the input byte-identical
(unless ``tag --in-place`` succeeded), no file left behind (the run's folder, its TMPDIR), and
any output wheel valid (``installer`` opens it and ``validate_record()`` passes).

The runs go through a pool of fork servers (tests/lib/hostile_runner.py) in threads, once per
session for every item pytest collected here; each test then reads its run's verdict. The long
cases (1M members, 1M RECORD rows) run with TORCHWHEEL_HOSTILE_LONG=1.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

import pytest

from torchwheel.limits import MEMORY_BUDGET_MB

from .lib.helpers import REPO, measured_run
from .lib.own_runner import snapshot

sys.path.insert(0, str(REPO / "fixtures"))
import hostile

LONG = os.environ.get("TORCHWHEEL_HOSTILE_LONG") == "1"
FRESH = os.environ.get("TORCHWHEEL_HOSTILE_FRESH") == "1"
TIMEOUT = 60.0
ADDRESS_SPACE = 4 << 30  # a runaway allocation fails the run, not the machine
WORKERS = max(2, min(4, os.cpu_count() or 2))
CPU_SECONDS: list[float] = []  # of every forked run: what the file costs a CI machine
LOG = REPO / ".cache" / "hostile-verdicts.tsv"  # one line per run, written as they finish

# the target select plans for (no interpreter probe): the corpus wheels' own tags
PLAN = ["--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64"]
# command -> arguments given the input and the output folder: adding a command is one line
COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "inspect": lambda i, o: ["inspect", str(i)],
    "show": lambda i, o: ["show", str(i)],
    "check": lambda i, o: ["check", str(i)],
    "tag-w": lambda i, o: ["tag", "-w", str(o), str(i)],
    "tag-inplace": lambda i, o: ["tag", "--in-place", str(i)],
    "repair": lambda i, o: ["repair", "-w", str(o), str(i)],
    "compat": lambda i, o: ["compat", "--against", "installed", str(i)],
    "index": lambda i, o: ["index", str(i), "-o", str(o / "index")],
    "select": lambda i, o: ["select", *PLAN, str(i)],
    "matrix": lambda i, o: ["matrix", str(i)],
    "check-symbols": lambda i, o: ["check", "--symbols", str(i), str(i.with_name(hostile.hz.FILENAME))],
    "select-page": lambda i, o: ["select", *PLAN, "-i", str(i)],
    "doctor": lambda i, o: ["doctor", "--python", str(i)],
}
assert tuple(COMMANDS) == hostile.COMMANDS
WRITES_INPUT = {"tag-inplace"}
NODAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]  # root obeys mode bits

CASES = [c for c in hostile.CASES.values() if LONG or not c.long]
PAIRS = [(c.name, cmd) for c in CASES for cmd in c.commands(tuple(COMMANDS), LONG)]


@dataclass
class Verdict:
    problems: list[str]
    summary: str


# -- the runner ------------------------------------------------------------------------------------


class _Server:
    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.lib.hostile_runner"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env,
        )  # fmt: skip

    def run(
        self, args: list[str], cwd: Path, env: dict[str, str]
    ) -> tuple[int, str, str, float, float, bool]:
        out, err = cwd / ".stdout", cwd / ".stderr"
        req = dict(args=args, cwd=str(cwd), env=env, stdout=str(out), stderr=str(err),
                   timeout=TIMEOUT, address_space=ADDRESS_SPACE)  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        ans = json.loads(self.proc.stdout.readline())
        texts = out.read_text(errors="replace"), err.read_text(errors="replace")
        out.unlink()
        err.unlink()
        CPU_SECONDS.append(ans["cpu"])
        return ans["code"], *texts, ans["peak_mb"], ans["seconds"], ans["timed_out"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


_local = threading.local()
_servers: list[_Server] = []


def _server() -> _Server:
    if not hasattr(_local, "server"):
        _local.server = _Server()
        _servers.append(_local.server)
    return _local.server  # type: ignore[no-any-return]


def _valid_wheel(path: Path, check: str) -> list[str]:
    from installer.sources import WheelFile

    try:
        with WheelFile.open(path) as source:
            source.validate_record()
            if check == "requires_torch":
                meta = source.read_dist_info("METADATA")
                reqs = HeaderParser().parsestr(meta).get_all("Requires-Dist") or []
                if not any(r.replace(" ", "").startswith("torch") for r in reqs):
                    return [f"output {path.name}: METADATA headers lack the torch requirement: {reqs}"]
    except Exception as exc:
        return [f"output {path.name} is not a valid wheel: {type(exc).__name__}: {exc}"]
    if check == "torchwheel_reads":
        return _torchwheel_reads(path)
    return []


def _check_code(stdout: str) -> int | None:
    """The exit code ``check --format json`` owes its document: 1 with an error, else 0
    (None: no findings document, so no code is right)."""
    try:
        findings = json.loads(stdout)["findings"]
    except (ValueError, KeyError, TypeError):
        return None
    return 1 if any(f["severity"] == "error" for f in findings) else 0


def _torchwheel_reads(path: Path) -> list[str]:
    """``check --format json`` on an output wheel, through the same runner and budget: whatever
    ``tag`` writes, torchwheel reads back (issue 16: a 39 MB side file that ``check`` refused)."""
    run = path.parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHWHEEL_", "PYTEST", "GITHUB_"))}
    env["TMPDIR"] = str(run / "tmp")
    args = ["check", "--format", "json", str(path)]
    code, stdout, stderr, peak, _, timed_out = _server().run(args, run, env)
    if timed_out or code != _check_code(stdout) or "Traceback" in stderr or peak > MEMORY_BUDGET_MB:
        last = stderr.strip().splitlines()[-1:] or [""]
        return [f"output {path.name}: check on it exits {code} in {peak:.0f} MB: {last[0][:200]}"]
    return []


def _prepare(
    case: hostile.Case, command: str, inputs: dict[str, Path] | None, run: Path
) -> tuple[Path, Path]:
    src, out, tmp = run / "in", run / "out", run / "tmp"
    for d in (src, out, tmp):
        d.mkdir(parents=True)
    kind = hostile.INPUT.get(command, "wheel")
    if inputs is None:  # filesystem case: made fresh in this run's folder
        made = case.make(BUILT[0], src)
        target = made[kind]
    else:
        original = inputs[kind]
        target = src / original.name
        if original.is_dir():  # a folder of wheels
            shutil.copytree(original, target)
        elif (
            command not in WRITES_INPUT
            and command not in ("tag-w", "repair")
            and original.stat().st_size > 16 << 20
        ):
            os.link(original, target)  # a sparse GB read-only: checked unchanged afterwards
        else:
            shutil.copyfile(original, target)
        if "with" in inputs:  # what the input is read with: the wheel a table judges, a page links
            shutil.copyfile(inputs["with"], src / inputs["with"].name)
    if case.setup == "out-is-file":
        out.rmdir()
        out = run / "out-file"
        out.write_text("not a folder\n")
    if case.setup == "ro-out":
        src.chmod(0o555)
        out.chmod(0o555)
    return target, out


def _judge(case: hostile.Case, command: str, inputs: dict[str, Path] | None, run: Path) -> Verdict:
    target, out = _prepare(case, command, inputs, run)
    args = COMMANDS[command](target, out)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHWHEEL_", "PYTEST", "GITHUB_"))}
    env["TMPDIR"] = str(run / "tmp")
    before = snapshot(run)
    if FRESH or case.setup in ("nodac", "ro-out"):
        prefix = NODAC if case.setup in ("nodac", "ro-out") else []
        m = measured_run([*prefix, sys.executable, "-m", "torchwheel", *args], cwd=run, env=env,
                         timeout=TIMEOUT, address_space=ADDRESS_SPACE)  # fmt: skip
        code, stdout, stderr, peak, seconds, timed_out = (
            m.code,
            m.stdout,
            m.stderr,
            m.peak_mb,
            m.seconds,
            m.timed_out,
        )
    else:
        code, stdout, stderr, peak, seconds, timed_out = _server().run(args, run, env)
    expect = case.expectation(command)
    problems: list[str] = []
    lines = stderr.strip().splitlines()
    if timed_out:
        problems.append(f"killed after {TIMEOUT:.0f} s (hang or time not linear in the bytes present)")
    elif code not in expect.codes:
        problems.append(f"exit {code}, expected {sorted(expect.codes)}")
    if "Traceback" in stderr + stdout or "internal error" in stderr:
        problems.append("traceback or internal error: " + (lines[-1] if lines else ""))
    if code == 2 and not timed_out:
        if len(lines) != 1:
            problems.append(f"exit 2 with {len(lines)} lines on stderr, not one")
        if expect.message and expect.message not in stderr:
            problems.append(f"message lacks {expect.message!r}")
    if any(line.lstrip().startswith("::") for line in (stdout + "\n" + stderr).splitlines()):
        problems.append("a line of text output starts with '::' (GitHub workflow command injection)")
    if peak > MEMORY_BUDGET_MB:
        problems.append(f"peak RSS {peak:.0f} MB over the {MEMORY_BUDGET_MB} MB budget")
    if case.setup == "ro-out":
        (run / "in").chmod(0o755)
        (run / "out").chmod(0o755)
    problems += _check_files(case, command, code, target, out, run, before)
    summary = f"exit {code} in {seconds:.1f} s, {peak:.0f} MB: {lines[-1] if lines else ''}"[:300]
    return Verdict(problems, summary)


def _check_files(
    case: hostile.Case, command: str, code: int, target: Path, out: Path, run: Path, before: dict[str, str]
) -> list[str]:
    problems: list[str] = []
    after = snapshot(run)
    left = [k for k in after if k.startswith("tmp/")]
    if left:
        problems.append(f"left in TMPDIR: {left[:3]}")
    wrote_input = command in WRITES_INPUT and code == 0
    outputs: list[Path] = []
    for rel in sorted(set(before) | set(after)):
        if rel.startswith("tmp/") or before.get(rel) == after.get(rel):
            continue
        if command == "index" and code == 0 and rel.startswith("out/index"):
            continue  # the index tree it wrote (its files/ are links to the input wheels)
        if (rel.startswith("in/") and wrote_input and rel.endswith(".whl") and rel in after) or (
            rel.startswith("out/") and code == 0 and rel.endswith(".whl") and rel in after
        ):
            outputs.append(run / rel)
        elif rel.startswith("in/") and wrote_input and rel not in after:
            pass  # the input renamed: its file name follows the new tags
        else:
            what = (
                "changed" if rel in before and rel in after else "removed" if rel in before else "left behind"
            )
            problems.append(f"{rel} {what}")
    if wrote_input and len([p for p in outputs if p.parent.name == "in"]) != 1:
        problems.append(f"tag --in-place exit 0 left {len(outputs)} wheels in the input folder")
    for p in outputs:
        problems += _valid_wheel(p, case.output_check)
    return problems


BUILT: list[dict[str, Path]] = []
_VERDICTS: dict[tuple[str, str], Verdict] = {}


@pytest.fixture(scope="session")
def hostile_verdicts(
    request: pytest.FixtureRequest, built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[tuple[str, str], Verdict]]:
    """Run every collected (case, command) once, in parallel, and keep the verdicts."""
    BUILT.append(built_fixtures)
    inputs = hostile.generate(built_fixtures, REPO / ".cache" / "hostile", long=LONG)
    wanted = [
        item.callspec.params["pair"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_hostile_case" and hasattr(item, "callspec")
    ]
    root = tmp_path_factory.mktemp("hostile")
    LOG.parent.mkdir(parents=True, exist_ok=True)
    LOG.write_text("")
    lock = threading.Lock()
    root.chmod(0o755)

    def one(pair: tuple[str, str]) -> None:
        name, command = pair
        case = hostile.CASES[name]
        run = root / f"{name}-{command}"
        try:
            _VERDICTS[pair] = _judge(case, command, inputs.get(name), run)
        except Exception as exc:
            _VERDICTS[pair] = Verdict([f"harness error: {type(exc).__name__}: {exc}"], "")
        shutil.rmtree(run, ignore_errors=True)
        v = _VERDICTS[pair]
        with lock, LOG.open("a") as log:  # progress while the pool runs, and a record after
            log.write(f"{name}\t{command}\t{'; '.join(v.problems) or 'ok'}\t{v.summary}\n")

    # the slow cases first, so the pool does not end waiting on one of them
    order = sorted(wanted, key=lambda p: (hostile.CASES[p[0]].klass not in hostile.SLOW, p))
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(one, order))
    for s in _servers:
        s.close()
    with LOG.open("a") as log:
        log.write(f"# {len(CPU_SECONDS)} forked runs, {sum(CPU_SECONDS):.0f} CPU seconds\n")
    yield _VERDICTS


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{c}-{cmd}" for c, cmd in PAIRS])
def test_hostile_case(pair: tuple[str, str], hostile_verdicts: dict[tuple[str, str], Verdict]) -> None:
    verdict = hostile_verdicts[pair]
    case = hostile.CASES[pair[0]]
    where = f"{case.summary} [{case.klass}{f', finding {case.finding}' if case.finding else ''}]"
    assert not verdict.problems, f"{where}: {'; '.join(verdict.problems)} ({verdict.summary})"


def test_corpus_is_large_and_covers_the_classes() -> None:
    """Issue 11 asks for well over 100 cases, every class, and each of the 16 findings that
    concern input (13 and 14 are faults while writing, tested elsewhere)."""
    assert len(hostile.CASES) > 150
    classes = set(hostile.summary())
    assert {"truncation", "lying-headers", "zip64", "compression", "names", "record", "metadata", "wheel",
            "elf", "macho", "pe", "marker", "gpu", "fs", "scale", "finding", "quadratic-findings",
            "budget", "json-document", "self-contradiction"} <= classes  # fmt: skip
    found = {c.finding for c in hostile.CASES.values() if c.finding}
    assert {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 15, 16} <= found


def test_short_form_still_meets_every_wheel_command() -> None:
    """CI's short form runs a wheel case through check and one more command chosen by its
    name: each wheel command must still meet dozens of cases, and the long form every pair."""
    short = collections.Counter(
        cmd for c in hostile.CASES.values() if not c.long for cmd in c.commands(long=False)
    )
    assert all(short[cmd] >= 40 for cmd in hostile.WHEEL_COMMANDS), short
    assert short["check"] > 250, short
    every = sum(len(c.commands()) for c in hostile.CASES.values() if not c.long)
    assert sum(short.values()) < every * 0.6, (sum(short.values()), every)


def test_reliability_doc_is_current() -> None:
    """docs/evidence/reliability.md's limits and corpus tables are generated from limits.py and the
    corpus (benchmarks/reliability_doc.py): they cannot drift from the code."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "reliability_doc.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
