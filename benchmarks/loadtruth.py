#!/usr/bin/env python3
"""Load truth: torchwheel's "loads on torch X" judged against the dynamic loader of real torches.

    .venv/bin/python benchmarks/loadtruth.py --write-docs              # everything, current code
    .venv/bin/python benchmarks/loadtruth.py --torchwheel /path/to/torchwheel --only torchvision
    .venv/bin/python benchmarks/loadtruth.py --envs torch-2.13.0,torch-2.14.1 --no-download
    .venv/bin/python benchmarks/loadtruth_doctor.py --write-docs       # installed envs, real upgrades

The first line reproduces ``docs/evidence/loadtruth.md``; its ``doctor`` and ``stale-tables`` sections
are written by ``loadtruth_doctor.py`` and ``stale_tables.py`` (``--write-docs``) and kept.

``benchmarks/corpus.py`` compares torchwheel with verdicts people wrote down; those can only be
as right as the person who read the symbols. Here the referee is ``ld.so``: each wheel is
installed (``pip install --no-deps --target``) once, and in every torch environment of
``benchmarks/loadtruth.toml`` a fresh interpreter imports torch and opens every ELF library
of the wheel with ``ctypes.CDLL(path, RTLD_NOW | RTLD_GLOBAL)``. ``RTLD_NOW`` resolves every
undefined symbol at once (a missing ``c10::`` symbol fails there, not at first call) and runs
the static initialisers, so ``TORCH_LIBRARY`` registrations happen too.

Processes: per env, one interpreter imports torch and then forks a child per round of each
wheel, so every child starts as a process that has done nothing but ``import torch`` (a CUDA
torch's import costs seconds; 40 wheels x 6 envs would cost an hour). A child that crashes or
hangs (``PROBE_TIMEOUT``) is recorded against the file it was opening, and the rest of its
round goes on in a new child. Within a child the files are opened in passes until no more
loads: a library may need a sibling opened first (``_torchaudio.so`` links ``libtorchaudio.so``
by soname, with no RUNPATH), which the package's own code does open first.
``LD_LIBRARY_PATH`` is the env's own library directories (``torch/lib``, ``nvidia/*/lib``): a
CUDA torch opens NVRTC lazily, at first GPU use, which never comes here, and an extension
linking ``libnvrtc.so.12`` must not fail for that on the torch it was built for; a runtime the
env lacks (CUDA 12's on a CUDA 13 torch, any on a CPU torch) is still missing.

Units: a package that ships one library per torch release (``_torch24`` ... ``_torch29``,
``torch-2.6/lib/``) loads the one for the running torch, and one per flavour (``_cpu``/
``_cuda``, ``_cu12``/``_cu13``, ``_cuda121``; torchcodec's per-FFmpeg ``core4`` ... ``core9``)
the one that opens, so those files form one unit. A flavour unit loads when one of its members
loads; a per-release unit when the member for the env's torch exists and loads
(``as_the_package_picks``; a ``_torch29`` build that happens to resolve on torch 2.12 is
recorded, not counted). The release sets are the ``alternatives`` torchwheel's ``show``
names (its own grouping by file names, as the packages' own loaders pick by them: the
harness judges its verdict, not its grouping); the flavour words are this file's ``FLAVOUR``.
Members of one unit are opened in different processes: two builds of one op library in one
process collide in the dispatcher (``Only a single TORCH_LIBRARY can be used to register the
namespace``). Copies auditwheel grafted into ``<dist>.libs/`` are not opened themselves.

A library the loader cannot open because a *non-torch* dependency is absent here (FFmpeg,
the CUDA driver ``libcuda.so.1``, another project's library) says nothing about torch: it is
``external``, unless its own DT_NEEDED list (``readelf``) names a torch or CUDA-runtime library
this env lacks (then it fails for that reason, which the loader would have reached next). A
unit none of whose members loads and not all of which fail is ``external``; a wheel with a
failing unit fails, else with an external unit is ``undetermined``, else loads. Another
project a wheel's libraries link can be installed beside it (``[[support]]`` in the TOML):
its files are there for the loader but are not judged.

Caches (all under ``.cache/``, gitignored): the envs in ``loadtruth/envs/NAME``, the
installed wheels in ``loadtruth/installed/FILENAME``, the loader's results per (wheel, env) in
``loadtruth/loader/`` (they do not depend on torchwheel; ``--reload`` redoes them), the
wheels in ``corpus/`` (shared with corpus.py). Raw results: ``loadtruth/results.json``.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # benchmarks/ is not a package; the tests load this file by path
from harness import file_sha256, kept_sections, md_cell  # noqa: E402

REPO = HERE.parent
TOML = HERE / "loadtruth.toml"
CORPUS_TOML = HERE / "corpus.toml"
CACHE = REPO / ".cache" / "loadtruth"
ENVS = CACHE / "envs"
INSTALLED = CACHE / "installed"
LOADER = CACHE / "loader"
RESULTS = CACHE / "results.json"
WHEELS = REPO / ".cache" / "corpus"
DOCS = REPO / "docs" / "evidence" / "loadtruth.md"
PROBE_TIMEOUT = 600  # one process: import torch, then a round of libraries (vllm's are large)
LOADER_VERSION = 4  # bump when the probe changes, so cached loader results are redone

# A flavour word of its own in a path: the builds of one library for CPU, CUDA (any release),
# ROCm/HIP or XPU, of which a package loads the one matching the torch it finds.
FLAVOUR = re.compile(
    r"(?<![A-Za-z0-9])(cpu|cuda\d{0,3}|cu\d{2,3}|gpu|rocm\d{0,3}|hip\d{0,3}|xpu\d{0,4})(?![A-Za-z0-9])",
    re.IGNORECASE,
)
# Libraries a torch environment provides, so their absence is the torch build's doing: torch's
# own, and the CUDA/ROCm runtime a CUDA/ROCm torch brings (its nvidia-* wheels). The driver
# (libcuda.so.1) is not among them: no GPU-less machine has it, whatever torch it runs.
TORCH_PROVIDED = re.compile(
    r"^lib(torch[a-z_]*|c10[a-z_]*|shm|caffe2_nvrtc|cudart|cublas|cublasLt|cufft|cufftw|curand|cusolver"
    r"|cusolverMg|cusparse|cusparseLt|nvrtc|nvrtc-builtins|nvJitLink|cudnn[a-z_]*|nccl|nvshmem[a-z_]*"
    r"|cupti|nvToolsExt|nvtx3interop|cufile|cufile_rdma|amdhip64|hipblas|hipblaslt|rocblas|MIOpen)\.so",
)
_MISSING = re.compile(r"^(\S+): cannot open shared object file")
_ELF_MAGIC = b"\x7fELF"
_ET_DYN = 3
_PT_INTERP = 3


class HarnessError(Exception):
    """An env or a wheel could not be had or verified: reported in one line, never skipped."""


# -- the inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Env:
    name: str
    torch: str
    cuda: str  # torch.version.cuda as printed; "" for a CPU build
    why: str

    @property
    def path(self) -> Path:
        return ENVS / self.name

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def minor(self) -> str:
        return ".".join(self.torch.split(".")[:2])

    @property
    def backend(self) -> str:
        """PyTorch's backend name for this build (``cpu``, ``cu128``): matrix's column key."""
        return "cpu" if not self.cuda else "cu" + self.cuda.replace(".", "")


@dataclass(frozen=True)
class Wheel:
    project: str
    version: str
    filename: str
    sha256: str
    why: str
    source: str  # "corpus" or "loadtruth"
    support: tuple[str, ...] = ()  # non-torch requirements installed beside it (not judged)

    @property
    def path(self) -> Path:
        return WHEELS / self.filename

    @property
    def installed(self) -> Path:
        return INSTALLED / self.filename


def _cp311_tags() -> set[Tag]:
    """What CPython 3.11 on this machine runs: the judging interpreter must be 3.11 on Linux
    x86_64, the only platform whose loader is here."""
    if sys.version_info[:2] != (3, 11) or not sys.platform.startswith("linux"):
        raise HarnessError(f"run this with CPython 3.11 on Linux (this is {sys.version.split()[0]})")
    return set(sys_tags())


def load_envs(path: Path = TOML) -> list[Env]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Env(e["name"], e["torch"], e.get("cuda", ""), e.get("why", "")) for e in data["env"]]


def load_wheels(path: Path = TOML, corpus: Path = CORPUS_TOML) -> list[Wheel]:
    """The corpus's wheels that run here, then this file's own; a file named twice is one wheel."""
    runs_here = _cp311_tags()
    out: dict[str, Wheel] = {}
    for w in tomllib.loads(corpus.read_text(encoding="utf-8"))["wheel"]:
        try:
            _, _, _, tags = parse_wheel_filename(w["filename"])
        except InvalidWheelFilename:  # k2's `py3.9`: no installer-side command chooses it
            continue
        if tags & runs_here:
            out[w["filename"]] = Wheel(
                w["project"], w["version"], w["filename"], w["sha256"], "corpus.toml", "corpus"
            )
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    for w in data.get("wheel", []):
        _, _, _, tags = parse_wheel_filename(w["filename"])
        if not tags & runs_here:
            raise HarnessError(f"{w['filename']}: its tags do not run on CPython 3.11 here")
        out.setdefault(
            w["filename"],
            Wheel(w["project"], w["version"], w["filename"], w["sha256"], w.get("why", ""), "loadtruth"),
        )
    for sup in data.get("support", []):
        if sup["wheel"] not in out:
            raise HarnessError(f"[[support]] names {sup['wheel']}, which is not in the wheel list")
        out[sup["wheel"]] = replace(out[sup["wheel"]], support=tuple(sup["requirements"]))
    return list(out.values())


def run(cmd: list[str], timeout: float = 3600, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, **kw)


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip() and "is ignored" not in ln]
    return lines[-1] if lines else f"exit {proc.returncode}, no output"


# -- environments -------------------------------------------------------------------------------

_VERIFY = "import json, torch; print(json.dumps([torch.__version__, torch.version.cuda or '']))"


def verify_env(env: Env) -> dict[str, str]:
    """What the env's torch says of itself; the one check that an env is the one listed."""
    proc = run([str(env.python), "-c", _VERIFY], timeout=300)
    if proc.returncode != 0:
        raise HarnessError(f"env {env.name}: import torch failed: {_tail(proc)}")
    version, cuda = json.loads(proc.stdout.strip().splitlines()[-1])
    if Version(version).public != env.torch or cuda != env.cuda:
        raise HarnessError(
            f"env {env.name}: torch {version} CUDA {cuda or 'none'}, listed as {env.torch} CUDA {env.cuda or 'none'}"
        )
    return {"torch": version, "cuda": cuda}


