"""Every torch backend (build) this torchwheel knows, as data: the backend list.

PyTorch publishes torch per backend and names each (``cpu``, ``cu130``, ``cu132``,
``rocm7.2``, ``xpu``), and the list grows with every CUDA and ROCm release: torch 2.15's
PyPI build is CUDA 13.2 (``cu132``), and ``cu134`` and ``rocm7.14`` builds are named for it
elsewhere. Kept in code, the list was stale the day a backend shipped; here it is one of the
tables (``data/torch_backends.json``) that ``torchwheel symbols update`` extends with the
backend of each torch it reads (its ``version.py``, local label or METADATA). A list is a
value (``Backends``) held in the run's tables and passed to whatever asks, as the release
list is (``torch_releases.Releases``).

A backend the list does not know is still read for what it is (``cu140`` is a CUDA 14.0
build, judged by its major like any other): never "an unknown build". Words and verdicts
add that it is newer than the tables (``backend_tables_note``), so that a user knows to run
``symbols update`` before trusting whatever the tables alone decide.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import field
from functools import cache
from pathlib import Path

from torchwheel.errors import InvalidValue
from torchwheel.frozen import frozen
from torchwheel.torchabi.backend import ANY_BUILD, BuildSet, TorchBuild, parse_backend

# the package is installed as files, as for the release list (``torch_releases``)
_BACKENDS = Path(__file__).parent.parent / "data" / "torch_backends.json"
_KIND_ORDER = {"cpu": 0, "cuda": 1, "rocm": 2, "xpu": 3}


def _key(build: TorchBuild) -> tuple[int, int, int]:
    return (_KIND_ORDER[build.kind], build.major or 0, build.minor or 0)


def ordered(names: Iterable[str]) -> tuple[str, ...]:
    """Backend names, each once, in PyPI's order: CPU, CUDA by version, ROCm by version, XPU;
    a name that is no backend is left out (a tables file's list is checked by its schema)."""
    found: dict[str, TorchBuild] = {}
    for name in names:
        try:
            build = parse_backend(name)
        except InvalidValue:
            continue
        found[build.backend] = build
    return tuple(sorted(found, key=lambda n: _key(found[n])))


def named(build: TorchBuild) -> bool:
    """Does the build carry a backend name (``cpu``, ``cu132``, ``rocm7.2``, ``xpu``)? A need's
    ``CUDA 13`` (any minor) does not."""
    return build.kind in ("cpu", "xpu") or (build.major is not None and build.minor is not None)


@frozen
class Backends:
    """The backends of one set of tables, in PyPI's order (``shipped_backends`` or a tables
    file's), and the backend that stands for each CUDA and ROCm major (``representative``)."""

    names: tuple[str, ...]
    representatives: Mapping[str, str] = field(default_factory=dict)

    def known(self, build: TorchBuild) -> bool:
        """Is this a backend the tables list? A build without a backend name is not asked."""
        return not named(build) or build.backend in self.names

    def newest_of(self, build: TorchBuild) -> TorchBuild | None:
        """The newest known backend of the build's kind (CUDA, ROCm), or None."""
        same = [parse_backend(b) for b in self.names if parse_backend(b).kind == build.kind]
        return max(same, key=_key) if same else None

    def backend_newer_than_tables(self, build: TorchBuild | None) -> bool:
        """Is this a backend the tables do not list (a target's ``cu140``, ``rocm7.20``)?"""
        return build is not None and not self.known(build)

    def backend_tables_note(self, build: TorchBuild) -> str:
        """The one wording of the state: ``torch build cu140 is newer than this torchwheel's
        tables (newest CUDA cu134): run `torchwheel symbols update TORCH_WHEEL_OR_ENV```; a build
        older than the newest of its kind is "not in" them (no PyTorch backend of that name)."""
        newest = self.newest_of(build)
        if newest is not None and _key(build) < _key(newest):
            return (
                f"torch build {build.backend} is not in this torchwheel's backend table (newest "
                f"{newest.backend}): judged as a {build.words} build; run `torchwheel symbols update "
                "TORCH_WHEEL_OR_ENV` with that torch if it exists"
            )
        last = f" (newest {newest.backend})" if newest is not None else ""
        return (
            f"torch build {build.backend} is newer than this torchwheel's tables{last}: judged as a "
            f"{build.words} build; run `torchwheel symbols update TORCH_WHEEL_OR_ENV`"
        )

    def representative(self, kind: str, major: int | None) -> str:
        """The backend that stands for a CUDA or ROCm major in a ``matrix`` column or an ``index``
        folder (``cu130`` for CUDA 13: the shipped list's choice, kept so that published index URLs
        stay); for a major it does not name, the newest known backend of the major, else its
        ``.0``; ``major`` None: the newest major's."""
        same = [parse_backend(b) for b in self.names if parse_backend(b).kind == kind]
        if major is None:
            majors = [b.major for b in same if b.major is not None]
            majors += [int(k.rsplit("-", 1)[1]) for k in self.representatives if k.startswith(f"{kind}-")]
            major = max(majors) if majors else 0
        chosen = self.representatives.get(f"{kind}-{major}")
        if chosen is not None:
            return chosen
        of_major = sorted((b for b in same if b.major == major), key=_key)
        if of_major:
            return of_major[-1].backend
        return f"cu{major}0" if kind == "cuda" else f"rocm{major}.0"

    def representative_backends(self, axes: Iterable[BuildSet | None]) -> list[TorchBuild]:
        """The backends that tell wheels with these build axes apart (one per CUDA/ROCm major
        named; the CPU build whenever some wheel loads there): the columns of ``matrix``, the
        per-backend indexes of ``index``."""
        out: set[str] = set()
        for builds in axes:
            for b in builds or ():
                if b.kind == "cpu" or builds == ANY_BUILD:
                    out.add("cpu")
                elif b.kind in ("cuda", "rocm"):
                    out.add(self.representative(b.kind, b.major))
                else:
                    out.add("xpu")
        return [parse_backend(b) for b in ordered(out)]


@cache
def shipped_backends() -> Backends:
    """The list shipped in the package, read once: the tables' default. A tables file's list
    keeps the shipped representatives (they name published index folders)."""
    doc = json.loads(_BACKENDS.read_text("utf-8"))
    representatives = {str(k): str(v) for k, v in doc.get("representatives", {}).items()}
    return Backends(ordered(doc["backends"]), representatives)
