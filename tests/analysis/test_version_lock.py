"""Issue 48: a package's own import-time lock on the torch version, read without running it.

zentorch 2.14.0.1 (benchmarks/corpus.toml) raises ``ImportError`` from its ``__init__.py``
on every torch minor but the one its ``_build_info.py`` records, unless a stable-ABI library
is shipped; its binary's imports are exported by 2.13-2.15. ``_ZT_INIT`` follows that
``__init__.py`` statement for statement (abridged: comments and the code after the check
left out), with a dual-install check of the same shape before it (a loop the reading cannot
follow, which must not stop it). The releases come from the shipped release list, never
written here; the minors expected are computed from it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchwheel import api
from torchwheel.analysis.version_lock import NO_LOCK, read_lock
from torchwheel.tables.exports import shipped_index
from torchwheel.tables.tableset import shipped_tables

from ..lib.helpers import REPO, fixture_wheels_module, load_script, torchwheel

RELEASES = shipped_tables().releases
MINORS = RELEASES.known_minors()

_ZT_INIT = b'''from importlib import metadata as _metadata


def _check_dual_install():
    """Raise ImportError if both distributions are installed."""
    installed_dists = []
    for _name in ("zt", "zt-weekly"):
        try:
            _metadata.version(_name)
            installed_dists.append(_name)
        except _metadata.PackageNotFoundError:
            pass
    if len(installed_dists) > 1:
        raise ImportError("both installed")


_check_dual_install()
import os  # noqa: E402
import ctypes  # noqa: E402
import warnings  # noqa: E402
import torch  # noqa: E402

from ._build_info import __torchversion__ as buildtime_torchversion  # noqa: E402
from torch.torch_version import __version__ as runtime_torchversion  # noqa: E402


def _get_minor_version(torch_version):
    parts = torch_version.split(".")
    if len(parts) < 2:
        raise ImportError(f"Unexpected PyTorch version string {torch_version!r}.")
    return f"{parts[0]}.{parts[1]}"


_runtime_minor = _get_minor_version(runtime_torchversion)
_buildtime_minor = _get_minor_version(buildtime_torchversion)
__stable_abi_only__ = _runtime_minor != _buildtime_minor

_lib_dir = os.path.dirname(os.path.abspath(__file__))
_lib_path = os.path.join(_lib_dir, "libzt.so")
_stable_lib_path = os.path.join(_lib_dir, "libzt_stable.so")

if not __stable_abi_only__:
    if os.path.exists(_lib_path):
        ctypes.CDLL(_lib_path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
elif os.path.exists(_stable_lib_path):
    warnings.warn(f"PyTorch {runtime_torchversion} does not match ({_buildtime_minor}.x)", stacklevel=1)
    torch.ops.load_library(_stable_lib_path)
else:
    raise ImportError(
        f"Incompatible PyTorch version {runtime_torchversion} detected. "
        f"The installed zt binary is only compatible with PyTorch versions {_buildtime_minor}.x"
    )

from ._info import __version__  # noqa: F401,E402
'''
_RAISE_LINE = _ZT_INIT.decode().splitlines().index("    raise ImportError(") + 1


def _lock(init: bytes, build: str = "2.14.0+cpu", stable: bool = False, package: str = "zt") -> object:
    files = {
        f"{package}/__init__.py": init,
        f"{package}/_build_info.py": f'__version__ = "1.0"\n__torchversion__ = "{build}"\n'.encode(),
        f"{package}/_info.py": b"from ._build_info import __version__\n",
        f"{package}/libzt.so": b"\x7fELF",
        **({f"{package}/libzt_stable.so": b"\x7fELF"} if stable else {}),
    }
    return read_lock(package, files, lambda m: len(files[m]), files.__getitem__, RELEASES)


def test_the_build_minor_check_refuses_every_other_minor() -> None:
    lock = _lock(_ZT_INIT)
    assert lock != NO_LOCK
    assert lock.refused == frozenset(MINORS) - {(2, 14)}  # type: ignore[attr-defined]
    assert lock.where == f"zt/__init__.py:{_RAISE_LINE}"  # type: ignore[attr-defined]


def test_the_lock_follows_the_recorded_build() -> None:
    lock = _lock(_ZT_INIT, build="2.11.0")
    assert lock.refused == frozenset(MINORS) - {(2, 11)}  # type: ignore[attr-defined]


def test_a_shipped_stable_library_is_no_lock() -> None:
    """The check goes on to load the stable library on other minors: nothing raises."""
    assert _lock(_ZT_INIT, stable=True) == NO_LOCK


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ((b"__stable_abi_only__ = _runtime_minor != _buildtime_minor",
          b"__stable_abi_only__ = _runtime_minor != _buildtime_minor and not os.environ.get('ZT_ANY')"),
         "a condition on the environment, unknowable here"),
        ((b"from ._build_info import __torchversion__ as buildtime_torchversion",
          b"from ._version_file import __torchversion__ as buildtime_torchversion"),
         "a build version from a module the wheel does not ship"),
        ((b"_check_dual_install()\n", b"_check_dual_install()\nglobals()['_buildtime_minor'] = '2.13'\n"),
         "code that may rebind the module's names"),
        ((b"if not __stable_abi_only__:", b"for _ in ():\n    pass\nif not __stable_abi_only__:"),
         "a loop before the check"),
        ((b"_runtime_minor = _get_minor_version(runtime_torchversion)",
          b"_runtime_minor = _get_minor_version(runtime_torchversion)\n_runtime_minor = _lookup(_runtime_minor)"),
         "a value from a call the reading does not follow"),
        ((b"__stable_abi_only__ = _runtime_minor != _buildtime_minor", b"__stable_abi_only__ = True"),
         "a raise on every torch: no lock of the version"),
    ],
)  # fmt: skip
def test_what_cannot_be_decided_refuses_nothing(change: tuple[bytes, bytes], why: str) -> None:
    init = _ZT_INIT.replace(*change)
    assert init != _ZT_INIT, why
    assert _lock(init) == NO_LOCK, why


@pytest.mark.parametrize(
    ("before", "why"),
    [
        (b"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import numpy\n", "a block for type checkers only"),
        (b"_parts = ('a',)\n" + b"_parts = _parts + _parts\n" * 40, "a tuple past the bound: unknown, unused"),
        (b"class _Config:\n    level = 1\n", "a class the check does not use"),
        (b"_n = len(_metadata.packages_distributions())\n", "a value from a call not followed, unused"),
    ],
)  # fmt: skip
def test_code_the_check_does_not_use_does_not_stop_the_reading(before: bytes, why: str) -> None:
    anchor = b"_check_dual_install()\n"
    init = _ZT_INIT.replace(anchor, anchor + before)
    assert init != _ZT_INIT, why
    lock = _lock(init)
    assert lock.refused == frozenset(MINORS) - {(2, 14)}, why  # type: ignore[attr-defined]


def test_a_version_floor_compares_as_torch_does() -> None:
    """``torch.__version__ < "2.12"`` compares versions (torch's ``TorchVersion``), not text:
    as text "2.9.0" is past "2.12"."""
    init = b'import torch\nif torch.__version__ < "2.12":\n    raise ImportError("needs torch 2.12")\n'
    lock = _lock(init)
    assert lock.refused == frozenset(m for m in MINORS if m < (2, 12))  # type: ignore[attr-defined]
    assert lock.where == "zt/__init__.py:3"  # type: ignore[attr-defined]
    floor = (
        b"from packaging.version import Version\nimport torch\n"
        b"if Version(torch.__version__).release[:2] < (2, 12):\n    raise ImportError('old')\n"
    )
    assert _lock(floor).refused == lock.refused  # type: ignore[attr-defined]


def test_a_check_on_the_patch_release_refuses_no_minor() -> None:
    """A minor is refused only where every release and build of it raises."""
    init = b'import torch\nif torch.__version__ != "2.14.0":\n    raise ImportError("2.14.0 only")\n'
    assert (2, 14) not in _lock(init).refused  # type: ignore[attr-defined]


# -- a wheel: a real compiled unstable library behind zentorch's check ---------------------------
# ``shim.so`` of fixtures/dating (compiled against the real torch 2.13.0 of .venv): C++ names
# every indexed release exports and a shim first exported by torch 2.10, so its imports date
# it to 2.10 and every later minor of the index.

dating = load_script("torchwheel_dating_build", REPO / "fixtures" / "dating" / "build.py")


def _dated() -> list[str]:
    """The minors the shipped Linux index dates ``shim.so`` to: 2.10 and every later one."""
    index = shipped_index("linux-x86_64")
    assert index is not None
    return [f"2.{n}" for n in sorted({r.minor for r in index.releases if (r.major, r.minor) >= (2, 10)})]


def _locked_wheel(tmp_path: Path, build: str) -> Path:
    wheels = fixture_wheels_module()
    init = _ZT_INIT.replace(b"libzt", b"libwlock")
    extra = (
        ("wlock/__init__.py", init),
        ("wlock/_build_info.py", f'__version__ = "1.0.0"\n__torchversion__ = "{build}"\n'.encode()),
        ("wlock/_info.py", b"from ._build_info import __version__\n"),
    )
    spec = wheels.WheelSpec(
        "lock", "wlock", "cp311-cp311-manylinux_2_28_x86_64", (("wlock/libwlock.so", "shim"),),
        requires=("torch",), extra=extra,
    )  # fmt: skip
    path: Path = wheels.write_wheel(tmp_path / spec.filename, spec, {"shim": dating.committed()["shim.so"]})
    return path


def test_matrix_gives_only_the_build_minor(tmp_path: Path) -> None:
    path = _locked_wheel(tmp_path, "2.12.0+cpu")
    asked = [a for m in _dated() for a in ("--torch", m)]
    grid = torchwheel("matrix", "--format", "json", *asked, str(path), cwd=tmp_path)
    assert grid.returncode == 1, grid.stderr  # a --torch asked for that no wheel loads on
    cells = json.loads(grid.stdout)["wheels"][0]["cells"]
    loads = {m for m, c in cells.items() if c["fit"] in ("loads", "only", "some")}
    assert loads == {"2.12"}, cells
    assert cells["2.12"]["fit"] == "only"
    others = ", ".join(m for m in _dated() if m != "2.12")
    why = f"unstable, torch 2.12 only (its import raises on torch {others}: wlock/__init__.py:{_RAISE_LINE})"
    for minor in _dated():
        assert cells[minor]["fit"] == ("only" if minor == "2.12" else "no"), minor
        assert cells[minor]["reason"].startswith(why), cells[minor]
    shown = torchwheel("show", str(path), cwd=tmp_path)
    assert f"torch version    {why}" in shown.stdout, shown.stdout


def test_without_the_check_the_imports_date_it(tmp_path: Path) -> None:
    """The same wheel recording a build minor its imports never allow: the two readings
    disagree, and the lock takes nothing away (the imports' dating stands)."""
    path = _locked_wheel(tmp_path, "2.8.0+cpu")
    grid = torchwheel("matrix", "--format", "json", str(path), cwd=tmp_path)
    cells = json.loads(grid.stdout)["wheels"][0]["cells"]
    loads = {m for m, c in cells.items() if c["fit"] == "only"}
    assert loads == set(_dated()), cells
    assert all("raises" not in c["reason"] for c in cells.values())


def test_compat_and_tw504_name_the_lock(tmp_path: Path) -> None:
    """This machine's torch 2.13.0 exports every import, but the package refuses it: compat
    says no (it once re-admitted any minor whose exports hold the imports), and TW504's fix
    names the one minor the import works on."""
    path = _locked_wheel(tmp_path, "2.12.0+cpu")
    site = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
    found = torchwheel("compat", "--against", str(site), "--format", "json", str(path), cwd=tmp_path)
    (result,) = json.loads(found.stdout)["inputs"]
    assert result["verdict"]["loads"] is False, result
    assert "its import raises on torch" in result["verdict"]["reason"], result
    (tw504,) = [f.message for f in api.check(path).findings if f.code == "TW504"]
    assert (
        f"its import works on torch 2.12 only (its import raises on torch {', '.join(m for m in _dated() if m != '2.12')}"
        in tw504
    )
