"""uv 0.13.9 (the test extra's pin) on wheel-variant metadata: it parses every variant file
`tag --variant` and `index` write (the torchwheel namespace, NVIDIA's, both in one release)
under the schema URL it knows, and still installs; and `variant_json.installer_problem` is
held to what uv refuses, case by case, because uv's preview fails a *whole* install over a
`variants.json` it cannot parse. `index` then leaves such a release's variants out, and the
install falls back to the plain wheel. Offline: stub torch distributions, local folders, a
`file://` index."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from torchwheel.wheel import variant_json

from ..lib.helpers import fixture_wheels_module, torchwheel, zipped_wheel
from ..lib.publish_helpers import (
    PLAIN,
    TAGS,
    installed_dist_info,
    offline_env,
    variant_release,
    venv_with_torch,
)

UV = Path(sys.executable).parent / "uv"
REFUSED = "has invalid metadata"  # uv's warning before it gives up on the release
UNKNOWN = "Unknown variant metadata schema"


def _uv(
    python: Path, *args: str, cache: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [
        str(UV),
        "pip",
        "install",
        "-v",
        "--preview-features",
        "wheel-variants",
        "--python",
        str(python),
        *args,
    ]
    run_env = {**offline_env(), "UV_CACHE_DIR": str(cache), **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=run_env)


def test_uv_is_the_pinned_release() -> None:
    result = subprocess.run([str(UV), "--version"], capture_output=True, text=True)
    assert result.stdout.split()[:2] == ["uv", "0.13.9"]


@pytest.fixture(scope="module")
def release(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """twidx 1.0.0: the plain wheel and three variants (torch2.10, torch2.12, torch2.13only)."""
    return variant_release(built_fixtures, tmp_path_factory.mktemp("uvrelease"))


@pytest.fixture(scope="module")
def index(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("uvindex") / "index"
    result = torchwheel("index", str(release), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with a stub torch 2.13, that the install tests install into."""
    work = tmp_path_factory.mktemp("uvvenv")
    return venv_with_torch(work / "venv", "2.13", work / "stub")


