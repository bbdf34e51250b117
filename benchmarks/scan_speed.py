#!/usr/bin/env python3
"""``torchwheel scan`` of a whole project against a plain parallel download of the same files,
side by side in one run (issue 49).

    python benchmarks/scan_speed.py [--reps 3] [--rate MB/s] [--project torchao] [--no-vllm]

Reproduces ``docs/evidence/performance.md`` ("Two cores from the first byte, and a scan against its download"): once with the default
``--rate`` (one link of 16.7 MB/s shared by every connection, the speed of the issue's own
download of the project: 154 MB in 9.2 s) and once with ``--rate 0`` (127.0.0.1's speed, where
the download costs next to nothing and a scan costs its checks). The project's wheels (all
71 of torchao's, 154 MB) are fetched from PyPI once into ``.cache/bench/<project>`` (its
PEP 691 page, every file checked against its sha256), and vLLM 0.33.0's Linux wheel (336 MB)
by pip. They are served from 127.0.0.1 by ``tests/lib/index_server.py`` as a PEP 691 index (the
JSON page gives sizes and sha256, as PyPI's does), and every round runs, in turn:

* ``plain download``: every file of the project with 4 threads (torchwheel's default
  connection cap per host), each streamed to disk and checked against its sha256, in a
  process of its own (``--plain-download``): the least any scan of the project costs;
* ``scan``: ``torchwheel scan -i URL --name PROJECT -o FILE`` (every wheel downloaded and
  checked; ``--jobs 1``, the default, and ``--jobs 2``);
* ``scan --partial``: the same through HTTP ranges where they pay;
* for vLLM's one wheel, the same three.

Each is a whole process under GNU ``time -v`` (wall, CPU of the process and its children,
peak RSS); the requests and bytes are the server's own count. The load average is read before
and after each round. The done-when of issue 49 is printed at the end: a project's scan <= 1.3x
the plain download, and ``--partial`` <= the whole scan in bytes, requests and time (on the
project and on vLLM). ``--json`` keeps every sample; ``--write-docs`` puts the table into
docs/evidence/performance.md between its markers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import harness  # noqa: E402  (benchmarks/ is no package: see harness.py)
import run  # noqa: E402

BENCH = REPO / ".cache" / "bench"
LINK_MB_S = 16.7  # the plain download of torchao's 154 MB took 9.2 s: a link of this rate
CONNECTIONS = 4  # fairness.Policy.host_connections: what torchwheel opens to one host
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
TARGET_SCAN_OVER_DOWNLOAD = 1.3


def _files_of(project: str) -> list[dict[str, Any]]:
    """The wheels of ``project`` on PyPI (its PEP 691 page): filename, url, sha256, size."""
    req = urllib.request.Request(f"https://pypi.org/simple/{project}/", headers={"Accept": JSON_TYPE})
    with urllib.request.urlopen(req, timeout=60) as r:
        page = json.load(r)
    return [f for f in page["files"] if f["filename"].endswith(".whl") and not f.get("yanked")]


def download_project(project: str) -> Path:
    """Every wheel of ``project`` into ``.cache/bench/<project>``, each checked against the
    sha256 PyPI gives; files already there (and matching) are kept."""
    folder = BENCH / project
    folder.mkdir(parents=True, exist_ok=True)
    for f in _files_of(project):
        dest = folder / f["filename"]
        if dest.is_file() and harness.file_sha256(dest) == f["hashes"]["sha256"]:
            continue
        with urllib.request.urlopen(f["url"], timeout=300) as r, dest.open("wb") as out:
            shutil.copyfileobj(r, out, 1 << 20)
        if harness.file_sha256(dest) != f["hashes"]["sha256"]:
            dest.unlink()
            raise SystemExit(f"{f['filename']}: sha256 differs from PyPI's")
    return folder


def make_index(root: Path, project: str, wheels: list[Path]) -> list[str]:
    """A PEP 691 (and 503) index of ``wheels`` under ``root``: ``files/`` (hard links) and
    ``simple/<project>/`` (index.json with sizes and sha256, index.html); the files' paths."""
    files = root / "files"
    files.mkdir(parents=True)
    page = root / "simple" / project
    page.mkdir(parents=True)
    entries, links = [], []
    for w in sorted(wheels):
        try:
            os.link(w, files / w.name)
        except OSError:
            shutil.copy(w, files / w.name)
        digest = harness.file_sha256(w)
        entries.append(
            {
                "filename": w.name,
                "url": f"../../files/{w.name}",
                "hashes": {"sha256": digest},
                "size": w.stat().st_size,
            }
        )
        links.append(f'<a href="../../files/{w.name}#sha256={digest}">{w.name}</a><br>')
    (page / "index.json").write_text(
        json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": entries})
    )
    (page / "index.html").write_text("<html><body>\n" + "\n".join(links) + "\n</body></html>\n")
    return [f"files/{w.name}" for w in sorted(wheels)]


