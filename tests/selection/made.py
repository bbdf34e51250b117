"""Small real wheels for the install unit tests, zipped with their RECORD by plain ``zipfile``
(``helpers.zipped_wheel``): tagged ones (``Torch-ABI`` in WHEEL, read from metadata alone)
and the untagged demo wheel of ``fixtures/demo`` (its torch need read from its binary)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from ..lib.helpers import REPO, zipped_wheel

DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"


def tagged_wheel(
    folder: Path,
    version: str = "1.0",
    abi: str = "2.10",
    tag: str = "cp39-abi3-manylinux_2_28_x86_64",
    record: bool = True,
) -> Path:
    """A wheel of the project ``twunit`` whose WHEEL states its torch need."""
    dist = f"twunit-{version}.dist-info"
    members = {
        "twunit/__init__.py": b"",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: twunit\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\n"
            f"Tag: {tag}\nTorch-ABI: {abi}\nTorch-Build: any\n"
        ).encode(),
    }
    path = folder / f"twunit-{version}-{tag}.whl"
    if record:
        return zipped_wheel(path, members, f"{dist}/RECORD")
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path
