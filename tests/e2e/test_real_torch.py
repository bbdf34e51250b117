"""torchwheel on real extensions, built by torch's own ``BuildExtension`` and loaded by torch.

The fake providers of ``fixtures/build.py`` pin down what the readers see; here real torch
headers, a real compiler and real ``pip wheel`` produce the wheels (``fixtures/real_ext/``),
and the dynamic loader is the referee: whatever ``check`` and ``compat`` say about loading is
confirmed by importing the extensions into the torch installed in this environment.

Timing (2 cores): the wheels are committed (``fixtures/real_ext/prebuilt.py`` seeds
``.cache/real_ext``); one, the stable extension, is built from source on every run (about
15-20 s: mostly pip and setup.py importing torch; each compile is 1-3 s at -O1);
the tests take about 12 s (a subprocess importing torch costs ~2 s; ``compat`` reads
libtorch_cpu.so in ~0.5 s from disk, ~2.5 s out of the torch wheel, which pip copies in ~1 s).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ..lib.helpers import REPO, fixture_wheels_module, fresh_venv, load_script, pip_install, torchwheel

REAL_EXT = REPO / "fixtures" / "real_ext"
_MODULE = "torchwheel_real_ext_build"


def _real_ext_build() -> ModuleType:
    """``fixtures/real_ext/build.py`` as a module."""
    return load_script(_MODULE, REAL_EXT / "build.py")


@pytest.fixture(scope="session")
def real_wheels() -> dict[str, Path]:
    """Variant -> wheel: built once into ``.cache/real_ext`` (gitignored), reused while unchanged."""
    wheels: dict[str, Path] = _real_ext_build().build_real_wheels(REPO / ".cache" / "real_ext")
    return wheels


@pytest.fixture(scope="session")
def installed_exts(real_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All four wheels installed with pip into one directory, for ``PYTHONPATH``.

    This reuses the project venv's torch instead of a fresh venv with torch installed from
    disk (about a minute): the import test needs the torch the wheels are judged against,
    which is this one.
    """
    target = tmp_path_factory.mktemp("site")
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target)]
    subprocess.run([*cmd, *map(str, real_wheels.values())], check=True, capture_output=True, timeout=300)
    return target


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.stdout, result.stderr
    return json.loads(result.stdout)


def _check(wheel: Path, cwd: Path) -> tuple[int, dict[str, list[str]]]:
    result = torchwheel("check", "--format", "json", "--no-config", str(wheel), cwd=cwd)
    findings: dict[str, list[str]] = {}
    for f in _json(result)["findings"]:
        findings.setdefault(f["code"], []).append(f["message"])
    return result.returncode, findings


def _slice(wheel: Path, cwd: Path) -> dict[str, Any]:
    doc = _json(torchwheel("show", "--json", str(wheel), cwd=cwd))["wheels"][0]
    (file,) = doc["files"]
    (slice_,) = file["slices"]
    return {"abi": doc["torch_abi"], "member": file["member"], **slice_}


# --------------------------------------------------------------------------------------------
# check / show: what the author declared and what the binary does


def test_the_prebuilt_set_is_current() -> None:
    """The committed wheels (``fixtures/real_ext/prebuilt/``) are the builds today's sources
    make with the tools they name: each folder's hash is what ``build.py`` and ``release.py``
    compute now, so a changed source cannot hide behind a committed wheel."""
    prebuilt = load_script("torchwheel_real_ext_prebuilt", REAL_EXT / "prebuilt.py")
    release = load_script("torchwheel_real_ext_release", REAL_EXT / "release.py")
    build = _real_ext_build()
    tools = (prebuilt.PREBUILT / prebuilt.TOOLS).read_text().removesuffix("\n")
    want = {f"{n}-{build.variant_hash(n, tools)}" for n in (*build.VARIANTS, *build.ON_REQUEST)}
    for name, (project, edits) in release.DERIVED.items():  # release.build_release's folder name
        h = hashlib.sha256()
        h.update(build.variant_hash(project, tools).encode())
        h.update(repr(edits).encode() + (REAL_EXT / "release.py").read_bytes())
        want.add(f"release-{name}-{h.hexdigest()[:16]}")
    committed = {p.name for p in prebuilt.PREBUILT.iterdir() if p.is_dir()}
    assert committed == want, (
        "a real extension's source changed since fixtures/real_ext/prebuilt was written: run "
        "`.venv/bin/python fixtures/real_ext/prebuilt.py --write` and commit fixtures/real_ext/prebuilt"
    )