def ensure_env(env: Env) -> dict[str, str]:
    """The env, built once (venv + ``pip install torch==X`` with its dependencies) and verified;
    ``loadtruth-env.json`` marks a finished, verified build, so an interrupted one is redone."""
    stamp = env.path / "loadtruth-env.json"
    if stamp.is_file() and env.python.exists():
        facts: dict[str, str] = json.loads(stamp.read_text())
        if facts.get("torch_req") == env.torch:
            return facts
    print(f"building env {env.name} (torch=={env.torch}) ...", flush=True)
    start = time.monotonic()
    if not env.python.exists():
        proc = run([sys.executable, "-m", "venv", str(env.path)])
        if proc.returncode != 0:
            raise HarnessError(f"env {env.name}: venv failed: {_tail(proc)}")
    proc = run([str(env.python), "-m", "pip", "install", "-q", f"torch=={env.torch}"])
    if proc.returncode != 0:
        raise HarnessError(f"env {env.name}: pip install torch=={env.torch} failed: {_tail(proc)}")
    facts = {**verify_env(env), "torch_req": env.torch, "built_seconds": f"{time.monotonic() - start:.0f}"}
    stamp.write_text(json.dumps(facts))
    return facts


def _site(env: Env) -> Path:
    return next(env.path.glob("lib/python3*/site-packages"))


