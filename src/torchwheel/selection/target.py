"""Where a wheel would go: an interpreter (this one or ``--python PATH``) or a plan.

An interpreter is asked in a subprocess, because its tags, its torch and its install paths
are its own: ``packaging.tags.sys_tags()`` (packaging is put on its path for the probe only,
*after* torch was looked up, so our own torch can never be mistaken for its), the torch
distribution's version from ``importlib.metadata`` (torch is never imported: a second or
more, and a broken torch must not stop the answer), ``sysconfig.get_paths()`` and the
environment markers. A plan (``--torch 2.12 --python-version 3.12 --platform ...``) is the
same description written by hand, for choosing what a build farm or a Dockerfile will get.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import field, replace
from pathlib import Path

import packaging
from packaging import tags as ptags
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.version import InvalidVersion, Version

from torchwheel import limits
from torchwheel.errors import InputError, quoted
from torchwheel.frozen import frozen
from torchwheel.torchabi import backend
from torchwheel.torchabi.accelerators import torch_build_of_requirements
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.torchabi.cuda_archs import parse_gpu
from torchwheel.torchabi.torch_releases import Minor, minor_of
from torchwheel.version import FeatureVersion


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
    ``doctor`` reads, and the boundary nothing it reads may leave.
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


_PROBE = r"""
import importlib.metadata as m, json, sys, sysconfig
version_py, requires = None, []
try:
    dist = m.distribution("torch")
    torch = dist.version
    requires = list(dist.requires or [])
    try:
        with open(dist.locate_file("torch/version.py"), encoding="utf-8") as fh:
            version_py = fh.read(1 << 16)
    except OSError:
        pass
except m.PackageNotFoundError:
    torch = None
paths = sysconfig.get_paths()
search = [p for p in sys.path if isinstance(p, str)]
prefixes = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
sys.path.insert(0, sys.argv[1])
from packaging import tags
from packaging.markers import default_environment
print(json.dumps({
    "torch": torch, "paths": paths, "version_py": version_py, "requires": requires,
    "search_path": search, "prefixes": prefixes,
    "python": sys.executable, "version": ".".join(map(str, sys.version_info[:3])),
    "tags": [str(t) for t in tags.sys_tags()], "markers": default_environment(),
}))
"""

_PROBE_TIMEOUT = 120


def _packaging_parent() -> str:
    return str(Path(packaging.__file__).resolve().parent.parent)


def probe(python: str | None = None) -> TorchTarget:
    """Describe an interpreter; ``InputError`` (one line) when it does not run or answer."""
    exe = python or sys.executable
    if Path(exe).is_dir():
        raise InputError(
            f"--python {exe}: a directory, not an interpreter (a venv's is {Path(exe) / 'bin' / 'python'})"
        )
    try:
        proc = subprocess.run(
            [exe, "-I", "-c", _PROBE, _packaging_parent()],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"--python {exe}: does not run ({exc})") from exc
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"--python {exe}: the probe failed ({last})")
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        said = proc.stdout.strip().splitlines()[:1]
        answer = f"it answered {quoted(said[0], 60)}" if said else "it printed nothing"
        raise InputError(f"--python {exe}: not a Python interpreter ({answer} to a Python probe)") from None
    try:
        torch = Version(doc["torch"]) if doc["torch"] else None
        build = torch_build_of(torch, doc.get("version_py"), doc.get("requires") or [], doc["markers"])
    except (TypeError, KeyError, InvalidVersion, InputError) as exc:
        raise InputError(f"--python {exe}: unexpected probe answer ({exc})") from exc
    gpu = detected_gpu()
    return TorchTarget(
        description=f"{doc['python']} (Python {doc['version']})"
        + (f", GPU sm_{gpu} (nvidia-smi)" if gpu is not None else ""),
        torch=torch,
        tags=tuple(t for s in doc["tags"] for t in ptags.parse_tag(s)),
        python_version=doc["version"],
        markers=dict(doc["markers"]),
        python=doc["python"],
        paths=dict(doc["paths"]),
        build=build,
        gpu=gpu,
        search_path=_strings(doc.get("search_path")),
        prefixes=_strings(doc.get("prefixes")),
    )


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
    try:
        torch_version = Version(limits.check_version("--torch", torch)) if torch else here.torch
    except InvalidVersion as exc:
        raise InputError(f"--torch {torch!r}: not a version") from exc
    minor_only = torch_version is not None and torch is not None and len(torch_version.release) == 2
    version = python_version or here.python_version
    try:
        py = tuple(int(x) for x in version.split(".")[:2])
    except ValueError as exc:
        raise InputError(f"--python-version {version!r}: expected X.Y") from exc
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
            version_py = Path(str(dist.locate_file("torch/version.py"))).read_text("utf-8")[: 1 << 16]
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