def test_the_stable_extension_built_here_is_the_committed_one(
    real_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """Torch's own ``BuildExtension`` against this torch's headers, on every run: the build the
    committed wheels stand for still works here, and torchwheel reads the same facts in it. Not
    the same bytes: torch's headers put the build folder's path (``__FILE__``) in the library,
    which moves the marker's offset."""
    built = _real_ext_build().build_real_wheels(tmp_path, force=True, names=("stable",))["stable"]
    assert built.name == real_wheels["stable"].name

    def facts(wheel: Path) -> Any:
        def drop(doc: Any) -> Any:  # where the file lies, where in it the marker is
            if isinstance(doc, dict):
                return {k: drop(v) for k, v in doc.items() if k not in ("path", "offset")}
            return [drop(v) for v in doc] if isinstance(doc, list) else doc

        return drop(_json(torchwheel("show", "--format", "json", str(wheel))))

    assert facts(built) == facts(real_wheels["stable"])


def test_stable_wheel_is_clean(real_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = real_wheels["stable"]
    assert wheel.name == "twdemo_stable-0.1.0-cp39-abi3-linux_x86_64.whl"
    code, findings = _check(wheel, tmp_path)
    # `pip wheel` tags it linux_x86_64, which PyPI refuses (TW415, a warning): auditwheel's to fix
    assert (code, set(findings)) == (0, {"TW415"})
    s = _slice(wheel, tmp_path)
    assert s["member"] == "twdemo_stable/_C.abi3.so"
    assert s["marker"]["version"] == "2.10.0" and s["marker"]["exported"] is True
    assert s["torch"]["usage"] == "stable"
    assert s["torch"]["min_version"] == "2.10.0"
    assert s["abi"]["label"] == "2.10"
    # torch_from_blob (2.11) is looked up with dlsym at run time, so it is no import.
    assert "torch_from_blob" not in s["torch"]["stable_symbols"]
    assert {"torch_library_impl", "torch_parallel_for", "aoti_torch_library_def"} <= set(
        s["torch"]["stable_symbols"]
    )


def test_unstable_wheel(real_wheels: dict[str, Path], tmp_path: Path) -> None:
    """at::Tensor + TORCH_LIBRARY: unstable, and `torch>=2.10` admits torches it cannot load on."""
    wheel = real_wheels["unstable"]
    assert wheel.name == "twdemo_unstable-0.1.0-cp311-cp311-linux_x86_64.whl"
    code, findings = _check(wheel, tmp_path)
    assert code == 1
    assert set(findings) == {"TW204", "TW504", "TW415"}
    s = _slice(wheel, tmp_path)
    assert s["member"] == "twdemo_unstable/_C.cpython-311-x86_64-linux-gnu.so"
    assert s["marker"] is None
    assert s["torch"]["usage"] == "unstable"
    assert any(name.startswith("c10::") for name in s["torch"]["unstable_symbols"])
    assert s["abi"]["kind"] == "unstable"


def test_violation_wheel(real_wheels: dict[str, Path], tmp_path: Path) -> None:
    """One TU without TORCH_TARGET_VERSION: marker 2.10, imports 2.11 and 2.13 shims.

    TW503 comes with it: `torch>=2.10` admits torches the binary cannot load on.
    """
    code, findings = _check(real_wheels["violation"], tmp_path)
    assert code == 1
    assert set(findings) == {"TW201", "TW503", "TW415"}
    (message,) = findings["TW201"]
    assert "declares torch 2.10.0" in message
    assert "torch_from_blob (2.11)" in message
    assert "torch_exception_get_what (2.13)" in message  # the 2.13 headers' error check
    s = _slice(real_wheels["violation"], tmp_path)
    assert s["marker"]["version"] == "2.10.0" and s["marker"]["exported"] is True
    assert s["torch"]["min_version"] == "2.13.0"


def test_future_wheel(real_wheels: dict[str, Path], tmp_path: Path) -> None:
    """No target: the marker says the build torch (2.13); a hand-declared 2.14 shim breaks it."""
    code, findings = _check(real_wheels["future"], tmp_path)
    assert code == 1
    assert set(findings) == {"TW201", "TW503", "TW415"}
    (message,) = findings["TW201"]
    assert "declares torch 2.13.0" in message and "torch_has_storage (2.14)" in message
    assert _slice(real_wheels["future"], tmp_path)["marker"]["version"] == "2.13.0"


# --------------------------------------------------------------------------------------------
# compat: the loader's question, answered from torch's export tables


def _compat(wheels: list[Path], against: str, cwd: Path) -> tuple[int, dict[str, list[str]]]:
    result = torchwheel("compat", "--json", *map(str, wheels), "--against", against, cwd=cwd)
    doc = _json(result)
    missing = {
        Path(i["path"]).name.split("-")[0]: [m["name"] for f in i["files"] for m in f["missing"]]
        for i in doc["inputs"]
    }
    assert result.returncode == (0 if doc["loads"] else 1), result.stderr
    return result.returncode, missing


EXPECTED_MISSING = {
    "twdemo_stable": [],
    "twdemo_unstable": [],
    "twdemo_violation": [],  # 2.11/2.13 shims: present in torch 2.13
    "twdemo_future": ["torch_has_storage"],  # 2.14
}


def test_compat_stable_against_installed(real_wheels: dict[str, Path], tmp_path: Path) -> None:
    result = torchwheel("compat", str(real_wheels["stable"]), "--against", "installed", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    version = importlib.metadata.version("torch")
    assert f"torch {version} (CPU build) from " in result.stdout  # the build, read from its version.py
    assert "twdemo_stable/_C.abi3.so: loads (" in result.stdout
    assert result.stdout.rstrip().endswith(f"1 of 1 input loads on torch {version}")


def test_compat_every_wheel_against_installed(real_wheels: dict[str, Path], tmp_path: Path) -> None:
    code, missing = _compat(list(real_wheels.values()), "installed", tmp_path)
    assert code == 1
    assert missing == EXPECTED_MISSING
    text = torchwheel("compat", str(real_wheels["future"]), "--against", "installed", cwd=tmp_path)
    assert text.returncode == 1
    assert "twdemo_future/_C.abi3.so: does not load: 1 of " in text.stdout
    assert "    missing torch_has_storage\n" in text.stdout


def test_compat_against_site_packages_directory(real_wheels: dict[str, Path], tmp_path: Path) -> None:
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.submodule_search_locations
    site = Path(next(iter(spec.submodule_search_locations))).parent
    assert _compat(list(real_wheels.values()), str(site), tmp_path) == (1, EXPECTED_MISSING)


def test_compat_against_torch_wheel(real_wheels: dict[str, Path], torch_wheel: Path, tmp_path: Path) -> None:
    """The same verdicts from the torch wheel itself, its libraries read out of the zip."""
    release = importlib.metadata.version("torch").split("+")[0]
    assert torch_wheel.name.split("-")[1].split("+")[0] == release, (torch_wheel.name, release)
    assert _compat(list(real_wheels.values()), str(torch_wheel), tmp_path) == (1, EXPECTED_MISSING)


def test_compat_single_binary(real_wheels: dict[str, Path], installed_exts: Path, tmp_path: Path) -> None:
    binary = installed_exts / "twdemo_future" / "_C.abi3.so"
    code, missing = _compat([binary], "installed", tmp_path)
    assert (code, missing) == (1, {"_C.abi3.so": ["torch_has_storage"]})


def test_compat_weak_import_absent_from_torch_still_loads(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """torch_future_shim_v99 is in no torch: imported weakly the library loads and skips it;
    imported strongly (the TW203 fixture, otherwise the same library) it does not load."""
    weak, strong = str(fixture_wheels["weak_shim"]), str(fixture_wheels["tw203"])
    code, missing = _compat([Path(weak), Path(strong)], "installed", tmp_path)
    assert (code, missing) == (1, {"wweak": [], "w203": ["torch_future_shim_v99"]})
    doc = _json(torchwheel("compat", "--json", weak, "--against", "installed", cwd=tmp_path))
    (file,) = doc["inputs"][0]["files"]
    assert file["loads"] is True and doc["loads"] is True
    assert file["missing_weak"] == [{"name": "torch_future_shim_v99", "demangled": None}]
    text = torchwheel("compat", weak, strong, "--against", "installed", cwd=tmp_path).stdout
    assert f"{weak}: loads\n" in text and f"{strong}: does NOT load\n" in text
    assert "wweak/elf_weak_shim.abi3.so: loads (6 torch symbols, 1 weak import absent)" in text
    assert "    absent  torch_future_shim_v99 (weak: used when present)\n" in text
    assert "    missing torch_future_shim_v99\n" in text  # the strong one


def test_compat_unusable_torch_is_exit_2(real_wheels: dict[str, Path], tmp_path: Path) -> None:
    stable = str(real_wheels["stable"])
    for against, words in (
        (str(tmp_path), "no torch/lib"),
        (str(tmp_path / "nope"), "no such file"),
        (stable, "no torch libraries"),  # a wheel, but not torch
    ):
        result = torchwheel("compat", stable, "--against", against, cwd=tmp_path)
        assert result.returncode == 2, (against, result.stdout, result.stderr)
        assert result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1 and words in result.stderr, result.stderr


# --------------------------------------------------------------------------------------------
# the referee: import the extensions into this torch

_IMPORT_ALL = """
import importlib, json, torch
out = {}
for name in ("twdemo_stable", "twdemo_unstable", "twdemo_violation", "twdemo_future"):
    try:
        importlib.import_module(name)
        out[name] = "ok"
    except ImportError as exc:
        out[name] = "ImportError: " + str(exc)
ops = torch.ops
out["scale"] = ops.twdemo.scale(torch.ones(3), 2.0).tolist()
out["scale_t"] = ops.twdemo.scale(torch.arange(6.0).reshape(2, 3).t(), 0.5).tolist()
out["iota"] = ops.twdemo.iota(4).tolist()
out["unstable_scale"] = ops.twdemo_unstable.scale(torch.ones(3), 2.0).tolist()
out["violation_iota"] = ops.twdemo_violation.iota(3).tolist()
print(json.dumps(out))
"""


def test_import_agrees_with_compat(installed_exts: Path, tmp_path: Path) -> None:
    """What compat predicted for torch 2.13 is what happens: three load and work, one fails."""
    result = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _IMPORT_ALL],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**_clean_env(), "PYTHONPATH": str(installed_exts)},
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    loaded = {name for name, missing in EXPECTED_MISSING.items() if not missing}
    assert {n for n in EXPECTED_MISSING if out[n] == "ok"} == loaded
    assert out["twdemo_future"].startswith("ImportError: ")
    assert "undefined symbol: torch_has_storage" in out["twdemo_future"]
    assert out["scale"] == [2.0, 2.0, 2.0]
    assert out["scale_t"] == [[0.0, 1.5], [0.5, 2.0], [1.0, 2.5]]
    assert out["iota"] == [0.0, 1.0, 2.0, 3.0]  # the dlsym'd torch_from_blob path on 2.13
    assert out["unstable_scale"] == [2.0, 2.0, 2.0]
    assert out["violation_iota"] == [0.0, 1.0, 2.0]  # loads on 2.13; the 2.10 promise is false


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


# --------------------------------------------------------------------------------------------
# tag, then install into a fresh venv with torch 2.13.0 and run the op


@pytest.fixture(scope="session")
def tagged_real(real_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("tagged-real")
    tagged: dict[str, Path] = {}
    for name, extra in (("stable", []), ("unstable", ["--build-torch", "installed"])):
        result = torchwheel("tag", "-w", str(out / name), str(real_wheels[name]), *extra, cwd=out)
        assert result.returncode == 0, result.stdout + result.stderr
        (tagged[name],) = (out / name).glob("*.whl")
    return tagged


def _metadata(wheel: Path) -> tuple[str, list[str]]:
    import zipfile
    from email.parser import HeaderParser

    with zipfile.ZipFile(wheel) as zf:
        d = next(n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
        wheel_file = HeaderParser().parsestr(zf.read(f"{d}/WHEEL").decode())
        meta = HeaderParser().parsestr(zf.read(f"{d}/METADATA").decode())
    return wheel_file["Torch-ABI"], meta.get_all("Requires-Dist") or []


def test_tag_real_wheels(tagged_real: dict[str, Path]) -> None:
    assert _metadata(tagged_real["stable"]) == ("2.10", ["torch>=2.10"])
    assert _metadata(tagged_real["unstable"]) == ("unstable", ["torch==2.13.*"])
    assert tagged_real["stable"].name.endswith("-cp39-abi3-linux_x86_64.whl")


def test_tagged_stable_wheel_runs_in_a_fresh_venv(
    tagged_real: dict[str, Path], torch_wheel: Path, tmp_path: Path
) -> None:
    """The whole path: a fresh venv, torch 2.13.0 from this machine's disk, the tagged wheels
    installed by pip with their torch requirements resolved, and the op run."""
    torch_dir = torch_wheel.parent
    vpy = fresh_venv(tmp_path / "venv")
    result = pip_install(
        vpy,
        "--no-compile",  # torch's 2,000 modules: the few imported compile on import
        "--find-links",
        str(torch_dir),
        "torch==2.13.0",
        str(tagged_real["stable"]),
        str(tagged_real["unstable"]),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    code = (
        "import torch, twdemo_stable, twdemo_unstable\n"
        "print(torch.__version__.split('+')[0])\n"
        "print(torch.ops.twdemo.scale(torch.arange(4, dtype=torch.float32), 2.5).tolist())\n"
    )
    run = subprocess.run([vpy, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[:2] == ["2.13.0", "[0.0, 2.5, 5.0, 7.5]"]


def test_a_per_release_build_is_held_to_the_release_its_name_claims(
    real_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 41, layout 2: the real unstable extension (torch 2.13's headers; its imports are
    exported by torch 2.12-2.15, the shipped exports index says) shipped as the per-release
    builds ``_C_2_11_0.so`` and ``_C_2_13_0.so``. The package picks the first on torch 2.11,
    whose libtorch lacks its imports: TW507 there, not on the build named for 2.13."""
    import zipfile

    with zipfile.ZipFile(real_wheels["unstable"]) as zf:
        (so,) = [n for n in zf.namelist() if n.endswith(".so")]
        lib = tmp_path / "_C.so"
        lib.write_bytes(zf.read(so))
    wheels = fixture_wheels_module()
    spec = wheels.WheelSpec(
        "real_per_release",
        "wrealrel",
        "cp311-cp311-linux_x86_64",
        (("wrealrel/_C_2_11_0.so", "real"), ("wrealrel/_C_2_13_0.so", "real")),
        requires=("torch>=2.11,<2.14",),
    )
    wheel = wheels.write_wheel(tmp_path / spec.filename, spec, {"real": lib})
    doc = _json(torchwheel("check", "--no-config", "--format", "json", str(wheel)))
    found = [(f["member"], f["severity"]) for f in doc["findings"] if f["code"] == "TW507"]
    assert found == [("wrealrel/_C_2_11_0.so", "warning")]
    assert not any(f["code"] == "TW504" for f in doc["findings"])  # per-release builds: no pin demanded
