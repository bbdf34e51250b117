"""``analysis.reach``: how a package's own Python reaches each compiled file, on the loader
patterns of published packages (their code, cut down to what decides), read with ``ast``.

The real wheels are judged against a real ``import`` by ``tests/e2e/test_loaders.py`` and
``benchmarks/loadtruth_import.py``; here each pattern is pinned on its own.
"""

from __future__ import annotations

from torchwheel.analysis.importtime import import_time_files
from torchwheel.analysis.reach import Compiled, Reach, read_reach


def _reach(files: dict[str, bytes], compiled: list[Compiled]) -> dict[str, Reach]:
    members = [*files, *(c.member for c in compiled)]
    found = read_reach(members, lambda m: len(files.get(m, b"")), lambda m: files[m], compiled)
    return {c.member: found.of(c.member) for c in compiled}


def test_an_op_library_loaded_by_path_needs_no_hook() -> None:
    """The everyday op library: ``torch.ops.load_library(glob(...)[0])`` at import."""
    init = b'import glob, os, torch\ntorch.ops.load_library(glob.glob(os.path.join(os.path.dirname(__file__), "_C*.so"))[0])\n'
    got = _reach({"pkg/__init__.py": init}, [Compiled("pkg/_C.cpython-311-x86_64-linux-gnu.so", "pkg._C")])
    (r,) = got.values()
    assert (r.how, r.when, r.where) == ("library", "import", "pkg/__init__.py")


def test_a_module_import_is_a_module_and_a_try_makes_it_optional() -> None:
    files = {
        "pkg/__init__.py": b"from . import _C\n",
        "pkg/kernels.py": b"try:\n    from ._cuda import k\nexcept ImportError:\n    k = None\n",
    }
    got = _reach(
        files, [Compiled("pkg/_C.abi3.so", "pkg._C", hooked=True), Compiled("pkg/_cuda.abi3.so", "pkg._cuda")]
    )
    assert (got["pkg/_C.abi3.so"].how, got["pkg/_C.abi3.so"].when) == ("module", "import")
    cuda = got["pkg/_cuda.abi3.so"]
    assert (cuda.how, cuda.when) == ("module", "on-use")  # kernels.py is not imported by pkg: on use
    files["pkg/__init__.py"] += b"from . import kernels\n"
    cuda = _reach(files, [Compiled("pkg/_cuda.abi3.so", "pkg._cuda")])["pkg/_cuda.abi3.so"]
    assert (cuda.how, cuda.when) == ("module", "optional") and "except ImportError" in cuda.why


def test_torchao_loads_every_kernel_in_a_try_that_goes_on() -> None:
    init = b"""import torch
from pathlib import Path
try:
    so_files = list(Path(__file__).parent.glob("_C*.so"))
    for file in so_files:
        try:
            torch.ops.load_library(str(file))
        except Exception as e:
            logger.warning(f"Failed to load {file}: {e}")
except Exception:
    pass
"""
    got = _reach({"torchao/__init__.py": init}, [Compiled("torchao/_C_mxfp8.abi3.so", "torchao._C_mxfp8")])
    r = got["torchao/_C_mxfp8.abi3.so"]
    assert (r.how, r.when) == ("library", "optional") and "except Exception" in r.why


def test_a_helper_in_another_file_is_followed() -> None:
    """torchaudio: ``_load_lib("_torchaudio")`` at import, defined in utils.py; the path
    comes from a glob of an f-string inside it."""
    files = {
        "ta/_ext/utils.py": b'import torch\ndef _load_lib(lib):\n    paths = list(DIR.glob(f"{lib}*.so"))\n    torch.ops.load_library(paths[0])\n',
        "ta/_ext/__init__.py": b'from .utils import _load_lib\nOK = _load_lib("_ta")\n',
        "ta/__init__.py": b"from . import _ext\n",
    }
    r = _reach(files, [Compiled("ta/lib/_ta.abi3.so", "ta.lib._ta")])["ta/lib/_ta.abi3.so"]
    assert (r.how, r.when, r.where) == ("library", "import", "ta/_ext/__init__.py")


def test_a_helper_called_from_many_files_is_not_followed() -> None:
    """A name called from more files than ``_MAX_CALLERS`` is generic (vLLM's ``forward``,
    ``load_weights``), not a loader: it is not followed, and what only it would reach stays
    unreached (loaded at import, never a relaxed verdict); the same helper called from one
    file is followed to its ``try``."""
    from torchwheel.analysis.reach import _MAX_CALLERS

    helper = b"import torch\ndef load(lib):\n    torch.ops.load_library(lib)\n"
    call = b'from .h import load\ntry:\n    load("pkg/_k.so")\nexcept OSError:\n    pass\n'
    compiled = [Compiled("pkg/_k.so", None)]
    few = {"pkg/h.py": helper, "pkg/__init__.py": b"from . import m0\n", "pkg/m0.py": call}
    assert _reach(few, compiled)["pkg/_k.so"].when == "optional"
    many = few | {f"pkg/m{i}.py": call for i in range(1, _MAX_CALLERS + 1)}
    r = _reach(many, compiled)["pkg/_k.so"]
    assert (r.how, r.when) == ("unreached", "import"), r


