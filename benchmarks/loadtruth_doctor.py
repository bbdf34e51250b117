#!/usr/bin/env python3
"""Load truth for ``torchwheel doctor``: real environments, real upgrades, the loader as referee.

    .venv/bin/python benchmarks/loadtruth_doctor.py --write-docs     # every set of loadtruth.toml
    .venv/bin/python benchmarks/loadtruth_doctor.py --sets a --no-download

Each ``[[doctor]]`` set of ``benchmarks/loadtruth.toml`` is a venv (``.cache/loadtruth/envs/
doctor-NAME``) with a real torch (``pip install torch==X``) and published extension wheels
installed into it with ``pip install --no-deps`` (a dist-info and a RECORD, as users have
them). The set then walks its ``path`` of torches: in each, ``doctor --python`` judges the
environment; the truth is ``benchmarks/loadtruth.py``'s loader probe (``import torch``, then
``ctypes.CDLL(RTLD_NOW)`` on every library the distribution's RECORD lists, units and
alternatives as that harness forms them) and, beside it, a real ``import`` of the
distribution's top-level modules. Before moving on, ``doctor --torch NEXT --torch-backend B``
and ``doctor --against NEXT_WHEEL`` predict the next torch; then ``pip install torch==NEXT``
really upgrades (or downgrades) the environment, and the next state's truth judges the
predictions. The confusion matrices (installed, ``--torch``, ``--against``) go into
``docs/evidence/loadtruth.md`` between the ``doctor`` markers (``loadtruth_doctor_docs.py``), which
``loadtruth.py --write-docs`` keeps.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loadtruth as lt  # benchmarks/ is not a package
import loadtruth_doctor_docs

RESULTS = lt.CACHE / "doctor-results.json"
TORCH_WHEELS = lt.CACHE / "torch-wheels"
WORDS = {"loads": "loads", "no": "refuses", "unknown": "unknown", "not read": "unknown"}

_IMPORT = r"""
import importlib, json, logging, os, sys, warnings
import torch  # noqa: F401
logged = []
class Keep(logging.Handler):
    def emit(self, record):
        logged.append(record.getMessage())
