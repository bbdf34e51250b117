#!/usr/bin/env python3
"""Record what torchwheel prints and writes for a fixed set of wheels, and compare two records.

A refactoring that promises "no change in behaviour" is proven by comparison, not by
assertion: record before the change, record after, compare.

    .venv/bin/python scripts/compare_outputs.py record .cache/outputs/before
    ... change the code ...
    .venv/bin/python scripts/compare_outputs.py record .cache/outputs/after
    .venv/bin/python scripts/compare_outputs.py compare .cache/outputs/before .cache/outputs/after

The wheels: every fixture wheel of ``fixtures/wheels.py`` (the bad archives included), the
README's demo wheel, and the corpus' ``ci = true`` wheels that are in ``.cache/corpus``
(``benchmarks/corpus.py --ci --download`` fetches them). Each is copied to one fixed path
under the record directory first, so paths in the output are the same in both records.
Per wheel: ``show --format json``, ``check --format json``, ``check`` (text), ``tag -w``
(exit code, output and the sha256 of every byte written) and ``select --format json`` for a
fixed plan (torch 2.13, CPython 3.11, the wheel's own platforms). The shim table's
provenance line is the only text ignored (``--ignore-table``), as a table rebuild may change
it without changing a verdict.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
DEMO = FIXTURES / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
CORPUS = REPO / ".cache" / "corpus"


def _run(*args: str, cwd: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHWHEEL_")}
    env["SOURCE_DATE_EPOCH"] = "1700000000"
    proc = subprocess.run(
        [sys.executable, "-m", "torchwheel", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=900,
    )
    return {"args": list(args), "exit": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def _inputs(record: Path) -> list[Path]:
    """Every wheel, copied to ``record/inputs/<n>/<file name>``."""
    sys.path.insert(0, str(FIXTURES))
    import build  # fixtures/build.py
    import wheels  # fixtures/wheels.py

    built = build.build_all(REPO / ".cache" / "fixtures")
    found: list[tuple[str, Path]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for key, path in sorted(wheels.build_wheels(built, Path(tmp)).items()):
            found.append((f"fixture-{key}", _copy(path, record / "inputs" / f"fixture-{key}")))
    found.append(("demo", _copy(DEMO, record / "inputs" / "demo")))
    corpus = tomllib.loads((REPO / "benchmarks" / "corpus.toml").read_text())
    for entry in corpus["wheel"]:
        cached = CORPUS / entry["filename"]
        if entry.get("ci") and cached.is_file():
            found.append(
                (
                    f"corpus-{entry['filename']}",
                    _copy(cached, record / "inputs" / "corpus" / entry["filename"]),
                )
            )
    return [p for _, p in found]


def _copy(src: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / src.name
    shutil.copyfile(src, dst)
    return dst


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _platforms(wheel: Path) -> list[str]:
    stem = wheel.name.removesuffix(".whl").split("-")
    return [a for p in (stem[-1].split(".") if len(stem) >= 5 else []) for a in ("--platform", p)]


def _one(record: Path, wheel: Path) -> tuple[str, dict[str, object]]:
    rel = str(wheel.relative_to(record))
    out: dict[str, object] = {}
    out["show"] = _run("show", "--format", "json", rel, cwd=record)
    out["check-json"] = _run("check", "--format", "json", rel, cwd=record)
    out["check-text"] = _run("check", rel, cwd=record)
    tagged = record / "tagged" / wheel.parent.name
    tagged.mkdir(parents=True, exist_ok=True)
    tag = _run("tag", "-w", str(tagged.relative_to(record)), rel, cwd=record)
    tag["written"] = _digest(tagged)
    out["tag"] = tag
    plan = ["--torch", "2.13", "--python-version", "3.11", *_platforms(wheel)]
    out["select"] = _run("select", "--format", "json", *plan, rel, cwd=record)
    return rel, out


def record(folder: Path, jobs: int) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    inputs = _inputs(folder)
    # pyproject.toml of the checkout must not apply: the record runs in its own folder
    (folder / "pyproject.toml").write_text("[project]\nname = 'compare-outputs'\n")
    results: dict[str, object] = {}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for rel, out in pool.map(lambda w: _one(folder, w), inputs):
            results[rel] = out
    (folder / "outputs.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(inputs)} wheels into {folder / 'outputs.json'}")


def _normalise(value: object, ignore_table: bool) -> object:
    if not ignore_table:
        return value
    if isinstance(value, dict):
        return {k: _normalise(v, ignore_table) for k, v in value.items() if k != "symbol_table"}
    if isinstance(value, list):
        return [_normalise(v, ignore_table) for v in value]
    if isinstance(value, str) and "symbol table:" in value:
        return "\n".join(line for line in value.split("\n") if not line.startswith("symbol table:"))
    return value


def _field(run: dict[str, object], ignore_table: bool) -> dict[str, object]:
    out = dict(run)
    for stream in ("stdout", "stderr"):
        text = str(out[stream])
        if text.lstrip().startswith("{"):
            try:
                out[stream] = _normalise(json.loads(text), ignore_table)
                continue
            except ValueError:
                pass
        out[stream] = _normalise(text, ignore_table)
    return out


def compare(a: Path, b: Path, ignore_table: bool) -> int:
    before = json.loads((a / "outputs.json").read_text())
    after = json.loads((b / "outputs.json").read_text())
    differ = 0
    for wheel in sorted(set(before) | set(after)):
        if wheel not in before or wheel not in after:
            print(f"{wheel}: only in {'before' if wheel in before else 'after'}")
            differ += 1
            continue
        for command in sorted(set(before[wheel]) | set(after[wheel])):
            x = _field(before[wheel].get(command, {}), ignore_table)
            y = _field(after[wheel].get(command, {}), ignore_table)
            if x != y:
                differ += 1
                print(f"{wheel}: {command} differs")
                for key in sorted(set(x) | set(y)):
                    if x.get(key) != y.get(key):
                        print(
                            f"  {key}:\n    before {str(x.get(key))[:600]!r}\n    after  {str(y.get(key))[:600]!r}"
                        )
    total = sum(len(v) for v in before.values())
    print(f"{len(before)} wheels, {total} command runs compared: {differ} differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    rec = sub.add_parser("record", help="run the commands and write DIR/outputs.json")
    rec.add_argument("dir", type=Path)
    rec.add_argument("-j", "--jobs", type=int, default=2)
    cmp_ = sub.add_parser("compare", help="compare two records; exit 1 when they differ")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    cmp_.add_argument("--ignore-table", action="store_true", help="ignore the symbol table's provenance")
    args = parser.parse_args()
    if args.what == "record":
        record(args.dir.resolve(), args.jobs)
        return 0
    return compare(args.before, args.after, args.ignore_table)


if __name__ == "__main__":
    sys.exit(main())
