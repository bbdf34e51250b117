#!/usr/bin/env python3
"""Machine truth: ``doctor``'s driver and system-library axes held to what a real import does.

    .venv/bin/python benchmarks/loadtruth_machine.py               # run, print the table
    .venv/bin/python benchmarks/loadtruth_machine.py --write-docs  # and write docs/evidence/loadtruth.md's section

The environment: torch 2.14.1's CUDA 13.0 build (``.venv-cu130``'s files, hard-linked into a
venv of its own under ``.cache/loadtruth-machine``: the shared venv is never written), with
torchvision 0.29.1 and torchcodec 0.17.0 from their published wheels (and numpy, pillow,
which ``import torchvision`` needs), installed with ``installer`` as pip lays them out. The
machines: no NVIDIA driver (this one), and stub drivers (``fixtures/machine``:
``libcuda.so.1`` whose ``cuDriverGetVersion`` says 12.4, 13.0, 13.2) on ``LD_LIBRARY_PATH``.
There is no FFmpeg here (``ldconfig -p`` lists no ``libavutil``; never installed).

The truth, per machine, in a fresh interpreter of the env: ``import torchvision``, ``import
torchcodec``, torchcodec's own loader (``load_core_libraries()``, the function its decoders
call), and torch's word on its CUDA (``torch.cuda.is_available()`` and the warning torch
gives: "The NVIDIA driver on your system is too old (found version 12040)", "Found no NVIDIA
driver", or, past the driver check, "No CUDA GPUs are available" from the stub's ``cuInit``).
``torchwheel doctor --python ENV --format json`` with the same ``LD_LIBRARY_PATH`` must agree:
a package that imports is never "no"; one whose own loader fails there is "partly" or "no",
naming the library; the driver's CUDA version is named, and a CUDA 13 build on a driver that
supports less is said not to run (and never said where the driver runs it, or where there is
no driver at all). ``tests/e2e/test_machine.py`` is CI's short form (three machines).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from harness import md_cell, put_section  # noqa: E402

SOURCE = REPO / ".venv-cu130"
CACHE = REPO / ".cache" / "loadtruth-machine"
WHEELS = REPO / ".cache" / "corpus"
DOCS = REPO / "docs" / "evidence" / "loadtruth.md"
TIMEOUT = 600
PACKAGES = ("torchvision==0.29.1", "torchcodec==0.17.0", "numpy", "pillow")
MACHINES: dict[str, int | None] = {
    "no driver": None,
    "driver 12.4": 12040,
    "driver 13.0": 13000,
    "driver 13.2": 13020,
}

_TRUTH = r"""
import json, warnings
out = {}
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import torch
    available = torch.cuda.is_available()
said = [str(w.message) for w in caught if "driver" in str(w.message).lower() or "CUDA" in str(w.message)]
out["torch"] = torch.__version__
out["torch_cuda"] = "available" if available else (said[0][:200] if said else "not available")
if not available:
    try:
        torch.cuda.init()
    except Exception as exc:
        out["torch_cuda_init"] = str(exc).splitlines()[0][:200]
for name in ("torchvision", "torchcodec"):
    try:
        __import__(name)
        out[name] = "imports"
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
try:
    from torchcodec._internally_replaced_utils import load_core_libraries
    major, path = load_core_libraries()
    out["torchcodec_core"] = f"loads (FFmpeg {major})"
except Exception as exc:
    text = str(exc)
    out["torchcodec_core"] = "fails: " + ("libavutil" if "libavutil" in text else text.splitlines()[0][:200])
try:
    import torchvision.extension as ext
    out["torchvision_ops"] = "loads" if ext._has_ops() else "fails"
except Exception as exc:
    out["torchvision_ops"] = f"{type(exc).__name__}"
