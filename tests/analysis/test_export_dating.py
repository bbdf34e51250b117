"""Issue 48, item 5: every library dated by every import it has, and an honest unknown where
the export tables do not cover a build.

The libraries are compiled by real toolchains (gcc for ELF, zig's clang and lld-link for PE)
against the real torch 2.13.0 of ``.venv`` or against stubs named as torch's device libraries
are (``fixtures/dating/build.py``, committed in ``fixtures/dating/prebuilt``: no compiler runs
here but in the test that builds them again); the names they import are real torch exports,
chosen with the shipped indexes (the fixture asserts what the index says of each):

- ``c10::MessageLogger::MessageLogger(char const*, int, int, bool)``: exported by torch 2.10
  and no other indexed release (read from PyPI's torch 2.10.0 Linux wheel too);
- ``c10::UndefinedTensorImpl::_singleton``: exported by every indexed release;
- ``caffe2::TypeMeta::_typeMetaData<char>()``: in every release of the Windows index (c10.dll);
- ``c10::xpu::device_count()`` and ``c10::cuda::current_device()``: device libraries' names,
  which PyPI's wheels never ship for those builds (XPU on Linux, CUDA on Windows).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from torchwheel import api
from torchwheel.tables.exports import shipped_index

from ..lib.helpers import REPO, load_script, torchwheel

SITE = next((REPO / ".venv" / "lib").glob("python3*/site-packages"))
TORCH_LIB = SITE / "torch" / "lib"
dating = load_script("torchwheel_dating_build", REPO / "fixtures" / "dating" / "build.py")
ONLY_2_10, EVERY, XPU, SIBLING = dating.ONLY_2_10, dating.EVERY, dating.XPU, dating.SIBLING
WIN_EVERY, WIN_CUDA, SHIM_2_10 = dating.WIN_EVERY, dating.WIN_CUDA, dating.SHIM_2_10


def _wheel(out: Path, dist: str, tag: str, members: dict[str, bytes], requires: str = "torch") -> Path:
    """A wheel written with plain zipfile (fixtures are not made by the code they test)."""
    path = out / f"{dist}-1.0.0-{tag}.whl"
    info = f"{dist}-1.0.0.dist-info"
    files = {
        **members,
        f"{dist}/__init__.py": b"",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0.0\nRequires-Dist: {requires}\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }

    def digest(data: bytes) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{name},sha256={digest(data)},{len(data)}\n" for name, data in files.items())
    record += f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr(f"{info}/RECORD", record)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    linux, windows = shipped_index("linux-x86_64"), shipped_index("windows-x86_64")
    assert linux is not None and windows is not None
    bit = {str(r): i for i, r in enumerate(linux.releases)}
    assert linux._mask(ONLY_2_10) == 1 << bit["2.10.0"], "exported by torch 2.10 alone"
    assert linux._mask(EVERY) == (1 << len(bit)) - 1 and linux._mask(XPU) == 0
    assert windows._mask(WIN_EVERY) == (1 << len(windows.releases)) - 1 and windows._mask(WIN_CUDA) == 0
    assert {b for builds in linux.builds for b in builds} <= {
        f"cu{n}" for n in range(100, 200)
    }  # no XPU read
    assert {b for builds in windows.builds for b in builds} == {"cpu"}  # no CUDA read for Windows
    out = tmp_path_factory.mktemp("dating")
    libs = dating.committed()
    wheels = {
        "pinned": _wheel(out, "wpinned", "cp39-abi3-manylinux_2_28_x86_64",
                         {"wpinned/_C.abi3.so": libs["pinned.so"].read_bytes(),
                          "wpinned/_sibling.abi3.so": libs["sibling.so"].read_bytes()}),
        "xpu": _wheel(out, "wxpu", "cp39-abi3-manylinux_2_28_x86_64", {"wxpu/_C.abi3.so": libs["xpu.so"].read_bytes()}),
        "shim": _wheel(out, "wshim", "cp39-abi3-manylinux_2_28_x86_64", {"wshim/_C.abi3.so": libs["shim.so"].read_bytes()}),
    }  # fmt: skip
    wheels["windows_cuda"] = _wheel(
        out, "wwincuda", "cp39-abi3-win_amd64", {"wwincuda/_C.pyd": libs["wincuda.pyd"].read_bytes()}
    )
    return wheels


def _codes(wheel: Path) -> dict[str, str]:
    return {f.code: f.message for f in api.check(wheel).findings}


def test_one_import_pins_a_library_to_2_10(built: dict[str, Path]) -> None:
    """Its other import is its sibling library's (the wheel exports it): resolved inside the
    wheel, so the one torch import dates it to 2.10; it was left undated ("unknown")."""
    need = api.need(built["pinned"]).to_json()["need"]
    assert (need["releases"], need["releases_from"], need["not_covered"]) == (["2.10"], "exports", None)
    assert api.loads_on(built["pinned"], torch="2.10.0", backend="cpu").cell == "only"
    found = api.loads_on(built["pinned"], torch="2.11.0", backend="cpu")
    assert found.cell == "no" and "its imports are exported by torch 2.10" in found.reason
    shown = api.inspect_wheel(built["pinned"]).to_json()["wheels"][0]
    (c,) = [f for f in shown["files"] if f["member"] == "wpinned/_C.abi3.so"]
    assert c["dated"] == {
        "releases": ["2.10"],
        "newer_than_tables": [],
        "unresolved": [],
        "not_covered": None,
    }
    assert "TW207" not in _codes(built["pinned"])


def test_a_shim_it_calls_dates_an_unstable_library_too(built: dict[str, Path]) -> None:
    """C++ names every release exports, and a shim first exported by 2.10: not before 2.10
    (the shim is missing there), where the C++ names alone said 2.4-2.15."""
    need = api.need(built["shim"]).to_json()["need"]
    assert need["releases"] == ["2.10", "2.11", "2.12", "2.13", "2.14", "2.15"]
    assert api.loads_on(built["shim"], torch="2.9.1", backend="cpu").cell == "no"


def test_an_xpu_library_is_not_covered_never_newer_than_the_tables(built: dict[str, Path]) -> None:
    """The Linux index read CUDA builds only: an XPU name is missing from it because no XPU
    build was read, not because no torch up to 2.15 exports it. TW207 said the latter."""
    need = api.need(built["xpu"]).to_json()["need"]
    assert need["newer_than_tables"] is None
    assert need["not_covered"] == {
        "builds": "the linux-x86_64 export tables read no XPU build of torch",
        "imports": [],
    }
    assert "version" in need["unknown"] and "not covered for this build" in need["summary"]
    assert "TW207" not in _codes(built["xpu"])
    found = api.loads_on(built["xpu"], torch="2.13.0", backend="xpu")
    assert found.cell == "unknown" and "not covered for this build" in found.reason


def test_a_windows_cuda_library_is_not_covered(built: dict[str, Path]) -> None:
    """PyPI's Windows torch is a CPU build: the Windows index has no c10_cuda.dll names."""
    need = api.need(built["windows_cuda"]).to_json()["need"]
    assert need["torch_build"] == ["cuda"]
    assert need["not_covered"] == {
        "builds": "the windows-x86_64 export tables read no CUDA build of torch",
        "imports": [],
    }
    assert need["newer_than_tables"] is None and "TW207" not in _codes(built["windows_cuda"])
    found = api.loads_on(built["windows_cuda"], torch="2.15.0", backend="cu130")
    assert found.cell == "unknown" and "not covered" in found.reason


