"""Wheel variants (DRAFT standards, opt-in): what `tag --variant` writes, read back by the
tools that implement the drafts today (variantlib 0.2.2, uv 0.13.9's preview) and ignored
safely by those that do not (pip). Offline: stub torch distributions, local folders."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import variantlib.api as variantlib_api  # the test extra pins variantlib==0.2.2

from ..lib.helpers import REPO, fixture_wheels_module, torchwheel
from ..lib.publish_helpers import PLAIN, TAGS, installed_dist_info, pip, uv, variant_release, venv_with_torch

VARIANTLIB = Path(sys.executable).parent / "variantlib"
LABELS = {"210": "torch2.10", "212": "torch2.12", "213": "torch2.13only"}


@pytest.fixture(scope="module")
def release(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return variant_release(built_fixtures, tmp_path_factory.mktemp("vrelease"))


@pytest.fixture(scope="module")
def index(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vidx") / "index"
    result = torchwheel("index", str(release), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out


def _variant(build: str) -> str:
    return f"twidx-1.0.0-{TAGS}-{LABELS[build]}.whl"


def _member(wheel: Path, name: str) -> bytes:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(f"twidx-1.0.0.dist-info/{name}")


def test_tag_variant_writes_the_variant_beside_the_plain_fallback(release: Path) -> None:
    names = sorted(p.name for p in release.iterdir())
    assert names == sorted([PLAIN, *map(_variant, LABELS)])
    doc = json.loads(_member(release / _variant("212"), "variant.json"))
    assert doc["variants"] == {"torch2.12": {"torchwheel": {"stable_abi": ["2.12"]}}}
    assert doc["default-priorities"] == {"namespace": ["torchwheel"]}
    assert doc["providers"]["torchwheel"]["plugin-api"] == "torchwheel.publish.variant_plugin:TorchABIPlugin"
    unstable = json.loads(_member(release / _variant("213"), "variant.json"))
    assert unstable["variants"] == {"torch2.13only": {"torchwheel": {"build_torch": ["2.13"]}}}
    # the fallback is the 2.10 build itself: the same METADATA, no variant.json
    assert _member(release / PLAIN, "METADATA") == _member(release / _variant("210"), "METADATA")
    assert b"Requires-Dist: torch>=2.12" in _member(release / _variant("212"), "METADATA")
    with zipfile.ZipFile(release / PLAIN) as zf:
        assert "twidx-1.0.0.dist-info/variant.json" not in zf.namelist()


def test_variantlib_analyzes_what_tag_writes(release: Path) -> None:
    for build, prop in (
        ("212", "torchwheel :: stable_abi :: 2.12"),
        ("213", "torchwheel :: build_torch :: 2.13"),
    ):
        result = subprocess.run(
            [str(VARIANTLIB), "analyze-wheel", "-i", str(release / _variant(build))],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
        assert prop in result.stdout
        assert f"Label: `{LABELS[build]}`" in result.stderr + result.stdout


def test_index_variants_json_equals_variantlibs(index: Path, release: Path, tmp_path: Path) -> None:
    ours = json.loads((index / "files" / "twidx-1.0.0-variants.json").read_text())
    folder = tmp_path / "vl"
    folder.mkdir()
    for build in LABELS:
        (folder / _variant(build)).write_bytes((release / _variant(build)).read_bytes())
    result = subprocess.run(
        [str(VARIANTLIB), "generate-index-json", "-d", str(folder)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    theirs = json.loads((folder / "twidx-1.0.0-variants.json").read_text())
    # the same document but for the schema URL: variantlib 0.2.2 names its own, which uv
    # 0.13.9 calls unknown; ours is PEP 850's (tests/e2e/test_variants_uv.py)
    assert theirs.pop("$schema") == "https://variants-schema.wheelnext.dev/v0.2.0.json"
    assert ours.pop("$schema") == "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
    assert ours == theirs
    page = (index / "torch-2.13" / "simple" / "twidx" / "index.html").read_text()
    assert "twidx-1.0.0-variants.json#sha256=" in page


def _priority(variants_json: dict[str, object], python: Path) -> list[str]:
    import variantlib.plugins.loader as loader

    loader.VARIANT_PROVIDER_CACHE_TABLE.clear()  # keyed without the interpreter: one per env
    found = variantlib_api.get_variants_by_priority(
        variants_json=variants_json, venv_python_executable=python
    )
    labels = [v.label for v in found]
    assert labels[-1:] == ["null"]  # variantlib always ends with the zero-property variant
    return labels[:-1]


def _with_torchwheel(python: Path) -> Path:
    """torchwheel's sources on the venv's path (the plugin imports only the standard library)."""
    (site,) = (python.parent.parent / "lib").glob("python3*/site-packages")
    (site / "torchwheel_src.pth").write_text(str(REPO / "src") + "\n")
    return python


@pytest.mark.parametrize(
    ("torch", "expected"),
    [
        (None, []),
        ("2.9", []),
        ("2.11", ["torch2.10"]),
        ("2.12", ["torch2.12", "torch2.10"]),
        ("2.13", ["torch2.12", "torch2.10", "torch2.13only"]),
    ],
)
def test_plugin_ranks_in_the_target_environment(
    index: Path, tmp_path: Path, torch: str | None, expected: list[str]
) -> None:
    doc = json.loads((index / "files" / "twidx-1.0.0-variants.json").read_text())
    python = _with_torchwheel(venv_with_torch(tmp_path / "venv", torch, tmp_path / "stub"))
    assert _priority(doc, python) == expected


def test_plugin_override_for_build_farms(
    index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = json.loads((index / "files" / "twidx-1.0.0-variants.json").read_text())
    python = _with_torchwheel(venv_with_torch(tmp_path / "venv", None, tmp_path / "stub"))
    monkeypatch.setenv("TORCHWHEEL_VARIANT_TORCH", "2.12")
    assert _priority(doc, python) == ["torch2.12", "torch2.10"]
    monkeypatch.setenv("TORCHWHEEL_VARIANT_TORCH", "none")
    assert _priority(doc, python) == []


def test_plugin_is_registered_by_entry_point() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="variant_plugins") if e.name == "torchwheel"]
    assert ep.value == "torchwheel.publish.variant_plugin:TorchABIPlugin"
    result = subprocess.run([str(VARIANTLIB), "plugins", "list"], capture_output=True, text=True)
    assert result.returncode == 0 and "torchwheel" in result.stdout.split()


def _mixed_folder(release: Path, index: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "links"
    folder.mkdir()
    for p in release.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    vjson = index / "files" / "twidx-1.0.0-variants.json"
    (folder / vjson.name).write_bytes(vjson.read_bytes())
    return folder


def test_uv_preview_falls_back_to_the_plain_wheel(release: Path, index: Path, tmp_path: Path) -> None:
    """uv 0.13.9 skips third-party provider plugins: the non-variant wheel, no error."""
    folder = _mixed_folder(release, index, tmp_path)
    python = venv_with_torch(tmp_path / "venv", "2.13", tmp_path / "stub")
    args = ["pip", "install", "--preview-features", "wheel-variants", "--python", str(python)]
    result = uv(*args, "--no-index", "--find-links", str(folder), "twidx", cache=tmp_path / "uv")
    assert result.returncode == 0, result.stderr
    dist_info = installed_dist_info(python, "twidx")
    assert not (dist_info / "variant.json").exists()


def test_pip_ignores_variant_wheels_in_a_mixed_folder(release: Path, index: Path, tmp_path: Path) -> None:
    folder = _mixed_folder(release, index, tmp_path)
    python = venv_with_torch(tmp_path / "venv", "2.13", tmp_path / "stub")
    result = pip(python, "--no-index", "--find-links", str(folder), "twidx")
    assert result.returncode == 0, result.stderr
    dist_info = installed_dist_info(python, "twidx")
    assert not (dist_info / "variant.json").exists()
    assert "Torch-ABI: 2.10" in (dist_info / "WHEEL").read_text()  # the plain fallback


def test_twine_check_passes_on_every_artifact(index: Path) -> None:
    wheels = sorted((index / "files").glob("*.whl"))
    assert len(wheels) == 4
    twine = Path(sys.executable).parent / "twine"
    # not --strict: the fixture METADATA has no long description (a warning, not torchwheel's)
    result = subprocess.run([str(twine), "check", *map(str, wheels)], capture_output=True, text=True)
    assert result.stdout.count("PASSED") == len(wheels)
    assert result.returncode == 0, result.stdout + result.stderr


def test_variant_of_a_wheel_without_torch_is_refused(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    wm = fixture_wheels_module()
    spec = wm.WheelSpec("plain", "plainext", TAGS, (("plainext/_C.abi3.so", "elf_no_torch"),), requires=())
    wheel = wm.write_wheel(tmp_path / "in" / spec.filename, spec, built_fixtures)
    result = torchwheel("tag", "--variant", "-w", str(tmp_path / "out"), str(wheel))
    assert result.returncode == 2
    assert "no torch symbols" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_variant_in_place_keeps_the_plain_fallback(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    from ..lib.publish_helpers import untagged_builds

    wheel = untagged_builds(built_fixtures, tmp_path / "raw")["212"]
    result = torchwheel("tag", "--variant", "--in-place", str(wheel))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in wheel.parent.iterdir()) == sorted([PLAIN, _variant("212")])
    assert b"Torch-ABI: 2.12" in _member(wheel.parent / PLAIN, "WHEEL")  # the input, tagged in place
    with zipfile.ZipFile(wheel.parent / PLAIN) as zf:
        assert "twidx-1.0.0.dist-info/variant.json" not in zf.namelist()