print(json.dumps(out))
"""


class HarnessError(RuntimeError):
    pass


def build_machine() -> Any:
    """``fixtures/machine/build.py``'s stub drivers, loaded under a name of its own (PyPA's
    ``build`` package may own the name ``build``)."""
    import importlib.util

    name = "torchwheel_machine_build"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, REPO / "fixtures" / "machine" / "build.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module.build_machine(REPO / ".cache" / "machine")


def _site(prefix: Path) -> Path:
    found = sorted(prefix.glob("lib/python3*/site-packages"))
    if not found:
        raise HarnessError(f"{prefix}: no site-packages (bash scripts/dev-setup)")
    return found[0]


def wheels(download: bool = True) -> list[Path]:
    """The published wheels (``.cache/corpus``, fetched once by pip for this interpreter's tags)."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    found = []
    for spec in PACKAGES:
        name, _, version = spec.partition("==")
        pattern = f"{name}-{version or '*'}-cp311-*manylinux*x86_64*.whl"
        hits = sorted(WHEELS.glob(pattern))
        if not hits and download:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                 "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", "-d", str(WHEELS), spec],
                check=True, capture_output=True, text=True, timeout=TIMEOUT,
            )  # fmt: skip
            hits = sorted(WHEELS.glob(pattern))
        if not hits:
            raise HarnessError(f"{spec}: no wheel in {WHEELS}")
        found.append(hits[-1])
    return found


def build_env(root: Path, wheel_files: list[Path]) -> Path:
    """The env's interpreter (module docstring), built once per set of wheels into ``root``."""
    python = root / "bin" / "python"
    if (root / "done").is_file():
        return python
    root.parent.mkdir(parents=True, exist_ok=True)
    with (root.parent / ".lock").open("w") as lock:  # one build at a time (test workers, a run)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "done").is_file():
            _build_env(root, python, wheel_files)
    return python


