"""Which build of torch a wheel needs, and which build a target has: CPU, CUDA (by major),
ROCm (by major) or XPU.

The stable ABI frees an extension from the torch *version*, not from the *build*: a library
that links ``libtorch_cuda.so`` and ``libcudart.so.13`` loads only where torch was built for
CUDA 13. PyTorch publishes torch per backend and names them (``cpu``, ``cu126``, ``cu130``,
``cu132``, ``rocm7.2``, ``xpu``; uv's ``--torch-backend`` uses the same names); which names
exist is data, the backend table (``torch_backends``), never this module's.

One type, ``TorchBuild``, spells every build: a target's (``cu130``: CUDA 13.0), and each
build a wheel loads on (CUDA 13, any minor; CUDA, any major; CPU). A wheel's build axis is a
set of them, the builds it loads on: ``ANY_BUILD`` (one of each kind, no major) is every
build, the empty set is none, and an axis that could not be read is ``None`` (unknown) in the
need, never a permissive default. ``tag`` writes the set into WHEEL as ``Torch-Build: cpu,
cuda-13`` (``token``/``parse_builds``). Pure functions: where the facts come from is the
callers' (the binaries' needed libraries, torch's ``version.py``, a ``+cu130`` label).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from torchwheel.errors import InputError, InvalidValue, clipped
from torchwheel.frozen import frozen

Kind = Literal["cpu", "cuda", "rocm", "xpu"]
KINDS: tuple[Kind, ...] = ("cpu", "cuda", "rocm", "xpu")
_NAMES = {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}
_TOKEN = re.compile(r"^(cpu|xpu|cuda|rocm)(?:-(\d{1,3}))?$")
_BACKEND = re.compile(r"^(?:(cpu)|cu(\d{2})(\d)|rocm(\d{1,2})\.(\d{1,2})|(xpu))$")


@frozen(order=True)
class TorchBuild:
    """One build of torch: ``kind``, and for CUDA/ROCm the toolkit ``major`` (what a linked
    runtime pins) and ``minor`` (a target's backend: ``cu130``). A build a wheel needs leaves
    what does not matter as None: ``TorchBuild("cuda", 13)`` is any CUDA 13.x build,
    ``TorchBuild("cuda")`` any CUDA build."""

    kind: Kind
    major: int | None = None
    minor: int | None = None

    @property
    def backend(self) -> str:
        """PyTorch's name for it: ``cpu``, ``cu130``, ``rocm7.0``, ``xpu``; a build without a
        minor by its ``token``."""
        if self.kind == "cuda" and self.major is not None and self.minor is not None:
            return f"cu{self.major}{self.minor}"
        if self.kind == "rocm" and self.major is not None and self.minor is not None:
            return f"rocm{self.major}.{self.minor}"
        return self.token

    @property
    def token(self) -> str:
        """The WHEEL ``Torch-Build`` word: ``cpu``, ``cuda``, ``cuda-13``, ``rocm-7``, ``xpu``."""
        return f"{self.kind}-{self.major}" if self.major is not None else self.kind

    @property
    def words(self) -> str:
        """``CPU``, ``CUDA 13``, ``ROCm``: for sentences."""
        return _NAMES[self.kind] + (f" {self.major}" if self.major is not None else "")

    def admits(self, target: TorchBuild) -> bool:
        """Does a wheel that loads on this build load on the target's build? A target whose
        major is not known (``libtorch_cuda`` found, no ``version.py``) is admitted by the kind."""
        if self.kind != target.kind:
            return False
        return self.major is None or target.major is None or self.major == target.major

    def __str__(self) -> str:
        if self.major is not None and self.minor is not None:
            return f"{_NAMES[self.kind]} {self.major}.{self.minor} build ({self.backend})"
        return f"{self.words} build"


BuildSet = frozenset[TorchBuild]
ANY_BUILD: BuildSet = frozenset(TorchBuild(k) for k in KINDS)  # no accelerator: every build
NO_BUILD: BuildSet = frozenset()  # two runtimes at once: no build of torch loads it


def normalized(builds: Iterable[TorchBuild]) -> BuildSet:
    """The set without builds another member already covers (``cuda`` covers ``cuda-13``)."""
    found = set(builds)
    return frozenset(b for b in found if not any(o != b and o.admits(b) and o.major is None for o in found))


def parse_backend(name: str) -> TorchBuild:
    """``cpu``, ``cu126``, ``cu130``, ``rocm7.0``, ``xpu`` (uv's ``--torch-backend`` names)."""
    m = _BACKEND.match(name.strip().lower())
    if m is None:
        raise InvalidValue(f"torch backend {name!r}: expected cpu, cuXYZ (cu126, cu130), rocmX.Y or xpu")
    if m.group(1):
        return TorchBuild("cpu")
    if m.group(2):
        return TorchBuild("cuda", int(m.group(2)), int(m.group(3)))
    if m.group(4):
        return TorchBuild("rocm", int(m.group(4)), int(m.group(5)))
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
                return TorchBuild(kind, int(parts[0]), int(parts[1]))  # type: ignore[arg-type]
            return TorchBuild(kind)  # type: ignore[arg-type]
    return TorchBuild("xpu") if xpu else TorchBuild("cpu")


_VERSION_FIELD = re.compile(
    r"""^(cuda|hip|xpu)\s*(?::[^=\n]*)?=\s*(?:None|['"]([^'"\n]*)['"])""", re.MULTILINE
)


def from_version_py_text(text: str) -> TorchBuild:
    """torch's ``version.py`` read as text (torch is never imported)."""
    found = {m.group(1): m.group(2) for m in _VERSION_FIELD.finditer(text)}
    return from_version_py(found.get("cuda"), found.get("hip"), bool(found.get("xpu")))


def from_cuda_digits(digits: str) -> TorchBuild:
    """``12``, ``121``/``128`` (PyTorch's backend names), ``130``: the CUDA major they name."""
    return TorchBuild("cuda", int(digits[:2]) if len(digits) == 3 else int(digits))


# -- a wheel's build axis ---------------------------------------------------------------------


def parse_builds(value: str) -> BuildSet:
    """A ``Torch-Build`` value: ``any``, ``none`` or the builds it loads on (``cpu, cuda-13``)."""
    words = [part.strip().lower() for part in value.split(",") if part.strip()]
    if words == ["any"]:
        return ANY_BUILD
    if words == ["none"]:
        return NO_BUILD
    found = [_TOKEN.match(w) for w in words]
    if not found or not all(found):
        raise InputError(
            f"WHEEL Torch-Build: {clipped(value)!r} is not 'any' or a list like 'cpu, cuda-13'",
            reference="wheel-invalid",
        )
    return normalized(
        TorchBuild(m.group(1), int(m.group(2)) if m.group(2) else None)  # type: ignore[arg-type]
        for m in found
        if m is not None
    )


def builds_text(builds: BuildSet | None) -> str:
    """The ``Torch-Build`` value (and the JSON word): ``any``, ``none``, ``cpu, cuda-13``;
    ``unknown`` for an axis that could not be read."""
    if builds is None:
        return "unknown"
    if builds == ANY_BUILD:
        return "any"
    return ", ".join(sorted(b.token for b in builds)) or "none"


def describe_builds(builds: BuildSet | None) -> str:
    """``a CUDA 13 build of torch``, ``a CPU or CUDA 13 build of torch``, ``any build of torch``."""
    if builds is None:
        return "an unknown build of torch"
    if builds == ANY_BUILD:
        return "any build of torch"
    if not builds:
        return "no build of torch"
    return f"a {' or '.join(b.words for b in sorted(builds))} build of torch"


def builds_fit(builds: BuildSet | None, target: TorchBuild | None) -> tuple[bool | None, str]:
    """Does a wheel that loads on ``builds`` load on the target's build? None (with the
    reason) when either side is not known: a plan without ``--torch-backend``, or a wheel whose
    build could not be read. Never a yes by default."""
    if builds == ANY_BUILD:
        return True, ""
    if builds is None:
        return None, "its torch build could not be read from its binaries"
    if target is None:
        return None, f"needs {describe_builds(builds)}; the target's build is not known (--torch-backend)"
    if any(b.admits(target) for b in builds):
        return True, f"needs {describe_builds(builds)}: the target's torch is a {target!s}"
    return False, f"needs {describe_builds(builds)}, the target's torch is a {target!s}"
