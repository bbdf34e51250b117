#!/usr/bin/env python3
"""Tables one minor behind: every verdict right or "unknown", and one step to catch up.

    .venv/bin/python benchmarks/stale_tables.py --download --write-docs     # everything
    .venv/bin/python benchmarks/stale_tables.py --no-loadtruth              # the corpus part only
    .venv/bin/python benchmarks/stale_tables.py --newest 2.13 --envs torch-2.13.0,torch-2.14.1

On the day a torch minor ships, torchwheel's shipped tables (the shim table, the export index
of each platform, the release list) are one minor behind for everyone who has not upgraded it.
This simulates that day for the newest minor the tables know (2.15 today): the tables "as they
were before it", built by the generators on the releases up to ``--newest`` (2.14)
(``scripts/gen_symtable.py --torch ...`` and ``scripts/gen_torch_exports.py --torch ...``
write into ``--generated``; without it, the shipped tables cut at ``--newest``, which for the
export index is the generator's own output bit for bit: a name's mask is the OR of its
releases' bits), are written to a tables file and chosen with ``TORCHWHEEL_SYMBOLS``, as a
user would. Then:

* the corpus (``benchmarks/corpus.py``): ``matrix --format json`` over every minor from 2.4 to
  the one after the newest, and ``check``, with the full (shipped) tables, the stale ones and
  the stale ones after ``torchwheel symbols update`` with the new minor's wheels (Linux, macOS,
  Windows). A stale cell must equal the full one or be "unknown"; a stale ``check`` error must
  be one the full tables give too; after the update every cell must equal the full one.
* the load-truth harness (``benchmarks/loadtruth.py``): its wheels, and wheels built here
  against the new minor only (gcc: a stable library importing a shim new in it, the same with
  the marker, an unstable one importing a C++ name new in it), in real torch environments of
  the old and the new minor: ``select --python ENV`` and the ``matrix`` cell with each table
  set, against the dynamic loader. Zero false "loads" and zero false refusals with the stale
  tables; after the update, the verdicts of the full tables.

Results: ``.cache/stale-tables/results.json``; ``--write-docs`` writes its section of
``docs/evidence/loadtruth.md`` (between the ``stale-tables`` markers, which ``loadtruth.py`` keeps).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from packaging.version import Version

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = REPO / ".cache" / "stale-tables"
DOCS = REPO / "docs" / "evidence" / "loadtruth.md"
PLATFORMS = {
    "linux-x86_64": ("manylinux_2_28_x86_64",),
    "macos-arm64": ("macosx_14_0_arm64", "macosx_11_0_arm64"),
    "windows-x86_64": ("win_amd64",),
}
Minor = tuple[int, int]

sys.path.insert(0, str(HERE))  # benchmarks/ is not a package; the tests load this file by path
from harness import file_sha256, markers, md_cell, put_section  # noqa: E402

BEGIN, END = markers("stale-tables")


# -- the tables -----------------------------------------------------------------------------------


def restrict_symbols(table: Any, newest: Minor) -> Any:
    """The shim table as the generator run over the releases up to ``newest`` writes it: a
    symbol dated later was exported and declared by none of them (the generator dates a shim
    by its first export, else by its first declaration), so it is absent; the platforms and
    wheels past ``newest`` are dropped with it. ``--generated`` checks this against the
    generator itself (``compare``)."""
    from torchwheel.tables.symtable import Origin, SymbolTable
    from torchwheel.version import FeatureVersion

    def keep(release: str) -> bool:
        v = FeatureVersion.parse(release)
        return (v.major, v.minor) <= newest

    symbols = {n: v for n, v in table.symbols.items() if v is None or (v.major, v.minor) <= newest}
    origins = {}
    for name in symbols:
        origin = table.origin(name)
        origins[name] = Origin(origin.source, tuple((p, r) for p, r in origin.platforms if keep(r)))
    sources = tuple(s for s in table.sources if keep(s))
    wheels = tuple(w for w in table.wheels if keep(w.release))
    return SymbolTable(symbols, sources, origins, wheels)


def stale_tables(
    newest: Minor,
    generated: Path | None,
    compression: str | None = None,
    platforms: Iterable[str] = PLATFORMS,
) -> Any:
    """Every table as it was before the minor after ``newest``: from the generators' output in
    ``generated``, else cut from the shipped tables (``compression``: the cut indexes', zlib
    for a fast test; default the shipped ones'; ``platforms``: the indexes cut, the others
    stay the shipped ones)."""
    from torchwheel.tables.exports import shipped_index
    from torchwheel.tables.exports_update import restrict
    from torchwheel.tables.symtable import SymbolTable, load_shipped
    from torchwheel.tables.tableupdate import TablesFile
    from torchwheel.torchabi import torch_releases

    releases = tuple(v for v in torch_releases.shipped_releases().versions if (v.major, v.minor) <= newest)
    if generated is not None:
        table = SymbolTable.from_json((generated / "shim_versions.json").read_bytes(), "generated table")
        indexes = {p: (generated / f"torch_exports_{p}.bin").read_bytes() for p in PLATFORMS}
        return TablesFile(table, releases, indexes)
    indexes = {}
    for platform in platforms:
        index = shipped_index(platform)
        assert index is not None, platform
        generated_on = str(index.header["generated"])
        indexes[platform] = restrict(index, newest, generated_on, "benchmarks/stale_tables.py", compression)
    return TablesFile(restrict_symbols(load_shipped(), newest), releases, indexes)


def compare(a: Any, b: Any) -> list[str]:
    """Where two table sets would judge differently: a shim's version, an index's releases or
    any name's mask (the generated and the cut tables must agree)."""
    from torchwheel.tables.exports import ExportIndex

    out = []
    for name in sorted(a.table.symbols.keys() | b.table.symbols.keys()):
        va, vb = a.table.symbols.get(name, "absent"), b.table.symbols.get(name, "absent")
        if va != vb:
            out.append(f"shim {name}: {va} vs {vb}")
    for platform in sorted(a.indexes.keys() | b.indexes.keys()):
        ia = ExportIndex.from_bytes(a.indexes[platform], f"{platform} a")
        ib = ExportIndex.from_bytes(b.indexes[platform], f"{platform} b")
        if ia.releases != ib.releases or dict(ia.entries()) != dict(ib.entries()):
            out.append(f"exports {platform}: {list(map(str, ia.releases))} vs {list(map(str, ib.releases))}")
    if a.releases != b.releases:
        out.append("release lists differ")
    return out


