"""Torch's own libraries (``torch/lib``) and what they export, read from a torch wheel, an
unpacked torch or the installed one, without importing or unpacking torch.

``compat`` compares an extension's torch imports with these exports (the loader's final
word); the shim table's export dates (``scripts/shim_exports.py``) come from the same reading.
A torch wheel is read like every other wheel (``WheelArchive``): its 1 GB CUDA libraries are
streamed, and only the bytes of their dynamic symbol tables are kept.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import field
from pathlib import Path, PurePosixPath

from packaging.version import InvalidVersion, Version

from torchwheel import limits
from torchwheel.binary import BinaryError, BinaryFacts, read_path
from torchwheel.binary.facts import Import
from torchwheel.binary.memberscan import scan_member
from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.safeopen import read_head
from torchwheel.torchabi import backend
from torchwheel.torchabi.accelerators import platform_markers, torch_build_of_requirements
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.contents import is_compiled_name
from torchwheel.wheel.metadata import parse_metadata

INSTALLED = "installed"
_LIB_DIR = "torch/lib/"
# torch/lib also ships test fixtures (libtorchbind_test.so, libjitbackend_test.so,
# libaoti_custom_ops.so, libbackend_with_compiler.so) that nothing loads in production; their
# exports must not make a missing symbol look present.
_RUNTIME_PREFIXES = ("libtorch", "libc10", "libshm", "libcaffe2", "libgomp", "torch", "c10", "shm", "caffe2")
_VERSION_PY = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.MULTILINE)


@frozen
class TorchLibraries:
    """The export tables of one torch build; ``origin`` says where they were read."""

    origin: str
    version: str | None
    exports: dict[str, frozenset[str]]  # library file name -> exported symbol names
    platforms: frozenset[tuple[str, str]]  # (format, arch) of the libraries
    exported_count: int = 0  # every export, also those not kept (see ``read_torch``)
    build: TorchBuild | None = None  # CPU, CUDA 13.0, ... (version.py, else its label or libraries)
    all_exports: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        values = list(self.exports.values())  # one library: its own set (700,000 names twice were 60 MB)
        object.__setattr__(self, "all_exports", values[0] if len(values) == 1 else frozenset().union(*values))

    @property
    def label(self) -> str:
        return f"torch {self.version}" if self.version else "torch (version unknown)"

    def provides(self, imp: Import) -> bool:
        """Whether the loader would find ``imp`` in torch.

        PE and two-level-namespace Mach-O imports name their library; when that is a torch
        library, only its exports count (a symbol that moved to another DLL still fails).
        """
        if imp.library is not None:
            own = self.exports.get(PurePosixPath(imp.library.replace("\\", "/")).name.lower())
            if own is not None:
                return imp.name in own
        return imp.name in self.all_exports


@frozen
class LibraryExports:
    """One torch library's exported names (those asked for), the (format, arch) of its
    slices, and how many names it exports in all: what ``TorchLibraries`` keeps of a library,
    and what ``doctor`` keeps between runs (``tables.torchcache``)."""

    platforms: frozenset[tuple[str, str]]
    names: frozenset[str]
    count: int  # every distinct export, also those not kept


def library_summary(facts: BinaryFacts, wanted: frozenset[str] | None) -> LibraryExports:
    names = frozenset(e for s in facts.slices for e in s.exports)
    platforms = frozenset((facts.format, s.arch) for s in facts.slices)
    return LibraryExports(platforms, names if wanted is None else names & wanted, len(names))


def library_exports(path: Path, wanted: frozenset[str] | None = None) -> LibraryExports:
    """A torch library on disk, read for its exports (``InputError`` when it cannot be)."""
    try:
        facts = read_path(path, raw_scan=False)
    except BinaryError as exc:
        raise InputError(f"{path}: {exc}", reference="torch-unreadable") from exc
    return library_summary(facts, wanted)


def is_runtime_library(name: str) -> bool:
    base = name.rsplit("/", 1)[-1].lower()
    return is_compiled_name(base) and base.startswith(_RUNTIME_PREFIXES) and "test" not in base


def _build(
    version_py: str | None,
    version: str | None,
    libraries: Iterable[str],
    metadata: str | None = None,
    platforms: Iterable[tuple[str, str]] = (),
) -> TorchBuild | None:
    """The torch's build: its ``version.py``, else its local label (``+cu130``), else the CUDA
    runtime its METADATA requires on its platform (``cuda-toolkit[...]==13.2.2``: CUDA 13.2),
    else what its libraries say (``libtorch_cuda`` ships only in CUDA builds; major unknown then)."""
    if version_py:
        return backend.from_version_py_text(version_py)
    try:
        label = (
            backend.from_local_label(Version(version).local)
            if version and len(version) <= limits.current().max_version_length.value
            else None
        )
    except InvalidVersion:
        label = None
    if label is not None:
        return label
    formats = {fmt for fmt, _ in platforms}
    if metadata and len(formats) == 1:
        system = {"elf": "linux", "pe": "win32", "macho": "darwin"}.get(formats.pop())
        markers = platform_markers(system) if system else None
        try:
            requirements = parse_metadata(metadata).requirements
        except InputError:
            requirements = ()
        if markers is not None and (found := torch_build_of_requirements(requirements, markers)) is not None:
            return found
    names = " ".join(libraries)
    for kind, word in (("cuda", "torch_cuda"), ("rocm", "torch_hip"), ("xpu", "torch_xpu")):
        if word in names:
            return TorchBuild(kind)  # type: ignore[arg-type]
    return TorchBuild("cpu") if names else None


def _facts(
    read: Iterable[tuple[str, LibraryExports]],
    origin: str,
    version: str | None,
    version_py: str | None = None,
    metadata: str | None = None,
) -> TorchLibraries:
    if version:  # from version.py or a file name: every reader parses it (int() of 5,000 digits fails)
        limits.check_version(f"{origin}: torch's version", version)
    exports: dict[str, frozenset[str]] = {}
    platforms: set[tuple[str, str]] = set()
    count = 0
    for name, library in read:  # one library's facts at a time: only its kept names stay
        count += library.count
        exports[name.lower()] = library.names
        platforms.update(library.platforms)
    if not exports:
        raise InputError(
            f"{origin}: no torch libraries (libtorch*, libc10*) found; not a torch build?",
            reference="torch-unreadable",
        )
    build = _build(version_py, version, exports, metadata, platforms)
    return TorchLibraries(origin, version, exports, frozenset(platforms), count, build)


def _read_wheel(path: Path, wanted: frozenset[str] | None) -> TorchLibraries:
    """Read ``torch/lib/*`` straight out of the zip: a torch wheel is never unpacked."""
    with WheelArchive(path) as wheel:
        members = [
            m for m in wheel.contents.members if m.startswith(_LIB_DIR) and "/" not in m[len(_LIB_DIR) :]
        ]

        def read() -> Iterator[tuple[str, LibraryExports]]:
            for member in members:
                if not is_runtime_library(member):
                    continue
                # Streamed: an ELF member keeps only the bytes its dynamic symbol table
                # needs, so a CUDA wheel's 1 GB libtorch_cuda.so is never held whole.
                _, facts = scan_member(wheel, member, hashing=False)
                if isinstance(facts, BinaryError):
                    raise InputError(f"{path}: {member}: {facts}", reference="torch-unreadable")
                yield PurePosixPath(member).name, library_summary(facts, wanted)

        version_py = (
            b"".join(wheel.stream("torch/version.py", VERSION_PY_BYTES))[:VERSION_PY_BYTES].decode(
                "utf-8", "replace"
            )
            if "torch/version.py" in wheel.infos
            else None
        )
        metadata = next((wheel.read_text(m) for m in wheel.infos if _is_metadata(m)), None)
        return _facts(read(), str(path), wheel.contents.filename_version or None, version_py, metadata)


def _is_metadata(member: str) -> bool:
    """The torch distribution's own METADATA (``torch-2.15.0.dist-info/METADATA``)."""
    folder, _, name = member.partition("/")
    return name == "METADATA" and folder.endswith(".dist-info") and folder.lower().startswith("torch-")


VERSION_PY_BYTES = 1 << 16  # torch's version.py is ~300 bytes: only its start is ever read


def _version_py(torch_dir: Path) -> str | None:
    """The start of ``torch/version.py``, through ``safeopen``: a FIFO or a device there is
    not read (never blocks), a huge file costs its first 64 KiB."""
    try:
        return read_head(torch_dir / "version.py", VERSION_PY_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def _version_from(text: str | None) -> str | None:
    match = _VERSION_PY.search(text) if text else None
    return match.group(1) if match else None


def _read_lib_dir(lib: Path, wanted: frozenset[str] | None) -> TorchLibraries:
    def read() -> Iterator[tuple[str, LibraryExports]]:
        for p in sorted(lib.iterdir()):
            if p.is_file() and is_runtime_library(p.name):
                yield p.name, library_exports(p, wanted)

    text = _version_py(lib.parent)
    metadata = _installed_metadata(lib.parent)
    version = _version_from(text) or _metadata_version(metadata)
    return _facts(read(), str(lib), version, text, metadata)


def _metadata_version(metadata: str | None) -> str | None:
    """The ``Version`` the distribution's METADATA states, for a torch without ``version.py``."""
    if not metadata:
        return None
    try:
        return parse_metadata(metadata).version
    except InputError:
        return None


def _installed_metadata(torch_dir: Path) -> str | None:
    """The METADATA of the torch distribution installed beside the package (site-packages'
    ``torch-*.dist-info``), bounded like ``version.py``; None when there is none."""
    for info in sorted(torch_dir.parent.glob("torch-*.dist-info")):
        try:
            return (info / "METADATA").read_text(encoding="utf-8", errors="replace")[: 1 << 20]
        except OSError:
            continue
    return None


def read_files(
    files: Iterable[tuple[str, Path]],
    origin: str,
    version: str | None,
    version_py: str | None,
    wanted: frozenset[str] | None = None,
    exports_of: Callable[[Path, frozenset[str] | None], LibraryExports] = library_exports,
) -> TorchLibraries:
    """An installed torch given file by file, ``(member, path)``: ``doctor`` reads the
    environment's torch through its RECORD, whose every path was found inside the
    environment, and passes the runtime libraries of ``torch/lib`` here. ``exports_of``
    reads one library (``library_exports``; ``doctor`` passes one that keeps its answer)."""
    read = (
        (PurePosixPath(member).name, exports_of(path, wanted))
        for member, path in files
        if member.startswith(_LIB_DIR) and "/" not in member[len(_LIB_DIR) :] and is_runtime_library(member)
    )
    return _facts(read, origin, version, version_py)


def _lib_dir(path: Path) -> Path:
    """``torch/lib`` under a site-packages or unpacked wheel, the torch package, or itself."""
    for candidate in (path / "torch" / "lib", path / "lib", path):
        if candidate.is_dir() and any(is_runtime_library(p.name) for p in candidate.iterdir()):
            return candidate
    raise InputError(
        f"{path}: no torch/lib with torch libraries below it (give site-packages, torch or torch/lib)",
        reference="torch-unreadable",
    )


def installed_torch_dir() -> Path:
    """The torch package this interpreter would import, found without importing it (~2 s)."""
    spec = importlib.util.find_spec("torch")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise InputError(
            "no importable torch in this environment (for --against installed)", reference="torch-unreadable"
        )
    return Path(locations[0])


def read_torch(against: str, wanted: frozenset[str] | None = None) -> TorchLibraries:
    """The torch named by ``--against``: ``installed``, a torch wheel, or a directory.

    ``wanted``: keep only these exports. libtorch exports some 100,000 long C++ names;
    holding them all as Python strings cost ``compat`` most of a gigabyte, while the
    question asked is only about the few hundred names the inputs import."""
    if against == INSTALLED:
        return _read_lib_dir(_lib_dir(installed_torch_dir()), wanted)
    path = Path(against)
    if path.is_dir():
        return _read_lib_dir(_lib_dir(path), wanted)
    if path.is_file():
        return _read_wheel(path, wanted)
    raise InputError(
        f"{against}: no such file or directory (nor the word {INSTALLED!r})", reference="not-found"
    )