def library_dirs(env: Env) -> list[Path]:
    """torch's ``lib`` and every directory of the env's nvidia-* wheels that holds a library."""
    site = _site(env)
    dirs = {site / "torch" / "lib"}
    if (site / "nvidia").is_dir():
        dirs |= {p.parent for p in (site / "nvidia").rglob("*.so*")}
    return sorted(dirs)


def provided_sonames(env: Env) -> set[str]:
    """The library files the env's torch and its nvidia-* wheels bring."""
    return {p.name for d in library_dirs(env) for p in d.glob("*.so*")}


def probe_environ(env: Env) -> dict[str, str]:
    """The probe's environment: ``LD_LIBRARY_PATH`` = the env's own library directories. A CUDA
    torch loads its runtime libraries lazily (NVRTC at first use of the GPU, which never comes
    on a GPU-less machine), so an extension that links ``libnvrtc.so.12`` would miss it even on
    the torch it was built for; with only the env's own directories on the path, a runtime the
    env lacks (CUDA 12's on a CUDA 13 torch, any on a CPU torch) is still missing."""
    environ = dict(os.environ)
    environ["LD_LIBRARY_PATH"] = os.pathsep.join(str(d) for d in library_dirs(env))
    environ["PYTHONDONTWRITEBYTECODE"] = "1"
    return environ


# -- wheels ---------------------------------------------------------------------------------------


def ensure_wheel(w: Wheel, download: bool) -> Path:
    """The verified wheel in .cache/corpus (fetched by name and version when allowed)."""
    if w.path.is_file() and file_sha256(w.path) == w.sha256:
        return w.path
    if not download:
        raise HarnessError(f"{w.filename}: not in {WHEELS} (run without --no-download)")
    import corpus  # benchmarks/corpus.py: the one pinned, hash-checked download

    try:
        return Path(
            corpus.download_pinned(
                w.project, w.version, w.filename, w.sha256, ["manylinux_2_28_x86_64"], "3.11", w.path
            )
        )
    except corpus.CorpusError as exc:
        raise HarnessError(str(exc)) from exc


def ensure_installed(w: Wheel) -> Path:
    """``pip install --no-deps --target``, once, with the wheel's support requirements in the
    same directory (a library's RUNPATH may point into another project's package, as
    metatensor-torch's ``$ORIGIN/../../../lib`` does); renamed into place only when complete."""
    stamp = w.installed / ".loadtruth-done"
    if stamp.is_file() and stamp.read_text() == json.dumps(w.support):
        return w.installed
    INSTALLED.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=INSTALLED))
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(tmp)]
    proc = run([*cmd, str(w.path), *w.support])
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise HarnessError(f"{w.filename}: pip install --target failed: {_tail(proc)}")
    (tmp / ".loadtruth-done").write_text(json.dumps(w.support))
    shutil.rmtree(w.installed, ignore_errors=True)
    tmp.rename(w.installed)
    return w.installed


def _is_loadable_elf(path: Path) -> bool:
    """A shared object ``dlopen`` can take: ELF ``ET_DYN`` without a program interpreter
    (a PIE executable is ``ET_DYN`` too, and glibc refuses to ``dlopen`` it)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(64)
            if len(head) < 64 or head[:4] != _ELF_MAGIC or head[4] != 2 or head[5] != 1:
                return False
            e_type, _, _, _, e_phoff = struct.unpack_from("<HHIQQ", head, 16)
            e_phentsize, e_phnum = struct.unpack_from("<HH", head, 54)
            if e_type != _ET_DYN:
                return False
            fh.seek(e_phoff)
            table = fh.read(e_phentsize * e_phnum)
    except OSError:
        return False
    types = [struct.unpack_from("<I", table, i * e_phentsize)[0] for i in range(e_phnum)]
    return _PT_INTERP not in types or ".so" in path.name


GRAFTED = re.compile(r"^[^/]+\.libs/")  # auditwheel's copies: <dist>.libs/libcudart-1a2b3c4d.so.12


def compiled_files(root: Path, wheel: Path) -> list[str]:
    """Every loadable ELF file the wheel itself installed (its members; not the support
    projects beside it), relative to the target, which is the member path. Libraries that
    auditwheel grafted into ``<dist>.libs/`` are left out: no package opens them itself, they
    load as the DT_NEEDED (by their hashed names) of the libraries that link them; opened
    first with RTLD_GLOBAL, a grafted ``libcudart.so.12`` would satisfy a library that needs
    that soname, which it never does in real use (torchvision 0.25's ``_C.so`` names plain
    ``libcudart.so.12`` and no RUNPATH: on a CUDA 13 torch it fails)."""
    with zipfile.ZipFile(wheel) as zf:
        members = set(zf.namelist())
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if GRAFTED.match(rel):
            continue
        if rel in members and p.is_file() and not p.is_symlink() and _is_loadable_elf(p):
            out.append(rel)
    return out


def needed(path: Path) -> list[str]:
    """DT_NEEDED by ``readelf`` (binutils), not by torchwheel: the harness's own reading."""
    proc = run(["readelf", "-d", "-W", str(path)], timeout=60)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", proc.stdout)


