"""``analysis.device_code``: a library for an accelerator's own cores is recognised on the
package's own evidence only (a kernel manifest that names it, no host loader that reads it),
on real fixture wheels (an AArch64 library from ``zig cc -target aarch64-linux-gnu`` in an
x86_64 wheel) and on wheels changed one piece of evidence at a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchwheel.analysis import device_code
from torchwheel.analysis.load import load_facts
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.report.facts_document import wheel_json
from torchwheel.report.show_text import wheel_text
from torchwheel.tables.tableset import shipped_tables

from ..lib.helpers import fixture_wheels_module

KERNEL = "wdevice/vendors/op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so"
MANIFEST = "wdevice/vendors/op_impl/cpu/config/cust_aicpu_kernel.json"


def _facts(path: Path) -> WheelFacts:
    (facts,) = load_facts((path,), (), shipped_tables())
    return facts


def test_the_kernel_named_by_the_manifest_is_device_code(fixture_wheels: dict[str, Path]) -> None:
    w = _facts(fixture_wheels["device_kernels"])
    assert w.device_code == {KERNEL: MANIFEST}
    assert wheel_json(w)["device_code"] == [{"member": KERNEL, "manifest": MANIFEST}]
    assert f"device-side      {KERNEL} (the accelerator's own cores: {MANIFEST} names it" in wheel_text(w)


@pytest.mark.parametrize("scenario", ["device_kernels_loaded", "device_kernels_no_manifest"])
def test_short_of_the_evidence_it_is_not(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    w = _facts(fixture_wheels[scenario])
    assert w.device_code == {}
    assert wheel_json(w)["device_code"] == [] and "device-side" not in wheel_text(w)


def _variant(built: dict[str, Path], out: Path, **change: object) -> Path:
    """``device_kernels`` with one thing changed (the fixtures' own writer)."""
    import dataclasses

    wm = fixture_wheels_module()
    spec = dataclasses.replace(wm.WHEELS["device_kernels"], **change)
    return wm.write_wheel(out / spec.filename, spec, built)  # type: ignore[no-any-return]


def _manifest(value: object) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("case", "found"),
    [
        # the manifest names it under a key that is no kernel's: no evidence
        ("other key", False),
        # the manifest names it by a path, as a kernel: evidence
        ("kernel path", True),
        # a loader names its folder (a glob over impl/ would read it)
        ("loader names the folder", False),
        # a Python module sits in its folder
        ("python beside it", False),
        # a manifest in .dist-info is the packaging's, not the package's
        ("manifest in dist-info", False),
    ],
)
def test_each_piece_of_evidence(
    case: str, found: bool, built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    wm = fixture_wheels_module()
    base = wm.WHEELS["device_kernels"]
    loader, manifest = dict(base.extra)["wdevice/__init__.py"], wm.AICPU_MANIFEST
    extra: list[tuple[str, bytes]] = [("wdevice/__init__.py", loader)]
    json_at = f"wdevice/{wm.KERNEL_JSON}"
    if case == "other key":
        manifest = _manifest({"MyAdd": {"opInfo": {"library": "libcust_aicpu_kernels.so"}}})
    elif case == "kernel path":
        manifest = _manifest({"kernels": ["op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so"]})
    elif case == "loader names the folder":
        extra = [("wdevice/__init__.py", loader + b'\nKERNELS = os.path.join("aicpu_kernel", "impl")\n')]
    elif case == "python beside it":
        extra.append((f"wdevice/{wm.KERNEL_SO.rsplit('/', 1)[0]}/__init__.py", b""))
    elif case == "manifest in dist-info":
        json_at = "wdevice-1.0.0.dist-info/kernels.json"
    extra.append((json_at, manifest))
    w = _facts(_variant(built_fixtures, tmp_path, extra=tuple(extra)))
    assert (w.device_code == {KERNEL: json_at}) is found, w.device_code
    assert (w.device_code == {}) is not found


def test_nothing_is_read_when_every_processor_fits(fixture_wheels: dict[str, Path]) -> None:
    """A wheel whose files all fit its tag: no manifest or Python file is read for this."""
    w = _facts(fixture_wheels["clean"])
    reads: list[str] = []
    assert (
        device_code.device_side(w.binaries, [], ["x.json"], lambda m: 1, lambda m: reads.append(m) or b"{}")
        == {}
    )
    from torchwheel.analysis.platforms import expected

    promise = expected("manylinux_2_28_x86_64")
    assert promise is not None
    assert device_code.device_side(w.binaries, [promise], ["x.json"], lambda m: 1, reads.append) == {}  # type: ignore[arg-type]
    assert reads == []
