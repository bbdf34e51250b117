"""analysis/loaders.py: the loader pattern of PyTorch Geometric's packages (``cuda_spec or
cpu_spec``: the accelerated flavour whenever its file exists) recognised with ``ast``, and
nothing cleverer: any other loader picks by the torch it finds."""

from __future__ import annotations

import pytest

from torchwheel.analysis.loaders import fallback_stems, fallback_units, preferred_flavour, preferred_flavours

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


# -- a loader with a fallback (issue 41, layout 1) ----------------------------------------------

# bitsandbytes' cextension.py, cut to its shape: a helper opens the native library for the
# torch it finds, and the module goes on with a stand-in when that fails
_BNB = b"""
import ctypes as ct
from pathlib import Path

PACKAGE_DIR = Path(__file__).parent


def get_native_library():
    binary_path = PACKAGE_DIR / f"libbitsandbytes_{backend()}.so"
    dll = ct.cdll.LoadLibrary(str(binary_path))
    return dll


try:
    lib = get_native_library()
except Exception as e:
    error_msg = str(e)
    lib = ErrorHandlerMockBNBNativeLibrary(error_msg)
"""


@pytest.mark.parametrize(
    ("source", "stem", "fallback"),
    [
        (_BNB, "libbitsandbytes", True),
        (
            _BNB.replace(b"    lib = ErrorHandler", b"    raise\n    lib = ErrorHandler"),
            "libbitsandbytes",
            False,
        ),
        (
            _BNB.replace(b"except Exception", b"except KeyError"),
            "libbitsandbytes",
            False,
        ),  # not a load failure
        (b"try:\n    from . import _C_cuda\nexcept ImportError:\n    _C_cuda = None\n", "_C", True),
        (b"try:\n    import numpy\nexcept ImportError:\n    numpy = None\n", "_C", False),  # another module
        (b"try:\n    torch.ops.load_library(p)\nexcept OSError:\n    pass\n", "_ops", True),
        (b"lib = ctypes.CDLL(path)\n", "_ops", False),  # no try: a failed load fails the import
        (b"try:\n    lib = ctypes.CDLL(path)\nexcept:\n    lib = None\n", "_ops", True),  # a bare except
        (b"def broken(:\n", "_ops", False),
    ],
)
def test_falls_back(source: bytes, stem: str, fallback: bool) -> None:
    assert fallback_stems(source, "pkg/__init__.py", {stem}) == ({stem} if fallback else set())


def test_fallback_units_read_the_sets_directory_and_its_parent() -> None:
    files = {
        "pkg/__init__.py": b"try:\n    import pkg.lib._backend_cuda\nexcept ImportError:\n    pass\n",
        "other/__init__.py": b"try:\n    lib = CDLL(p)\nexcept OSError:\n    lib = None\n",  # names no stem
        "other/x.py": b"try:\n    lib = CDLL('_ops_x')\nexcept OSError:\n    raise\n",
    }
    units = {"pkg/lib/_backend_~.so": "_backend", "other/_ops_~.so": "_ops"}
    found = fallback_units(files, lambda m: len(files[m]), files.__getitem__, units)
    assert found == frozenset({"pkg/lib/_backend_~.so"})


def test_fallback_units_read_a_bounded_number_of_sets_per_directory() -> None:
    """A directory of 1,000 flavour sets (hostile, no package has them) costs 64 sets' reading."""
    units = {f"pkg/_lib{i}_~.so": f"_lib{i}_" for i in range(1000)}
    body = "".join(
        f"try:\n    from . import _lib{i}_cuda\nexcept ImportError:\n    pass\n" for i in range(1000)
    )
    files = {"pkg/__init__.py": body.encode()}
    found = fallback_units(files, lambda m: len(files[m]), files.__getitem__, units)
    assert len(found) == 64 and "pkg/_lib0_~.so" in found
