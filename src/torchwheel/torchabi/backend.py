"""Which build of torch a wheel needs, and which build a target has: CPU, CUDA (by major),
ROCm (by major) or XPU.

The stable ABI frees an extension from the torch *version*, not from the *build*: a library
that links ``libtorch_cuda.so`` and ``libcudart.so.13`` loads only where torch was built for
CUDA 13. PyTorch publishes torch per backend and names them (``cpu``, ``cu126``, ``cu128``,
``cu130``, ``rocm7.0``, ``xpu``; uv's ``--torch-backend`` uses the same names), so a target is
one backend, and a wheel needs one of a set of build classes:

- ``any``: no accelerator (a CPU library loads on every build of torch);
- ``cpu``: a CPU build only (the CPU flavour of a set whose other flavour takes CUDA builds);
- ``cuda`` / ``cuda-13``: a CUDA build (of that major: the runtime libraries a library links,
  ``libcudart.so.13``, carry it);
- ``rocm`` / ``rocm-7``, ``xpu`` likewise.

``tag`` writes the set into WHEEL as ``Torch-Build: cpu, cuda-13`` beside ``Torch-ABI`` (which
stays true alone); ``build_fits`` is the part of the one verdict (``need.verdict``) that judges
it. Pure functions: where the facts come from is the callers' (the binaries' needed libraries,
torch's ``version.py``, a ``+cu130`` label).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from torchwheel.errors import InputError

Kind = Literal["cpu", "cuda", "rocm", "xpu"]
_NAMES = {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}
_CLASS = re.compile(r"^(any|cpu|xpu|cuda|rocm)(?:-(\d{1,3}))?$")
_BACKEND = re.compile(r"^(?:(cpu)|cu(\d{2})(\d)|rocm(\d{1,2})\.(\d{1,2})|(xpu))$")
# the newest backend PyTorch publishes per CUDA major: what a column or an index stands for
CUDA_BACKENDS = {11: "cu118", 12: "cu128", 13: "cu130"}
ROCM_BACKENDS = {6: "rocm6.4", 7: "rocm7.1"}
BACKENDS = ("cpu", "cu126", "cu128", "cu129", "cu130", "rocm6.4", "rocm7.0", "rocm7.1", "xpu")


@dataclass(frozen=True, order=True)
class TorchBuild:
    """The build of one torch: ``kind``, and for CUDA/ROCm the toolkit ``version``
    (``(13, 0)``), whose major is what a linked runtime pins."""

    kind: Kind
    version: tuple[int, int] | None = None

    @property
    def major(self) -> int | None:
        return self.version[0] if self.version else None

    @property
    def backend(self) -> str:
        """PyTorch's name for it: ``cpu``, ``cu130``, ``rocm7.0``, ``xpu``."""
        if self.kind == "cuda" and self.version:
            return f"cu{self.version[0]}{self.version[1]}"
        if self.kind == "rocm" and self.version:
            return f"rocm{self.version[0]}.{self.version[1]}"
        return self.kind

    def __str__(self) -> str:
        if self.version:
            return f"{_NAMES[self.kind]} {self.version[0]}.{self.version[1]} build ({self.backend})"
        return f"{_NAMES[self.kind]} build"


def parse_backend(name: str) -> TorchBuild:
    """``cpu``, ``cu126``, ``cu130``, ``rocm7.0``, ``xpu`` (uv's ``--torch-backend`` names)."""
    m = _BACKEND.match(name.strip().lower())
    if m is None:
        raise InputError(f"torch backend {name!r}: expected cpu, cuXYZ (cu126, cu130), rocmX.Y or xpu")
    if m.group(1):
        return TorchBuild("cpu")
    if m.group(2):
        return TorchBuild("cuda", (int(m.group(2)), int(m.group(3))))
    if m.group(4):
        return TorchBuild("rocm", (int(m.group(4)), int(m.group(5))))
    return TorchBuild("xpu")


_LABEL = re.compile(r"(?:^|[._])(cpu|cu\d{3}|rocm\d{1,2}\.\d{1,2}|xpu)(?:$|[._])")


def from_local_label(local: str | None) -> TorchBuild | None:
    """PyTorch's own builds say it in their local version: ``2.13.0+cu130``, ``+cpu``."""
    m = _LABEL.search(local or "")
    return parse_backend(m.group(1)) if m else None


