#!/usr/bin/env python3
"""Import truth: every ``doctor`` row against a real ``import`` of the package (issue 46).

    .venv/bin/python benchmarks/loadtruth_import.py --write-docs       # every env, current code
    .venv/bin/python benchmarks/loadtruth_import.py --envs cpu-a --no-download

"Loads" means ``import pkg`` works. ``loadtruth.py`` opens each library with ``ctypes``;
here the referee is the package's own import, in a fresh process, in an environment as users
have it: a venv whose torch is one of this machine's two real torches (``.venv``'s 2.13.0 CPU
build, ``.venv-cu130``'s 2.14.1 CUDA 13 build, by hard links: nothing copied, nothing of
theirs changed), the extensions installed by ``installer`` (a dist-info and a RECORD, as pip
writes them) and their pure-Python requirements by pip, torch held where it is (a constraint
on its exact version). Each ``[[import]]`` set of ``benchmarks/loadtruth.toml`` goes into each
torch.

The truth of one distribution, in a child forked from a process that imported torch (the
modules of its ``top_level.txt``, or its package directories):

- ``import fails``: the import raised (the first line of the error is kept);
- ``imports``: it imported, and every optional part ``doctor`` names loads where the package
  would load it (each file either already mapped by the import, read from ``/proc/self/maps``,
  or opened with ``ctypes.CDLL(RTLD_NOW | RTLD_GLOBAL)`` after it, each in a child of its own:
  two builds of one op library collide in the dispatcher);
- ``imports partly``: it imported, and an optional part does not load;
- ``cannot tell``: the import stopped at a pure-Python requirement that is not there, or a part
  stopped at a library of the machine (FFmpeg's, the NVIDIA driver's ``libcuda.so.1``), which
  is the machine axis (``doctor``'s system-library and driver reading), not torch's.

``doctor --python ENV --format json`` gives each row's state (``loads``, ``partly``, ``no``,
``excluded``, ``unknown``); ``classify`` puts each pair in the confusion matrix, and
``--write-docs`` writes it between the ``import-truth`` markers of ``docs/evidence/loadtruth.md``
(``loadtruth.py --write-docs`` keeps the section). Envs are built once into
``.cache/loadtruth/envs/import-NAME`` and reused while their inputs are unchanged
(``--rebuild`` redoes them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tomllib
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loadtruth as lt  # benchmarks/ is not a package
from harness import markers, md_cell, put_section

RESULTS = lt.CACHE / "import-results.json"
TORCHES = {
    "cpu": (lt.REPO / ".venv", "2.13.0+cpu", None),
    "cu130": (lt.REPO / ".venv-cu130", "2.14.1", "13.0"),
}
# what the torch envs bring beside torch that the extensions' envs need too (torch's own
# requirements, the CUDA wheels); pip and the build tools stay out
_SKIP = re.compile(r"^(pip|setuptools|wheel|_distutils_hack|distutils-precedence\.pth|__pycache__|torchwheel.*|"
                   r"_torchwheel.*|__editable__.*|pytest.*|_pytest|hypothesis.*|ruff.*|mypy.*|lief.*)$")  # fmt: skip
_NOT_PYTHON = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*|pytorch-triton.*)$")
BEGIN, END = markers("import-truth")
_MACHINE = re.compile(r"(libav\w+|libsw\w+|libcuda\.so\.1|libheif\w*)[^:]*: cannot open shared object file")

_PROBE = r"""
import ctypes, importlib, json, os, sys, warnings
import torch
jobs = json.loads(sys.argv[1])

def forked(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            said = fn()
        except BaseException as exc:
            said = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:400]}
        os.write(w, json.dumps(said).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"error": "the process died"}

def mapped():
    with open("/proc/self/maps") as fh:
        return {os.path.realpath(line.split(maxsplit=5)[5].strip()) for line in fh if "/" in line}

def opens(path):
    def go():
        try:
            ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
            return {"loads": True}
        except OSError as exc:
            return {"loads": False, "error": str(exc).splitlines()[0][:400]}
    return go

