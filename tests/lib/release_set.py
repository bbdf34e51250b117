"""The installer-side candidate set, shared by the select/install (and index) tests.

``fixtures/real_ext/release.py`` builds one release of ``twdemo_stable`` for torch targets
2.10 and 2.12 (stable) and for this torch's minor (unstable); ``candidate_folders`` tags them
the ways a project would publish them, plus tag decoys, and ``stub_torch_wheel`` writes a
``torch`` distribution of any version that is nothing but metadata (selection and the
install refusals need only the version).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from .helpers import REPO, load_script, torchwheel, zipped_wheel

NAME = "twdemo_stable"


def build_release() -> dict[str, Path]:
    module = load_script("torchwheel_real_ext_release", REPO / "fixtures" / "real_ext" / "release.py")
    built: dict[str, Path] = module.build_release(REPO / ".cache" / "real_ext")
    return built


def _tag(wheel: Path, out: Path, *args: str) -> Path:
    result = torchwheel("tag", "--no-config", "-w", str(out), *args, str(wheel))
    assert result.returncode == 0, result.stderr
    (written,) = [
        Path(line.split(" ", 1)[1]) for line in result.stdout.splitlines() if line.startswith("wrote ")
    ]
    return written


def _retag(wheel: Path, out: Path, *args: str) -> Path:
    """A tag decoy: ``wheel tags`` (the wheel project's own tool) on a copy."""
    out.mkdir(parents=True, exist_ok=True)
    copy = shutil.copy2(wheel, out / wheel.name)
    cmd = [sys.executable, "-m", "wheel", "tags", "--remove", *args, str(copy)]
    new = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return out / new


def candidate_folders(built: dict[str, Path], root: Path) -> dict[str, Path]:
    """Role -> wheel, laid out in folders under ``root``:

    ``labels/``: 2.10 plain, 2.12 as ``+torch2.12``, unstable as ``+torch2.13`` (one folder);
    ``decoys/``: the 2.10 wheel retagged (``wheel tags``) for macOS arm64 and for CPython 3.12;
    ``t210/`` and ``t212/``: the two stable builds under the *same* file name;
    ``builds/``: the two stable builds told apart by build tags 1 and 2.
    """
    minor = _torch_minor()
    out = {
        "s210": _tag(built["stable-2.10"], root / "labels"),
        "s212": _tag(built["stable-2.12"], root / "labels", "--local-label", "torch2.12"),
        "unstable": _tag(
            built["unstable"], root / "labels", "--build-torch", minor, "--local-label", f"torch{minor}"
        ),
        "same210": _tag(built["stable-2.10"], root / "t210"),
        "same212": _tag(built["stable-2.12"], root / "t212"),
        "build1": _tag(built["stable-2.10"], root / "builds", "--build-tag", "1"),
        "build2": _tag(built["stable-2.12"], root / "builds", "--build-tag", "2"),
    }
    out["wrong_platform"] = _retag(out["s210"], root / "decoys", "--platform-tag", "macosx_11_0_arm64")
    out["wrong_python"] = _retag(out["s210"], root / "decoys", "--python-tag", "cp312", "--abi-tag", "cp312")
    return out


def _torch_minor() -> str:
    from importlib.metadata import version

    major, minor = version("torch").split(".")[:2]
    return f"{major}.{minor}"


def stub_torch_wheel(
    version: str, out: Path, cuda: str | None = None, requires: tuple[str, ...] = ()
) -> Path:
    """``torch-VERSION-py3-none-any.whl`` with METADATA, WHEEL and RECORD only (plain zipfile:
    fixtures are not made by the code they test); with ``cuda`` (``"13.0"``) also the
    ``torch/version.py`` a CUDA build of torch carries (never imported: read as text);
    ``requires``: METADATA's ``Requires-Dist`` values (a real torch's, copied)."""
    info = f"torch-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{info}/METADATA": metadata.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: torchwheel-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if cuda is not None:  # "": a CPU build's version.py (cuda = None)
        files["torch/version.py"] = (
            f"__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {repr(cuda) if cuda else None}\n"
            "hip: Optional[str] = None\nxpu: Optional[str] = None\n"
        ).encode()
    return zipped_wheel(out / f"torch-{version}-py3-none-any.whl", files, f"{info}/RECORD")


def site_files(python: Path) -> set[str]:
    """Every file under the venv (to prove an install or uninstall left nothing behind)."""
    root = python.parent.parent
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
