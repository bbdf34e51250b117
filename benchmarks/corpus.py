#!/usr/bin/env python3
"""A corpus of published PyTorch-extension wheels, checked by torchwheel and its peers.

    .venv/bin/python benchmarks/corpus.py --download --peers --write-docs   # the full run
    .venv/bin/python benchmarks/corpus.py --ci --download                   # the CI subset only
    .venv/bin/python benchmarks/corpus.py --only torchao                    # what is cached

The list lives in ``benchmarks/corpus.toml``: each wheel pinned by file name and sha256,
with the verdict torchwheel *should* give (exit code, error and warning codes, torch ABI
label, per-library floor) and the reasons for every judgement. Wheels are fetched with
``pip download`` (the ordinary client, by name and exact version) into ``.cache/corpus/``
(gitignored) and verified by sha256; a wrong hash is an error, never a skip.

Why real wheels: the fixtures are compiled from sources we wrote, so they only contain the
layouts we thought of. Published wheels bring the others (op libraries loaded with
``torch.ops.load_library``, compound manylinux tags, renamed wheels, torch itself).

``tests/test_corpus.py`` compares torchwheel with the committed verdicts: the ``ci = true``
subset is downloaded on demand and must be checkable (a failed download fails the test);
the other wheels are compared when present in the cache. ``--peers`` also runs
torch-abi-audit, abi3audit and auditwheel (``bash benchmarks/setup_peers.sh``) and lists
where they disagree with torchwheel; ``--write-docs`` writes ``docs/evidence/corpus.md`` (its text:
``corpus_docs.py``), which the first command above reproduces.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # benchmarks/ is not a package; the tests load this file by path
from harness import file_sha256  # noqa: E402

REPO = HERE.parent
CORPUS_TOML = HERE / "corpus.toml"
CACHE = REPO / ".cache" / "corpus"
RESULTS = CACHE / "results.json"
DOCS = REPO / "docs" / "evidence" / "corpus.md"


class CorpusError(Exception):
    """A wheel could not be had or verified: reported in one line, never skipped."""


@dataclass(frozen=True)
class Expected:
    """What torchwheel should say about one wheel (our judgement, not its current output)."""

    exit: int
    errors: frozenset[str]
    warnings: frozenset[str]
    torch_abi: str
    floors: dict[str, str]
    loads_on: tuple[str, ...] | None = None  # minors ("2.4") or releases ("2.2.1") it loads on


@dataclass(frozen=True)
class Entry:
    project: str
    version: str
    filename: str
    sha256: str
    size: int
    ci: bool
    abi: str
    python: str
    expected: Expected
    notes: str
    findings: dict[str, str] = field(default_factory=dict)
    peers: list[dict[str, str]] = field(default_factory=list)

    @property
    def platforms(self) -> list[str]:
        """Every platform tag of the file name: pip must be offered all of a compound tag
        (a name that does not parse, k2's ``py3.9-none-any``: its last part as pip reads it)."""
        try:
            _, _, _, tags = parse_wheel_filename(self.filename)
        except InvalidWheelFilename:
            return sorted(set(self.filename.removesuffix(".whl").rsplit("-", 1)[1].split(".")))
        return sorted({t.platform for t in tags})

    @property
    def os(self) -> str:
        plat = self.platforms[0]
        return "linux" if "linux" in plat else "macos" if plat.startswith("macosx") else "windows"

    @property
    def path(self) -> Path:
        return CACHE / self.filename


def load_corpus(path: Path = CORPUS_TOML) -> list[Entry]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = []
    for w in data["wheel"]:
        e = w["expected"]
        expected = Expected(
            exit=e["exit"],
            errors=frozenset(e.get("errors", [])),
            warnings=frozenset(e.get("warnings", [])),
            torch_abi=e["torch_abi"],
            floors=dict(e.get("floors", {})),
            loads_on=tuple(e["loads_on"]) if "loads_on" in e else None,
        )
        entries.append(
            Entry(
                project=w["project"],
                version=w["version"],
                filename=w["filename"],
                sha256=w["sha256"],
                size=w["size"],
                ci=w.get("ci", False),
                abi=w["abi"],
                python=w.get("python", "3.11"),
                expected=expected,
                notes=w.get("notes", ""),
                findings=dict(w.get("findings", {})),
                peers=list(w.get("peer", [])),
            )
        )
    return entries


def ensure(entry: Entry, *, download: bool) -> Path | None:
    """The verified wheel in the cache; downloaded first when allowed. None: absent, not asked."""
    if entry.path.is_file() and file_sha256(entry.path) == entry.sha256:
        return entry.path
    if not download:
        return None
    return download_pinned(
        entry.project, entry.version, entry.filename, entry.sha256, entry.platforms, entry.python, entry.path
    )


def download_pinned(
    project: str, version: str, filename: str, sha256: str, platforms: list[str], python: str, dest: Path
) -> Path:
    """``pip download`` of one pinned wheel into ``dest``, verified by sha256 before it is
    moved there (``benchmarks/loadtruth.py`` fetches its own wheels through this too)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        for plat in platforms:
            cmd += ["--platform", plat]
        cmd += ["--python-version", python, "-d", tmp, f"{project}=={version}"]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
        got = Path(tmp) / filename
        if not got.is_file():
            tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
            raise CorpusError(f"{filename}: pip download did not produce it: {tail}")
        digest = file_sha256(got)
        if digest != sha256:
            raise CorpusError(f"{filename}: sha256 {digest} differs from the pinned {sha256}")
        shutil.move(str(got), dest)
    return dest


def torchwheel_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("torchwheel")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "torchwheel"]


def run_torchwheel(path: Path) -> dict[str, Any]:
    """``show --json`` and ``check --format json`` of one wheel, as a user runs them."""
    show = subprocess.run(
        [*torchwheel_cmd(), "show", "--json", str(path.resolve())],
        capture_output=True,
        text=True,
        check=False,
    )
    check = subprocess.run(
        [*torchwheel_cmd(), "check", "--no-config", "--format", "json", str(path.resolve())],
        capture_output=True,
        text=True,
        check=False,
    )
    grid = subprocess.run(
        [*torchwheel_cmd(), "matrix", "--format", "json", str(path.resolve())],
        capture_output=True,
        text=True,
        check=False,
    )
    # a wheel whose file name is no wheel name (TW414) is read by show and check, and no
    # installer-side command can choose it: matrix refuses it, and loads_on is not judged
    unnamed = '"TW414"' in check.stdout and grid.returncode == 2
    if show.returncode != 0 or not check.stdout.strip() or (grid.returncode != 0 and not unnamed):
        why = (show.stderr or check.stderr or grid.stderr).strip()[:300]
        raise CorpusError(f"{path.name}: torchwheel failed: {why}")
    return {
        "show": json.loads(show.stdout),
        "check": json.loads(check.stdout),
        "exit": check.returncode,
        "matrix": None if unnamed else json.loads(grid.stdout),
    }


def floor_of(file: dict[str, Any]) -> str:
    """One library's torch need: its symbol floor, 'unstable', or 'none' (worst slice wins)."""
    usages = [s["torch"]["usage"] for s in file["slices"]]
    if "unstable" in usages:
        return "unstable"
    mins = [s["torch"]["min_version"] for s in file["slices"] if s["torch"]["min_version"]]
    if mins:
        low = any(s["torch"]["min_is_lower_bound"] for s in file["slices"])
        best = max(mins, key=lambda v: tuple(int(p) for p in v.split(".")))
        return f">={best}" if low else best
    return "stable" if "stable" in usages else "none"


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """The comparable summary of torchwheel's output (the shape of ``[wheel.expected]``)."""
    wheel = result["show"]["wheels"][0]
    findings = result["check"]["findings"]
    floors = {f["member"]: floor_of(f) for f in wheel["files"]}
    return {
        "exit": result["exit"],
        "errors": sorted({f["code"] for f in findings if f["severity"] == "error"}),
        "warnings": sorted({f["code"] for f in findings if f["severity"] != "error"}),
        "torch_abi": wheel["torch_abi"]["label"],
        "floors": {m: v for m, v in sorted(floors.items()) if v != "none"},
        "loads_on": _loads_on(result["matrix"]) if result["matrix"] is not None else None,
        "columns": _columns(result["matrix"]) if result["matrix"] is not None else None,
    }


def _columns(grid: dict[str, Any]) -> list[str]:
    """The minors ``matrix`` has a column for: a release older than every table (torchtext
    0.18's 2.3, where the Windows export index starts at 2.4) has none, and cannot be said."""
    (row,) = grid["wheels"]
    return sorted(row["cells"])


def _loads_on(grid: dict[str, Any]) -> dict[str, list[str]] | None:
    """``matrix``'s verdict: minor -> the releases it loads on; None when every cell is '?'
    (an unstable build whose torch nothing names: no command chooses it)."""
    (row,) = grid["wheels"]
    cells = row["cells"]
    if cells and all(c["fit"] == "unknown" for c in cells.values()):
        return None
    return {m: c["releases"] for m, c in cells.items() if c["fit"] in ("loads", "only", "some")}


def differences(entry: Entry, actual: dict[str, Any]) -> list[str]:
    """Where torchwheel's verdict differs from the committed one, one line each."""
    exp = entry.expected
    out = []
    if actual["exit"] != exp.exit:
        out.append(f"exit {actual['exit']}, expected {exp.exit}")
    for key, want in (("errors", exp.errors), ("warnings", exp.warnings)):
        got = set(actual[key])
        if got != want:
            extra, missing = sorted(got - want), sorted(want - got)
            out.append(f"{key}: unexpected {extra or '-'}, missing {missing or '-'}")
    if actual["torch_abi"] != exp.torch_abi:
        out.append(f"torch ABI label {actual['torch_abi']!r}, expected {exp.torch_abi!r}")
    for member in sorted(set(exp.floors) | set(actual["floors"])):
        got_f, want_f = actual["floors"].get(member, "none"), exp.floors.get(member, "none")
        if got_f != want_f:
            out.append(f"floor of {member}: {got_f}, expected {want_f}")
    got_on = actual.get("loads_on")
    if exp.loads_on is not None and got_on is not None:
        want_minors = {".".join(x.split(".")[:2]) for x in exp.loads_on}
        columns = actual.get("columns")
        if columns is not None:  # a minor the matrix has no column for is not judged
            want_minors &= set(columns) | set(got_on)
        if set(got_on) != want_minors:
            out.append(f"loads on torch {sorted(got_on)}, expected {sorted(want_minors)}")
        for x in exp.loads_on:
            minor = ".".join(x.split(".")[:2])
            patches = [p for p in exp.loads_on if p.count(".") == 2 and p.startswith(minor + ".")]
            if patches and sorted(got_on.get(minor, [])) != sorted(patches):
                out.append(f"loads on torch {minor}: {got_on.get(minor)}, expected {patches}")
                break
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--download", action="store_true", help="fetch missing wheels with pip download")
    parser.add_argument("--ci", action="store_true", help="only the ci = true subset")
    parser.add_argument("--only", action="append", default=[], help="only these projects (repeatable)")
    parser.add_argument(
        "--peers", action="store_true", help="also run torch-abi-audit, abi3audit, auditwheel"
    )
    parser.add_argument("--write-docs", action="store_true", help=f"write {DOCS.relative_to(REPO)}")
    args = parser.parse_args(argv)

    entries = [
        e for e in load_corpus() if (not args.ci or e.ci) and (not args.only or e.project in args.only)
    ]
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    failed = 0
    for entry in entries:
        try:
            path = ensure(entry, download=args.download)
        except CorpusError as exc:
            print(f"ERROR {exc}", file=sys.stderr)
            failed += 1
            continue
        if path is None:
            print(f"--    {entry.filename}: not in the cache (use --download)")
            continue
        result = run_torchwheel(path)
        actual = verdict(result)
        record: dict[str, Any] = {"torchwheel": actual, "findings": result["check"]["findings"]}
        if args.peers:
            from corpus_peers import run_peers  # only this mode needs the peers

            record["peers"] = run_peers(path, actual, result["show"], result["check"])
        elif "peers" in results.get(entry.filename, {}):  # the peers do not change between runs
            record["peers"] = results[entry.filename]["peers"]
        results[entry.filename] = record
        diffs = differences(entry, actual)
        print(f"{'ok   ' if not diffs else 'DIFF '} {entry.filename}")
        for line in diffs:
            print(f"        {line}")
        failed += bool(diffs)
    CACHE.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True))
    if args.write_docs:
        from corpus_docs import write_docs

        everything = load_corpus()
        diffs = {
            e.filename: differences(e, results[e.filename]["torchwheel"])
            for e in everything
            if e.filename in results
        }
        DOCS.write_text(write_docs(everything, results, diffs), encoding="utf-8")
        print(f"wrote {DOCS.relative_to(REPO)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