def torch_requirements(wheel: Path) -> list[str]:
    """The wheel's own ``Requires-Dist: torch ...`` lines, read from METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        meta = email.parser.Parser().parsestr(zf.read(name).decode("utf-8", "replace"))
    out = []
    for line in meta.get_all("Requires-Dist") or []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == "torch":
            out.append(line)
    return out


def pin_admits(reqs: list[str], torch_version: str) -> bool:
    """Would pip keep this torch beside the wheel? Markers evaluated for this interpreter
    (CPython 3.11 on Linux x86_64, the envs' own); no requirement admits every torch."""
    version = Version(torch_version)
    for line in reqs:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if not req.specifier.contains(version, prereleases=True):
            return False
    return True


# -- units: the alternatives a package chooses among at run time -----------------------------------


# torchcodec ships one build per FFmpeg major (``libtorchcodec_core4.so`` ... ``core9``) and
# loads the one whose FFmpeg it finds: alternatives, like flavours
FFMPEG_BUILD = re.compile(r"(libtorchcodec_[a-z_]+?)\d+(\.so)$")


def units(files: list[str], alternatives: list[dict[str, Any]]) -> dict[str, list[str]]:
    """unit name -> its member files: torchwheel's release sets (``show``'s ``alternatives``)
    with the release blanked, then flavour words blanked, so ``_torch24-cpu`` and
    ``_torch29-cuda`` are one library (and torchcodec's per-FFmpeg builds one); every other
    file is a unit of its own."""
    release_key = {m: a["name"] for a in alternatives for m in a["builds"].values()}
    out: dict[str, list[str]] = {}
    for f in files:
        key = FFMPEG_BUILD.sub(r"\1~\2", FLAVOUR.sub("~", release_key.get(f, f)))
        out.setdefault(key, []).append(f)
    # a file named as a flavoured unit without its flavour word is that unit's default build,
    # which the package loads only where it has no flavour for the torch it finds
    # (torch-memory-saver: ``hook.abi3.so`` beside ``hook_cu12.abi3.so``, ``hook_cu13.abi3.so``)
    defaults = {re.sub(r"[_.-]?~", "", k): k for k, members in out.items() if len(members) > 1 and "~" in k}
    for key in list(out):
        target = defaults.get(key)
        if target is not None and target != key:
            out[target].extend(out.pop(key))
    return out


def rounds(groups: dict[str, list[str]]) -> list[list[str]]:
    """Round k holds the k-th member of every unit: no two alternatives share a process."""
    depth = max((len(m) for m in groups.values()), default=0)
    return [[m[k] for m in groups.values() if k < len(m)] for k in range(depth)]


# -- the loader ----------------------------------------------------------------------------------

_PROBE = r"""
import ctypes, json, os, select, signal, sys, time
jobs, timeout = json.load(open(sys.argv[1])), float(sys.argv[2])
try:
    import torch  # noqa: F401
except BaseException as exc:
    print("TORCH " + json.dumps(f"{type(exc).__name__}: {exc}".splitlines()[0]), flush=True)
    sys.exit(3)


def child(root, files, w):
    # passes until none loads any more: a library may need a sibling opened first (by soname,
    # or for symbols RTLD_GLOBAL makes visible), which the package's own code opens first
    sys.path.insert(0, root)
    pending, errors = list(files), {}
    while pending:
        progress = False
        for rel in list(pending):
            os.write(w, ("START " + json.dumps(rel) + "\n").encode())
            try:
                ctypes.CDLL(os.path.join(root, rel), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
                os.write(w, ("OK " + json.dumps(rel) + "\n").encode())
                pending.remove(rel)
                progress = True
            except OSError as exc:
                first = (str(exc).splitlines() or [type(exc).__name__])[0].replace(root + "/", "")
                errors[rel] = first
                os.write(w, ("TRIED " + json.dumps(rel) + "\n").encode())
        if not progress:
            break
    for rel in pending:
        os.write(w, ("FAIL " + json.dumps([rel, errors[rel]]) + "\n").encode())
    os._exit(0)


def one_child(root, files):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(root, files, w)
    os.close(w)
    buf, deadline, killed = b"", time.monotonic() + timeout, False
    while True:
        ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            killed = True
            break
        chunk = os.read(r, 65536)
        if not chunk:
            break
        buf += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    return buf.decode(errors="replace").splitlines(), os.waitstatus_to_exitcode(status), killed


for job in jobs:
    for files in job["rounds"]:
        todo = list(files)
        while todo:
            lines, code, killed = one_child(job["root"], todo)
            current = None
            for line in lines:
                kind, _, payload = line.partition(" ")
                if kind == "START":
                    current = json.loads(payload)
                elif kind == "TRIED":
                    current = None
                elif kind == "OK":
                    rel, current = json.loads(payload), None
                    print("RESULT " + json.dumps([job["id"], rel, "loads", ""]), flush=True)
                    todo.remove(rel)
                elif kind == "FAIL":
                    (rel, words), current = json.loads(payload), None
                    print("RESULT " + json.dumps([job["id"], rel, "fails", words]), flush=True)
                    todo.remove(rel)
            if current is None and todo:
                current = todo[0]  # died before it said which: the first one not answered
            if current is not None and current in todo:
                how = f"no answer within {timeout:.0f} s" if killed else f"the process ended ({'signal ' + str(-code) if code < 0 else 'exit ' + str(code)}) while opening it"
                print("RESULT " + json.dumps([job["id"], current, "fails", how]), flush=True)
                todo.remove(current)
"""


def probe_env(
    env: Env, jobs: dict[str, tuple[Path, list[list[str]]]]
) -> dict[str, dict[str, dict[str, str]]]:
    """Open the libraries of many wheels in one env: one interpreter imports torch, then forks a
    child per round of each wheel (copy-on-write: the child starts as a process that has done
    nothing but ``import torch``, at a fraction of the second a CUDA torch's import costs). A
    child that crashes or hangs is recorded against the file it was opening and the rest of its
    round goes on in a new child. Returns job id -> file -> result."""
    out: dict[str, dict[str, dict[str, str]]] = {job: {} for job in jobs}
    payload = [{"id": j, "root": str(root), "rounds": rnds} for j, (root, rnds) in jobs.items()]
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=CACHE, delete=False) as fh:
        json.dump(payload, fh)
    try:
        cmd = [str(env.python), "-c", _PROBE, fh.name, str(PROBE_TIMEOUT)]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, check=False, env=probe_environ(env), errors="replace"
        )
    finally:
        os.unlink(fh.name)
    for line in proc.stdout.splitlines():
        kind, _, data = line.partition(" ")
        if kind == "TORCH":
            raise HarnessError(f"env {env.name}: import torch failed in the probe: {json.loads(data)}")
        if kind == "RESULT":
            job, rel, status, words = json.loads(data)
            out[job][rel] = {"status": status, "words": words}
    missing = [j for j, (_, rnds) in jobs.items() if len(out[j]) != sum(map(len, rnds))]
    if missing:
        raise HarnessError(f"env {env.name}: the probe ended early (exit {proc.returncode}): {_tail(proc)}")
    return out