def update_wheels(release: str, download: bool) -> list[Path]:
    """PyPI's torch ``release`` wheel for each platform (Python 3.11), in ``.cache/stale-tables``."""
    folder = CACHE / "torch"
    folder.mkdir(parents=True, exist_ok=True)
    found = []
    for platform, tags in PLATFORMS.items():
        have = [p for p in folder.glob(f"torch-{release}-*.whl") if any(t in p.name for t in tags)]
        if not have and download:
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
            cmd += [a for t in tags for a in ("--platform", t)]
            cmd += ["--python-version", "3.11", "-d", str(folder), f"torch=={release}"]
            subprocess.run(cmd, check=True, env=dict(os.environ, PIP_FIND_LINKS=""))
            have = [p for p in folder.glob(f"torch-{release}-*.whl") if any(t in p.name for t in tags)]
        if not have:
            raise SystemExit(f"no torch {release} wheel for {platform} in {folder} (run with --download)")
        found.append(sorted(have)[-1])
    return found


def torchwheel(*args: str, tables: Path | None) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, with ``tables`` chosen by ``TORCHWHEEL_SYMBOLS`` (None: shipped)."""
    env = {k: v for k, v in os.environ.items() if k != "TORCHWHEEL_SYMBOLS"}
    env["XDG_DATA_HOME"] = str(CACHE / "no-user-data")  # no user tables file: only what is chosen
    if tables is not None:
        env["TORCHWHEEL_SYMBOLS"] = str(tables)
    exe = REPO / ".venv" / "bin" / "torchwheel"
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=env, check=False, timeout=3600
    )


def make_tables(args: argparse.Namespace) -> dict[str, Path]:
    """The three table sets as files: ``full`` (None: shipped), ``stale``, ``updated``."""
    from torchwheel.tables.tableupdate import write_tables

    newest = tuple(int(x) for x in args.newest.split("."))
    CACHE.mkdir(parents=True, exist_ok=True)
    stale = stale_tables(newest, args.generated)  # type: ignore[arg-type]
    if args.generated is not None:
        cut = stale_tables(newest, None)  # type: ignore[arg-type]
        differences = compare(stale, cut)
        print(f"generated vs cut tables: {len(differences)} differences", *differences[:20], sep="\n  ")
        args.cut_differences = len(differences)
    stale_file = CACHE / f"tables-{args.newest}.json"
    write_tables(stale_file, stale)
    release = f"{newest[0]}.{newest[1] + 1}.0"
    updated_file = CACHE / f"tables-{args.newest}+{release}.json"
    wheels = update_wheels(release, args.download)
    done = torchwheel("symbols", "update", "-o", str(updated_file), *map(str, wheels), tables=stale_file)
    if done.returncode != 0:
        raise SystemExit(f"symbols update failed: {done.stderr.strip()}")
    print(done.stderr.strip())
    return {"stale": stale_file, "updated": updated_file}


# -- verdicts compared ----------------------------------------------------------------------------


def cells(grid: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``matrix --format json``'s one row as ``backend:minor`` -> cell."""
    (row,) = grid["wheels"]
    by_backend = row.get("by_backend") or {"any": row["cells"]}
    return {f"{b}:{m}": c for b, per in by_backend.items() for m, c in per.items()}