def plain_download(listing: Path, dest: Path) -> int:
    """``--plain-download``: every URL of ``listing`` (``url sha256`` per line) with
    ``CONNECTIONS`` threads, streamed to ``dest`` and checked against its sha256."""
    todo = [line.split() for line in listing.read_text().splitlines() if line.strip()]
    lock = threading.Lock()
    failures: list[str] = []

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                url, want = todo.pop(0)
            digest = hashlib.sha256()
            with (
                urllib.request.urlopen(url, timeout=300) as r,
                (dest / url.rsplit("/", 1)[1]).open("wb") as out,
            ):
                while chunk := r.read(1 << 16):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != want:
                failures.append(url)

    threads = [threading.Thread(target=worker) for _ in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return 1 if failures else 0


class _Link:
    """One link shared by every connection the server answers: at most ``rate`` bytes a
    second in all (a token bucket, 64 KiB at a time), as a network between a client and an
    index is; 0 for no limit (127.0.0.1's speed)."""

    def __init__(self, rate: float) -> None:
        self.rate, self.next = rate, time.monotonic()
        self.lock = threading.Lock()

    def take(self, n: int) -> None:
        if not self.rate:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next)
            self.next = start + n / self.rate
        time.sleep(max(0.0, start - now))


class _Throttled:
    """A handler's ``wfile`` written through the link, 64 KiB at a time."""

    def __init__(self, raw: Any, link: _Link) -> None:
        self.raw, self.link = raw, link

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        for at in range(0, len(view), 1 << 16):
            piece = view[at : at + (1 << 16)]
            self.link.take(len(piece))
            self.raw.write(piece)
        return len(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _throttle(rate_mb_s: float) -> None:
    """Every answer of ``tests/lib/index_server.py`` in this process through one link of this rate."""
    from tests.lib import index_server

    link = _Link(rate_mb_s * 1e6)
    original = index_server._Handler.setup

    def setup(self: Any) -> None:
        original(self)
        self.wfile = _Throttled(self.wfile, link)

    index_server._Handler.setup = setup  # type: ignore[method-assign]


def _measure(argv: list[str], server: Any) -> dict[str, Any]:
    """One whole-process run: wall, CPU, peak RSS (``run.measure``), and what the server
    answered meanwhile (requests, ranges, bytes of wheels asked for)."""
    server.requests.clear()
    server.ranged.clear()
    tmp = Path(tempfile.mkdtemp(prefix="twscan-"))
    try:
        got = run.measure(argv, tmp)
        err = run._tail(tmp / "stderr")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "wall": got.wall,
        "cpu": got.user + got.sys,
        "rss_mb": got.rss_mb,
        "rc": got.rc,
        "requests": len(server.requests),
        "wheel_requests": sum(p.endswith(".whl") for p in server.requests),
        "ranges": len(server.ranged),
        "stderr": err if got.rc else "",
    }


def _fetched(out: Path) -> int:
    return sum(json.loads(line)["fetched_bytes"] for line in out.read_text().splitlines())