def judge_external(result: dict[str, str], path: Path, have: set[str], own: set[str]) -> dict[str, str]:
    """A library stopped by a missing non-torch dependency is ``external`` (it says nothing of
    torch) unless its own DT_NEEDED names a torch/CUDA-runtime library this env lacks. A
    missing sibling (a library of the wheel itself, ``own``) failed on its own account after
    every pass, so this one fails with it."""
    if result["status"] != "fails":
        return result
    m = _MISSING.match(result["words"])
    if m is None or TORCH_PROVIDED.match(m.group(1)) or m.group(1) in own:
        return result
    lacking = [n for n in needed(path) if TORCH_PROVIDED.match(n) and n not in have]
    if lacking:
        words = f"needs {', '.join(lacking)}, which this torch lacks (the loader stopped first at: {result['words']})"
        return {"status": "fails", "words": words}
    return {"status": "external", "words": result["words"]}


def follow_siblings(files: dict[str, dict[str, str]]) -> None:
    """A library that failed only because a sibling of the wheel did not load takes the
    sibling's status: ``libtorchcodec_custom_ops4.so`` needs ``libtorchcodec_core4.so``, which
    is external where FFmpeg 4 is absent, so it is external too, not a torch failure."""
    by_name = {Path(rel).name: rel for rel in files}
    for _ in range(len(files)):  # chains of siblings settle in at most this many rounds
        changed = False
        for res in files.values():
            m = _MISSING.match(res["words"]) if res["status"] == "fails" else None
            sibling = files.get(by_name.get(m.group(1), "")) if m else None
            if sibling is not None and sibling["status"] == "external":
                res["status"] = "external"
                changed = True
        if not changed:
            return


def _loader_cache(env: Env, w: Wheel) -> Path:
    return LOADER / env.name / f"{w.filename}.json"


def cached_truth(env: Env, w: Wheel, groups: dict[str, list[str]]) -> dict[str, Any] | None:
    """The loader's result of an earlier run, if it was made by this probe for these units."""
    path = _loader_cache(env, w)
    if not path.is_file():
        return None
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc if doc.get("version") == LOADER_VERSION and doc.get("groups") == groups else None


def load_truths(env: Env, todo: list[tuple[Wheel, dict[str, list[str]]]]) -> None:
    """Per file, unit and wheel: loads / fails / external, written to the loader cache."""
    if not todo:
        return
    start = time.monotonic()
    have = provided_sonames(env)
    jobs = {w.filename: (w.installed, rounds(groups)) for w, groups in todo}
    found = probe_env(env, jobs)
    for w, groups in todo:
        own = {Path(m).name for members in groups.values() for m in members}
        # a runtime the wheel's own requirements install ([[support]]: lmdeploy's nvidia-*-cu12)
        # is there for it whatever torch this is
        brought = {p.name for p in w.installed.rglob("*.so*")} if w.support else set()
        files = {
            rel: judge_external(res, w.installed / rel, have | brought, own)
            for rel, res in found[w.filename].items()
        }
        follow_siblings(files)
        unit_status, loaded_by = {}, {}
        for name, members in groups.items():
            states = {files[m]["status"] for m in members}
            unit_status[name] = (
                "loads" if "loads" in states else "fails" if states == {"fails"} else "external"
            )
            loaded_by[name] = [m for m in members if files[m]["status"] == "loads"]
        states = set(unit_status.values())
        # any unit the loader could not judge leaves the wheel undetermined, unless another fails
        wheel_status = "fails" if "fails" in states else "undetermined" if "external" in states else "loads"
        doc = {"version": LOADER_VERSION, "groups": groups, "files": files, "units": unit_status}
        doc["loaded_by"] = loaded_by
        doc["status"] = wheel_status
        path = _loader_cache(env, w)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1))
    print(f"  {env.name}: {len(todo)} wheels probed in {time.monotonic() - start:.0f} s", flush=True)


def loader_words(truth: dict[str, Any]) -> str:
    """The loader's words: for a wheel that loads, which alternatives it was that loaded (a
    build for another torch release resolving is worth seeing); else ``first_failure``."""
    if truth["status"] != "loads":
        return first_failure(truth)
    alts = {u: m for u, m in truth["loaded_by"].items() if len(truth["groups"][u]) > 1}
    return "; ".join(f"{u} loads as {', '.join(Path(x).name for x in m)}" for u, m in alts.items())


def first_failure(truth: dict[str, Any]) -> str:
    """The loader's words for a failing wheel: the first member of the first failing unit."""
    for name, status in truth["units"].items():
        if status == "fails" and name in (truth.get("unit_words") or {}):
            return f"{name}: {truth['unit_words'][name]}"
        if status == "fails":
            member = truth["groups"][name][0]
            return f"{member}: {truth['files'][member]['words']}"
    for name, status in truth["units"].items():
        if status == "external":
            member = truth["groups"][name][0]
            return f"{member}: {truth['files'][member]['words']}"
    return ""


# -- torchwheel's answers -----------------------------------------------------------------------------


def tw_show(tw: str, wheel: Path) -> dict[str, Any]:
    proc = run([tw, "show", "--format", "json", str(wheel)], timeout=1800)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise HarnessError(f"{wheel.name}: torchwheel show failed: {_tail(proc)}")
    doc: dict[str, Any] = json.loads(proc.stdout)["wheels"][0]
    return doc