def loads(cell: dict[str, Any]) -> bool:
    return cell["fit"] in ("loads", "only", "some")


def classify(stale: dict[str, Any], full: dict[str, Any]) -> str:
    """One stale cell against the full tables' cell."""
    if stale["fit"] == full["fit"] and stale["releases"] == full["releases"]:
        return "same"
    if stale["fit"] == "unknown":
        return "unknown"
    if loads(stale) and not loads(full):
        return "false-loads"
    if not loads(stale) and loads(full):
        return "false-refusal"
    return "differs"  # both load or both do not, in other words (only/some/releases)


def errors(check: dict[str, Any]) -> set[str]:
    return {f"{f['code']} {f['member']}" for f in check.get("findings", []) if f["severity"] == "error"}


# -- the corpus ----------------------------------------------------------------------------------


def corpus_run(files: dict[str, Path | None], minors: list[str], download: bool) -> dict[str, Any]:
    """Per corpus wheel and table set: the matrix cells over ``minors`` and check's errors."""
    import corpus

    asked = [a for m in minors for a in ("--torch", m)]
    out: dict[str, Any] = {}
    for entry in corpus.load_corpus():
        try:
            path = corpus.ensure(entry, download=download)
        except corpus.CorpusError as exc:
            out[entry.filename] = {"error": str(exc)}
            continue
        if path is None:
            out[entry.filename] = {"error": "not in the cache (run with --download)"}
            continue
        per: dict[str, Any] = {}
        for name, tables in files.items():
            grid = torchwheel("matrix", "--format", "json", *asked, str(path), tables=tables)
            check = torchwheel("check", "--no-config", "--format", "json", str(path), tables=tables)
            doc = json.loads(grid.stdout) if grid.stdout.strip() else {}
            found = json.loads(check.stdout) if check.stdout.strip() else {}
            per[name] = {
                "cells": cells(doc) if doc.get("wheels") else {},
                "errors": sorted(errors(found)),
                "codes": sorted({f["code"] for f in found.get("findings", [])}),
            }
        out[entry.filename] = per
        print(f"  corpus {entry.filename}", flush=True)
    return out


