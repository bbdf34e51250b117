"""analysis/loaders.py: the loader pattern of PyTorch Geometric's packages (``cuda_spec or
cpu_spec``: the accelerated flavour whenever its file exists) recognised with ``ast``, and
nothing cleverer: any other loader picks by the torch it finds."""

from __future__ import annotations

import pytest

from torchwheel.analysis.loaders import preferred_flavour, preferred_flavours

# torch_scatter/__init__.py, as its releases write it
_PYG = b"""
import importlib, os.path as osp
import torch
library = '_version'
cuda_spec = importlib.machinery.PathFinder().find_spec(f'{library}_cuda', [osp.dirname(__file__)])
cpu_spec = importlib.machinery.PathFinder().find_spec(f'{library}_cpu', [osp.dirname(__file__)])
spec = cuda_spec or cpu_spec
"""


@pytest.mark.parametrize(
    ("source", "flavour"),
    [
        (_PYG, "cuda"),
        (_PYG.replace(b"_cuda", b"_hip").replace(b"cuda_spec", b"hip_spec"), "hip"),
        (b"spec = find('_C_ROCM') or find('_C_cpu')\n", "rocm"),  # inline operands, any case
        (b"a = '_gpu'\nb = '_cpu'\nspec = a or None or b\n", "gpu"),
        (_PYG.replace(b"cuda_spec or cpu_spec", b"cpu_spec or cuda_spec"), None),  # CPU first
        (b"if torch.version.cuda:\n    lib = '_cuda'\nelse:\n    lib = '_cpu'\n", None),  # by the torch found
        (b"spec = find('_cuda') or find('_other')\n", None),  # no CPU flavour after it
        (b"def broken(:\n", None),
        (b"\x00\xff", None),
    ],
)
def test_preferred_flavour(source: bytes, flavour: str | None) -> None:
    assert preferred_flavour(source, "pkg/__init__.py") == flavour


def test_preferred_flavours_reads_only_the_directories_asked_for() -> None:
    files = {
        "torch_scatter/__init__.py": _PYG,
        "torch_cluster/__init__.py": _PYG,
        "torch_cluster/other.py": b"x = 1\n",
        "torch_sparse/__init__.py": _PYG.replace(b"_cpu", b"_cpux"),  # mentions _cpu, reads otherwise
        "torch_scatter-2.1.dist-info/RECORD": b"",
    }
    read: list[str] = []

    def get(member: str) -> bytes:
        read.append(member)
        return files[member]

    found = preferred_flavours(files, lambda m: len(files[m]), get, ["torch_scatter", "torch_sparse"])
    assert found == {"torch_scatter": "cuda"}
    assert read == ["torch_scatter/__init__.py", "torch_sparse/__init__.py"]