out = {}
for key, job in jobs.items():
    def one(job=job):
        tried = set()
        def hook(event, args):  # what the package's own code asks the loaders for
            if event == "ctypes.dlopen" and args and args[0]:
                tried.add(os.path.realpath(str(args[0])))
            elif event == "import" and args:
                tried.add("module:" + str(args[0]))
        sys.addaudithook(hook)  # a forked child's own: gone with it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                for m in job["modules"]:
                    importlib.import_module(m)
            except BaseException as exc:
                return {"imports": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:400]}
        after = mapped()
        parts = {}
        for f in job["parts"]:
            real = os.path.realpath(f["path"])
            if real in after:
                parts[f["path"]] = {"loads": True, "how": "the import loaded it"}
            elif real in tried or (f["module"] and "module:" + f["module"] in tried):
                said = forked(opens(f["path"]))
                said["how"] = "the import tried it"
                if said.get("loads"):  # it opens, yet the package's import of it failed (no hook)
                    said = {"loads": False, "how": "the import tried it", "error": "imported, not loaded"}
                parts[f["path"]] = said
            elif f["when"] == "on-use":
                said = forked(opens(f["path"]))
                said["how"] = "loaded on use (opened here)"
                parts[f["path"]] = said
            else:
                parts[f["path"]] = {"loads": None, "how": "the import did not try it (its condition)"}
        return {"imports": True, "parts": parts}
    out[key] = forked(one)
print(json.dumps(out))
"""


def load_sets(path: Path = lt.TOML) -> list[dict[str, Any]]:
    return list(tomllib.loads(path.read_text(encoding="utf-8")).get("import", []))


def _site(root: Path) -> Path:
    return next((root / "lib").glob("python3*/site-packages"))


def _link_torch(source: Path, site: Path) -> None:
    """Everything of the torch env's site-packages but pip and the tools, by hard links."""
    for entry in sorted(_site(source).iterdir()):
        if _SKIP.match(entry.name):
            continue
        if entry.is_dir():
            shutil.copytree(entry, site / entry.name, copy_function=os.link, symlinks=True)
        else:
            os.link(entry, site / entry.name)


def _requirements(wheel: Path) -> list[str]:
    """The wheel's unconditional, non-torch requirements (its pure-Python dependencies)."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        text = zf.read(name).decode("utf-8", "replace")
    out = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        try:
            req = Requirement(line.split(":", 1)[1].strip())
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if not _NOT_PYTHON.match(canonicalize_name(req.name)):
            out.append(str(req))
    return out


def _install(python: Path, wheel: Path) -> None:
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    root = python.parent.parent
    site = _site(root)
    scheme = {"purelib": str(site), "platlib": str(site), "headers": str(root / "include"),
              "scripts": str(root / "bin"), "data": str(root)}  # fmt: skip
    with WheelFile.open(wheel) as source:
        install(source, SchemeDictionaryDestination(scheme, str(python), "posix"), {"INSTALLER": b"pip\n"})


def build_env(
    name: str, torch: str, wheels: list[Path], rebuild: bool, support: list[str]
) -> tuple[Path, list[str]]:
    """The env's interpreter (built once per inputs), and what could not be installed."""
    source, version, _ = TORCHES[torch]
    key = hashlib.sha256(version.encode() + json.dumps(sorted(support)).encode())
    for w in sorted(wheels, key=lambda p: p.name):
        key.update(w.name.encode() + lt.file_sha256(w).encode())
    root = lt.ENVS / f"import-{name}"
    stamp = root / "inputs"
    python = root / "bin" / "python"
    notes_file = root / "notes.json"
    if not rebuild and stamp.is_file() and stamp.read_text() == key.hexdigest():
        return python, json.loads(notes_file.read_text())
    shutil.rmtree(root, ignore_errors=True)
    proc = lt.run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    if proc.returncode != 0:
        raise lt.HarnessError(f"venv {root}: {lt._tail(proc)}")
    _link_torch(source, _site(root))
    notes: list[str] = []
    for w in wheels:
        _install(python, w)
    constraints = root / "constraints.txt"
    constraints.write_text(f"torch=={version}\n")
    reqs = sorted({*(r for w in wheels for r in _requirements(w)), *support})
    if reqs:
        cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "-c", str(constraints)]
        proc = lt.run([*cmd, *reqs], timeout=3600)
        if proc.returncode != 0:  # one by one, so that one impossible requirement costs only itself
            for r in reqs:
                one = lt.run([*cmd, r], timeout=3600)
                if one.returncode != 0:
                    notes.append(f"{r}: not installed ({lt._tail(one)[-200:]})")
    notes_file.write_text(json.dumps(notes))
    stamp.write_text(key.hexdigest())
    return python, notes