def tw_matrix(tw: str, wheel: Path, minors: list[str]) -> dict[str, Any]:
    args = [a for m in minors for a in ("--torch", m)]
    proc = run([tw, "matrix", "--format", "json", *args, str(wheel)], timeout=1800)
    if not proc.stdout.strip() or proc.returncode == 2:
        raise HarnessError(f"{wheel.name}: torchwheel matrix failed: {_tail(proc)}")
    doc: dict[str, Any] = json.loads(proc.stdout)["wheels"][0]
    return doc


def matrix_cell(row: dict[str, Any], env: Env) -> dict[str, Any]:
    """The cell of the env's minor, in the column of its build when the grid has a backend
    axis (the exact backend, else one of the same CUDA major, else the CPU column)."""
    cells = row["cells"]
    by_backend: dict[str, Any] = row.get("by_backend") or {}
    column = None
    if by_backend:
        major = env.backend[:4] if env.backend != "cpu" else "cpu"
        column = next((b for b in by_backend if b == env.backend), None)
        column = column or next((b for b in by_backend if b.startswith(major)), None)
        column = column or ("cpu" if env.backend == "cpu" and "cpu" in by_backend else None)
        cells = by_backend[column] if column else {}
    if by_backend and column is None:  # the grid judges other builds only: no word on this one
        return {"fit": "none", "reason": f"no column for {env.backend}", "releases": [], "verdict": "n/a"}
    cell = dict(cells.get(env.minor) or {"fit": "absent", "reason": "no column", "releases": []})
    fit = cell["fit"]
    loads = fit in ("loads", "only") or (fit == "some" and Version(env.torch).public in cell["releases"])
    cell["verdict"] = "unknown" if fit in ("unknown", "absent") else "loads" if loads else "refuses"
    cell["column"] = column or "any"
    return cell


def tw_select(tw: str, wheel: Path, env: Env) -> dict[str, Any]:
    proc = run([tw, "select", "--python", str(env.python), "--format", "json", str(wheel)], timeout=1800)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        return {"exit": proc.returncode, "verdict": "error", "reason": _tail(proc)}
    (project,) = json.loads(proc.stdout)["projects"]
    cands = project["candidates"]
    reason = cands[0]["reason"] if cands else project.get("outcome", "")
    # the verdict's own cell where torchwheel gives one; older ones only say it in words
    said = cands[0].get("verdict") if cands else None
    unknown = said == "unknown" if said else ("unknown" in reason.lower() and proc.returncode != 0)
    verdict = "loads" if proc.returncode == 0 else "unknown" if unknown else "refuses"
    return {"exit": proc.returncode, "verdict": verdict, "reason": reason}


# -- the confusion matrix -------------------------------------------------------------------------------

CELLS = {
    "true-loads": "true loads (loader loads, torchwheel says loads)",
    "false-loads": 'false "loads" (torchwheel says loads, the loader fails)',
    "loads-despite-pin": "torchwheel says loads, the loader loads, but the wheel's own pin excludes this torch",
    "false-refusal": "false refusal on ABI/build grounds (loader loads, pin admits, torchwheel refuses)",
    "pin-refusal": "refusal from the wheel's own pin (loader loads, pin excludes, torchwheel refuses)",
    "true-refusal": "true refusal (loader fails, torchwheel refuses)",
    "unknown": "torchwheel answers unknown (matrix '?' or select says unknown)",
    "undetermined": "the loader cannot tell (only non-torch libraries are missing)",
}
PIN_WORDS = re.compile(r"requires-dist|requirement|\bpin|admits|excludes|torch[<>=!~]", re.IGNORECASE)


def classify(truth: str, admits: bool, select: dict[str, Any], cell: dict[str, Any]) -> str:
    """One (wheel, env) pair's cell: ``select`` is torchwheel's answer for this very interpreter;
    a matrix cell of '?' counts as unknown too."""
    if truth == "undetermined":
        return "undetermined"
    if select["verdict"] in ("unknown", "error") or cell["verdict"] == "unknown":
        return "unknown"
    says_loads = select["verdict"] == "loads"
    if truth == "fails":
        return "false-loads" if says_loads else "true-refusal"
    if says_loads:
        return "true-loads" if admits else "loads-despite-pin"
    return "false-refusal" if admits else "pin-refusal"


# -- the run ------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """A wheel ready to judge: installed, its units, and what torchwheel says of it."""

    wheel: Wheel
    groups: dict[str, list[str]]
    record: dict[str, Any]
    row: dict[str, Any]
    release_of: dict[str, str]  # member of a per-release set -> the torch release it names


def as_the_package_picks(truth: dict[str, Any], release_of: dict[str, str], env: Env) -> dict[str, Any]:
    """The truth of a package that ships one build per torch release: it loads the build
    for the running torch (torch-c-dlpack-ext's ``core.py`` picks ``_torch{major}{minor}``;
    metatensor ``torch-X.Y/lib``), never another release's that happens to resolve. So such
    a unit loads when the build for this torch exists and loads; a unit with no build for
    this torch does not load (the package then imports without its library, which is not
    "its compiled code loads"). Flavour sets (``_cpu``/``_cuda``) stay "one of them loads"."""
    here = Version(Version(env.torch).base_version).release
    units, words = dict(truth["units"]), dict(truth.get("unit_words") or {})
    for name, members in truth["groups"].items():
        per_release = [m for m in members if m in release_of]
        if not per_release:
            continue
        mine = [
            m
            for m in per_release
            if here[: len(release_of[m].split("."))] == tuple(map(int, release_of[m].split(".")))
        ]
        statuses = {truth["files"][m]["status"] for m in mine}
        if not mine:
            units[name] = "fails"
            shown = ", ".join(sorted({release_of[m] for m in per_release}, key=Version))
            words[name] = (
                f"no build for torch {env.minor} (the package has builds for {shown} and loads the one for the running torch)"
            )
        else:
            units[name] = "loads" if "loads" in statuses else "fails" if statuses == {"fails"} else "external"
    states = set(units.values())
    status = "fails" if "fails" in states else "undetermined" if "external" in states else "loads"
    return {**truth, "units": units, "unit_words": words, "status": status}