def from_version_py(cuda: str | None, hip: str | None, xpu: bool = False) -> TorchBuild:
    """torch's ``version.py``: ``cuda = '13.0'`` / ``hip = '7.0.51831'`` / both None (CPU)."""
    for kind, text in (("cuda", cuda), ("rocm", hip)):
        if text:
            parts = text.split(".")
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                return TorchBuild(kind, (int(parts[0]), int(parts[1])))  # type: ignore[arg-type]
            return TorchBuild(kind)  # type: ignore[arg-type]
    return TorchBuild("xpu") if xpu else TorchBuild("cpu")


_VERSION_FIELD = re.compile(
    r"""^(cuda|hip|xpu)\s*(?::[^=\n]*)?=\s*(?:None|['"]([^'"\n]*)['"])""", re.MULTILINE
)


def from_version_py_text(text: str) -> TorchBuild:
    """torch's ``version.py`` read as text (torch is never imported)."""
    found = {m.group(1): m.group(2) for m in _VERSION_FIELD.finditer(text)}
    return from_version_py(found.get("cuda"), found.get("hip"), bool(found.get("xpu")))


def from_requirements(names: Iterable[str]) -> TorchBuild | None:
    """torch's CUDA builds on PyPI require the runtime: ``nvidia-cuda-runtime-cu12`` (CUDA 12),
    ``nvidia-cuda-runtime`` 13.x (CUDA 13, unsuffixed names)."""
    for name in names:
        m = re.match(r"nvidia-cuda-runtime(?:-cu(\d+))?$", name.lower())
        if m:
            return TorchBuild("cuda", (int(m.group(1)), 0) if m.group(1) else None)
    return None


# -- what a wheel needs -----------------------------------------------------------------------


def parse_need(value: str) -> frozenset[str]:
    """A ``Torch-Build`` value: ``any``, or the build classes it loads on (``cpu, cuda-13``)."""
    found = frozenset(part.strip().lower() for part in value.split(",") if part.strip())
    if not found or not all(_CLASS.match(c) for c in found) or ("any" in found and len(found) > 1):
        raise InputError(f"WHEEL Torch-Build: {value[:80]!r} is not 'any' or a list like 'cpu, cuda-13'")
    return found


def need_text(classes: Iterable[str]) -> str:
    return ", ".join(sorted(set(classes))) or "any"


def _matches(cls: str, build: TorchBuild) -> bool:
    m = _CLASS.match(cls)
    if m is None:
        return False
    kind, major = m.group(1), m.group(2)
    if kind == "any":
        return True
    if kind != build.kind:
        return False
    return major is None or build.major is None or int(major) == build.major


def describe_need(classes: Iterable[str]) -> str:
    """``a CUDA 13 build of torch``, ``a CPU or CUDA 13 build``, ``any build``."""
    words = []
    for cls in sorted(set(classes)):
        m = _CLASS.match(cls)
        if m is None:
            continue
        if m.group(1) == "any":
            return "any build of torch"
        words.append(_NAMES[m.group(1)] + (f" {m.group(2)}" if m.group(2) else ""))
    return f"a {' or '.join(words)} build of torch" if words else "any build of torch"


def build_fits(classes: frozenset[str], build: TorchBuild | None) -> tuple[bool, str]:
    """Does a wheel that loads on these build classes load on this build? ``build`` None: the
    target's build is not known (a plan without ``--torch-backend``): not judged, said so."""
    if not classes or "any" in classes:
        return True, ""
    if build is None:
        return True, f"needs {describe_need(classes)}; the target's build is not known (--torch-backend)"
    if any(_matches(c, build) for c in classes):
        return True, f"needs {describe_need(classes)}: the target's torch is a {build!s}"
    return False, f"needs {describe_need(classes)}, the target's torch is a {build!s}"


def representative_backends(needs: Iterable[frozenset[str]]) -> list[TorchBuild]:
    """The backends that tell wheels with these needs apart (one per CUDA/ROCm major named;
    the CPU build whenever some wheel loads there): the columns of ``matrix``, the per-backend
    indexes of ``index``."""
    out: set[str] = set()
    for classes in needs:
        for cls in classes:
            m = _CLASS.match(cls)
            if m is None:
                continue
            kind, major = m.group(1), m.group(2)
            if kind in ("any", "cpu"):
                out.add("cpu")
            elif kind == "cuda":
                out.add(CUDA_BACKENDS.get(int(major), f"cu{major}0") if major else CUDA_BACKENDS[13])
            elif kind == "rocm":
                out.add(ROCM_BACKENDS.get(int(major), f"rocm{major}.0") if major else ROCM_BACKENDS[7])
            else:
                out.add("xpu")
    return sorted(
        (parse_backend(b) for b in out),
        key=lambda b: (BACKENDS.index(b.backend) if b.backend in BACKENDS else 99, b.backend),
    )