def test_symbols_update_with_a_torch_of_that_build_covers_it(built: dict[str, Path], tmp_path: Path) -> None:
    """The tables cover a build once they read a torch of it: an XPU torch 2.13.0 (the real
    2.13.0's libraries and headers, its ``version.py`` saying XPU, and a gcc-built
    ``libc10_xpu.so`` exporting the XPU name) joins the Linux index's 2.13.0 as a second build,
    and the XPU library is then dated: torch 2.13, where its XPU import is exported."""
    real = SITE / "torch"
    site = tmp_path / "site"
    torch = site / "torch"
    (torch / "lib").mkdir(parents=True)
    for entry in (real / "lib").iterdir():
        (torch / "lib" / entry.name).symlink_to(entry)
    (torch / "include").symlink_to(real / "include")
    text = (real / "version.py").read_text()
    (torch / "version.py").write_text(text + "\nxpu = '20250301'\n")
    shutil.copyfile(dating.committed()["stubs/libc10_xpu.so"], torch / "lib" / "libc10_xpu.so")
    out = tmp_path / "tables.json"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    done = torchwheel("symbols", "update", "-o", str(out), str(site), env=env)
    assert done.returncode == 0, done.stderr
    assert "linux-x86_64: torch 2.13.0 read again (xpu)" in done.stderr
    need = api.need(built["xpu"], symbols=out).to_json()["need"]
    assert (need["releases"], need["not_covered"], need["newer_than_tables"]) == (["2.13"], None, None)
    assert api.loads_on(built["xpu"], torch="2.13.0", backend="xpu", symbols=out).cell == "only"
