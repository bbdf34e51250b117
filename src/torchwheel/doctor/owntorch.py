"""The environment's own torch as ``doctor`` judges against it: its version and build from
the probe, its exports read through its distribution's RECORD, and both kept between runs
when ``doctor`` is given a cache folder (``tables.torchcache``).

Only the RECORD rows of ``torch/lib`` and ``torch/version.py`` are listed (torch's other
15,000 files are not looked at), and a library's exports and those rows are read back from
the cache while the file has the path, size, mtime and inode it had: the answer is the
reader's either way (tests/doctor/test_owntorch.py holds doctor's document to be the same
byte for byte with and without the cache).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from torchwheel.doctor.diagnosis import JudgedTorch
from torchwheel.doctor.environment import Environment
from torchwheel.errors import InputError
from torchwheel.selection.target import TorchTarget
from torchwheel.tables import torchcache
from torchwheel.torchabi.torchlibs import (
    VERSION_PY_BYTES,
    LibraryExports,
    TorchLibraries,
    library_exports,
    read_files,
)
from torchwheel.wheel.installed import Installed, NotRead, source_of
from torchwheel.wheel.record import RecordEntry
from torchwheel.wheel.sources import RecordOf

_VERSION_PY = "torch/version.py"


def installed_judged(
    target: TorchTarget, env: Environment, wanted: frozenset[str], cache: Path | None
) -> JudgedTorch:
    """The environment's own torch, its exports read through its RECORD when it has one
    (else judged by its version and build alone, and said so); ``cache``: the folder torch's
    answers are kept in (None: read every time)."""
    libraries, problem = None, ""
    if env.torch is not None and target.torch is not None:
        libraries, problem = _torch_exports(env.torch, str(target.torch), wanted, cache)
    elif target.torch is not None:
        problem = "its distribution was not found on the search path"
    return JudgedTorch(
        target.torch,
        target.build,
        target.gpu,
        target.markers,
        "installed",
        libraries,
        libraries_problem=problem,
    )


def _read_by_doctor(member: str) -> bool:
    return member.startswith("torch/lib/") or member == _VERSION_PY


ExportsOf = Callable[[Path, frozenset[str] | None], LibraryExports]


def _cached(folder: Path) -> tuple[RecordOf, ExportsOf]:
    """The RECORD's rows and a library's exports, kept in ``folder``."""

    def record_of(path: Path, read: Callable[[], dict[str, RecordEntry]]) -> dict[str, RecordEntry]:
        return torchcache.record(path, read, _read_by_doctor, "torch-lib", folder)

    def exports_of(path: Path, wanted: frozenset[str] | None) -> LibraryExports:
        return torchcache.exports(path, library_exports, wanted, folder)

    return record_of, exports_of


def _torch_exports(
    torch: Installed, version: str, wanted: frozenset[str], cache: Path | None
) -> tuple[TorchLibraries | None, str]:
    record_of, exports_of = _cached(cache) if cache is not None else (None, library_exports)
    source = source_of(torch, _read_by_doctor, record_of)
    if isinstance(source, NotRead):
        return None, source.reason
    members = source.contents.members
    version_py = None
    if _VERSION_PY in members:
        try:
            head = b"".join(source.stream(_VERSION_PY, VERSION_PY_BYTES))[:VERSION_PY_BYTES]
            version_py = head.decode("utf-8", "replace")
        except InputError:
            version_py = None
    files = [(m, Path(os.path.realpath(torch.site / m))) for m in members if m.startswith("torch/lib/")]
    try:
        return read_files(
            files, str(torch.site / "torch" / "lib"), version, version_py, wanted, exports_of
        ), ""
    except InputError as exc:
        return None, str(exc)