def prepare(w: Wheel, envs: list[Env], tw: str, download: bool) -> Prepared:
    path = ensure_wheel(w, download)
    root = ensure_installed(w)
    show = tw_show(tw, path)
    files = compiled_files(root, path)
    groups = units(files, show["torch_abi"].get("alternatives") or [])
    row = tw_matrix(tw, path, sorted({e.minor for e in envs}, key=Version))
    record: dict[str, Any] = {
        "project": w.project,
        "version": w.version,
        "source": w.source,
        "why": w.why,
        "torch_requirements": torch_requirements(path),
        "torch_abi": show["torch_abi"].get("label"),
        "torch_need": row.get("torch_need"),
        "accelerator": (show.get("accelerator") or {}).get("label"),
        "compiled_files": len(files),
        "units": len(groups),
        "envs": {},
    }
    release_of = {
        member: release
        for a in show["torch_abi"].get("alternatives") or []
        for release, member in a["builds"].items()
    }
    return Prepared(w, groups, record, row, release_of)


def judge(p: Prepared, env: Env, tw: str) -> None:
    """One (wheel, env) pair: the loader's truth (cached), the pin, select and matrix."""
    truth = cached_truth(env, p.wheel, p.groups)
    assert truth is not None, "load_truths ran first"
    truth = as_the_package_picks(truth, p.release_of, env)
    admits = pin_admits(p.record["torch_requirements"], env.torch)
    select = tw_select(tw, p.wheel.path, env)
    cell = matrix_cell(p.row, env)
    klass = classify(truth["status"], admits, select, cell)
    if klass == "pin-refusal":
        select["names_pin"] = bool(PIN_WORDS.search(select["reason"]))
    p.record["envs"][env.name] = {
        "loader": truth["status"],
        "loader_words": loader_words(truth),
        "loader_units": truth["units"],
        "loaded_by": {u: m for u, m in truth["loaded_by"].items() if len(truth["groups"][u]) > 1},
        "loader_files": truth["files"],
        "pin_admits": admits,
        "select": select,
        "matrix": cell,
        "matrix_agrees": cell["verdict"] in (select["verdict"], "n/a"),
        "class": klass,
    }
    print(f"  {env.name:14} loader {truth['status']:12} select {select['verdict']:8} -> {klass}", flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_tw = REPO / ".venv" / "bin" / "torchwheel"
    parser.add_argument(
        "--torchwheel", default=str(default_tw), help=f"the torchwheel judged (default {default_tw})"
    )
    parser.add_argument(
        "--only", action="append", default=[], help="only wheels whose file name contains this"
    )
    parser.add_argument("--envs", default="", help="only these envs (comma-separated names)")
    parser.add_argument("--reload", action="store_true", help="redo the cached loader results")
    parser.add_argument("--no-download", action="store_true", help="use only the wheels in the cache")
    parser.add_argument("--fetch-only", action="store_true", help="only download and install the wheels")
    parser.add_argument("--write-docs", action="store_true", help=f"write {DOCS.relative_to(REPO)}")
    args = parser.parse_args(argv)

    envs = load_envs()
    if args.envs:
        wanted = set(args.envs.split(","))
        unknown = wanted - {e.name for e in envs}
        if unknown:
            parser.error(f"no such env: {', '.join(sorted(unknown))}")
        envs = [e for e in envs if e.name in wanted]
    wheels = [w for w in load_wheels() if not args.only or any(s in w.filename for s in args.only)]
    if args.fetch_only:
        for w in wheels:
            try:
                ensure_wheel(w, not args.no_download)
                ensure_installed(w)
                print(f"ok {w.filename}", flush=True)
            except HarnessError as exc:
                print(f"ERROR {exc}", file=sys.stderr, flush=True)
        return 0
    tw = str(Path(args.torchwheel).resolve())
    version = run([tw, "--version"]).stdout.strip()
    env_facts = {e.name: ensure_env(e) for e in envs}
    results: dict[str, Any] = {
        "torchwheel": {"path": tw, "version": version},
        "envs": {e.name: {**env_facts[e.name], "why": e.why} for e in envs},
        "wheels": {},
        "errors": [],
    }
    prepared: list[Prepared] = []
    for w in wheels:
        try:
            prepared.append(prepare(w, envs, tw, not args.no_download))
        except HarnessError as exc:
            print(f"ERROR {exc}", file=sys.stderr, flush=True)
            results["errors"].append(str(exc))
    for env in envs:
        todo = [(p.wheel, p.groups) for p in prepared]
        if not args.reload:
            todo = [(w, g) for w, g in todo if cached_truth(env, w, g) is None]
        try:
            load_truths(env, todo)
        except HarnessError as exc:
            print(f"ERROR {exc}", file=sys.stderr, flush=True)
            results["errors"].append(str(exc))
    for p in prepared:
        print(p.wheel.filename, flush=True)
        for env in envs:
            if cached_truth(env, p.wheel, p.groups) is not None:
                judge(p, env, tw)
        results["wheels"][p.wheel.filename] = p.record
    CACHE.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True))
    counts = tally(results)
    for klass, n in counts.items():
        print(f"{n:4}  {CELLS[klass]}")
    if args.write_docs:
        DOCS.write_text(write_docs(results) + kept_sections(DOCS), encoding="utf-8")
        print(f"wrote {DOCS.relative_to(REPO)}")
    return 1 if results["errors"] else 0


def tally(results: dict[str, Any]) -> dict[str, int]:
    counts = dict.fromkeys(CELLS, 0)
    for rec in results["wheels"].values():
        for pair in rec["envs"].values():
            counts[pair["class"]] += 1
    return counts


# -- docs/evidence/loadtruth.md ----------------------------------------------------------------------------------

SHORT = {
    "true-loads": "ok",
    "false-loads": "**FALSE LOADS**",
    "loads-despite-pin": "**loads, pin excludes**",
    "false-refusal": "**false refusal**",
    "pin-refusal": "pin",
    "true-refusal": "refused",
    "unknown": "?",
    "undetermined": "n/a",
}