def corpus_tally(results: dict[str, Any]) -> dict[str, Any]:
    """Stale against full, updated against full: cell classes, false errors, where they are."""
    stale: dict[str, int] = {}
    updated: dict[str, int] = {}
    where: list[str] = []
    false_errors: list[str] = []
    resolved = 0
    for wheel, per in sorted(results.items()):
        if "error" in per:
            continue
        full = per["full"]["cells"]
        for key, cell in full.items():
            s = per["stale"]["cells"].get(key)
            u = per["updated"]["cells"].get(key)
            ks = classify(s, cell) if s is not None else "absent"
            ku = classify(u, cell) if u is not None else "absent"
            stale[ks] = stale.get(ks, 0) + 1
            updated[ku] = updated.get(ku, 0) + 1
            resolved += ks == "unknown" and ku == "same"
            if ks not in ("same", "unknown") or ku != "same":
                where.append(
                    f"{wheel} {key}: full {cell['fit']}, stale {s and s['fit']}, updated {u and u['fit']}"
                )
        extra = set(per["stale"]["errors"]) - set(per["full"]["errors"])
        false_errors += [f"{wheel}: {e}" for e in sorted(extra)]
    return {
        "stale": stale,
        "updated": updated,
        "resolved": resolved,
        "where": where,
        "false_errors": false_errors,
    }


# -- the load-truth harness ----------------------------------------------------------------------


def new_minor_env(release: str, cuda: str) -> Any:
    import loadtruth as lt

    return lt.Env(
        f"torch-{release}",
        release,
        cuda,
        "PyPI's default build of the minor the stale tables do not know (the new minor of the simulation)",
    )


_STABLE_C = r"""
#include <stdint.h>
%(marker)s
typedef int32_t AOTITorchError;
extern AOTITorchError torch_library_impl(void*, const char*, void*, uint64_t);   /* 2.10 */
extern AOTITorchError %(shim)s(void*, void*);                                    /* new */
void* PyInit__C(void) { return (void*)0; }
int tw_new_minor(void* a, void* b) { return torch_library_impl(a, "op", b, 0) + %(shim)s(a, b); }
"""
_UNSTABLE_C = r"""
extern char tw_new[] __asm__("%(new)s");
extern char tw_old[] __asm__("%(old)s");
void* tw_refs[] = {tw_new, tw_old};  /* data relocations: resolved at load, RTLD_NOW or not */
void* PyInit__C(void) { return tw_refs; }
"""


