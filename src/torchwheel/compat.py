"""Will a wheel's compiled files load on a given torch? Ask the torch libraries themselves.

``check`` judges a wheel against what it *declares* and against torchwheel's table of when
each shim appeared. That table can lag behind torch, and the unstable C++ API has no table at
all. The dynamic loader has the final word: a library loads when every symbol it imports is
exported by something in scope. For the torch part of that question the answer is in torch's
own libraries (``torch/lib``), so this module compares each binary's torch imports with their
export tables: no import, no ``dlopen``, and it works for a torch of another platform's wheel
as well as for one that cannot be installed here.

Only torch's symbols are compared: the C shim (``aoti_torch_*``, ``torch_*`` and every name
in the shim table) and unstable libtorch C++ (``at::``, ``c10::``, ``c10d::``, ...; see
``cxxnames``). CPython, libc and libstdc++ symbols are someone else's contract (TW3xx covers
CPython's).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from torchwheel.binary import BinaryError, BinaryFacts, read_path
from torchwheel.binary.facts import Import, SliceFacts
from torchwheel.cxxnames import demangle, unstable_name
from torchwheel.errors import InputError
from torchwheel.symtable import SymbolTable
from torchwheel.textsafe import safe_lines
from torchwheel.torchabi import is_shim_name
from torchwheel.wheelfacts import WheelFacts
from torchwheel.wheelfile import WheelArchive, is_compiled_name

INSTALLED = "installed"
_LIB_DIR = "torch/lib/"
# torch/lib also ships test fixtures (libtorchbind_test.so, libjitbackend_test.so,
# libaoti_custom_ops.so, libbackend_with_compiler.so) that nothing loads in production; their
# exports must not make a missing symbol look present.
_RUNTIME_PREFIXES = ("libtorch", "libc10", "libshm", "libcaffe2", "libgomp", "torch", "c10", "shm", "caffe2")
_VERSION_PY = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.MULTILINE)


@dataclass(frozen=True)
class TorchLibraries:
    """The export tables of one torch build; ``origin`` says where they were read."""

    origin: str
    version: str | None
    exports: dict[str, frozenset[str]]  # library file name -> exported symbol names
    platforms: frozenset[tuple[str, str]]  # (format, arch) of the libraries
    exported_count: int = 0  # every export, also those not kept (see ``read_torch``)
    all_exports: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all_exports", frozenset().union(*self.exports.values()))

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


def is_runtime_library(name: str) -> bool:
    base = name.rsplit("/", 1)[-1].lower()
    return is_compiled_name(base) and base.startswith(_RUNTIME_PREFIXES) and "test" not in base


def _facts(
    read: Iterable[tuple[str, BinaryFacts]], origin: str, version: str | None, wanted: frozenset[str] | None
) -> TorchLibraries:
    exports: dict[str, frozenset[str]] = {}
    platforms: set[tuple[str, str]] = set()
    count = 0
    for name, facts in read:
        names = {e for s in facts.slices for e in s.exports}
        count += len(names)
        exports[name.lower()] = frozenset(names if wanted is None else names & wanted)
        platforms.update((facts.format, s.arch) for s in facts.slices)
    if not exports:
        raise InputError(f"{origin}: no torch libraries (libtorch*, libc10*) found; not a torch build?")
    return TorchLibraries(origin, version, exports, frozenset(platforms), count)


def _read_wheel(path: Path, wanted: frozenset[str] | None) -> TorchLibraries:
    """Read ``torch/lib/*`` straight out of the zip: a torch wheel is never unpacked."""
    with WheelArchive(path) as wheel:
        members = [
            m for m in wheel.contents.members if m.startswith(_LIB_DIR) and "/" not in m[len(_LIB_DIR) :]
        ]

        def read() -> Iterator[tuple[str, BinaryFacts]]:
            for member in members:
                if not is_runtime_library(member):
                    continue
                # Streamed: an ELF member keeps only the bytes its dynamic symbol table
                # needs, so a CUDA wheel's 1 GB libtorch_cuda.so is never held whole.
                _, facts = wheel.scan_binary(member, hashing=False)
                if isinstance(facts, BinaryError):
                    raise InputError(f"{path}: {member}: {facts}")
                yield PurePosixPath(member).name, facts

        return _facts(read(), str(path), wheel.contents.filename_version or None, wanted)


def _version_from(torch_dir: Path) -> str | None:
    try:
        match = _VERSION_PY.search((torch_dir / "version.py").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return match.group(1) if match else None


def _read_lib_dir(lib: Path, wanted: frozenset[str] | None) -> TorchLibraries:
    def read() -> Iterator[tuple[str, BinaryFacts]]:
        for p in sorted(lib.iterdir()):
            if p.is_file() and is_runtime_library(p.name):
                try:
                    yield p.name, read_path(p, raw_scan=False)
                except BinaryError as exc:
                    raise InputError(f"{p}: {exc}") from exc

    return _facts(read(), str(lib), _version_from(lib.parent), wanted)


def _lib_dir(path: Path) -> Path:
    """``torch/lib`` under a site-packages or unpacked wheel, the torch package, or itself."""
    for candidate in (path / "torch" / "lib", path / "lib", path):
        if candidate.is_dir() and any(is_runtime_library(p.name) for p in candidate.iterdir()):
            return candidate
    raise InputError(
        f"{path}: no torch/lib with torch libraries below it (give site-packages, torch or torch/lib)"
    )


def installed_torch_dir() -> Path:
    """The torch package this interpreter would import, found without importing it (~2 s)."""
    spec = importlib.util.find_spec("torch")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise InputError("no importable torch in this environment (for --against installed)")
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
    raise InputError(f"{against}: no such file or directory (nor the word {INSTALLED!r})")


# ----------------------------------------------------------------------------------------------
# the comparison


def is_torch_import(name: str, table: SymbolTable) -> bool:
    return is_shim_name(name) or name in table.symbols or unstable_name(name) is not None


def torch_imports(wheels: Iterable[WheelFacts], table: SymbolTable) -> frozenset[str]:
    """Every torch symbol the inputs import: all ``compat`` needs to know of torch's exports."""
    return frozenset(
        imp.name
        for w in wheels
        for b in w.binaries
        for s in b.analysis.slices
        for imp in s.facts.imports
        if is_torch_import(imp.name, table)
    )


@dataclass(frozen=True)
class SliceCompat:
    """One architecture of one compiled file: which of its torch imports torch lacks."""

    member: str
    format: str
    arch: str
    torch_imports: tuple[str, ...]
    missing: tuple[str, ...]
    problem: str | None = None  # set when the comparison itself is meaningless
    unstable: int = 0  # how many of the imports are unstable C++ (present is not enough)
    # weak imports torch lacks: the loader leaves them null and the library runs without them
    missing_weak: tuple[str, ...] = ()

    @property
    def loads(self) -> bool:
        return not self.missing and self.problem is None


@dataclass(frozen=True)
class InputCompat:
    path: str
    slices: tuple[SliceCompat, ...]

    @property
    def loads(self) -> bool:
        return all(s.loads for s in self.slices)


def compare_slice(
    member: str, fmt: str, facts: SliceFacts, torch: TorchLibraries, table: SymbolTable
) -> SliceCompat:
    imports = sorted({imp for imp in facts.imports if is_torch_import(imp.name, table)})
    names = tuple(sorted({imp.name for imp in imports}))
    unstable = sum(1 for n in names if unstable_name(n) is not None)
    if (fmt, facts.arch) not in torch.platforms:
        have = ", ".join(f"{f}/{a}" for f, a in sorted(torch.platforms))
        problem = f"built for {fmt}/{facts.arch}, but the torch libraries are {have}"
        return SliceCompat(member, fmt, facts.arch, names, (), problem, unstable)
    lacking = [imp for imp in imports if not torch.provides(imp)]
    missing = tuple(sorted({imp.name for imp in lacking if not imp.weak}))
    weak = tuple(sorted({imp.name for imp in lacking if imp.weak} - set(missing)))
    return SliceCompat(member, fmt, facts.arch, names, missing, None, unstable, weak)


def compare(wheel: WheelFacts, torch: TorchLibraries, table: SymbolTable) -> InputCompat:
    if wheel.unreadable:
        bad = wheel.unreadable[0]
        raise InputError(f"{wheel.contents.path}: {bad.member}: {bad.error}")
    slices = tuple(
        compare_slice(b.member, b.analysis.facts.format, s.facts, torch, table)
        for b in wheel.binaries
        for s in b.analysis.slices
    )
    return InputCompat(wheel.contents.path, slices)


# ----------------------------------------------------------------------------------------------
# rendering


def _symbol(name: str) -> str:
    text = demangle(name)
    return name if text is None else f"{text}  [{name}]"


def _where(s: SliceCompat, multi: bool) -> str:
    return f"{s.member} [{s.arch}]" if multi else s.member


def compat_text(torch: TorchLibraries, results: list[InputCompat]) -> str:
    lines = [
        f"{torch.label} from {torch.origin}: {len(torch.exports)} libraries, "
        f"{torch.exported_count} exported symbols"
    ]
    for r in results:
        lines += ["", f"{r.path}: {'loads' if r.loads else 'does NOT load'}"]
        counts: dict[str, int] = {}
        for s in r.slices:
            counts[s.member] = counts.get(s.member, 0) + 1
        if not r.slices:
            lines.append("  no compiled files")
        for s in r.slices:
            where = _where(s, counts[s.member] > 1)
            n = len(s.torch_imports)
            if s.problem is not None:
                lines.append(f"  {where}: cannot load: {s.problem}")
            elif s.missing:
                lines.append(f"  {where}: does not load: {len(s.missing)} of {n} torch symbols missing")
                lines += [f"    missing {_symbol(m)}" for m in s.missing]
            elif s.missing_weak:
                absent = f"{len(s.missing_weak)} weak import{'s' if len(s.missing_weak) != 1 else ''} absent"
                lines.append(f"  {where}: loads ({n} torch symbols, {absent})")
            else:
                lines.append(
                    f"  {where}: loads ({n} torch symbols, all exported)"
                    if n
                    else f"  {where}: loads (no torch symbols)"
                )
            if s.problem is None:
                lines += [f"    absent  {_symbol(m)} (weak: used when present)" for m in s.missing_weak]
            if s.unstable and s.problem is None:
                lines.append(
                    f"    note: {s.unstable} of them are unstable libtorch C++: that a name resolves does not "
                    "mean its layout matches the torch the file was built with"
                )
    ok = sum(r.loads for r in results)
    n = len(results)
    lines += ["", f"{ok} of {n} input{'s' if n != 1 else ''} load{'s' if n == 1 else ''} on {torch.label}"]
    return safe_lines(lines)  # input-derived text escaped (textsafe)


def compat_json(torch: TorchLibraries, results: list[InputCompat]) -> dict[str, Any]:
    from torchwheel.report import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "torch": {
            "origin": torch.origin,
            "version": torch.version,
            "libraries": sorted(torch.exports),
            "platforms": [f"{f}/{a}" for f, a in sorted(torch.platforms)],
            "exported_symbols": torch.exported_count,
        },
        "inputs": [
            {
                "path": r.path,
                "loads": r.loads,
                "files": [
                    {
                        "member": s.member,
                        "format": s.format,
                        "arch": s.arch,
                        "loads": s.loads,
                        "torch_symbols": len(s.torch_imports),
                        "unstable_symbols": s.unstable,
                        "missing": [{"name": m, "demangled": demangle(m)} for m in s.missing],
                        "missing_weak": [{"name": m, "demangled": demangle(m)} for m in s.missing_weak],
                        "problem": s.problem,
                    }
                    for s in r.slices
                ],
            }
            for r in results
        ],
        "loads": all(r.loads for r in results),
    }