def _build_env(root: Path, python: Path, wheel_files: list[Path]) -> None:
    if root.exists():
        shutil.rmtree(root)
    source = _site(SOURCE)
    if not (source / "torch").is_dir():
        raise HarnessError(f"{SOURCE} holds no torch (bash scripts/dev-setup)")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = _site(root)
    for entry in source.iterdir():
        if entry.name in ("__pycache__", "pip") or entry.name.startswith("pip-"):
            continue
        if entry.is_dir():
            shutil.copytree(
                entry, site / entry.name, copy_function=os.link, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            os.link(entry, site / entry.name)
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    scheme = {"purelib": str(site), "platlib": str(site), "headers": str(root / "include"),
              "scripts": str(root / "bin"), "data": str(root)}  # fmt: skip
    for wheel in wheel_files:
        with WheelFile.open(wheel) as src:
            install(src, SchemeDictionaryDestination(scheme, str(python), "posix"), {"INSTALLER": b"pip\n"})
    (root / "done").write_text("")


def environ(driver: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    if driver is not None:
        env["LD_LIBRARY_PATH"] = str(driver)
    return env


def truth(python: Path, driver: Path | None) -> dict[str, str]:
    """What a fresh interpreter of the env does on this machine (module docstring)."""
    proc = subprocess.run(
        [str(python), "-W", "ignore::DeprecationWarning", "-c", _TRUTH],
        capture_output=True, text=True, timeout=TIMEOUT, env=environ(driver),
    )  # fmt: skip
    if proc.returncode != 0:
        raise HarnessError(f"the truth probe died: {proc.stderr.strip()[-400:]}")
    result: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


_RUNTIME = r"""
import ctypes, glob, json, os, sys
site = sys.argv[1]
(lib,) = glob.glob(os.path.join(site, "nvidia", "cu13", "lib", "libcudart.so.13"))
rt = ctypes.CDLL(lib)
count = ctypes.c_int(0)
status = rt.cudaGetDeviceCount(ctypes.byref(count))
rt.cudaGetErrorString.restype = ctypes.c_char_p
try:
    ctypes.CDLL("libcuda.so.1")
    driver = "loads"
except OSError:
    driver = "absent"
print(json.dumps({"cuda_runtime": rt.cudaGetErrorString(status).decode(), "libcuda": driver}))
"""


def runtime_truth(python: Path, driver: Path | None) -> dict[str, str]:
    """The CUDA runtime torch loads (the env's ``libcudart.so.13``) asked on this machine, in a
    process of its own without torch (a CUDA torch's import costs seconds): "CUDA driver version
    is insufficient for CUDA runtime version" is what torch's "too old" comes from."""
    site = _site(python.parent.parent)
    proc = subprocess.run(
        [str(python), "-I", "-S", "-c", _RUNTIME, str(site)],
        capture_output=True, text=True, timeout=TIMEOUT, env=environ(driver),
    )  # fmt: skip
    if proc.returncode != 0:
        raise HarnessError(f"the runtime probe died: {proc.stderr.strip()[-400:]}")
    result: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def doctor(python: Path, driver: Path | None, tw: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [tw, "doctor", "--python", str(python), "--format", "json"],
        capture_output=True, text=True, timeout=TIMEOUT, env=environ(driver),
    )  # fmt: skip
    if proc.returncode not in (0, 1):
        raise HarnessError(f"doctor exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return proc.returncode, json.loads(proc.stdout)


def judge(said: dict[str, Any], real: dict[str, str]) -> list[str]:
    """Where ``doctor`` disagrees with the truth (empty: it agrees)."""
    wrong = []
    rows = {d["name"]: d for d in said["distributions"]}
    for name, core in (("torchvision", "torchvision_ops"), ("torchcodec", "torchcodec_core")):
        if name not in real:
            continue
        row = rows.get(name)
        if row is None:
            wrong.append(f"{name}: no row")
            continue
        imports = real[name] == "imports"
        whole = imports and not real[core].startswith("fails")
        if imports and row["state"] == "no":
            wrong.append(f"{name}: doctor says no, but it imports")
        if not whole and row["state"] == "loads":
            wrong.append(f"{name}: doctor says loads, but {real[core]}")
    codec = rows.get("torchcodec")
    if (
        codec is not None
        and real.get("torchcodec_core", "").startswith("fails: libavutil")
        and "libavutil" not in ("; ".join(codec["partly"]) or codec["reason"])
    ):
        wrong.append("torchcodec: the reason does not name libavutil")
    machine = said["machine"]
    verdict = machine["driver_verdict"] or ""
    present = real["libcuda"] == "loads"  # the runtime says "insufficient" without a driver too
    too_old = present and ("too old" in real.get("torch_cuda", "") or "insufficient" in real["cuda_runtime"])
    if too_old != ("need CUDA 13" in verdict or "needs CUDA 13" in verdict):
        wrong.append(f"driver: the runtime says {real['cuda_runtime']!r}, doctor says {verdict!r}")
    if present != (machine["driver"]["state"] == "found"):
        wrong.append(f"driver: libcuda.so.1 {real['libcuda']}, doctor says {machine['driver']['state']}")
    return wrong


def run(tw: str, download: bool, machines: dict[str, int | None] | None = None) -> list[dict[str, Any]]:
    env = build_env(CACHE / "env", wheels(download))
    stubs = build_machine().drivers
    out = []
    for label, version in (machines or MACHINES).items():
        driver = stubs[version] if version is not None else None
        real = {**truth(env, driver), **runtime_truth(env, driver)}
        code, said = doctor(env, driver, tw)
        out.append(
            {"machine": label, "truth": real, "doctor": said, "exit": code, "wrong": judge(said, real)}
        )
        print(label, "agrees" if not out[-1]["wrong"] else out[-1]["wrong"], flush=True)
    return out


def _cells(r: dict[str, Any]) -> list[str]:
    real, rows = r["truth"], {d["name"]: d for d in r["doctor"]["distributions"]}
    tv, tc = rows.get("torchvision", {}), rows.get("torchcodec", {})
    machine = r["doctor"]["machine"]
    driver = machine["driver"]
    said = machine["driver_verdict"] or (
        f"CUDA {driver['cuda']}: no mismatch"
        if driver["state"] == "found"
        else f"{driver['state']}: no mismatch claimed"
    )
    return [
        r["machine"],
        real.get("torch_cuda_init", real["torch_cuda"]),
        real["cuda_runtime"],
        real["torchvision"],
        f"{tv.get('state')}: {tv.get('partly') or tv.get('reason', '')}",
        f"{real['torchcodec']}; {real['torchcodec_core']}",
        f"{tc.get('state')}: {tc.get('partly') or tc.get('reason', '')}",
        said,
        "yes" if not r["wrong"] else "; ".join(r["wrong"]),
    ]


def tally(results: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(what the import does, what doctor says) -> pairs: the confusion matrix."""
    out: dict[tuple[str, str], int] = {}
    for r in results:
        real, rows = r["truth"], {d["name"]: d for d in r["doctor"]["distributions"]}
        for name, core in (("torchvision", "torchvision_ops"), ("torchcodec", "torchcodec_core")):
            if real[name] != "imports":
                truth = "import fails"
            elif real[core].startswith("fails"):
                truth = "imports, its own loader fails"
            elif "too old" in real["torch_cuda"]:
                truth = "imports, its CUDA cannot run"
            else:
                truth = "imports whole"
            key = (truth, rows[name]["state"] if name in rows else "absent")
            out[key] = out.get(key, 0) + 1
    return out


def section(results: list[dict[str, Any]]) -> str:
    lines = [
        "<!-- machine: begin -->",
        "## The machine: the NVIDIA driver and system libraries (`benchmarks/loadtruth_machine.py`)",
        "",
        "torch 2.14.1 (CUDA 13.0 build) with torchvision 0.29.1 and torchcodec 0.17.0 from PyPI, on this",
        "machine (no GPU, no FFmpeg: `ldconfig -p` lists no `libavutil`) without a driver and with stub",
        "drivers (`fixtures/machine/cuda_driver_stub.c`: `libcuda.so.1` whose `cuDriverGetVersion` says",
        "12.4, 13.0, 13.2) on `LD_LIBRARY_PATH`. The truth is a fresh interpreter of the env: `import`,",
        "torchcodec's own `load_core_libraries()`, torch's `torch.cuda.is_available()` and",
        "`torch.cuda.init()` in its own words, and the CUDA runtime torch loads (`libcudart.so.13`) asked",
        "`cudaGetDeviceCount` alone. `doctor --python ENV` ran with the same `LD_LIBRARY_PATH`. Command:",
        "`python benchmarks/loadtruth_machine.py --write-docs`.",
        "",
        "| machine | torch's CUDA (its own words) | the CUDA runtime | `import torchvision` | doctor: torchvision | "
        "`import torchcodec`; `load_core_libraries()` | doctor: torchcodec | doctor: the driver | agrees |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(md_cell(c) for c in _cells(r)) + " |" for r in results]
    counts = tally(results)
    false_loads = sum(
        n for (truth, said), n in counts.items() if truth != "imports whole" and said == "loads"
    )
    false_refusals = sum(n for (truth, said), n in counts.items() if truth != "import fails" and said == "no")
    lines += [
        "",
        "| the import \\ doctor | " + " | ".join(("loads", "partly", "no", "unknown")) + " |",
        "|---|--:|--:|--:|--:|",
    ]
    for truth in (
        "imports whole",
        "imports, its CUDA cannot run",
        "imports, its own loader fails",
        "import fails",
    ):
        cells = [str(counts.get((truth, said), 0)) for said in ("loads", "partly", "no", "unknown")]
        lines.append(f"| {truth} | " + " | ".join(cells) + " |")
    wrong = sum(bool(r["wrong"]) for r in results)
    lines += [
        "",
        f"{len(results)} machines, {sum(counts.values())} (package, machine) pairs: **{false_loads} false loads, "
        f"{false_refusals} false refusals, {wrong} machines where doctor disagrees**. torchcodec, whose own",
        "loader opens none of its FFmpeg cores here, is `partly` with libavutil named (FFmpeg 4-9:",
        "`libavutil.so.56-61`); the driver's CUDA version is named where there is one, and only the 12.4",
        'driver, which torch and its CUDA runtime call too old ("CUDA driver version is insufficient for',
        'CUDA runtime version"), is said not to run the CUDA 13 builds; without a driver none is claimed.',
        "Not proven here, for want of a GPU: PTX newer than the driver (NVIDIA's rule,",
        "`torchabi/cuda_driver.py`, unit-tested; the runtime rule is held to NVIDIA's CUDA runtimes 12.9",
        "and 13.5 on each stub driver by `tests/torchabi/test_cuda_driver.py`).",
        "<!-- machine: end -->",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--torchwheel", default=str(REPO / ".venv" / "bin" / "torchwheel"))
    parser.add_argument("--no-download", action="store_true")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--from-results", action="store_true", help="rewrite the docs from the last run")
    args = parser.parse_args()
    if args.from_results:
        results = json.loads((CACHE / "results.json").read_text())
    else:
        results = run(args.torchwheel, not args.no_download)
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / "results.json").write_text(json.dumps(results, indent=1))
    print(tally(results))
    if args.write_docs:
        put_section(DOCS, section(results), "machine")
    return 1 if any(r["wrong"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
