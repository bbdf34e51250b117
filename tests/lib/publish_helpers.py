"""Helpers for the publishing tests (index, variants, matrix): one release built for several
torch targets from the fixture binaries, stub torch distributions, installers run offline."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from .helpers import fixture_wheels_module, fresh_venv, install_into, torchwheel
from .release_set import stub_torch_wheel

PLAT = "manylinux_2_28_x86_64"
TAGS = f"cp39-abi3-{PLAT}"
# build -> (fixture binary, the author's requirement, the torch it targets)
BUILDS = {
    "210": ("elf_marker_2_10", "torch>=2.10", "2.10"),  # stable, target 2.10
    "212": ("elf_marker_2_12_tag", "torch>=2.10", "2.12"),  # stable, marker 2.12 (tag narrows)
    "213": ("elf_unstable_cpp", "torch==2.13.*", "2.13"),  # version-locked build for 2.13
}
PLAIN = f"twidx-1.0.0-{TAGS}.whl"


def untagged_builds(
    built: dict[str, Path], out: Path, dist: str = "twidx", also: tuple[str, ...] = ()
) -> dict[str, Path]:
    """Build -> an untagged wheel of ``dist`` 1.0.0, one folder each: every build has the same
    file name, as a project's CI produces them (written by the fixture writer, not torchwheel).
    Each module is named for the init hook its binary exports (``PyInit_elf_marker_2_10``), so
    that `check` finds nothing broken in them (TW304). ``also``: requirements besides torch (a
    dependency the registry holds)."""
    wm = fixture_wheels_module()
    files = {}
    for build, (binary, req, _) in BUILDS.items():
        member = ((f"{dist}/{binary}.abi3.so", binary),)
        spec = wm.WheelSpec("release", dist, TAGS, member, requires=(req, *also))
        files[build] = wm.write_wheel(out / build / spec.filename, spec, built)
    return files


def _tag(*args: str) -> None:
    result = torchwheel("tag", *args)
    assert result.returncode == 0, result.stderr


def labelled_release(built: dict[str, Path], work: Path, also: tuple[str, ...] = ()) -> Path:
    """The per-target route: each build tagged on its own with ``--local-label torchX.Y``
    (``twidx-1.0.0+torch2.12-...``), all in one folder."""
    out = work / "labelled"
    for build, wheel in untagged_builds(built, work / "raw", also=also).items():
        _tag("-w", str(out), "--local-label", f"torch{BUILDS[build][2]}", str(wheel))
    return out


DEPENDENCY = "twdep"  # a pure dependency the registry stand-in holds


def registry(built: dict[str, Path], root: Path, torches: tuple[str, ...] = ("2.12.0", "2.14.0")) -> Path:
    """A stand-in for the public registry, as a PEP 503 index (``root/simple``) written the
    way a registry serves one (``#sha256=``, no torchwheel): ``twidx`` 1.1.0, a newer release
    built for another torch (the version-locked 2.13 binary) whose requirement does not say
    so (``torch>=2.10``); the dependency ``twdep`` 1.0.0; stub torches."""
    wm = fixture_wheels_module()
    files = root / "files"
    newer = wm.WheelSpec(
        "registry", "twidx", TAGS, (("twidx/elf_unstable_cpp.abi3.so", "elf_unstable_cpp"),),
        requires=("torch>=2.10", f"{DEPENDENCY}>=1"), version="1.1.0",
    )  # fmt: skip
    wm.write_wheel(files / newer.filename, newer, built)
    dep = wm.WheelSpec("registry", DEPENDENCY, "py3-none-any", (), requires=())
    wm.write_wheel(files / dep.filename, dep, built)
    for version in torches:
        stub_torch_wheel(version, files)
    simple = root / "simple"
    projects: dict[str, list[Path]] = {}
    for f in sorted(files.iterdir()):
        projects.setdefault(f.name.split("-", 1)[0].replace("_", "-"), []).append(f)
    simple.mkdir(parents=True)
    (simple / "index.html").write_text("".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects)))
    for name, found in projects.items():
        (simple / name).mkdir()
        links = [
            f'<a href="../../files/{quote(f.name)}#sha256={hashlib.sha256(f.read_bytes()).hexdigest()}">'
            f"{f.name}</a>\n"
            for f in found
        ]
        (simple / name / "index.html").write_text("".join(links))
    return simple


def labelled(build: str) -> str:
    return f"twidx-1.0.0+torch{BUILDS[build][2]}-{TAGS}.whl"


def variant_release(built: dict[str, Path], work: Path) -> Path:
    """The variant route: one version, the 2.10 build as the plain fallback, and a variant
    wheel per build (``...-torch2.12.whl``); each build tagged on its own with ``--variant``."""
    out = work / "variants"
    out.mkdir(parents=True)
    for build, wheel in untagged_builds(built, work / "raw").items():
        each = work / f"tagged-{build}"
        _tag("-w", str(each), "--variant", str(wheel))
        for produced in each.iterdir():
            if produced.name != PLAIN or build == "210":
                produced.rename(out / produced.name)
    return out


def offline_env() -> dict[str, str]:
    """pip and uv with no configured indexes or find-links: only what a test names is seen."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["UV_NO_CONFIG"] = "1"
    env["UV_OFFLINE"] = "1"
    return env


def pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-cache-dir", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=offline_env())


def uv(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "uv"
    env = {**offline_env(), "UV_CACHE_DIR": str(cache)}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=600, env=env)


def venv_with_torch(
    path: Path, torch: str | None, wheels: Path, cuda: str | None = None, requires: tuple[str, ...] = ()
) -> Path:
    """A fresh venv holding a stub torch of that version (or no torch at all); ``cuda``: a
    CUDA build's ``torch/version.py`` too; ``requires``: its METADATA's requirements."""
    python = fresh_venv(path)
    if torch is not None:
        install_into(python, stub_torch_wheel(torch, wheels, cuda, requires))
    return python


def installed_dist_info(python: Path, dist: str) -> Path:
    """The ``.dist-info`` directory of ``dist`` in that venv's site-packages."""
    (site,) = (python.parent.parent / "lib").glob("python3*/site-packages")
    (found,) = site.glob(f"{dist}-*.dist-info")
    return found