@pytest.fixture(scope="module")
def untouched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with a stub torch 2.13 that only ``--dry-run`` ever sees: twidx is never in it."""
    work = tmp_path_factory.mktemp("uvdry")
    return venv_with_torch(work / "venv", "2.13", work / "stub")


def test_what_tag_and_index_write_names_the_schema_uv_knows(release: Path, index: Path) -> None:
    docs = [json.loads((index / "files" / "twidx-1.0.0-variants.json").read_text())]
    for wheel in release.glob("*-torch*.whl"):
        with zipfile.ZipFile(wheel) as zf:
            docs.append(json.loads(zf.read("twidx-1.0.0.dist-info/variant.json")))
    assert len(docs) == 4
    for doc in docs:
        assert doc["$schema"] == "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
        assert variant_json.installer_problem(doc) is None


def test_uv_parses_the_index_files_and_installs(index: Path, python: Path, tmp_path: Path) -> None:
    """From the per-torch `file://` index (its page links the variants.json) and from the
    files folder as --find-links: parsed, no schema uv calls unknown, the plain wheel
    installed (uv skips third-party provider plugins)."""
    for n, source in enumerate(
        (
            ["--index-url", (index / "torch-2.13" / "simple").as_uri()],
            ["--no-index", "--find-links", str(index / "files")],
        )
    ):
        result = _uv(python, *source, "twidx", "--reinstall-package", "twidx", cache=tmp_path / f"uv{n}")
        assert result.returncode == 0, result.stderr
        assert REFUSED not in result.stderr and UNKNOWN not in result.stderr, result.stderr
        assert "Skipping unsupported wheel variant provider" in result.stderr  # it read the file
        assert not (installed_dist_info(python, "twidx") / "variant.json").exists()


# what `index` wrote, changed one way at a time: each shape uv 0.13.9 was seen to parse or refuse
def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    *parents, last = path.split("/")

    def change(doc: dict[str, Any]) -> None:
        for p in parents:
            doc = doc[p]
        if value is _DROP:
            del doc[last]
        else:
            doc[last] = value

    return change


_DROP = object()
PROVIDER = {"requires": ["torchwheel"], "plugin-api": "torchwheel.publish.variant_plugin:TorchABIPlugin"}
SHAPES: dict[str, Callable[[dict[str, Any]], None]] = {
    "as written": lambda doc: None,
    "PEP 825 schema": _set("$schema", "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"),
    "variantlib's schema": _set("$schema", "https://variants-schema.wheelnext.dev/v0.2.0.json"),
    "no $schema": _set("$schema", _DROP),
    "no default-priorities": _set("default-priorities", _DROP),
    "empty priorities": _set("default-priorities/namespace", []),
    "a priority twice": _set("default-priorities/namespace", ["torchwheel", "torchwheel"]),
    "a priority without provider": _set("default-priorities/namespace", ["torchwheel", "nvidia"]),
    "a namespace not in priorities": _set("default-priorities/namespace", ["other"]),
    "no providers": _set("providers", _DROP),
    "no providers, PEP 825 schema": lambda doc: [
        _set("providers", _DROP)(doc),
        SHAPES["PEP 825 schema"](doc),
    ][0],
    "no providers, variantlib's schema": lambda doc: [
        _set("providers", _DROP)(doc),
        SHAPES["variantlib's schema"](doc),
    ][0],
    "empty providers": _set("providers", {}),
    "empty providers, PEP 825 schema": lambda doc: [
        _set("providers", {})(doc),
        SHAPES["PEP 825 schema"](doc),
    ][0],
    "a priority without provider, variantlib's schema": lambda doc: [
        SHAPES["a priority without provider"](doc),
        SHAPES["variantlib's schema"](doc),
    ][0],
    "provider: requires alone": _set("providers/torchwheel", {"requires": ["torchwheel"]}),
    "provider: plugin-api alone": _set("providers/torchwheel", {"plugin-api": PROVIDER["plugin-api"]}),
    "provider: optional": _set("providers/torchwheel", {**PROVIDER, "optional": True}),
    "provider: feature-order": _set("providers/torchwheel", {**PROVIDER, "feature-order": ["stable_abi"]}),
    "provider: static-properties": _set("providers/torchwheel", {"static-properties": {"x": ["1"]}}),
    "provider: static and plugin": _set(
        "providers/torchwheel", {**PROVIDER, "static-properties": {"x": ["1"]}}
    ),
    "provider: builtin": _set("providers/torchwheel", {"builtin": "x"}),
    "a value twice": _set("variants/torch2.10/torchwheel/stable_abi", ["2.10", "2.10"]),
    "values in any order": _set("variants/torch2.10/torchwheel/stable_abi", ["2.9", "2.10"]),
    "null without properties": _set("variants/null", {}),
    "null with properties": _set("variants/null", {"torchwheel": {"stable_abi": ["2.10"]}}),
    "a variant without properties": _set("variants/torch2.10", {}),
    "a long label": _set("variants/averyveryverylonglabel", {"torchwheel": {"stable_abi": ["2.10"]}}),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_installer_problem_is_what_uv_refuses(
    shape: str, release: Path, index: Path, untouched: Path, tmp_path: Path
) -> None:
    doc = json.loads((index / "files" / "twidx-1.0.0-variants.json").read_text())
    SHAPES[shape](doc)
    assert variant_json.SHAPE.problem(doc, "$") is None  # a file index could be given: it reads through SHAPE
    folder = tmp_path / "links"
    shutil.copytree(release, folder)
    (folder / "twidx-1.0.0-variants.json").write_text(json.dumps(doc))
    result = _uv(
        untouched, "--no-index", "--find-links", str(folder), "--dry-run", "twidx", cache=tmp_path / "uv"
    )
    assert "Would install 1 package" in result.stderr or REFUSED in result.stderr, result.stderr
    parsed = REFUSED not in result.stderr
    assert parsed == (result.returncode == 0), result.stderr
    assert (variant_json.installer_problem(doc) is None) == parsed, result.stderr[-800:]


def _rewritten(wheel: Path, out: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """``wheel`` with its variant.json changed, RECORD rewritten (the test's own zip writer)."""
    with zipfile.ZipFile(wheel) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/RECORD")}
    name = "twidx-1.0.0.dist-info/variant.json"
    doc = json.loads(members[name])
    change(doc)
    members[name] = json.dumps(doc).encode()
    return zipped_wheel(out / wheel.name, members, "twidx-1.0.0.dist-info/RECORD")


def test_index_leaves_out_what_uv_refuses_and_uv_installs_the_plain_wheel(
    release: Path, python: Path, tmp_path: Path
) -> None:
    """A variant wheel from another tool whose provider has variantlib's ``feature-order``:
    variantlib reads it, uv 0.13.9 does not. Written as the union it was before, uv fails the
    install; `index` leaves the release's variants out (a note says why), and uv installs
    the plain wheel from it."""
    folder = tmp_path / "in"
    shutil.copytree(release, folder)
    for variant in folder.glob("*-torch*.whl"):  # every variant of the release, as that tool wrote them
        _rewritten(variant, folder, SHAPES["provider: feature-order"])
        assert torchwheel("check", "--no-config", str(variant)).returncode in (0, 1)  # a readable wheel
    # the union as index wrote it before: uv refuses the whole install
    docs = []
    for w in sorted(folder.glob("*-torch*.whl")):
        with zipfile.ZipFile(w) as zf:
            docs.append(json.loads(zf.read("twidx-1.0.0.dist-info/variant.json")))
    before = tmp_path / "before"
    shutil.copytree(folder, before)
    (before / "twidx-1.0.0-variants.json").write_text(json.dumps(variant_json.merge_variant_files(docs)))
    links = ("--no-index", "--find-links", str(before))
    refused = _uv(python, *links, "twidx", "--reinstall-package", "twidx", cache=tmp_path / "uv0")
    assert refused.returncode != 0 and REFUSED in refused.stderr
    out = tmp_path / "index"
    result = torchwheel("index", str(folder), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "twidx-1.0.0-variants.json: not written" in result.stderr and "feature-order" in result.stderr
    assert sorted(p.name for p in (out / "files").glob("*.whl")) == [PLAIN]
    assert not list((out / "files").glob("*variants.json"))
    for page in out.glob("*/**/twidx/index.html"):
        assert "torch2.1" not in page.read_text() and "variants.json" not in page.read_text()
    simple = (out / "simple").as_uri()
    installed = _uv(
        python, "--index-url", simple, "twidx", "--reinstall-package", "twidx", cache=tmp_path / "uv1"
    )
    assert installed.returncode == 0 and REFUSED not in installed.stderr, installed.stderr
    assert "Torch-ABI: 2.10" in (installed_dist_info(python, "twidx") / "WHEEL").read_text()


# -- NVIDIA's namespace, and both namespaces in one release: uv evaluates NVIDIA's provider
# itself, so here it installs a variant wheel and reads that wheel's own variant.json too

NV_BUILDS = {"cpu": "elf_marker_2_10", "cu13": "cuda:cu13_torch_cuda.so"}


@pytest.fixture(scope="module")
def mixed(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """twgpu 1.0.0: the CPU build plain and as the variant ``torch2.10`` (torchwheel's
    namespace), the CUDA 13 build as ``cu13`` (NVIDIA's): one release, two namespaces."""
    wm = fixture_wheels_module()
    work = tmp_path_factory.mktemp("mixed")
    folder = work / "links"
    folder.mkdir()
    for build, binary in NV_BUILDS.items():
        init = (("twgpu/__init__.py", f"BUILD = {build!r}\n".encode()),)
        spec = wm.WheelSpec(
            "r", "twgpu", TAGS, (("twgpu/_C.abi3.so", binary),), requires=("torch>=2.10",), extra=init
        )
        raw = wm.write_wheel(work / "raw" / build / spec.filename, spec, built_fixtures)
        result = torchwheel("tag", "--variant", "-w", str(work / build), str(raw))
        assert result.returncode == 0, result.stderr
        for p in (work / build).iterdir():
            if p.name != f"twgpu-1.0.0-{TAGS}.whl" or build == "cpu":
                shutil.copy(p, folder / p.name)
    result = torchwheel("index", str(folder), "-o", str(work / "index"))
    assert result.returncode == 0, result.stderr
    return work / "index"


def test_both_namespaces_in_one_release_parse_and_the_variant_installs(
    mixed: Path, python: Path, tmp_path: Path
) -> None:
    doc = json.loads((mixed / "files" / "twgpu-1.0.0-variants.json").read_text())
    assert set(doc["providers"]) == set(doc["default-priorities"]["namespace"]) == {"torchwheel", "nvidia"}
    assert sorted(doc["variants"]) == ["cu13", "torch2.10"]
    env = {
        "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "13.0",
        "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0",
    }
    for n, (forced, build) in enumerate(((env, "cu13"), ({}, "cpu"))):
        clean = {k: v for k, v in offline_env().items() if not k.startswith("NV_VARIANT_PROVIDER_")}
        result = subprocess.run(
            [str(UV), "pip", "install", "-v", "--preview-features", "wheel-variants", "--python", str(python),
             "--no-index", "--find-links", str(mixed / "files"), "--reinstall-package", "twgpu", "twgpu"],
            capture_output=True, text=True, timeout=600, env={**clean, "UV_CACHE_DIR": str(tmp_path / f"uv{n}"), **forced},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert REFUSED not in result.stderr and UNKNOWN not in result.stderr, result.stderr
        got = subprocess.run(
            [str(python), "-c", "import twgpu; print(twgpu.BUILD)"], capture_output=True, text=True
        )
        assert got.stdout.strip() == build, (forced, got.stdout, got.stderr)
    dist_info = installed_dist_info(python, "twgpu")
    assert not (dist_info / "variant.json").exists()  # the last install: the plain CPU wheel
