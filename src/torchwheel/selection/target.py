"""Where a wheel would go: an interpreter (this one or ``--python PATH``) or a plan.

An interpreter is asked in a subprocess, because its tags and its install paths are its own:
``packaging.tags.sys_tags()`` (packaging is put on its path for the probe only),
``sysconfig.get_paths()``, ``site.getsitepackages()`` and the environment markers. It runs
with ``-I -S -B``, so nothing of its environment runs (no ``site``: no ``.pth`` import line,
no ``sitecustomize``) and nothing is written; what ``site`` would add to its path, and its
torch distribution (version, ``version.py``, requirements; torch is never imported), are read
here from disk, bounded (``wheel.searchpath``, ``wheel.installed``). Its answer is read
within a bound and parsed by ``safejson``. A plan (``--torch 2.12 --python-version 3.12
--platform ...``) is the same description written by hand, for choosing what a build farm or
a Dockerfile will get.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import field, replace
from pathlib import Path

import packaging
from packaging import tags as ptags
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.version import InvalidVersion, Version

from torchwheel import limits, safejson
from torchwheel.errors import InputError, clipped, quoted
from torchwheel.frozen import frozen
from torchwheel.safeopen import read_head
from torchwheel.torchabi import backend
from torchwheel.torchabi.accelerators import torch_build_of_requirements
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.torchabi.cuda_archs import parse_gpu
from torchwheel.torchabi.torch_named import named_torch
from torchwheel.torchabi.torch_releases import Minor, minor_of
from torchwheel.torchabi.torchlibs import VERSION_PY_BYTES
from torchwheel.version import FeatureVersion
from torchwheel.wheel.headers import parse_headers
from torchwheel.wheel.installed import locate, metadata_text
from torchwheel.wheel.searchpath import search_path, venv_config


@frozen
class TorchTarget:
    """The environment a wheel is chosen for.

    ``torch``: the installed (or planned) torch, None when there is none. ``tags``: the
    supported wheel tags, best first (``sys_tags()`` order, which is how pip ranks). For an
    interpreter also its path and ``sysconfig`` paths (the install scheme).
    ``torch_minor_only``: a plan that named a minor (``--torch 2.9``): the target may have any
    release of it, so a wheel fits when it loads on one of them (``torch==2.9.1`` does).
    ``build``: the torch's build (CPU, CUDA 13.0, ROCm, XPU), read from its ``version.py``
    (never imported), its ``+cu130`` label or its ``nvidia-*`` requirements, or a plan's
    ``--torch-backend``; None when nothing says (then the build is not judged, and said so).
    ``gpu``: the GPU's compute capability (90 for ``sm_90``), from ``--gpu`` or, for this
    machine, ``nvidia-smi`` when it is there; None: not known, GPU code not judged.
    ``search_path``: the directories its ``importlib.metadata`` finds distributions in (its
    ``sys.path``, in order), and ``prefixes`` its installation prefixes (venv, base): what
    ``doctor`` reads, and the boundary nothing it reads may leave. ``not_run``: the ``.pth``
    import lines of its site-packages that were not run (``file:line: text``; ``more_not_run``
    counts those past the first 64) and ``.pth`` files not read: whatever they would add to
    the search path is not on ``search_path``.
    """

    description: str
    torch: Version | None
    tags: tuple[Tag, ...]
    python_version: str
    markers: dict[str, str]
    python: str | None = None
    paths: dict[str, str] = field(default_factory=dict)
    torch_minor_only: bool = False
    build: TorchBuild | None = None
    gpu: int | None = None
    search_path: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()
    more_not_run: int = 0


# Run as ``python -I -S -B``: no ``site`` (so no ``.pth`` line and no ``sitecustomize`` of
# the environment runs), no environment variables, no bytecode written. A virtual
# environment's prefix is set first, as ``site.venv()`` sets it, so that ``site`` and
# ``sysconfig`` answer for it (its site-packages, its install scheme, Debian's patches
# included); the files of the environment are read by torchwheel itself, never here.
_PROBE = r"""
import sys
venv, system_site = sys.argv[2], sys.argv[3] == "1"
if venv:
    sys.prefix = sys.exec_prefix = venv