def measure_case(
    name: str, project: str, wheels: list[Path], reps: int, torchwheel: tuple[str, ...], jobs2: bool
) -> dict[str, Any]:
    from tests.lib.index_server import serve

    size = sum(w.stat().st_size for w in wheels)
    with tempfile.TemporaryDirectory(prefix=f"scan-speed-{name}-") as tmp_text:
        tmp = Path(tmp_text)
        paths = make_index(tmp / "index", project, wheels)
        with serve(tmp / "index") as (base, server):
            listing = tmp / "listing.txt"
            listing.write_text(
                "".join(f"{base}/{p} {harness.file_sha256(tmp / 'index' / p)}\n" for p in paths)
            )
            commands: dict[str, list[str]] = {
                "plain download": [sys.executable, __file__, "--plain-download", str(listing), str(tmp / "dl")],
                "scan": [*torchwheel, "scan", "-i", f"{base}/simple", "--name", project, "-o", str(tmp / "w.jsonl")],
                "scan --partial": [
                    *torchwheel, "scan", "-i", f"{base}/simple", "--name", project, "--partial", "-o", str(tmp / "p.jsonl")
                ],
            }  # fmt: skip
            if jobs2:
                commands["scan --jobs 2"] = [*commands["scan"][:-1], str(tmp / "w2.jsonl"), "--jobs", "2"]
            outs = {
                "scan": tmp / "w.jsonl",
                "scan --partial": tmp / "p.jsonl",
                "scan --jobs 2": tmp / "w2.jsonl",
            }
            samples: dict[str, list[dict[str, Any]]] = {k: [] for k in commands}
            loads = []
            for rep in range(reps):
                loads.append(round(os.getloadavg()[0], 2))
                for key, argv in commands.items():
                    (tmp / "dl").mkdir(exist_ok=True)
                    for out in outs.values():
                        out.unlink(missing_ok=True)
                    got = _measure(argv, server)
                    if key in outs and outs[key].is_file():
                        got["fetched"] = _fetched(outs[key])
                    else:
                        got["fetched"] = size if got["rc"] == 0 else 0
                    shutil.rmtree(tmp / "dl", ignore_errors=True)
                    samples[key].append(got)
                    print(
                        f"  [{name}] round {rep + 1}/{reps} {key:16s} {got['wall']:7.2f} s wall {got['cpu']:7.2f} s CPU "
                        f"{got['requests']:4d} requests {got['fetched'] / 1e6:8.1f} MB rc={got['rc']} "
                        f"(load {os.getloadavg()[0]:.2f})",
                        file=sys.stderr,
                        flush=True,
                    )
            loads.append(round(os.getloadavg()[0], 2))
    rows = {}
    for key, got in samples.items():
        ok = [g for g in got if g["rc"] in (0, 1)]
        if not ok:
            rows[key] = {"failed": got[-1]["stderr"]}
            continue
        rows[key] = {
            "wall_s": round(statistics.median(g["wall"] for g in ok), 2),
            "wall_range_s": [round(min(g["wall"] for g in ok), 2), round(max(g["wall"] for g in ok), 2)],
            "cpu_s": round(statistics.median(g["cpu"] for g in ok), 2),
            "peak_rss_mb": round(max(g["rss_mb"] for g in ok), 1),
            "requests": statistics.median(g["requests"] for g in ok),
            "ranges": statistics.median(g["ranges"] for g in ok),
            "fetched_mb": round(statistics.median(g["fetched"] for g in ok) / 1e6, 2),
        }
    return {
        "case": name,
        "wheels": len(wheels),
        "mb": round(size / 1e6, 1),
        "rows": rows,
        "load_average": loads,
    }


def verdicts(case: dict[str, Any]) -> dict[str, Any]:
    rows = case["rows"]
    out: dict[str, Any] = {}
    plain, whole, part = rows.get("plain download"), rows.get("scan"), rows.get("scan --partial")
    if plain and whole and "wall_s" in whole:
        out["scan_over_download"] = round(whole["wall_s"] / plain["wall_s"], 2)
        if "scan --jobs 2" in rows and "wall_s" in rows["scan --jobs 2"]:
            out["scan_jobs2_over_download"] = round(rows["scan --jobs 2"]["wall_s"] / plain["wall_s"], 2)
    if whole and part and "wall_s" in part:
        out["partial_over_whole"] = {
            k: round(part[k] / whole[k], 3) if whole[k] else None
            for k in ("fetched_mb", "requests", "wall_s")
        }
    return out


