#!/usr/bin/env python3
"""torchwheel vs. its peers on big CUDA wheels, side by side, in one run.

    .venv/bin/python benchmarks/run.py                 # everything (about 10 minutes on 2 cores)
    .venv/bin/python benchmarks/run.py --quick         # 1 repetition, small wheels only
    .venv/bin/python benchmarks/run.py --wheels torch-2.14.1 --tools tw-check,abi3audit --reps 5

Reproduces ``docs/evidence/performance.md`` (its tables side by side with the peers, and the floors):
``.venv/bin/python benchmarks/run.py --rev HEAD``.

Run it with the project's venv: ``torchwheel`` is taken from beside that interpreter (or
``--torchwheel CMD``). Missing pieces are made first: the synthetic wheels
(``make_synthetic.py``), the torch wheels (``pip download torch==X --no-deps`` into
``benchmarks/.data/``), the peers' venv (``setup_peers.sh``).

For each wheel, each repetition runs every tool once (tools interleaved, so drift hits all
alike), each as a whole process: wall time from the parent, peak RSS and CPU time from
``/usr/bin/time -v`` (GNU time; without it, ``os.wait4``). Reported: medians of wall time
and CPU share, the largest peak RSS, and ratios ``tool / torchwheel check`` (above 1: the
tool is slower than torchwheel). Wheels are read from the page cache (each is read once
before its runs): this measures CPU work, not the disk.

Results: a text table on stdout, plus ``benchmarks/.data/results.json`` and
``benchmarks/.data/results.md`` (paths can be changed with ``--json``/``--markdown``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import first_line  # benchmarks/ on sys.path: this file runs as a script

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / ".data"
PEERS_BIN = HERE / ".venv-peers" / "bin"
FLOOR = HERE / "floor.py"
MB = 1_000_000
MANY_COPIES = 4
MANY_OF = "medium"
TORCH = {"torch-2.13.0": "2.13.0", "torch-2.14.1": "2.14.1"}
SYNTHETIC = ("small", "medium", "large", "huge")
ALL_WHEELS = (*SYNTHETIC, *TORCH, "many")
DEFAULT_WHEELS = ("small", "medium", "large", "torch-2.13.0", "torch-2.14.1", "many")
QUICK_WHEELS = ("small", "medium", "many")
# Medians the issue's author measured on 2 cores (abi3audit / auditwheel show / unzip+torch-abi-audit).
ISSUE_PEERS_S = {"torch-2.14.1": {"unzip-taa": 12.5, "abi3audit": 11.2, "auditwheel": 19.8}}
TARGET_SPEEDUP = 10.0
TARGET_SMALL_S = 0.3
TARGET_RSS_MB = 300.0
# "Both cores used": two vCPUs give 1.1-2x the throughput of one (see the scaling probe).
TARGET_CPU_SHARE = 1.4


# --------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class Case:
    key: str
    wheels: tuple[Path, ...]
    size: int  # bytes on disk, all wheels
    inflated: int
    members: int
    compiled: int

    @property
    def label(self) -> str:
        n = f"{len(self.wheels)} x " if len(self.wheels) > 1 else ""
        return f"{self.key} ({n}{self.wheels[0].name})"


def _is_compiled(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith((".so", ".pyd", ".dylib", ".dll")) or ".so." in base


def describe(key: str, wheels: Sequence[Path]) -> Case:
    size = inflated = members = compiled = 0
    for w in wheels:
        size += w.stat().st_size
        with zipfile.ZipFile(w) as zf:
            infos = [i for i in zf.infolist() if not i.is_dir()]
        inflated += sum(i.file_size for i in infos)
        members += len(infos)
        compiled += sum(_is_compiled(i.filename) for i in infos)
    return Case(key, tuple(wheels), size, inflated, members, compiled)


def torch_wheel(version: str) -> Path:
    dest = DATA / "torch"
    found = sorted(dest.glob(f"torch-{version}-*.whl")) + sorted(dest.glob(f"torch-{version}+*.whl"))
    if found:
        return found[0]
    dest.mkdir(parents=True, exist_ok=True)
    print(f"pip download torch=={version} ...", flush=True)
    cmd = [sys.executable, "-m", "pip", "download", f"torch=={version}", "--no-deps", "-d", str(dest)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    found = sorted(dest.glob(f"torch-{version}-*.whl")) + sorted(dest.glob(f"torch-{version}+*.whl"))
    if not found:
        raise SystemExit(f"pip download torch=={version} left no wheel in {dest}")
    return found[0]


def many_copies(source: Path) -> list[Path]:
    """``MANY_COPIES`` hard links (copies where links fail) under distinct directories."""
    out = []
    for i in range(MANY_COPIES):
        d = DATA / "many" / f"copy{i}"
        d.mkdir(parents=True, exist_ok=True)
        target = d / source.name
        if not target.exists() or target.stat().st_size != source.stat().st_size:
            target.unlink(missing_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copyfile(source, target)
        out.append(target)
    return out


def prepare_cases(keys: Sequence[str]) -> list[Case]:
    synthetic_needed = [k for k in SYNTHETIC if k in keys or (k == MANY_OF and "many" in keys)]
    built: dict[str, Path] = {}
    if synthetic_needed:
        sys.path.insert(0, str(HERE))
        import make_synthetic

        try:
            built = make_synthetic.build(synthetic_needed)
        except make_synthetic.BuildError as exc:
            raise SystemExit(f"make_synthetic: {exc}") from exc
    cases = []
    for key in keys:
        if key in TORCH:
            cases.append(describe(key, [torch_wheel(TORCH[key])]))
        elif key == "many":
            cases.append(describe(key, many_copies(built[MANY_OF])))
        else:
            cases.append(describe(key, [built[key]]))
    return cases


def setup_peers() -> str:
    proc = subprocess.run(["bash", str(HERE / "setup_peers.sh")], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"setup_peers.sh failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout.strip()


# --------------------------------------------------------------------------------------------
# Tools


@dataclass(frozen=True)
class Context:
    torchwheel: tuple[str, ...]
    python: str
    peers: Path


Builder = Callable[[Context, Sequence[Path], Path], list[str]]


@dataclass(frozen=True)
class Tool:
    key: str
    label: str
    group: str  # torchwheel | peer | floor
    ok: frozenset[int]
    build: Builder


def _bash(script: str) -> list[str]:
    return ["bash", "-c", "set -euo pipefail\n" + script]


def _each(wheels: Sequence[Path], line: Callable[[int, str], str]) -> list[str]:
    """One command per wheel, in sequence, in one timed shell."""
    return _bash("\n".join(line(i, shlex.quote(str(w))) for i, w in enumerate(wheels)))


def _unzip_taa(ctx: Context, wheels: Sequence[Path], tmp: Path) -> list[str]:
    taa = shlex.quote(str(ctx.peers / "torch-abi-audit"))

    def line(i: int, w: str) -> str:
        d = shlex.quote(str(tmp / f"unpacked{i}"))
        return f"unzip -q {w} -d {d}\n{taa} --site-packages {d} --all"

    return _each(wheels, line)


def _auditwheel(ctx: Context, wheels: Sequence[Path], tmp: Path) -> list[str]:
    aw = str(ctx.peers / "auditwheel")
    if len(wheels) == 1:
        return [aw, "show", str(wheels[0])]
    return _each(wheels, lambda i, w: f"{shlex.quote(aw)} show {w}")


def _cp(ctx: Context, wheels: Sequence[Path], tmp: Path) -> list[str]:
    if len(wheels) == 1:
        return ["cp", str(wheels[0]), str(tmp / wheels[0].name)]
    return _each(wheels, lambda i, w: f"cp {w} {shlex.quote(str(tmp / f'copy{i}.whl'))}")


def _floor(mode: str) -> Builder:
    return lambda ctx, wheels, tmp: [ctx.python, str(FLOOR), mode, *map(str, wheels)]


def _isal_available(python: str) -> bool:
    return subprocess.run([python, "-c", "import isal.isal_zlib"], capture_output=True).returncode == 0


OK01 = frozenset({0, 1})  # 1 = "findings/violations found": a completed run
TOOLS: tuple[Tool, ...] = (
    Tool(
        "tw-check",
        "torchwheel check --format json",
        "torchwheel",
        OK01,
        lambda c, w, t: [*c.torchwheel, "check", "--format", "json", *map(str, w)],
    ),
    Tool(
        "tw-show",
        "torchwheel show --json",
        "torchwheel",
        OK01,
        lambda c, w, t: [*c.torchwheel, "show", "--json", *map(str, w)],
    ),
    Tool(
        "tw-check-skip-hashes",
        "torchwheel check --skip-hashes",
        "torchwheel",
        OK01,
        lambda c, w, t: [*c.torchwheel, "check", "--format", "json", "--skip-hashes", *map(str, w)],
    ),
    Tool("abi3audit", "abi3audit WHEEL", "peer", OK01, lambda c, w, t: [str(c.peers / "abi3audit"), *map(str, w)]),
    Tool(
        "abi3audit-assume",
        "abi3audit --assume-minimum-abi3 3.9",
        "peer",
        OK01,
        lambda c, w, t: [str(c.peers / "abi3audit"), "--assume-minimum-abi3", "3.9", *map(str, w)],
    ),
    Tool("auditwheel", "auditwheel show WHEEL", "peer", OK01, _auditwheel),
    Tool("unzip-taa", "unzip -q + torch-abi-audit", "peer", frozenset({0}), _unzip_taa),
    Tool("floor-cp", "floor: cp WHEEL", "floor", frozenset({0}), _cp),
    Tool("floor-inflate", "floor: inflate all (zipfile)", "floor", frozenset({0}), _floor("inflate")),
    Tool(
        "floor-inflate-sha256",
        "floor: inflate + sha256 all",
        "floor",
        frozenset({0}),
        _floor("inflate-sha256"),
    ),
    Tool(
        "floor-inflate-sha256-2proc",
        "floor: inflate + sha256, 2 processes",
        "floor",
        frozenset({0}),
        _floor("inflate-sha256-2proc"),
    ),
    Tool(
        "floor-isal",
        "floor: ISA-L inflate + sha256",
        "floor",
        frozenset({0}),
        _floor("isal-inflate-sha256"),
    ),
    Tool(
        "floor-isal-2",
        "floor: ISA-L inflate + sha256, 2 threads",
        "floor",
        frozenset({0}),
        _floor("isal-inflate-sha256-2"),
    ),
)  # fmt: skip
OPT_IN = {"tw-check-skip-hashes", "abi3audit-assume"}
BY_KEY = {t.key: t for t in TOOLS}


def default_torchwheel() -> tuple[str, ...]:
    script = Path(sys.executable).parent / "torchwheel"
    return (str(script),) if script.is_file() else (sys.executable, "-m", "torchwheel")


def torchwheel_at(rev: str) -> tuple[tuple[str, ...], str]:
    """Run torchwheel as committed at ``rev`` (``git archive`` of src/torchwheel), not the
    working tree: a stable subject while others edit src/. Same interpreter and dependencies.
    """
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dest = DATA / f"torchwheel-{sha[:12]}"
    if not (dest / "torchwheel" / "__init__.py").is_file():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", sha, "src/torchwheel"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp), "--strip-components=1"], input=archive, check=True)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tmp)], check=True)  # as installed
        tmp.rename(dest)
    return ("env", f"PYTHONPATH={dest}", sys.executable, "-m", "torchwheel"), sha


# --------------------------------------------------------------------------------------------
# Measuring


@dataclass
class Sample:
    wall: float
    user: float
    sys: float
    rss_mb: float
    rc: int


def _gnu_time() -> str | None:
    path = shutil.which("time", path="/usr/bin:/bin") or shutil.which("gtime")
    if path is None:
        return None
    probe = subprocess.run([path, "-v", "true"], capture_output=True, text=True)
    return path if "Maximum resident set size" in probe.stderr else None


GNU_TIME = _gnu_time()
_TIME_FIELDS = {
    "user": re.compile(r"User time \(seconds\): ([\d.]+)"),
    "sys": re.compile(r"System time \(seconds\): ([\d.]+)"),
    "rss": re.compile(r"Maximum resident set size \(kbytes\): (\d+)"),
    "rc": re.compile(r"Exit status: (\d+)"),
}


def measure(argv: list[str], tmp: Path) -> Sample:
    out = (tmp / "stdout").open("wb")
    err = (tmp / "stderr").open("wb")
    try:
        if GNU_TIME is not None:
            report = tmp / "time.txt"
            start = time.perf_counter()
            proc = subprocess.run([GNU_TIME, "-v", "-o", str(report), *argv], stdout=out, stderr=err, cwd=tmp)
            wall = time.perf_counter() - start
            text = report.read_text()
            got = {k: rx.search(text) for k, rx in _TIME_FIELDS.items()}
            if not all(got.values()):
                return Sample(wall, 0.0, 0.0, 0.0, proc.returncode or 127)
            return Sample(
                wall,
                float(got["user"].group(1)),  # type: ignore[union-attr]
                float(got["sys"].group(1)),  # type: ignore[union-attr]
                int(got["rss"].group(1)) / 1024,  # type: ignore[union-attr]
                int(got["rc"].group(1)),  # type: ignore[union-attr]
            )
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=err, cwd=tmp)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        return Sample(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024, child.returncode)
    finally:
        out.close()
        err.close()


def _tail(path: Path, lines: int = 6) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class Result:
    case: str
    tool: str
    label: str
    group: str
    samples: list[Sample] = field(default_factory=list)
    failed: str | None = None

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def rss_mb(self) -> float:
        return max(s.rss_mb for s in self.samples)

    @property
    def cpu_share(self) -> float:
        return statistics.median((s.user + s.sys) / s.wall for s in self.samples if s.wall > 0)


def warm(case: Case) -> None:
    for w in case.wheels:
        with w.open("rb") as fh:
            while fh.read(8 << 20):
                pass


def run_case(case: Case, tools: Sequence[Tool], ctx: Context, reps: int) -> list[Result]:
    warm(case)
    results = {t.key: Result(case.key, t.key, t.label, t.group) for t in tools}
    for rep in range(reps):
        for tool in tools:
            res = results[tool.key]
            if res.failed:
                continue
            tmp = Path(tempfile.mkdtemp(prefix=f"twbench-{tool.key}-"))
            try:
                sample = measure(tool.build(ctx, case.wheels, tmp), tmp)
                if sample.rc not in tool.ok:
                    res.failed = f"exit {sample.rc}: {_tail(tmp / 'stderr') or _tail(tmp / 'stdout')}"
                    print(f"  [{case.key}] {tool.key}: FAILED ({res.failed})", file=sys.stderr, flush=True)
                    continue
                res.samples.append(sample)
                print(
                    f"  [{case.key}] rep {rep + 1}/{reps} {tool.key:28s} {sample.wall:8.3f} s "
                    f"{sample.rss_mb:8.0f} MB rc={sample.rc}",
                    file=sys.stderr,
                    flush=True,
                )
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return list(results.values())


# --------------------------------------------------------------------------------------------
# The machine


def _spin(n: int) -> float:
    start = time.perf_counter()
    x = 0
    for i in range(n):
        x += i
    return time.perf_counter() - start


def _packed() -> bytes:
    import random
    import zlib

    data = random.Random(7).randbytes(8 << 20).translate(bytes(i & 15 for i in range(256)))
    return zlib.compress(data, 6)


def _inflate_sha_stream(rounds: int) -> float:
    """Inflate + SHA-256 in 256 KiB steps: small buffers, reused by the allocator."""
    import hashlib
    import zlib

    packed = _packed()
    start = time.perf_counter()
    for _ in range(rounds):
        inflater = zlib.decompressobj()
        digest = hashlib.sha256()
        for at in range(0, len(packed), 1 << 18):
            digest.update(inflater.decompress(packed[at : at + (1 << 18)]))
        digest.update(inflater.flush())
    return time.perf_counter() - start


def _inflate_sha_oneshot(rounds: int) -> float:
    """The same with the whole 8 MiB output in one fresh buffer per round (page faults)."""
    import hashlib
    import zlib

    packed = _packed()
    start = time.perf_counter()
    for _ in range(rounds):
        hashlib.sha256(zlib.decompress(packed)).digest()
    return time.perf_counter() - start


def parallel_scaling() -> dict[str, float]:
    """Throughput of 2 processes over 1 on this machine (2.0 = two real cores)."""
    out: dict[str, float] = {}
    probes: tuple[tuple[str, Callable[[int], float], int], ...] = (
        ("python-loop", _spin, 15_000_000),
        ("inflate+sha256 streamed", _inflate_sha_stream, 12),
        ("inflate+sha256 one-shot 8 MiB buffers", _inflate_sha_oneshot, 12),
    )
    for name, fn, arg in probes:
        one = fn(arg)
        start = time.perf_counter()
        with ProcessPoolExecutor(2) as pool:
            list(pool.map(fn, [arg, arg]))
        two = time.perf_counter() - start
        out[name] = round(2 * one / two, 2)
    return out


def machine_info(ctx: Context, peers: str) -> dict[str, object]:
    cpu = "?"
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
        cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    ram = "?"
    try:
        m = re.search(r"^MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
        ram = f"{int(m.group(1)) / (1 << 20):.1f} GiB" if m else ram
    except OSError:
        pass
    import zlib

    commit = first_line(["git", "-C", str(REPO), "describe", "--always", "--dirty"])
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram": ram,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
        "torchwheel": first_line([*ctx.torchwheel, "--version"]),
        "torchwheel_commit": commit,
        "peers": peers.splitlines(),
        "gnu_time": GNU_TIME is not None,
        "isal_floor": _isal_available(ctx.python),
    }


# --------------------------------------------------------------------------------------------
# Report


def _fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def table_rows(case: Case, results: Sequence[Result]) -> list[list[str]]:
    base = next((r for r in results if r.tool == "tw-check" and r.samples), None)
    rows = []
    for r in results:
        if not r.samples:
            rows.append([r.label, "failed", "-", "-", "-"])
            continue
        ratio = r.wall / base.wall if base is not None else None
        rows.append(
            [r.label, f"{r.wall:.3f}", f"{r.rss_mb:.0f}", f"{100 * r.cpu_share:.0f}%", _fmt_ratio(ratio)]
        )
    return rows


HEADER = ["tool", "wall s (median)", "peak RSS MB", "CPU", "vs torchwheel check"]


def case_title(case: Case) -> str:
    return (
        f"{case.label}: {case.size / MB:.0f} MB on disk, {case.inflated / MB:.0f} MB inflated, "
        f"{case.members} members, {case.compiled} compiled"
    )


def text_table(case: Case, results: Sequence[Result]) -> str:
    rows = [HEADER, *table_rows(case, results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [case_title(case)]
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]
        lines.append("  " + "  ".join(cells))
        if n == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(case: Case, results: Sequence[Result]) -> str:
    lines = [f"**{case_title(case)}**", "", "| " + " | ".join(HEADER) + " |"]
    lines.append("|" + "|".join(["---", *["---:"] * (len(HEADER) - 1)]) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(case, results)]
    return "\n".join(lines)


def _get(results: dict[str, list[Result]], case: str, tool: str) -> Result | None:
    return next((r for r in results.get(case, []) if r.tool == tool and r.samples), None)


def targets(cases: Sequence[Case], results: dict[str, list[Result]]) -> list[str]:
    """The issue's targets, each with the numbers that decide it."""
    lines: list[str] = []
    for case in cases:
        check = _get(results, case.key, "tw-check")
        if check is None:
            continue
        peers = [r for r in results[case.key] if r.group == "peer" and r.samples]
        if peers and case.key in ("large", "huge", "torch-2.14.1", "torch-2.13.0"):
            fastest = min(peers, key=lambda r: r.wall)
            speedup = fastest.wall / check.wall
            verdict = "met" if speedup >= TARGET_SPEEDUP else "NOT met"
            lines.append(
                f"{case.key}: torchwheel check {check.wall:.2f} s vs fastest peer here "
                f"({fastest.tool}) {fastest.wall:.2f} s = {speedup:.1f}x "
                f"(target >= {TARGET_SPEEDUP:.0f}x: {verdict})"
            )
            issue = ISSUE_PEERS_S.get(case.key)
            if issue:
                best = min(issue.values())
                lines.append(
                    f"{case.key}: vs the issue's fastest peer {best:.1f} s = {best / check.wall:.1f}x "
                    f"(needs check <= {best / TARGET_SPEEDUP:.2f} s)"
                )
        if case.key == "torch-2.14.1":
            for tool in ("tw-check", "tw-show"):
                r = _get(results, case.key, tool)
                if r is not None:
                    verdict = "met" if r.rss_mb < TARGET_RSS_MB else "NOT met"
                    lines.append(
                        f"{case.key}: {tool} peak RSS {r.rss_mb:.0f} MB "
                        f"(target < {TARGET_RSS_MB:.0f} MB: {verdict})"
                    )
        if case.key == "small":
            verdict = "met" if check.wall < TARGET_SMALL_S else "NOT met"
            lines.append(
                f"small ({case.size / MB:.0f} MB): torchwheel check {check.wall:.3f} s "
                f"(target < {TARGET_SMALL_S} s: {verdict})"
            )
        if case.key == "many":
            verdict = "met" if check.cpu_share >= TARGET_CPU_SHARE else "NOT met"
            lines.append(
                f"many ({len(case.wheels)} wheels): torchwheel check uses {100 * check.cpu_share:.0f}% CPU "
                f"(two full cores = 200%; target >= {100 * TARGET_CPU_SHARE:.0f}%: {verdict})"
            )
    rates = [
        (c.key, _get(results, c.key, "tw-check"), c.inflated)
        for c in cases
        if c.key != "many" and _get(results, c.key, "tw-check") is not None
    ]
    if rates:
        text = ", ".join(f"{k} {r.wall / (n / 1e9):.2f}" for k, r, n in rates if r is not None)
        lines.append(f"torchwheel check seconds per inflated GB: {text} (linear = roughly equal)")
    return lines


