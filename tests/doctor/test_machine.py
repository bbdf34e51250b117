"""``doctor.machine``: the parts of a distribution this machine does not load, in words; the CUDA
its libraries need of the driver, read from NVIDIA-built libraries (``fixtures/cuda/bin``)."""

from __future__ import annotations

from pathlib import Path

from torchwheel.analysis.load import load_facts
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.doctor.driver import Driver
from torchwheel.doctor.machine import (
    _condensed,
    _families,
    _numbered_names,
    cuda_needs,
    driver_part,
    minor_compatibility_words,
    torch_driver_words,
)
from torchwheel.tables.tableset import shipped_tables
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.torchabi.cuda_driver import CudaNeed

from ..lib.helpers import REPO

BIN = REPO / "fixtures" / "cuda" / "bin"
CU130 = TorchBuild("cuda", 13, 0)


def _facts(path: Path) -> WheelFacts:
    (facts,) = load_facts((path,), (), shipped_tables())
    return facts


def test_alternatives_by_number() -> None:
    members = [f"torchcodec/libtorchcodec_{k}{n}.so" for k in ("core", "custom_ops") for n in range(4, 10)]
    members += [
        "torchcodec/libtorchcodec_image.so",
        "torchcodec/_C.cpython-311-x86_64-linux-gnu.so",
        "pkg/lib1.so",
    ]
    (family,) = _families(members)
    assert sorted(family) == [4, 5, 6, 7, 8, 9]
    assert family[4] == ("torchcodec/libtorchcodec_core4.so", "torchcodec/libtorchcodec_custom_ops4.so")
    assert _numbered_names(family) == "libtorchcodec_core4-9.so, libtorchcodec_custom_ops4-9.so"


def test_missing_libraries_in_words() -> None:
    ffmpeg = [f"libavutil.so.{n}" for n in range(56, 62)]
    assert _condensed(ffmpeg) == "libavutil (FFmpeg 4-9: libavutil.so.56-61)"
    assert _condensed(["libavcodec.so.60"]) == "libavcodec (FFmpeg's: libavcodec.so.60)"
    assert _condensed(["libheif.so.1", "libfoo.so", "libx.so.2", "liby.so.3"]) == (
        "libheif.so.1, libx.so.2, liby.so.3 and 1 more"
    )


def test_what_cuda_code_needs_of_the_driver() -> None:
    torch_cuda = cuda_needs(_facts(BIN / "cu13_torch_cuda.so"), CU130, "torch 2.14.1+cu130", None)
    assert CudaNeed("runtime", (13, 0), "libcudart.so.13") in torch_cuda
    assert CudaNeed("runtime", (13, 0), "torch 2.14.1+cu130") in torch_cuda
    assert not [n for n in torch_cuda if n.kind == "ptx"]  # its cubins may run: the GPU is not known
    # sm_86 cubins and compute_90 PTX (ISA 9.5): on an sm_90 GPU only the PTX runs, compiled by the driver
    ptx = cuda_needs(_facts(BIN / "cu13_no_compress.so"), CU130, "torch", 90)
    assert CudaNeed("ptx", (13, 5), "compute_90 PTX, ISA 9.5") in ptx
    assert not [
        n for n in cuda_needs(_facts(BIN / "cu13_no_compress.so"), CU130, "torch", 86) if n.kind == "ptx"
    ]
    static = cuda_needs(_facts(BIN / "cu13_static.so"), None, "torch", None)
    assert CudaNeed("runtime", (13, 0), "its static CUDA runtime") in static


def test_the_driver_part() -> None:
    needs = (
        CudaNeed("runtime", (13, 0), "libcudart.so.13"),
        CudaNeed("runtime", (13, 0), "torch 2.14.1+cu130"),
    )
    part = driver_part(needs, Driver("found", (12, 4), "/x/libcuda.so.1"))
    assert part is not None and not part.required and part.axis == "driver"
    assert part.words == (
        "its CUDA code will not run: it needs CUDA 13 (libcudart.so.13, torch 2.14.1+cu130); "
        "this machine's driver supports CUDA 12.4"
    )
    assert "update the NVIDIA driver" in part.fix
    assert driver_part(needs, Driver("found", (13, 0), "x")) is None
    assert driver_part(needs, Driver("none", note="none")) is None  # no driver: no mismatch
    ptx = (CudaNeed("ptx", (13, 5), "compute_90 PTX, ISA 9.5"),)
    assert driver_part(ptx, Driver("found", (13, 2), "x")) is not None
    assert torch_driver_words(CU130, "torch 2.14.1+cu130", Driver("found", (12, 4), "x")) == (
        "torch 2.14.1+cu130 needs CUDA 13; this machine's driver supports CUDA 12.4"
    )
    assert torch_driver_words(CU130, "torch", Driver("found", (13, 2), "x")) == ""
    assert torch_driver_words(TorchBuild("cpu"), "torch", Driver("found", (12, 4), "x")) == ""
    cu132 = TorchBuild("cuda", 13, 2)
    assert minor_compatibility_words(cu132, "torch 2.15.0+cu132", Driver("found", (13, 0), "x")) == (
        "torch 2.15.0+cu132 (CUDA 13.2) runs on it by minor-version compatibility"
    )
    assert minor_compatibility_words(cu132, "torch", Driver("found", (13, 2), "x")) == ""


def test_the_driver_in_the_summary() -> None:
    """The summary names what needs more than the driver: torch's new major alone, PTX by its
    minor, the rows whose CUDA code it cannot run."""
    from packaging.version import Version

    from torchwheel.doctor.diagnosis import Diagnosis, DiagnosisRow, JudgedTorch, driver_summary
    from torchwheel.doctor.machine import Machine
    from torchwheel.torchabi.verdicts import Verdict

    def diagnosis(build: TorchBuild, driver: tuple[int, int], parts: tuple[CudaNeed, ...]) -> Diagnosis:
        machine = Machine(Driver("found", driver, "/x/libcuda.so.1"), None, "")
        part = driver_part(parts, machine.driver)
        row = DiagnosisRow(
            "ext",
            "1.0",
            "/site/ext-1.0.dist-info",
            None,
            Verdict("loads", "ok"),
            parts=(part,) if part else (),
        )
        judged = JudgedTorch(Version("2.15.0"), build, None, {})
        return Diagnosis(judged, (row,), 0, None, machine=machine)

    runtime13 = (CudaNeed("runtime", (13, 0), "libcudart.so.13"),)
    assert driver_summary(diagnosis(CU130, (12, 4), runtime13)) == (
        "this machine's driver supports CUDA 12.4: torch 2.15.0+cu130 and ext need CUDA 13"
    )
    ptx = (CudaNeed("ptx", (13, 5), "compute_90 PTX, ISA 9.5"),)
    assert driver_summary(diagnosis(TorchBuild("cuda", 13, 2), (13, 2), ptx)) == (
        "this machine's driver supports CUDA 13.2: ext needs CUDA 13.5"
    )
    assert driver_summary(diagnosis(CU130, (13, 2), runtime13)) == ""
