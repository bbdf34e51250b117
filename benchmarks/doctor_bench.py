#!/usr/bin/env python3
"""``torchwheel doctor`` timed on real environments, beside ``pip check`` and the whole read.

    .venv/bin/python benchmarks/doctor_bench.py [--runs 3] [[LABEL=]ENV_PYTHON ...]

For each environment (default: issue 49's 300 distributions, made first under
``benchmarks/.data/doctor-300``, then ``.venv`` and ``.venv-cu130`` of ``scripts/dev-setup``): the
wall time of ``doctor --python ENV`` (a fresh process, as users run it), of ``pip check``
for the same interpreter (the check users run today, which reads requirements only), and of
reading every installed distribution whole (``collect`` on each, what ``doctor`` would cost
without reading the tables first), medians of ``--runs``, as ratios in one run, each figure with
the 1-minute load average as its runs began (the machine is shared). Writes
``benchmarks/results/doctor.json``, the table of ``docs/evidence/performance.md`` ("``doctor``"):
``.venv/bin/python benchmarks/doctor_bench.py`` with the default environments (set a of
``loadtruth_doctor.py`` or the hostile corpus's ``env_2000_distributions`` can be named as
ENV_PYTHON).

The 300-distribution environment (``make_env``) is a venv of this interpreter's base Python
holding ``.venv``'s distributions (its torch 2.13.0 CPU and 120 others: mypy's 233 compiled
modules, pillow, pydantic-core and the rest of the dev tools, hard links of the files their
RECORD lists), three real extensions built against that torch (``fixtures/real_ext/prebuilt``: twdemo_stable, twdemo_unstable,
twdemo_oplib, installed by pip) and pure-Python distributions of ten files each up to 300.
``doctor`` runs twice on each environment before it is timed, so torch's cache
(``tables.torchcache``) is warm as on every run but the first after torch is installed;
``doctor_cold`` times it with an empty data folder (``XDG_DATA_HOME`` a new folder each run), as the first run is.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results" / "doctor.json"
_WHOLE = r"""
import sys, time
from torchwheel.selection.target import probe
from torchwheel.wheel.installed import installed, Installed
from torchwheel.analysis.collect import collect
from torchwheel.tables.tableset import shipped_tables
target = probe(sys.argv[1])
table = shipped_tables()
start = time.monotonic()
n = 0
for item in installed(target.search_path, target.prefixes):
    if isinstance(item, Installed) and item.key != "torch":
        try:
            collect(item.source(), table, verify_hashes=False)
            n += 1
        except Exception:
            pass
print(time.monotonic() - start, n)
"""


ENV_300 = HERE / ".data" / "doctor-300"
REAL_EXTENSIONS = ("stable", "unstable", "oplib")  # fixtures/real_ext/prebuilt/<name>-<hash>/
DISTRIBUTIONS = 300
_SKIP = ("torchwheel",)  # the dev venv's editable install: its files are not in its RECORD


def make_env(out: Path, dev: Path = REPO / ".venv") -> Path:
    """The 300-distribution environment (module docstring), made once: its interpreter."""
    python = out / "bin" / "python"
    if (out / ".complete").exists():
        return python
    if out.exists():
        shutil.rmtree(out)
    base = subprocess.run(
        [str(dev / "bin" / "python"), "-c", "import sys; print(sys._base_executable)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    subprocess.run([base, "-m", "venv", "--without-pip", str(out)], check=True)
    site_of = "lib/python{}.{}/site-packages".format(*sys.version_info)
    src_site, dst_site = dev / site_of, out / site_of
    count = 0
    for info in sorted(src_site.glob("*.dist-info")):
        if info.name.split("-")[0].lower() in _SKIP or not (info / "RECORD").is_file():
            continue
        for row in csv.reader((info / "RECORD").read_text(encoding="utf-8").splitlines()):
            if not row:
                continue
            src = Path(os.path.normpath(src_site / row[0]))
            dst = Path(os.path.normpath(dst_site / row[0]))
            if not src.is_file() or dst.exists() or dev not in src.parents:
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)  # the same bytes, size and mtime; no copy of torch's 750 MB
            except OSError:
                shutil.copy2(src, dst)
        count += 1
    wheels = [
        next((REPO / "fixtures" / "real_ext" / "prebuilt").glob(f"{n}-*/*.whl")) for n in REAL_EXTENSIONS
    ]
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
         "--no-compile", "--quiet", *map(str, wheels)],
        check=True,
    )  # fmt: skip
    count += len(wheels)
    for i in range(DISTRIBUTIONS - count):
        _pure(dst_site, f"benchpkg{i:03d}")
    (out / ".complete").write_text("")
    return python


def _pure(site: Path, name: str) -> None:
    """A pure-Python distribution of ten modules, as pip installs one (METADATA, RECORD)."""
    files = {
        f"{name}/{m}.py": f"# {name}.{m}\nVALUE = {len(m)}\n".encode() for m in ("__init__", *"abcdefghi")
    }
    info = site / f"{name}-1.0.dist-info"
    files[f"{info.name}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
    files[f"{info.name}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    rows = []
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={digest},{len(data)}")
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def load() -> float:
    """The 1-minute load average as the figure is taken: the machine has 2 cores, shared."""
    return round(os.getloadavg()[0], 2)


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    start = time.monotonic()
    subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=3600, env=env)
    return time.monotonic() - start


def _figure(times: list[float], before: float) -> dict[str, float]:
    return {"s": round(statistics.median(times), 2), "load": before}


def bench(label: str, python: Path, runs: int) -> dict[str, object]:
    tw = [str(REPO / ".venv" / "bin" / "torchwheel"), "doctor", "--python", str(python)]
    for _ in range(2):  # torch's cache made, and the files in the page cache
        timed(tw)
    row: dict[str, object] = {"env": label}
    before = load()
    row["doctor"] = _figure([timed(tw) for _ in range(runs)], before)
    before = load()
    pip = [sys.executable, "-m", "pip", "--python", str(python), "check"]
    row["pip_check"] = _figure([timed(pip) for _ in range(runs)], before)
    before = load()
    cold = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="doctor-bench-data-") as data:
            cold.append(timed(tw, {**os.environ, "XDG_DATA_HOME": data}))
    row["doctor_cold"] = _figure(cold, before)
    before = load()
    whole = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _WHOLE, str(python)], capture_output=True, text=True, check=True
        )
        whole.append(float(out.stdout.split()[0]))
    row["whole_read"] = _figure(whole, before)
    row["doctor_per_pip_check"] = round(row["doctor"]["s"] / row["pip_check"]["s"], 2)  # type: ignore[index]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("envs", nargs="*", help="LABEL=PYTHON, or PYTHON (labelled by its path)")
    args = parser.parse_args(argv)
    if args.envs:
        envs = [
            (e.partition("=")[0], Path(e.partition("=")[2])) if "=" in e else (e, Path(e)) for e in args.envs
        ]
    else:
        envs = [
            ("300 distributions (issue 49)", make_env(ENV_300)),
            (".venv", REPO / ".venv" / "bin" / "python"),
            (".venv-cu130", REPO / ".venv-cu130" / "bin" / "python"),
        ]
    # .pyc files beside the sources whatever PYTHONDONTWRITEBYTECODE says (as startup_bench.py):
    # an installed torchwheel has them; without them each run compiles some 200 modules (0.1 s)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "torchwheel")], check=True)
    rows = []
    for label, path in envs:
        rows.append(bench(label, REPO / path, args.runs))
        print(json.dumps(rows[-1]), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"runs": args.runs, "cores": os.cpu_count(), "rows": rows}, indent=1) + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