def test_an_op_the_import_needs_keeps_a_try_from_excusing_its_library() -> None:
    """torchvision: ``_load_library("_C")`` goes on without it, but a module the import runs
    registers ``torchvision::nms``, which only that library defines: required after all."""
    files = {
        "tv/__init__.py": b"from . import extension\nfrom tv import _meta\n",
        "tv/extension.py": b"import torch\ndef _load_library(n):\n    try:\n        torch.ops.load_library(_path(n))\n"
        b"        return True\n    except (ImportError, OSError):\n        return False\n"
        b'def _path(n):\n    return n + ".so"\nif _load_library("_C"):\n    pass\n',
        "tv/_meta.py": b'import torch\n@torch.library.register_fake("tv::nms")\ndef f(x):\n    return x\n',
    }
    r = _reach(files, [Compiled("tv/_C.so", "tv._C")])["tv/_C.so"]
    assert (r.how, r.when) == ("library", "import") and "tv::nms" in r.why
    files["tv/_meta.py"] = b'import torch\nlib = torch.library.Library("tv", "DEF")\n' + files["tv/_meta.py"]
    r = _reach(files, [Compiled("tv/_C.so", "tv._C")])["tv/_C.so"]
    assert r.when == "optional"  # its Python defines the namespace: the op exists without the library


def test_a_check_of_what_torch_provides_makes_a_load_conditional() -> None:
    """torch-c-dlpack-ext: nothing is loaded where torch already has the exchange API."""
    core = b"""import ctypes, torch
def load():
    if hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        return None
    path = HERE / f"libaddon_torch{v.major}{v.minor}-cpu.so"
    return ctypes.CDLL(str(path))
_lib = load()
"""
    files = {"ext/__init__.py": b"from . import core\n", "ext/core.py": core}
    r = _reach(files, [Compiled("ext/libaddon_torch29-cpu.so", None)])["ext/libaddon_torch29-cpu.so"]
    assert (r.how, r.when) == ("library", "conditional") and "what torch provides" in r.why


def test_on_use_and_never_named() -> None:
    """torchcodec's HEIC library is loaded by a function the import does not call; a
    hook-less library no code names is on use only when every load at import was followed."""
    files = {
        "tc/__init__.py": b"import torch\ntorch.ops.load_library(HERE + '/libcore.so')\n"
        b"def heic():\n    torch.ops.load_library(HERE + '/libheic.so')\n",
    }
    compiled = [Compiled("tc/libcore.so", None), Compiled("tc/libheic.so", None), Compiled("tc/libextra.so", None),
                Compiled("tc/_mod.abi3.so", "tc._mod", hooked=True)]  # fmt: skip
    got = _reach(files, compiled)
    assert got["tc/libcore.so"].when == "import"
    assert (got["tc/libheic.so"].when, got["tc/libheic.so"].why.startswith("only heic()")) == ("on-use", True)
    assert (got["tc/libextra.so"].how, got["tc/libextra.so"].when) == ("unreached", "on-use")
    assert got["tc/_mod.abi3.so"].when == "import"  # an extension module: users import it themselves
    files["tc/__init__.py"] += (
        b"torch.ops.load_library(computed_somewhere())\n"  # a load the reading cannot follow
    )
    assert _reach(files, compiled)["tc/libextra.so"].when == "import"


def test_a_dependency_loads_with_what_needs_it() -> None:
    files = {"p/__init__.py": b"try:\n    from . import _k\nexcept ImportError:\n    pass\n"}
    got = _reach(
        files,
        [Compiled("p/_k.abi3.so", "p._k", ("libdep.so",), hooked=True), Compiled("p.libs/libdep.so", None)],
    )
    assert (got["p.libs/libdep.so"].how, got["p.libs/libdep.so"].when) == ("dependency", "optional")


def test_import_time_files_follow_module_level_imports_only() -> None:
    init = b"from . import a\ntry:\n    from . import b\nexcept ImportError:\n    pass\ndef f():\n    from . import c\n"
    sources = {"p/__init__.py": init, "p/a.py": b"", "p/b.py": b"", "p/c.py": b""}
    assert import_time_files(sources) == {"p/__init__.py", "p/a.py"}
    assert import_time_files(sources, conditional=True) == {"p/__init__.py", "p/a.py", "p/b.py"}