def _modules(site: Path, dist: str) -> tuple[list[str], list[str]]:
    """(the modules ``import`` tries, the compiled files of its RECORD) of one distribution."""
    info = next(p for p in site.glob("*.dist-info") if canonicalize_name(p.name.split("-")[0]) == dist)
    members = [line.split(",")[0] for line in (info / "RECORD").read_text().splitlines() if line]
    top = info / "top_level.txt"
    names = [n for n in (top.read_text().split() if top.is_file() else []) if (site / n).exists()]
    names = names or sorted(
        {m.split("/")[0] for m in members if m.endswith("/__init__.py") and m.count("/") == 1}
    )
    return [n for n in names if not n.startswith("_") and n != "test"], members


def truths(python: Path, doc: dict[str, Any], imports: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """Per distribution of the doctor document: the import and its optional parts (module
    docstring), in one process per env that imports torch once; ``imports``: the modules to
    import where the distribution's own names are another's namespace."""
    site = _site(python.parent.parent)
    jobs = {}
    for d in doc["distributions"]:
        key = canonicalize_name(d["name"])
        modules = imports.get(key) or _modules(site, key)[0]
        need = d.get("need") or {}
        parts = [
            {"path": str(site / f), "module": _module_of(f), "when": p["when"]}
            for p in need.get("optional", [])
            for f in p["files"]
        ]
        jobs[key] = {"modules": modules, "parts": parts}
    proc = lt.run([str(python), "-W", "ignore", "-c", _PROBE, json.dumps(jobs)], timeout=7200)
    if proc.returncode != 0:
        raise lt.HarnessError(f"the import probe: {lt._tail(proc)}")
    found: dict[str, dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    for key, job in jobs.items():
        found[key]["modules"] = job["modules"]
    return found


def _module_of(member: str) -> str | None:
    """The module a compiled file's name makes (``pkg/_C.abi3.so`` -> ``pkg._C``), or None."""
    name = member.rsplit("/", 1)[-1]
    m = re.match(r"^([A-Za-z_]\w*)\.(?:cpython-[^.]+\.so|abi3\.so|so)$", name)
    if m is None or name.startswith("lib"):
        return None
    return ".".join([*member.split("/")[:-1], m.group(1)])


def truth_state(t: dict[str, Any]) -> tuple[str, str]:
    """(``imports``, ``imports partly``, ``import fails``, ``cannot tell``; the words)."""
    if "error" in t and "imports" not in t:
        return "cannot tell", f"the probe: {t['error']}"
    if not t["imports"]:
        error = t["error"]
        if error.startswith("ModuleNotFoundError") and not any(
            error.endswith(f"'{m}'") for m in t["modules"]
        ):
            return "cannot tell", f"{error} (a pure-Python requirement, not torch's doing)"
        return "import fails", error
    failed = {f: p for f, p in t["parts"].items() if p.get("loads") is False}
    if not failed:
        return "imports", "imports" + (f"; its {len(t['parts'])} optional files load" if t["parts"] else "")
    said = next(iter(failed.values()))
    words = f"imports; {len(failed)} of {len(t['parts'])} optional files do not load: {said.get('error', '')}"
    if all(_MACHINE.search(p.get("error", "")) for p in failed.values()):
        return "cannot tell", words + " (a library of the machine: the system-library axis)"
    return "imports partly", words


ROWS = ("imports", "imports partly", "import fails", "cannot tell")
COLUMNS = ("loads", "partly", "no", "excluded", "unknown")


def classify(truth: str, doctor: str) -> str:
    """One pair's cell, in words the docs count by."""
    loads = doctor in ("loads", "partly")
    if truth == "cannot tell":
        return "cannot tell"
    if doctor == "unknown":
        return "unknown"
    if truth == "import fails":
        return "false load" if loads else "true refusal"
    if doctor == "excluded":
        return "pin excludes"
    if not loads:
        return "false refusal"
    if truth == "imports partly":
        return "true partly" if doctor == "partly" else "partly missed"
    return "true load" if doctor == "loads" else "false partly"


def run_env(spec: dict[str, Any], torch: str, tw: str, download: bool, rebuild: bool) -> dict[str, Any]:
    wheels = {w.filename: w for w in lt.load_wheels()}
    paths = []
    for f in spec.get("wheels", []):
        paths.append(lt.ensure_wheel(wheels[f], download))
    paths += own_wheels(spec.get("own", []))
    name = f"{torch}-{spec['name']}"
    python, notes = build_env(name, torch, paths, rebuild, spec.get("support", []))
    print(f"{name}: {len(paths)} wheels", flush=True)
    proc = lt.run([tw, "doctor", "--python", str(python), "--format", "json"], timeout=3600)
    if proc.returncode not in (0, 1):
        raise lt.HarnessError(f"doctor: exit {proc.returncode}: {lt._tail(proc)}")
    doc = json.loads(proc.stdout)
    found = truths(python, doc, {canonicalize_name(k): v for k, v in spec.get("imports", {}).items()})
    pairs = []
    for d in doc["distributions"]:
        key = canonicalize_name(d["name"])
        state, words = truth_state(found[key])
        pairs.append({
            "env": name, "torch": torch, "dist": d["name"], "version": d["version"], "doctor": d["state"],
            "reason": d["reason"], "truth": state, "truth_words": words, "class": classify(state, d["state"]),
        })  # fmt: skip
    return {"env": name, "torch": torch, "exit": proc.returncode, "summary": doc["summary"], "notes": notes,
            "pairs": pairs}  # fmt: skip


def own_wheels(names: list[str]) -> list[Path]:
    """The real extensions of ``fixtures/real_ext`` (built against ``.venv``'s torch 2.13),
    and the wheels made from them (``fallback``: a CUDA module behind ``try``/``except
    ImportError``; ``imported``: the op library behind ``from . import _C``)."""
    build = _load(lt.REPO / "fixtures" / "real_ext" / "build.py")
    real = [n for n in names if n in {*build.VARIANTS, *build.ON_REQUEST}]
    built: dict[str, Path] = build.build_real_wheels(
        lt.REPO / ".cache" / "real_ext", str(lt.REPO / ".venv" / "bin" / "python"), names=tuple(real)
    ) if real else {}  # fmt: skip
    out = [built[n] for n in real]
    made = lt.CACHE / "import-own"
    made.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(lt.REPO / "fixtures"))
    import wheels as fw  # fixtures/wheels.py: the fixture wheel writer

    if "fallback" in names:
        spec = fw.WheelSpec(
            "fallback", "twdemo_fallback", "cp39-abi3-" + fw.LINUX,
            (("twdemo_fallback/_cuda_ext.abi3.so", "cuda:cu13_torch_cuda.so"),), requires=("torch",),
            extra=(("twdemo_fallback/__init__.py",
                    b"import torch\ntry:\n    from . import _cuda_ext\nexcept ImportError:\n    _cuda_ext = None\n"),),
        )  # fmt: skip
        out.append(Path(fw.write_wheel(made / spec.filename, spec, {})))
    if "imported" in names:
        oplib = build.build_real_wheels(
            lt.REPO / ".cache" / "real_ext", str(lt.REPO / ".venv" / "bin" / "python"), names=("oplib",)
        )["oplib"]  # fmt: skip
        with zipfile.ZipFile(oplib) as zf:
            so = next(n for n in zf.namelist() if n.endswith(".so"))
            (made / "oplib.so").write_bytes(zf.read(so))
        spec = fw.WheelSpec(
            "imported", "twdemo_imported", "cp311-cp311-linux_x86_64",
            ((f"twdemo_imported/{so.split('/', 1)[1]}", "lib"),), requires=("torch==2.13.*",),
            extra=(("twdemo_imported/__init__.py", b"import torch\nfrom . import _C\n"),),
        )  # fmt: skip
        out.append(Path(fw.write_wheel(made / spec.filename, spec, {"lib": made / "oplib.so"})))
    return out


def _load(path: Path, name: str = "torchwheel_real_ext_build") -> Any:
    import importlib.util

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# -- the docs section ----------------------------------------------------------------------------


def tally(pairs: list[dict[str, Any]]) -> Counter[str]:
    return Counter(p["class"] for p in pairs)


def section(results: dict[str, Any]) -> str:
    pairs = [p for e in results["envs"] for p in e["pairs"]]
    grid: Counter[tuple[str, str]] = Counter((p["truth"], p["doctor"]) for p in pairs)
    counts = tally(pairs)
    lines = [
        BEGIN,
        "## Import truth: every `doctor` row against a real `import`",
        "",
        "Generated by `python benchmarks/loadtruth_import.py --write-docs` (method: its docstring).",
        "Each env is a venv whose torch is one of this machine's real torches (2.13.0 CPU, 2.14.1",
        "CUDA 13), by hard links, with published extensions and this repository's own real op",
        "libraries installed as pip installs them and their pure-Python requirements beside them;",
        "`doctor --python ENV` judges it, and a fresh process imports each package (and opens",
        "every optional part `doctor` names, where the package would).",
        "The referee is the package's own code: a part counts as not loading when the import",
        "tried it and it did not load (an audit hook on `ctypes.dlopen` and `import`), or, for a",
        "part loaded on use, when it does not open; a part the import did not try (its",
        "condition skipped it) is not counted. CI's short form is `tests/e2e/test_loaders.py`",
        "(torch 2.13.0 CPU: the op libraries built here, torchao 0.18.0, torchaudio 2.11.0,",
        "torchvision 0.28.0, a `try`/`except ImportError` module, each held to a real import,",
        "and `--explain` on what those imports print). The NVIDIA driver and the system",
        "libraries (FFmpeg's for torchcodec, `libcuda.so.1`) are the machine axis, held to real",
        "imports in the section above: a row stopped there is 'cannot tell' here, and says so.",
        "",
        f"torchwheel judged: `{results['torchwheel']}`",
        "",
        "| env | torch | wheels | doctor's exit | summary |",
        "|---|---|--:|--:|---|",
    ]
    for e in results["envs"]:
        lines.append(
            f"| {e['env']} | {e['torch']} | {len(e['pairs'])} | {e['exit']} | {md_cell(e['summary'][:300])} |"
        )
    lines += [
        "",
        f"{len(pairs)} (distribution, env) pairs.",
        "",
        "| import \\ doctor | " + " | ".join(COLUMNS) + " |",
        "|---|" + "--:|" * len(COLUMNS),
    ]
    lines += [f"| {r} | " + " | ".join(str(grid[(r, c)]) for c in COLUMNS) + " |" for r in ROWS]
    lines += [
        "",
        f"- true loads (imports, every part loads; doctor: loads): **{counts['true load']}**",
        f"- true partly (imports, an optional part does not load; doctor: partly): **{counts['true partly']}**",
        f"- true refusals (the import fails; doctor: no): **{counts['true refusal']}**",
        f"- **false loads** (doctor: loads or partly; the import fails): **{counts['false load']}**",
        f"- **false refusals** (doctor: no; the package imports): **{counts['false refusal']}**",
        f"- false partly (doctor: partly; every part loads): **{counts['false partly']}**",
        f"- partly missed (doctor: loads; an optional part does not load): **{counts['partly missed']}**",
        f"- the wheel's own pin excludes this torch (doctor: excluded; it imports): **{counts['pin excludes']}**",
        f"- doctor unknown (its reason says which axis): **{counts['unknown']}**",
        f"- the import cannot tell (a pure-Python requirement missing, or a library of the machine): "
        f"**{counts['cannot tell']}**",
        "",
    ]
    odd = [p for p in pairs if p["class"] in ("unknown", "cannot tell", "false partly", "partly missed")]
    if odd:
        lines += ["Every pair that is not a plain agreement, explained:", "",
                  "| env | distribution | doctor | import | why |", "|---|---|---|---|---|"]  # fmt: skip
        for p in odd:
            why = p["reason"] if p["class"] == "unknown" else p["truth_words"]
            lines.append(f"| {p['env']} | {p['dist']} {p['version']} | {p['doctor']} | {p['truth']} | "
                         f"{md_cell(_short(why, 260))} |")  # fmt: skip
        lines.append("")
    lines += ["### Every pair", "", "| env | distribution | doctor | import | the import's words |",
              "|---|---|---|---|---|"]  # fmt: skip
    for p in pairs:
        lines.append(f"| {p['env']} | {p['dist']} {p['version']} | {p['doctor']} | {p['truth']} | "
                     f"{md_cell(_short(p['truth_words'], 200))} |")  # fmt: skip
    if any(e["notes"] for e in results["envs"]):
        lines += [
            "",
            "Requirements that could not be installed (their imports are the 'cannot tell' rows):",
            "",
        ]
        lines += [f"- {e['env']}: {md_cell(n)}" for e in results["envs"] for n in e["notes"]]
    lines.append(END)
    return "\n".join(lines)


_SITE = re.compile(r"/\S*?/site-packages/")


def _short(text: str, size: int) -> str:
    text = _SITE.sub("site-packages/", text)
    return text if len(text) <= size else text[: size - 3] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--torchwheel", default=str(lt.REPO / ".venv" / "bin" / "torchwheel"))
    parser.add_argument(
        "--envs", default="", help="only these envs (TORCH-SET: cpu-a, cu130-b), comma-separated"
    )
    parser.add_argument("--no-download", action="store_true", help="use only the wheels in the cache")
    parser.add_argument("--rebuild", action="store_true", help="build the envs again")
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="write the import-truth section of docs/evidence/loadtruth.md",
    )
    args = parser.parse_args(argv)
    tw = str(Path(args.torchwheel).resolve())
    wanted = set(filter(None, args.envs.split(",")))
    results: dict[str, Any] = {
        "torchwheel": lt.run([tw, "--version"]).stdout.strip(),
        "envs": [],
        "errors": [],
    }
    for spec in load_sets():
        for torch in spec["torches"]:
            if wanted and f"{torch}-{spec['name']}" not in wanted:
                continue
            try:
                results["envs"].append(run_env(spec, torch, tw, not args.no_download, args.rebuild))
            except lt.HarnessError as exc:
                print(f"ERROR {torch}-{spec['name']}: {exc}", file=sys.stderr, flush=True)
                results["errors"].append(f"{torch}-{spec['name']}: {exc}")
    lt.CACHE.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))
    pairs = [p for e in results["envs"] for p in e["pairs"]]
    print({k: v for k, v in tally(pairs).items() if v})
    for p in pairs:
        print(f"  {p['env']:10} {p['dist']:22} doctor={p['doctor']:8} import={p['truth']:14} {p['class']}")
    if args.write_docs:
        put_section(lt.DOCS, section(results), "import-truth")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