import json, site, sysconfig
if venv:
    prefixes = [venv] + ([sys.base_prefix, sys.base_exec_prefix] if system_site else [])
else:
    prefixes = [sys.prefix, sys.exec_prefix]
sites = site.getsitepackages(prefixes)
stdlib = [p for p in sys.path if isinstance(p, str)]
paths = sysconfig.get_paths()
sys.path.insert(0, sys.argv[1])
from packaging import tags
from packaging.markers import default_environment
print(json.dumps({
    "python": sys.executable, "version": ".".join(map(str, sys.version_info[:3])),
    "stdlib": stdlib, "sites": sites, "paths": paths,
    "prefixes": [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix],
    "tags": [str(t) for t in tags.sys_tags()], "markers": default_environment(),
}))
"""

_PROBE_TIMEOUT = 120
# the probe's answer: ~50 KB (a thousand tags); an interpreter that prints more is no Python
# answering this probe, and is stopped rather than read (a flood is not held in memory)
_PROBE_ANSWER_BYTES = 4 << 20
_STDERR_KEPT = 4096  # the end of its stderr, for the one line that says why it failed

_ANSWER = safejson.Object(
    {
        "python": safejson.Str(),
        "version": safejson.Str(pattern=r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}"),
        "stdlib": safejson.List(safejson.Str()),
        "sites": safejson.List(safejson.Str()),
        "paths": safejson.Object(other=safejson.Str()),
        "prefixes": safejson.List(safejson.Str()),
        "tags": safejson.List(
            safejson.Str(pattern=r"[A-Za-z0-9_]{1,200}-[A-Za-z0-9_]{1,200}-[A-Za-z0-9_]{1,200}")
        ),
        "markers": safejson.Object(other=safejson.Str()),
    },
    required=("python", "version", "stdlib", "sites", "paths", "prefixes", "tags", "markers"),
)


def _packaging_parent() -> str:
    return str(Path(packaging.__file__).resolve().parent.parent)


def _interpreter(python: str | None) -> str:
    """The interpreter to probe: ``--python`` as given (a bare name looked up on ``PATH``),
    else this one. An empty ``--python`` names no interpreter (it is not "this one")."""
    if python is None:
        return sys.executable
    if not python.strip():
        raise InputError(
            "--python '': names no interpreter (give a path, or leave --python out for this one)",
            reference="bad-option-value",
        )
    if "\x00" in python:
        raise InputError(
            f"--python {quoted(python, 80)}: a path with a NUL byte names no file",
            reference="bad-option-value",
        )
    if Path(python).is_dir():
        raise InputError(
            f"--python {python}: a directory, not an interpreter (a venv's is {Path(python) / 'bin' / 'python'})",
            reference="interpreter-unusable",
        )
    if os.sep not in python and (os.altsep is None or os.altsep not in python):
        found = shutil.which(python)
        if found is None:
            raise InputError(
                f"--python {python}: not found on PATH", reference="not-found", field="--python", value=python
            )
        return found
    return python


def probe(python: str | None = None) -> TorchTarget:
    """Describe an interpreter without running its environment's code (``-I -S``; the
    search path, ``.pth`` path lines and torch's metadata read here: ``wheel.searchpath``);
    ``InputError`` (one line) when it does not run or answer."""
    exe = _interpreter(python)
    venv = venv_config(exe)
    out = _run_probe(
        [exe, "-I", "-S", "-B", "-c", _PROBE, _packaging_parent(),
         venv.prefix if venv else "", "1" if venv is None or venv.system_site else "0"],
        exe,
    )  # fmt: skip
    try:
        doc = safejson.load(
            out, f"--python {exe}: its answer to the probe", _ANSWER, reference="interpreter-unusable"
        )
    except InputError as exc:
        said = out.decode("utf-8", "replace").strip().splitlines()[:1]
        if not said or not said[0].startswith("{"):
            answer = f"it answered {quoted(said[0], 60)}" if said else "it printed nothing"
            raise InputError(
                f"--python {exe}: not a Python interpreter ({answer} to a Python probe)",
                reference="interpreter-unusable",
            ) from None
        raise InputError(
            f"--python {exe}: unexpected probe answer ({exc})", reference="interpreter-unusable"
        ) from None
    limits.current().max_tags.check(f"--python {exe}: its tags", len(doc["tags"]))
    major, minor = (int(x) for x in doc["version"].split(".")[:2])
    found = search_path(doc["stdlib"], doc["sites"], (major, minor))
    torch, version_py, requires = _torch_distribution(found.directories)
    try:
        build = torch_build_of(torch, version_py, requires, doc["markers"])
    except InputError as exc:
        raise InputError(
            f"--python {exe}: its torch's build cannot be read ({exc})", reference="torch-unreadable"
        ) from exc
    gpu = detected_gpu()
    not_run = tuple(str(n) for n in found.not_run) + found.unread_pth
    return TorchTarget(
        description=f"{doc['python']} (Python {doc['version']})"
        + (f", GPU sm_{gpu} (nvidia-smi)" if gpu is not None else ""),
        torch=torch,
        tags=tuple(Tag(*t.split("-")) for t in doc["tags"]),
        python_version=doc["version"],
        markers=dict(doc["markers"]),
        python=doc["python"],
        paths=dict(doc["paths"]),
        build=build,
        gpu=gpu,
        search_path=_strings(list(found.directories)),
        prefixes=_strings(doc["prefixes"]),
        not_run=not_run,
        more_not_run=found.more_not_run,
    )


def _run_probe(argv: list[str], exe: str) -> bytes:
    """The probe's stdout, read within ``_PROBE_ANSWER_BYTES`` and ``_PROBE_TIMEOUT`` (an
    interpreter that floods or hangs is killed); ``InputError`` when it fails, with the last
    line of its stderr, clipped."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
    except (OSError, ValueError) as exc:
        raise InputError(
            f"--python {exe}: does not run ({getattr(exc, 'strerror', None) or exc})",
            reference="interpreter-unusable",
        ) from exc
    out, err = bytearray(), bytearray()
    flooded = threading.Event()

    def pump(fd: int, buf: bytearray, keep_end: bool) -> None:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            buf += chunk
            if keep_end:
                del buf[:-_STDERR_KEPT]
            elif len(buf) > _PROBE_ANSWER_BYTES:
                flooded.set()
                proc.kill()
                return

    assert proc.stdout is not None and proc.stderr is not None
    readers = [
        threading.Thread(target=pump, args=(proc.stdout.fileno(), out, False), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr.fileno(), err, True), daemon=True),
    ]
    for t in readers:
        t.start()
    try:
        code = proc.wait(timeout=_PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise InputError(
            f"--python {exe}: did not answer the probe within {_PROBE_TIMEOUT} s",
            reference="interpreter-unusable",
        ) from None
    finally:
        for t in readers:
            t.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
    if flooded.is_set():
        raise InputError(
            f"--python {exe}: not a Python interpreter (it printed more than {_PROBE_ANSWER_BYTES:,} bytes "
            "in answer to a Python probe)",
            reference="interpreter-unusable",
        )
    if code != 0:
        last = (err.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
        raise InputError(
            f"--python {exe}: the probe failed ({clipped(last, 160)})", reference="interpreter-unusable"
        )
    return bytes(out)


def _torch_distribution(search: Iterable[str]) -> tuple[Version | None, str | None, list[str]]:
    """The environment's torch as ``importlib.metadata`` would find it on ``search``: its
    version, the start of its ``torch/version.py`` and its requirements, all read through
    ``safeopen`` (a FIFO, a device or a huge file costs nothing); (None, None, []) without one."""
    found = locate(search, "torch")
    if found is None:
        return None, None, []
    try:
        headers = parse_headers(metadata_text(found))
    except OSError as exc:
        raise InputError(
            f"{found}: its metadata cannot be read ({exc.strerror or exc})", reference="torch-unreadable"
        ) from exc
    raw = str(headers.get("Version") or "").strip()
    try:
        torch = Version(limits.check_version(f"{found}: torch's version", raw))
    except InvalidVersion as exc:
        raise InputError(
            f"{found}: torch's version {quoted(raw, 40)} is not a version", reference="torch-unreadable"
        ) from exc
    requires = [
        str(r) for r in headers.get_all("Requires-Dist") or []
    ]  # markers kept: torch_build_of reads them
    try:
        head = read_head(found.parent / "torch" / "version.py", VERSION_PY_BYTES)
        version_py: str | None = head.decode("utf-8", "replace")
    except OSError:
        version_py = None
    return torch, version_py, requires


def _strings(value: object) -> tuple[str, ...]:
    """A list of paths from the probe's answer; anything else in it is dropped."""
    return tuple(v for v in value if isinstance(v, str) and v) if isinstance(value, list) else ()


def with_gpu(target: TorchTarget, gpu: str) -> TorchTarget:
    """The target with the GPU ``--gpu`` names (``sm_90``, ``9.0``), over any detected."""
    cc = parse_gpu(gpu)
    return replace(target, gpu=cc, description=f"{target.description}, GPU sm_{cc}")


def detected_gpu() -> int | None:
    """The first GPU's compute capability as ``nvidia-smi`` reports it (device 0, the one
    torch uses by default), or None: no ``nvidia-smi``, no GPU, or an answer it cannot read.
    Never required: without it the GPU code is simply not judged."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT,
        )
        first = (proc.stdout.strip().splitlines() or [""])[0]
        return parse_gpu(first) if proc.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, InputError):
        return None


def torch_build_of(
    torch: Version | None, version_py: str | None, requires: list[str], markers: Mapping[str, str]
) -> TorchBuild | None:
    """A torch's build from what its distribution says, most direct first: ``version.py``
    (``cuda = '13.0'``), the local label (``+cu130``), the CUDA runtime its requirements
    install in that environment (``markers``: PyPI's Windows and macOS torch carry the
    Linux-only ``cuda-toolkit`` line too)."""
    if torch is None:
        return None
    if isinstance(version_py, str) and version_py:
        return backend.from_version_py_text(version_py)
    from_label = backend.from_local_label(torch.local)
    if from_label is not None:
        return from_label
    return torch_build_of_requirements(_requirements(requires), markers)


def _requirements(texts: list[str]) -> list[Requirement]:
    """The lines that parse; one an installer could not read brings nothing either."""
    out = []
    for text in texts:
        try:
            out.append(Requirement(text))
        except (InvalidRequirement, TypeError):
            continue
    return out


def _platforms(platform: str) -> list[str]:
    """One ``--platform`` and the older platforms it implies, the way pip expands them:
    ``manylinux_2_28`` admits every ``manylinux_2_k`` (k <= 28) and the legacy aliases,
    ``macosx_14_0_arm64`` every older macOS of that arch."""
    if platform.startswith("manylinux_2_"):
        _, _, rest = platform.partition("manylinux_2_")
        minor_text, _, arch = rest.partition("_")
        if minor_text.isdigit():
            top = int(minor_text)
            out = [f"manylinux_2_{k}_{arch}" for k in range(top, 4, -1)]
            aliases = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
            return out + [f"{alias}_{arch}" for k, alias in aliases.items() if k <= top]
    if platform.startswith("macosx_"):
        parts = platform.split("_")
        if len(parts) >= 4 and parts[1].isdigit() and parts[2].isdigit():
            return list(ptags.mac_platforms((int(parts[1]), int(parts[2])), "_".join(parts[3:])))
    return [platform]


def _plan_markers(python_version: str, platforms: list[str]) -> dict[str, str]:
    """Markers a plan implies: Python version from the plan, OS from the platform tag."""
    env = {k: str(v) for k, v in default_environment().items()}
    major_minor = ".".join(python_version.split(".")[:2])
    env.update(
        python_version=major_minor,
        python_full_version=python_version if python_version.count(".") == 2 else major_minor + ".0",
    )
    first = platforms[0] if platforms else ""
    if first.startswith(("manylinux", "musllinux", "linux")):
        env.update(sys_platform="linux", platform_system="Linux", os_name="posix")
    elif first.startswith("macosx"):
        env.update(sys_platform="darwin", platform_system="Darwin", os_name="posix")
    elif first.startswith("win"):
        env.update(sys_platform="win32", platform_system="Windows", os_name="nt")
    return env


def target_from_options(
    torch: str | None,
    python_version: str | None,
    platforms: tuple[str, ...],
    torch_backend: str | None = None,
) -> TorchTarget:
    """A hand-written target: unspecified parts default to this interpreter's (the torch
    build too, when the torch is this interpreter's; for another torch without
    ``--torch-backend`` the build is not known)."""
    here = probe_here()
    if torch_backend is not None:
        build: TorchBuild | None = backend.parse_backend(torch_backend)
    else:
        build = here.build if torch is None else None
    torch_version = named_torch(torch) if torch else here.torch
    minor_only = torch_version is not None and torch is not None and len(torch_version.release) == 2
    version = python_version or here.python_version
    try:
        py = tuple(int(x) for x in version.split(".")[:2])
    except ValueError as exc:
        raise InputError(f"--python-version {version!r}: expected X.Y", reference="bad-option-value") from exc
    plats = [p for given in platforms for p in _platforms(given)] or None
    tags: list[Tag] = list(ptags.cpython_tags(py, platforms=plats))
    tags += list(ptags.compatible_tags(py, platforms=plats))
    where = ", ".join(platforms) or "this platform"
    on = f", torch backend {build.backend}" if build is not None else ""
    return TorchTarget(
        description=f"plan: Python {version}, {where}{on}",
        torch=torch_version,
        tags=tuple(dict.fromkeys(tags)),
        python_version=version,
        markers=_plan_markers(version, plats or [t.platform for t in here.tags[:1]]),
        torch_minor_only=minor_only,
        build=build,
    )


def markers_for_tags(tags: frozenset[Tag]) -> dict[str, str]:
    """The environment a wheel's own tags describe (its platform's OS; the lowest CPython it
    names), for evaluating its requirements' markers where no target is given (``index``,
    ``matrix``)."""
    pythons = sorted(
        (int(t.interpreter[3:]), t.interpreter)
        for t in tags
        if t.interpreter[:3] == "cp3" and t.interpreter[3:].isdigit()
    )
    version = f"3.{pythons[0][0] % 100}" if pythons else ".".join(map(str, sys.version_info[:2]))
    return _plan_markers(version, sorted(t.platform for t in tags))


def probe_here() -> TorchTarget:
    """This interpreter, without a subprocess (same answers as ``probe()``)."""
    import importlib.metadata as m
    import sysconfig

    build = None
    try:
        dist = m.distribution("torch")
        torch: Version | None = Version(dist.version)
        try:
            head = read_head(Path(str(dist.locate_file("torch/version.py"))), VERSION_PY_BYTES)
            version_py: str | None = head.decode("utf-8", "replace")
        except OSError:
            version_py = None
        requires = list(dist.requires or [])
        markers = {k: str(v) for k, v in default_environment().items()}
        build = torch_build_of(torch, version_py, requires, markers)
    except m.PackageNotFoundError:
        torch = None
    version = ".".join(map(str, sys.version_info[:3]))
    return TorchTarget(
        description=f"{sys.executable} (Python {version})",
        torch=torch,
        tags=tuple(ptags.sys_tags()),
        python_version=version,
        markers={k: str(v) for k, v in default_environment().items()},
        python=sys.executable,
        paths=dict(sysconfig.get_paths()),
        build=build,
        search_path=tuple(p for p in sys.path if p),
        prefixes=(sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix),
    )


def installed_torch() -> Minor | None:
    """The torch minor of the environment running torchwheel, if any."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return minor_of(FeatureVersion.parse(version("torch").split("+", 1)[0]))
    except (PackageNotFoundError, ValueError):
        return None