def _wheel(name: str, tag: str, library: Path, member: str, requires: str) -> Path:
    """A minimal wheel (METADATA, WHEEL, RECORD) holding ``library`` as ``member``."""
    import base64
    import hashlib
    import zipfile

    out = CACHE / "built" / f"{name}-1.0.0-{tag}.whl"
    info = f"{name}-1.0.0.dist-info"
    files = {
        member: library.read_bytes(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.0\n{requires}".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: stale_tables\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    rows = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(data)}")
    files[f"{info}/RECORD"] = ("\n".join([*rows, f"{info}/RECORD,,"]) + "\n").encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
    return out


def _unstable_names(lib: Path) -> set[str]:
    from torchwheel.torchabi.cxxnames import is_unstable
    from torchwheel.torchabi.torchlibs import read_torch

    found = read_torch(str(lib))
    return {n for n in found.exports.get("libtorch_cpu.so", frozenset()) if is_unstable(n)}


def synthetic_wheels(old: Any, new: Any) -> list[tuple[str, Path, str]]:
    """Wheels built for the new minor only (``new``, an env), by gcc against its libraries:
    (project, wheel, why). A stable library importing a shim the new minor added, bare and with
    the marker and ``torch>=X.Y``; an unstable one importing a C++ name only the new minor
    exports (and one every minor does), pinned ``torch==X.Y.0`` as torchvision pins."""
    import loadtruth as lt

    from torchwheel.tables.symtable import load_shipped

    v = Version(new.torch)
    new_minor = (v.major, v.minor)
    shims = sorted(
        n for n, r in load_shipped().symbols.items()
        if r is not None and (r.major, r.minor) == new_minor and load_shipped().origin(n).platforms
        and any(p == "linux-x86_64" for p, _ in load_shipped().origin(n).platforms)
    )  # fmt: skip
    lib_new, lib_old = lt._site(new) / "torch" / "lib", lt._site(old) / "torch" / "lib"
    fresh = sorted(_unstable_names(lib_new) - _unstable_names(lib_old))
    shared = sorted(_unstable_names(lib_new) & _unstable_names(lib_old))
    work = CACHE / "built"
    work.mkdir(parents=True, exist_ok=True)
    include = torchwheel("include", tables=None).stdout.strip()
    target = f"0x{v.major:02X}{v.minor:02X}000000000000ULL"
    marker = f"#define TORCH_FEATURE_VERSION {target}\n#include <torchwheel/stable_abi_marker.h>"
    sources = {
        "stable_new_minor": (_STABLE_C % {"marker": "", "shim": shims[0]}, "Requires-Dist: torch\n"),
        "stable_new_minor_marked": (
            _STABLE_C % {"marker": marker, "shim": shims[0]},
            f"Requires-Dist: torch>={v.major}.{v.minor}\n",
        ),
        "unstable_new_minor": (
            _UNSTABLE_C % {"new": fresh[0], "old": shared[0]},
            f"Requires-Dist: torch=={v}\n",
        ),
    }
    out = []
    for name, (text, requires) in sources.items():
        src, lib = work / f"{name}.c", work / f"{name}.so"
        src.write_text(text)
        cmd = ["gcc", "-shared", "-fPIC", "-O1", include, str(src), "-o", str(lib), f"-L{lib_new}"]
        subprocess.run([*cmd, "-Wl,--no-as-needed", "-ltorch_cpu", "-lc10"], check=True)
        wheel = _wheel(name, "cp39-abi3-manylinux_2_28_x86_64", lib, f"{name}/_C.abi3.so", requires)
        what = shims[0] if name.startswith("stable") else f"{fresh[0]} (and {shared[0]})"
        out.append((name, wheel, f"built by gcc for torch {v.major}.{v.minor} only: imports {what}"))
    return out


def loadtruth_run(files: dict[str, Path | None], envs: list[Any], download: bool) -> dict[str, Any]:
    """The harness's wheels and the synthetic ones in ``envs``, judged with each table set."""
    import loadtruth as lt

    tw = str(REPO / ".venv" / "bin" / "torchwheel")
    facts = {e.name: {**lt.ensure_env(e), "why": e.why} for e in envs}
    wheels = lt.load_wheels()
    old, new = envs[-2], envs[-1]
    for project, built, why in synthetic_wheels(old, new):
        dest = lt.WHEELS / built.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(built.read_bytes())
        wheels.append(lt.Wheel(project, "1.0.0", built.name, file_sha256(dest), why, "stale_tables"))
    out: dict[str, Any] = {"envs": facts, "sets": {}, "errors": []}
    for name, tables in files.items():
        os.environ.pop("TORCHWHEEL_SYMBOLS", None)
        os.environ["XDG_DATA_HOME"] = str(CACHE / "no-user-data")
        if tables is not None:
            os.environ["TORCHWHEEL_SYMBOLS"] = str(tables)
        print(f"load truth with the {name} tables", flush=True)
        prepared = []
        for w in wheels:
            try:
                prepared.append(lt.prepare(w, envs, tw, download))
            except lt.HarnessError as exc:
                out["errors"].append(str(exc))
        for env in envs:
            todo = [(p.wheel, p.groups) for p in prepared if lt.cached_truth(env, p.wheel, p.groups) is None]
            lt.load_truths(env, todo)
        for p in prepared:
            for env in envs:
                lt.judge(p, env, tw)
        out["sets"][name] = {p.wheel.filename: p.record for p in prepared}
    os.environ.pop("TORCHWHEEL_SYMBOLS", None)
    return out


def loadtruth_tally(results: dict[str, Any]) -> dict[str, Any]:
    """Per table set the harness's classes; and how the stale unknowns fared after the update."""
    counts = {}
    for name, records in results["sets"].items():
        c: dict[str, int] = {}
        for rec in records.values():
            for pair in rec["envs"].values():
                c[pair["class"]] = c.get(pair["class"], 0) + 1
        counts[name] = c
    moved: dict[str, int] = {}
    rows = []
    sets = results["sets"]
    for wheel, rec in sorted(sets.get("stale", {}).items()):
        for env, pair in sorted(rec["envs"].items()):
            full = sets["full"][wheel]["envs"][env]
            updated = sets["updated"][wheel]["envs"][env]
            key = f"{pair['class']} -> {updated['class']}" + (
                "" if updated["class"] == full["class"] else " (not full's)"
            )
            moved[key] = moved.get(key, 0) + 1
            if pair["class"] != full["class"] or updated["class"] != full["class"]:
                rows.append((wheel, env, full, pair, updated))
    return {"counts": counts, "moved": moved, "rows": rows}


# -- docs/evidence/loadtruth.md ----------------------------------------------------------------------------


def section(results: dict[str, Any]) -> str:
    """The page's section (between the markers): how the tables were made, and the figures."""
    meta, lines = (
        results["meta"],
        [BEGIN, "", "## Tables one minor behind (`benchmarks/stale_tables.py`)", ""],
    )
    lines += [
        f"The day torch {meta['new']} ships, simulated: every table as it was before it (releases up to "
        f"{meta['newest']}; {meta['made']}), chosen with `TORCHWHEEL_SYMBOLS`, then `torchwheel symbols update` "
        f"with PyPI's torch {meta['new']} wheels for Linux, macOS and Windows ({meta['update_seconds']} s). "
        f"Command: `{meta['command']}`.",
        "",
    ]
    if "corpus" in results:
        t = results["corpus"]
        lines += [
            f"**Corpus** ({t['wheels']} wheels; `matrix` cells over torch {meta['minors'][0]}-{meta['minors'][-1]} "
            "per build column, and `check`), against the full tables:",
            "",
            "| cells | same | unknown | false loads | false refusal | other |",
            "|---|--:|--:|--:|--:|--:|",
        ]
        for name in ("stale", "updated"):
            c = t[name]
            other = sum(
                n for k, n in c.items() if k not in ("same", "unknown", "false-loads", "false-refusal")
            )
            lines.append(
                f"| {name} tables | {c.get('same', 0)} | {c.get('unknown', 0)} | {c.get('false-loads', 0)} | "
                f"{c.get('false-refusal', 0)} | {other} |"
            )
        lines += [
            "",
            f"`check` errors the stale tables give and the full ones do not: **{len(t['false_errors'])}**. "
            f"Unknown cells the update turned into the full tables' verdict: **{t['resolved']}**.",
            "",
        ]
        lines += [f"- {md_cell(w)}" for w in t["where"][:40]]
        lines += [""] if t["where"] else []
    if "loadtruth" in results:
        t, envs = results["loadtruth"], results["loadtruth_envs"]
        shown = ", ".join(f"{n} ({f['torch']}, {f['cuda'] or 'CPU'})" for n, f in envs.items())
        lines += [
            f"**Load truth** in {shown}: the harness's wheels and three built for torch {meta['new']} only; "
            "classes as in the confusion matrix above:",
            "",
            "| tables | true loads | false loads | false refusal | pin refusal | true refusal | unknown | loader cannot tell |",
            "|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for name, c in t["counts"].items():
            keys = (
                "true-loads",
                "false-loads",
                "false-refusal",
                "pin-refusal",
                "true-refusal",
                "unknown",
                "undetermined",
            )
            lines.append(f"| {name} | " + " | ".join(str(c.get(k, 0)) for k in keys) + " |")
        lines += [
            "",
            "Stale -> updated, per (wheel, env): "
            + "; ".join(f"{k}: {n}" for k, n in sorted(t["moved"].items())),
            "",
        ]
        lines += [
            "| wheel | env | loader | full tables | stale tables | after `symbols update` |",
            "|---|---|---|---|---|---|",
        ]
        for wheel, env, full, stale, updated in t["rows"]:
            said = [f"{p['class']}: {md_cell(p['select']['reason'])}" for p in (full, stale, updated)]
            lines.append(f"| `{wheel}` | {env} | {full['loader']} | " + " | ".join(said) + " |")
        lines.append("")
    return "\n".join([*lines, END]) + "\n"


def write_docs(text: str) -> None:
    put_section(DOCS, text.removesuffix("\n"), "stale-tables")


def main(argv: list[str] | None = None) -> int:
    import time

    import loadtruth as lt

    from torchwheel.torchabi import torch_releases

    last = torch_releases.shipped_releases().newest()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--newest", default=f"{last.major}.{last.minor - 1}", help="the stale tables' newest minor"
    )
    parser.add_argument("--generated", type=Path, help="the generators' output for those releases")
    parser.add_argument("--download", action="store_true", help="fetch missing corpus and torch wheels")
    parser.add_argument(
        "--envs", default="torch-2.13.0,torch-2.14.1", help="old-minor envs of loadtruth.toml"
    )
    parser.add_argument("--new-cuda", default="13.2", help="torch.version.cuda of the new minor's PyPI build")
    parser.add_argument("--no-corpus", action="store_true")
    parser.add_argument("--no-loadtruth", action="store_true")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--docs-only", action="store_true", help="write the section from the last results")
    args = parser.parse_args(argv)
    if args.docs_only:
        write_docs(section(json.loads((CACHE / "results.json").read_text())))
        return 0
    newest = tuple(int(x) for x in args.newest.split("."))
    new = f"{newest[0]}.{newest[1] + 1}.0"
    started = time.monotonic()
    made = make_tables(args)
    results: dict[str, Any] = {
        "meta": {
            "newest": args.newest,
            "new": new,
            "made": (
                f"by the generators; the shipped tables cut there differ from them in {args.cut_differences} places"
                if args.generated
                else "the shipped tables cut there"
            ),
            "update_seconds": f"{time.monotonic() - started:.0f}",
            "command": " ".join(["python benchmarks/stale_tables.py", *(argv or sys.argv[1:])]),
            "minors": [f"2.{m}" for m in range(4, newest[1] + 3)],
        }
    }
    files: dict[str, Path | None] = {"full": None, "stale": made["stale"], "updated": made["updated"]}
    if not args.no_corpus:
        raw = corpus_run(files, results["meta"]["minors"], args.download)
        results["corpus_raw"] = raw
        results["corpus"] = {**corpus_tally(raw), "wheels": sum("error" not in v for v in raw.values())}
        print(json.dumps({k: v for k, v in results["corpus"].items() if k != "where"}, indent=1))
    if not args.no_loadtruth:
        wanted = args.envs.split(",")
        envs = [e for e in lt.load_envs() if e.name in wanted] + [new_minor_env(new, args.new_cuda)]
        raw = loadtruth_run(files, envs, args.download)
        results["loadtruth_raw"], results["loadtruth_envs"] = raw, raw["envs"]
        results["loadtruth"] = loadtruth_tally(raw)
        print(json.dumps({k: v for k, v in results["loadtruth"].items() if k != "rows"}, indent=1))
    (CACHE / "results.json").write_text(json.dumps(results, indent=1, default=str))
    if args.write_docs:
        write_docs(section(results))
        print(f"wrote {DOCS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
