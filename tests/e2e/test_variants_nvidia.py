"""Wheel variants for CUDA builds (DRAFT standards): `tag --variant` labels a wheel that
needs a CUDA build of torch with NVIDIA's provider properties, which uv 0.13.9's preview
evaluates itself. One release: the CPU build as the plain wheel, the CUDA 13 and CUDA 12
builds (the nvcc fixtures) as variants ``cu13`` and ``cu12``.

The GPU is NVIDIA's provider's to detect; without a GPU here, each target is given to uv
through the provider's own overrides (``NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION``,
``NV_VARIANT_PROVIDER_FORCE_SM_ARCH``). variantlib cannot run NVIDIA's plugin here (the
registry's ``nvidia-variant-provider`` is a 0.0.0a0 placeholder), so its resolver ranks the
same ``-variants.json`` against the properties the provider reports for the same target
(``nvidia_supported``, the provider's published rule) and must pick what uv picks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from variantlib.models.variant import VariantProperty
from variantlib.resolver.lib import sort_and_filter_supported_variants
from variantlib.variants_json import VariantsJson

from torchwheel.wheel import variant_json

from ..lib.helpers import fixture_wheels_module, torchwheel
from ..lib.publish_helpers import TAGS, offline_env, venv_with_torch

VARIANTLIB = Path(sys.executable).parent / "variantlib"
BUILDS = {"cpu": "elf_marker_2_10", "cu13": "cuda:cu13_torch_cuda.so", "cu12": "cuda:cu12_runtime.so"}
PLAIN = f"twgpu-1.0.0-{TAGS}.whl"
VARIANTLIB_SCHEMA = "https://variants-schema.wheelnext.dev/v0.2.0.json"  # what variantlib 0.2.2 names


@pytest.fixture(scope="module")
def release(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plain CPU wheel, the two CUDA variants and the index's ``-variants.json``, in one
    folder (what ``uv --find-links`` reads)."""
    wm = fixture_wheels_module()
    work = tmp_path_factory.mktemp("nvrelease")
    folder = work / "links"
    folder.mkdir()
    for build, binary in BUILDS.items():
        init = (("twgpu/__init__.py", f"BUILD = {build!r}\n".encode()),)
        spec = wm.WheelSpec(
            "r", "twgpu", TAGS, (("twgpu/_C.abi3.so", binary),), requires=("torch>=2.10",), extra=init
        )
        raw = wm.write_wheel(work / "raw" / build / spec.filename, spec, built_fixtures)
        args = (
            ("tag", "-w", str(work / build))
            if build == "cpu"
            else ("tag", "--variant", "-w", str(work / build))
        )
        result = torchwheel(*args, str(raw))
        assert result.returncode == 0, result.stderr
        name = PLAIN if build == "cpu" else f"twgpu-1.0.0-{TAGS}-{build}.whl"
        shutil.copy(work / build / name, folder / name)
    index = torchwheel("index", str(folder), "-o", str(work / "index"))
    assert index.returncode == 0, index.stderr
    shutil.copy(work / "index" / "files" / "twgpu-1.0.0-variants.json", folder)
    return folder


def _variant_json(wheel: Path) -> dict[str, object]:
    with zipfile.ZipFile(wheel) as zf:
        return json.loads(zf.read("twgpu-1.0.0.dist-info/variant.json"))  # type: ignore[no-any-return]


def test_cuda_builds_carry_nvidias_properties(release: Path) -> None:
    cu13 = _variant_json(release / f"twgpu-1.0.0-{TAGS}-cu13.whl")
    # cu13_torch_cuda.so: libcudart.so.13; cubins sm_75, sm_80, sm_90a, sm_100f, sm_120; PTX compute_120
    assert cu13["variants"] == {
        "cu13": {
            "nvidia": {
                "cuda_version_lower_bound": ["13"],
                "sm_arch": ["100_real", "120_real", "120_virtual", "75_real", "80_real", "90_real"],
            }
        }
    }
    assert cu13["providers"] == {
        "nvidia": {
            "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
            "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
        }
    }
    cu12 = _variant_json(release / f"twgpu-1.0.0-{TAGS}-cu12.whl")  # libcudart.so.12, no GPU code
    assert cu12["variants"] == {"cu12": {"nvidia": {"cuda_version_lower_bound": ["12"]}}}
    with zipfile.ZipFile(release / PLAIN) as zf:
        assert "twgpu-1.0.0.dist-info/variant.json" not in zf.namelist()
        assert b"Torch-Build: any" in zf.read("twgpu-1.0.0.dist-info/WHEEL")