logging.getLogger().addHandler(Keep(logging.WARNING))
out = {}
for name, modules in json.loads(sys.argv[1]).items():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        said = "imports"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                for m in modules:
                    importlib.import_module(m)
            except BaseException as exc:
                said = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        said_by = [str(c.message) for c in caught] + logged
        loud = [m.splitlines()[0][:200] for m in said_by if m and ("load" in m.lower() or "extension" in m.lower())]
        if said == "imports" and loud:
            said = "imports, warning: " + loud[0]
        os.write(w, said.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    out[name] = data.decode() or "the process died"
print(json.dumps(out))
"""


def load_sets(path: Path = lt.TOML) -> list[dict[str, Any]]:
    return list(tomllib.loads(path.read_text(encoding="utf-8")).get("doctor", []))


def torch_wheel(env: lt.Env) -> Path:
    """The torch wheel ``pip install torch==X`` installs here, for ``--against``."""
    found = sorted(TORCH_WHEELS.glob(f"torch-{env.torch}*.whl"))
    if not found:
        proc = lt.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"torch=={env.torch}",
                       "-d", str(TORCH_WHEELS)])  # fmt: skip
        found = sorted(TORCH_WHEELS.glob(f"torch-{env.torch}*.whl"))
        if not found:
            raise lt.HarnessError(f"pip download torch=={env.torch}: {lt._tail(proc)}")
    return found[0]


def pip(python: Path, *args: str) -> None:
    proc = lt.run([str(python), "-m", "pip", *args], timeout=3600)
    if proc.returncode != 0:
        raise lt.HarnessError(f"pip {' '.join(args[:4])}: {lt._tail(proc)}")


def doctor(tw: str, python: Path, *args: str) -> dict[str, Any]:
    proc = lt.run([tw, "doctor", "--python", str(python), "--format", "json", *args], timeout=3600)
    if proc.returncode not in (0, 1):
        raise lt.HarnessError(f"doctor {' '.join(args)}: exit {proc.returncode}: {lt._tail(proc)}")
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {canonicalize_name(d["name"]): d for d in doc["distributions"]}


class Installed:
    """One published wheel as installed in the set's venv: its files by its RECORD."""

    def __init__(self, wheel: lt.Wheel, site: Path, tw: str, imports: list[str] | None = None) -> None:
        self.wheel, self.key = wheel, canonicalize_name(wheel.project)
        info = next(site.glob(f"{wheel.project.replace('-', '_')}-{wheel.version}.dist-info"), None)
        info = info or next(
            p for p in site.glob("*.dist-info") if canonicalize_name(p.name.split("-")[0]) == self.key
        )
        members = [line.split(",")[0] for line in (info / "RECORD").read_text().splitlines() if line]
        self.files = [
            m for m in members
            if not lt.GRAFTED.match(m) and (site / m).is_file() and lt._is_loadable_elf(site / m)
        ]  # fmt: skip
        top = info / "top_level.txt"
        names = top.read_text().split() if top.is_file() else []
        self.modules = (
            imports
            or names
            or sorted({m.split("/")[0] for m in members if m.endswith("/__init__.py") and m.count("/") == 1})
        )
        show = lt.tw_show(tw, wheel.path)
        alternatives = show["torch_abi"].get("alternatives") or []
        self.groups = lt.units(self.files, alternatives)
        self.release_of = {m: r for a in alternatives for r, m in a["builds"].items()}
        self.requirements = lt.torch_requirements(wheel.path)


def truths(env: lt.Env, site: Path, dists: list[Installed]) -> dict[str, dict[str, Any]]:
    """Per distribution: the loader's status and words (``loadtruth``'s probe and rules) and
    what a real import says."""
    jobs = {d.key: (site, lt.rounds(d.groups)) for d in dists}
    found = lt.probe_env(env, jobs)
    have = lt.provided_sonames(env)
    out: dict[str, dict[str, Any]] = {}
    for d in dists:
        own = {Path(m).name for members in d.groups.values() for m in members}
        files = {rel: lt.judge_external(res, site / rel, have, own) for rel, res in found[d.key].items()}
        lt.follow_siblings(files)
        unit_status = {}
        for name, members in d.groups.items():
            states = {files[m]["status"] for m in members}
            unit_status[name] = (
                "loads" if "loads" in states else "fails" if states == {"fails"} else "external"
            )
        loaded_by = {n: [m for m in ms if files[m]["status"] == "loads"] for n, ms in d.groups.items()}
        truth = {"groups": d.groups, "files": files, "units": unit_status, "loaded_by": loaded_by}
        states = set(unit_status.values())
        truth["status"] = (
            "fails" if "fails" in states else "undetermined" if "external" in states else "loads"
        )
        truth = lt.as_the_package_picks(truth, d.release_of, env)
        out[d.key] = {"loader": truth["status"], "words": lt.loader_words(truth)}
    modules = json.dumps({d.key: d.modules for d in dists})
    proc = lt.run(
        [str(env.python), "-W", "ignore", "-c", _IMPORT, modules], timeout=3600, env=lt.probe_environ(env)
    )
    said = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    for d in dists:
        out[d.key]["import"] = said.get(d.key, f"the import probe failed: {lt._tail(proc)}")
    return out


def judged(
    doc: dict[str, Any], truth: dict[str, dict[str, Any]], dists: list[Installed], env: lt.Env
) -> list[dict[str, Any]]:
    """Each distribution's cell (``loadtruth.classify``) for one doctor document against one truth."""
    said = rows(doc)
    out = []
    for d in dists:
        row = said.get(d.key)
        verdict = WORDS[row["state"]] if row else "unknown"
        admits = lt.pin_admits(d.requirements, env.torch)
        answer = {"verdict": verdict}
        klass = lt.classify(truth[d.key]["loader"], admits, answer, answer)
        out.append({
            "dist": d.key, "wheel": d.wheel.filename, "torch": env.torch, "env": env.name,
            "doctor": row["state"] if row else "absent", "reason": row["reason"] if row else "",
            "fix": (row or {}).get("fix") or "", "loader": truth[d.key]["loader"], "loader_words": truth[d.key]["words"],
            "import": truth[d.key]["import"], "pin_admits": admits, "class": klass,
        })  # fmt: skip
    return out


def run_set(spec: dict[str, Any], envs: dict[str, lt.Env], tw: str, download: bool) -> dict[str, Any]:
    path = [envs[name] for name in spec["path"]]
    wheels = {w.filename: w for w in lt.load_wheels()}
    chosen = [wheels[f] for f in spec["wheels"]]
    for w in chosen:
        lt.ensure_wheel(w, download)
    root = lt.ENVS / f"doctor-{spec['name']}"
    shutil.rmtree(root, ignore_errors=True)
    proc = lt.run([sys.executable, "-m", "venv", str(root)])
    if proc.returncode != 0:
        raise lt.HarnessError(f"venv: {lt._tail(proc)}")
    python = root / "bin" / "python"
    pip(python, "install", "-q", f"torch=={path[0].torch}")
    pip(python, "install", "-q", "--no-deps", *(str(w.path) for w in chosen), *spec.get("support", []))
    site = next(root.glob("lib/python3*/site-packages"))
    imports = spec.get("imports", {})
    dists = [Installed(w, site, tw, imports.get(w.project)) for w in chosen]
    record: dict[str, Any] = {
        "why": spec.get("why", ""),
        "path": spec["path"],
        "installed": [],
        "torch": [],
        "against": [],
    }
    predictions: dict[str, dict[str, Any]] = {}
    for i, state in enumerate(path):
        env = lt.Env(root.name, state.torch, state.cuda, state.why)
        lt.verify_env(env)
        print(f"{spec['name']}: torch {state.torch} ({state.backend})", flush=True)
        truth = truths(env, site, dists)
        record["installed"] += judged(doctor(tw, python), truth, dists, env)
        for how, doc in predictions.items():
            record[how] += judged(doc, truth, dists, env)
        if i + 1 < len(path):
            nxt = path[i + 1]
            predictions = {
                "torch": doctor(tw, python, "--torch", nxt.torch, "--torch-backend", nxt.backend),
                "against": doctor(tw, python, "--against", str(torch_wheel(nxt))),
            }
            pip(python, "install", "-q", f"torch=={nxt.torch}")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--torchwheel", default=str(lt.REPO / ".venv" / "bin" / "torchwheel"))
    parser.add_argument("--sets", default="", help="only these sets (comma-separated names)")
    parser.add_argument("--no-download", action="store_true", help="use only the wheels in the cache")
    parser.add_argument(
        "--write-docs", action="store_true", help="write the doctor section of docs/evidence/loadtruth.md"
    )
    args = parser.parse_args(argv)
    tw = str(Path(args.torchwheel).resolve())
    envs = {e.name: e for e in lt.load_envs()}
    sets = [s for s in load_sets() if not args.sets or s["name"] in args.sets.split(",")]
    results: dict[str, Any] = {
        "torchwheel": lt.run([tw, "--version"]).stdout.strip(),
        "sets": {},
        "errors": [],
    }
    for spec in sets:
        try:
            results["sets"][spec["name"]] = run_set(spec, envs, tw, not args.no_download)
        except lt.HarnessError as exc:
            print(f"ERROR {spec['name']}: {exc}", file=sys.stderr, flush=True)
            results["errors"].append(f"{spec['name']}: {exc}")
    lt.CACHE.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))
    for how in ("installed", "torch", "against"):
        pairs = [p for s in results["sets"].values() for p in s[how]]
        print(how, {k: v for k, v in loadtruth_doctor_docs.tally(pairs).items() if v})
    if args.write_docs:
        loadtruth_doctor_docs.write(results)
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