def _row(pair: dict[str, Any]) -> str:
    if pair["loader"] == "loads":
        return "loader loads, pin admits" if pair["pin_admits"] else "loader loads, pin excludes"
    return "loader fails" if pair["loader"] == "fails" else "loader cannot tell"


def _column(pair: dict[str, Any]) -> str:
    if pair["class"] == "unknown" or pair["select"]["verdict"] in ("unknown", "error"):
        return "unknown"
    return str(pair["select"]["verdict"])


def write_docs(results: dict[str, Any]) -> str:
    """The page: what ran, the confusion matrix, every pair of every non-empty cell, the grid."""
    wheels, envs = results["wheels"], results["envs"]
    names = sorted(envs, key=lambda n: Version(envs[n]["torch"]))
    pairs = [(f, e, rec["envs"][e]) for f, rec in wheels.items() for e in names if e in rec["envs"]]
    counts = tally(results)
    corpus_n = sum(rec["source"] == "corpus" for rec in wheels.values())
    out = [
        "# Load truth: torchwheel's verdicts against the dynamic loader",
        "",
        "Generated by `python benchmarks/loadtruth.py --write-docs` (method: its docstring). Each wheel",
        "is installed with `pip install --no-deps --target`; in each torch environment a fresh",
        "interpreter runs `import torch`, then `ctypes.CDLL(path, RTLD_NOW | RTLD_GLOBAL)` on every ELF",
        "library of the wheel (not the copies auditwheel grafted into `<dist>.libs/`: they load as",
        "dependencies). Alternatives form one unit: of one build per flavour (`_cpu`/`_cuda`,",
        "torchcodec's per-FFmpeg builds) one must load; of one build per torch release, the build",
        "for the env's torch must exist and load, as the package picks it. A wheel loads when every",
        "unit does. torchwheel's answer is `select --python ENV/bin/python` (exit 0 chosen, 1 nothing fits), with the",
        "`matrix --format json` cell of the env's minor and build beside it.",
        "",
        f"torchwheel judged: `{results['torchwheel']['version']}`",
        "",
        "| env | torch | CUDA | why |",
        "|---|---|---|---|",
        *(
            f"| {n} | {envs[n]['torch']} | {envs[n]['cuda'] or 'CPU'} | {md_cell(envs[n]['why'])} |"
            for n in names
        ),
        "",
        f"{len(wheels)} wheels ({corpus_n} from `benchmarks/corpus.toml`, {len(wheels) - corpus_n} from "
        f"`benchmarks/loadtruth.toml`), {sum(r['compiled_files'] for r in wheels.values())} compiled files, "
        f"{len(pairs)} (wheel, env) pairs.",
        "",
        "## Confusion matrix",
        "",
        "Rows: the loader's truth and the wheel's own `Requires-Dist: torch`; columns: torchwheel's",
        "`select` (unknown: its reason says the build torch is unknown, or the matrix cell is `?`).",
        "",
        "| loader \\ torchwheel | says loads | refuses | unknown |",
        "|---|--:|--:|--:|",
    ]
    grid: dict[tuple[str, str], int] = {}
    for _, _, pair in pairs:
        key = (_row(pair), _column(pair))
        grid[key] = grid.get(key, 0) + 1
    for label in (
        "loader loads, pin admits",
        "loader loads, pin excludes",
        "loader fails",
        "loader cannot tell",
    ):
        row = [str(grid.get((label, col), 0)) for col in ("loads", "refuses", "unknown")]
        out.append(f"| {label} | " + " | ".join(row) + " |")
    out += ["", *(f"- {CELLS[k]}: **{n}**" for k, n in counts.items()), ""]
    for klass, title in CELLS.items():
        cell = [(f, e, p) for f, e, p in pairs if p["class"] == klass]
        if not cell:
            continue
        out += [f"## {title[0].upper()}{title[1:]}: {len(cell)}", ""]
        out += ["| wheel | envs | torchwheel's reason | the loader's words |", "|---|---|---|---|"]
        grouped: dict[tuple[str, str, str], list[str]] = {}
        for f, e, p in cell:
            reason = p["select"]["reason"]
            if klass == "pin-refusal" and not p["select"].get("names_pin"):
                reason += " (**does not name the pin**)"
            if not p["matrix_agrees"]:
                reason += f" [matrix: {p['matrix']['fit']}: {p['matrix']['reason']}]"
            grouped.setdefault((f, reason, p["loader_words"] or "loads"), []).append(e)
        for (f, reason, words), es in grouped.items():
            out.append(f"| `{f}` | {', '.join(es)} | {md_cell(reason)} | {md_cell(words)} |")
        out.append("")
    disagree = [(f, e, p) for f, e, p in pairs if not p["matrix_agrees"]]
    out += ["## Where `matrix` and `select` disagree", ""]
    if disagree:
        out += ["| wheel | env | select | matrix cell (column) |", "|---|---|---|---|"]
        out += [
            f"| `{f}` | {e} | {p['select']['verdict']} | {p['matrix']['fit']} ({p['matrix']['column']}): "
            f"{md_cell(p['matrix']['reason'])} |"
            for f, e, p in disagree
        ]
    else:
        out.append("Nowhere: the matrix cell of every env's minor and build gives select's answer.")
    out += [
        "",
        "## Per wheel and env",
        "",
        "Cells: " + "; ".join(f"{v} = {CELLS[k]}" for k, v in SHORT.items()) + ".",
        "",
        "| wheel | torch need (torchwheel) | pin | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for f, rec in sorted(wheels.items()):
        pin = ", ".join(r.split(";")[0].strip() for r in rec["torch_requirements"]) or "none"
        cells = [SHORT[rec["envs"][e]["class"]] if e in rec["envs"] else "" for e in names]
        need = f"{rec['torch_need']}; {rec['accelerator']}"
        out.append(f"| `{f}` | {md_cell(need)} | {md_cell(pin)} | " + " | ".join(cells) + " |")
    if results["errors"]:
        out += ["", "## Errors", "", *(f"- {md_cell(e)}" for e in results["errors"])]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