def test_variantlib_reads_them_and_writes_the_same_index_file(release: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [str(VARIANTLIB), "analyze-wheel", "-i", str(release / f"twgpu-1.0.0-{TAGS}-cu13.whl")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "nvidia :: sm_arch :: 90_real" in result.stdout
    assert "nvidia :: cuda_version_lower_bound :: 13" in result.stdout
    folder = tmp_path / "vl"
    folder.mkdir()
    for p in release.glob("*-cu1?.whl"):
        shutil.copy(p, folder)
    made = subprocess.run(
        [str(VARIANTLIB), "generate-index-json", "-d", str(folder)], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    theirs = json.loads((folder / "twgpu-1.0.0-variants.json").read_text())
    ours = json.loads((release / "twgpu-1.0.0-variants.json").read_text())
    assert (ours.pop("$schema"), theirs.pop("$schema")) == (variant_json.SCHEMA, VARIANTLIB_SCHEMA)
    assert ours == theirs


def _has_nvidia_driver() -> bool:
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


# target: (CUDA driver, GPU compute capability) as NVIDIA's provider detects them -> the build
TARGETS = {
    "no GPU": (None, None, "cpu"),
    "driver 13.0, H100 (9.0)": ("13.0", "9.0", "cu13"),
    "driver 13.0, RTX 50 (12.0)": ("13.0", "12.0", "cu13"),
    "driver 12.8, H100 (9.0)": ("12.8", "9.0", "cu12"),  # a CUDA 12 driver cannot run the cu13 build
    "driver 13.0, GTX 10 (6.1)": ("13.0", "6.1", "cu12"),  # cu13 has no code for 6.x; cu12 names none
    "driver 11.8, A100 (8.0)": ("11.8", "8.0", "cpu"),  # neither CUDA build's runtime
}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_uv_preview_picks_by_the_gpu(release: Path, tmp_path: Path, target: str) -> None:
    driver, sm, expected = TARGETS[target]
    python = venv_with_torch(tmp_path / "venv", "2.13.0", tmp_path / "stub")
    env = {k: v for k, v in offline_env().items() if not k.startswith("NV_VARIANT_PROVIDER_")}
    env["UV_CACHE_DIR"] = str(tmp_path / "uvcache")
    if driver is not None and sm is not None:
        env |= {
            "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": driver,
            "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": sm,
        }
    uv = Path(sys.executable).parent / "uv"
    args = ["pip", "install", "--preview-features", "wheel-variants", "--python", str(python)]
    result = subprocess.run(
        [str(uv), *args, "--no-index", "--find-links", str(release), "twgpu"],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    got = subprocess.run(
        [str(python), "-c", "import twgpu; print(twgpu.BUILD)"], capture_output=True, text=True
    )
    if driver is None and _has_nvidia_driver():  # a real GPU here: the provider found it
        assert got.stdout.strip() in ("cu13", "cu12"), got.stdout
    else:
        assert got.stdout.strip() == expected, (target, got.stdout, got.stderr)
    assert _pick_by_variantlib(release, driver, sm) == expected  # the same target's properties


def nvidia_supported(driver: str | None, sm: str | None) -> list[VariantProperty]:
    """The properties NVIDIA's provider reports for a target (nvidia-variant-provider's
    ``get_supported_configs``, the logic uv 0.13.9 carries): ``cuda_version_lower_bound``:
    every CUDA version up to the driver's, newest first, each major also bare (``13.0``,
    ``13``, ``12.20`` ... ``12.0``, ``12``, ... ``11``); ``sm_arch``: the GPU's major with every
    minor up to its own as ``_real``, then ``X0_virtual``. Nothing without a driver."""
    if driver is None:
        return []
    major, minor = map(int, driver.split("."))
    lower = [
        value
        for m in range(major, 10, -1)
        for value in [*(f"{m}.{n}" for n in range(minor if m == major else 20, -1, -1)), str(m)]
    ]
    out = [VariantProperty("nvidia", "cuda_version_lower_bound", v) for v in lower]
    if sm is not None:
        x, y = map(int, sm.split("."))
        archs = [*(f"{x}{n}_real" for n in range(y, -1, -1)), f"{x}0_virtual"]
        out += [VariantProperty("nvidia", "sm_arch", v) for v in archs]
    return out


def _pick_by_variantlib(release: Path, driver: str | None, sm: str | None) -> str:
    doc = VariantsJson(json.loads((release / "twgpu-1.0.0-variants.json").read_text()))
    ranked = sort_and_filter_supported_variants(
        list(doc.variants.values()),
        nvidia_supported(driver, sm),
        namespace_priorities=["nvidia"],
        feature_priorities={"nvidia": ["cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch"]},
        filter_values=True,
    )
    labels = [v.label for v in ranked]
    assert labels[-1] == "null"  # variantlib always ends with the zero-property variant
    return labels[0] if len(labels) > 1 else "cpu"  # no variant fits: the plain wheel