# --------------------------------------------------------------------------------------------


def parse_list(text: str, allowed: Sequence[str], what: str) -> list[str]:
    keys = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in keys if k not in allowed]
    if bad:
        raise SystemExit(f"unknown {what} {', '.join(bad)}; choose from {', '.join(allowed)}")
    return keys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"1 repetition; wheels {','.join(QUICK_WHEELS)}")
    parser.add_argument("--wheels", help=f"comma-separated from {','.join(ALL_WHEELS)}")
    parser.add_argument(
        "--tools",
        help=f"comma-separated from {','.join(BY_KEY)} (default: all but {','.join(sorted(OPT_IN))})",
    )
    parser.add_argument("--reps", type=int, help="repetitions per tool and wheel (default 3, --quick 1)")
    parser.add_argument("--torchwheel", help="command that runs torchwheel (default: beside this python)")
    parser.add_argument("--rev", help="measure torchwheel as committed at this git revision (e.g. HEAD)")
    parser.add_argument("--json", type=Path, default=DATA / "results.json", help="write results here")
    parser.add_argument("--markdown", type=Path, default=DATA / "results.md", help="write tables here")
    parser.add_argument("--no-scaling", action="store_true", help="skip the 2-process scaling probe")
    args = parser.parse_args(argv)

    wheels = parse_list(args.wheels, ALL_WHEELS, "wheel") if args.wheels else None
    wheels = wheels or list(QUICK_WHEELS if args.quick else DEFAULT_WHEELS)
    reps = args.reps or (1 if args.quick else 3)
    subject = "working tree (the installed torchwheel)"
    if args.rev:
        command, sha = torchwheel_at(args.rev)
        subject = f"commit {sha}"
    elif args.torchwheel:
        command = tuple(shlex.split(args.torchwheel))
        subject = args.torchwheel
    else:
        command = default_torchwheel()
    ctx = Context(torchwheel=command, python=sys.executable, peers=PEERS_BIN)
    tool_keys = parse_list(args.tools, list(BY_KEY), "tool") if args.tools else None
    if tool_keys is None:
        tool_keys = [k for k in BY_KEY if k not in OPT_IN]
        if not _isal_available(ctx.python):
            tool_keys.remove("floor-isal")
    tools = [BY_KEY[k] for k in tool_keys]

    started = time.perf_counter()
    peers = setup_peers()
    print(peers, flush=True)
    cases = prepare_cases(wheels)
    info = machine_info(ctx, peers)
    info["torchwheel_measured"] = subject
    if not args.no_scaling:
        info["two_process_scaling"] = parallel_scaling()
    print(json.dumps(info, indent=1), flush=True)
    print(f"measuring: {reps} repetition(s), tools {', '.join(tool_keys)}", flush=True)

    results: dict[str, list[Result]] = {}
    for case in cases:
        print(f"== {case_title(case)}", file=sys.stderr, flush=True)
        results[case.key] = run_case(case, tools, ctx, reps)
        print("\n" + text_table(case, results[case.key]) + "\n", flush=True)

    summary = targets(cases, results)
    print("Targets:")
    for line in summary:
        print(f"  {line}")
    elapsed = time.perf_counter() - started
    print(f"\n(total {elapsed:.0f} s)")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "machine": info,
                "reps": reps,
                "elapsed_s": round(elapsed, 1),
                "cases": [{**asdict(c), "wheels": [w.name for w in c.wheels]} for c in cases],
                "results": [asdict(r) for rs in results.values() for r in rs],
                "targets": summary,
            },
            indent=1,
        )
        + "\n"
    )
    md = [markdown_table(c, results[c.key]) for c in cases]
    args.markdown.write_text("\n\n".join(md) + "\n\n" + "\n".join(f"- {s}" for s in summary) + "\n")
    print(f"wrote {os.path.relpath(args.json)} and {os.path.relpath(args.markdown)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