def markdown(result: dict[str, Any]) -> str:
    begin, end = harness.markers(_section(result["rate_mb_s"]))
    lines = [
        begin,
        f"Run of {result['when']} UTC (`benchmarks/scan_speed.py --reps {result['reps']} --rate {result['rate_mb_s']:g}`), "
        f"served from 127.0.0.1 by `tests/lib/index_server.py` through one link of "
        f"{'unlimited speed' if not result['rate_mb_s'] else str(result['rate_mb_s']) + ' MB/s'} shared by all "
        f"connections, on {result['cpus']} vCPUs. Medians; requests and bytes are the server's count (a scan's "
        "include its index page).",
    ]
    for case in result["cases"]:
        loads = case["load_average"]
        lines += [
            "",
            f"**{case['case']}**: {case['wheels']} wheels, {case['mb']} MB; load average {min(loads)}-{max(loads)} during it",
            "",
            "| command | wall s (median) | range | CPU s | peak RSS MB | requests | ranges | fetched MB |",
            "|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        for key, row in case["rows"].items():
            if "failed" in row:
                lines.append(f"| {key} | failed: {harness.md_cell(row['failed'][:80])} | | | | | | |")
                continue
            lo, hi = row["wall_range_s"]
            lines.append(
                f"| {key} | {row['wall_s']:.2f} | {lo:.2f}-{hi:.2f} | {row['cpu_s']:.2f} | {row['peak_rss_mb']:.0f} "
                f"| {row['requests']:g} | {row['ranges']:g} | {row['fetched_mb']:.1f} |"
            )
        v = case["verdicts"]
        if "scan_over_download" in v:
            extra = (
                f", `--jobs 2` {v['scan_jobs2_over_download']}x" if "scan_jobs2_over_download" in v else ""
            )
            lines.append(
                f"\nscan / plain download: **{v['scan_over_download']}x**{extra} (target <= {TARGET_SCAN_OVER_DOWNLOAD}x)"
            )
        if "partial_over_whole" in v:
            p = v["partial_over_whole"]
            lines.append(
                f"`--partial` / scan: bytes {p['fetched_mb']}x, requests {p['requests']}x, time {p['wall_s']}x "
                "(target: each <= 1)"
            )
    lines.append(end)
    return "\n".join(lines)


def _section(rate: float) -> str:
    """The docs section of a run: through an emulated link, or at 127.0.0.1's speed."""
    return "scan-speed-link" if rate else "scan-speed-local"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--project", default="torchao")
    parser.add_argument("--no-vllm", action="store_true", help="the project only")
    parser.add_argument("--no-jobs2", action="store_true", help="without the --jobs 2 scan")
    parser.add_argument(
        "--rate",
        type=float,
        default=LINK_MB_S,
        help=f"MB/s of the link the server answers through, shared by all connections (default {LINK_MB_S}: "
        "the issue's download; 0: no limit)",
    )
    parser.add_argument(
        "--rev", help="measure torchwheel as committed at this git revision (default: the working tree)"
    )
    parser.add_argument("--json", type=Path, default=HERE / "results" / "scan_speed.json")
    parser.add_argument(
        "--write-docs", action="store_true", help="the tables into docs/evidence/performance.md"
    )
    parser.add_argument(
        "--plain-download", nargs=2, type=Path, metavar=("LISTING", "DEST"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.plain_download:
        return plain_download(*args.plain_download)

    torchwheel = run.default_torchwheel()
    if args.rev:  # a stable subject while src/ changes (run.torchwheel_at)
        torchwheel, _ = run.torchwheel_at(args.rev)
    _throttle(args.rate)
    project = sorted(download_project(args.project).glob("*.whl"))
    started = time.time()
    cases = [measure_case(args.project, args.project, project, args.reps, torchwheel, not args.no_jobs2)]
    if not args.no_vllm:
        import check_speed

        vllm = check_speed.vllm_wheel()
        cases.append(measure_case("vllm", "vllm", [vllm], args.reps, torchwheel, jobs2=False))
    for case in cases:
        case["verdicts"] = verdicts(case)
    result = {
        "when": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)),
        "reps": args.reps,
        "cpus": os.cpu_count(),
        "rate_mb_s": args.rate,
        "git": harness.first_line(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]),
        "cases": cases,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result)
    print(text)
    if args.write_docs:
        harness.put_section(REPO / "docs" / "evidence" / "performance.md", text, _section(args.rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
