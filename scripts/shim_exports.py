"""Which torch release first exports each stable shim function, read from torch wheels.

Header gates (``headergates``) say when the maintainers *meant* a function to be
available; the dynamic loader only cares whether libtorch exports it. The two differ: the
``*_to_ivalue`` family is declared ungated yet first exported in 2.10, some MPS shims are
gated years before any build exports them. So the shipped table dates a shim by the first
release whose libraries export it, and keeps the gates only as a cross-check and for what
no downloaded build exports.

No one platform dates everything (see the shared torch-exports reference): macOS arm64
wheels export the generic and MPS shims, Linux x86_64 the oneDNN/MKL ones, CUDA wheels
the CUDA ones. A first sighting is therefore only a *date* when the same library of the
same platform was read in the release before and lacked the symbol; otherwise it is an
upper bound, and a lower header gate stays the answer.

Reading reuses ``compat.read_torch`` (the same export tables ``torchwheel compat``
compares against): members are streamed out of the zip, never unpacked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from torchwheel.analysis.usage import is_shim_name
from torchwheel.tables.headergates import Gate, max_gate
from torchwheel.tables.symtable import BASELINE, Origin, SymbolTable, TorchWheelOrigin
from torchwheel.torchabi.torchlibs import read_torch
from torchwheel.version import FeatureVersion

__all__ = [
    "WheelExports",
    "date_exports",
    "disagreements",
    "header_dates",
    "platform_label",
    "read_wheel_exports",
]

_OS = {"elf": "linux", "macho": "macos", "pe": "windows"}
_CACHE_SCHEMA = 2
# is_shim_name's prefixes miss aoti_record_function_start/_end, declared in shim.h too.
_SHIM_LIKE = ("aoti_",)
_DEVICES = ("cuda", "xpu", "hip", "rocm")


@dataclass(frozen=True)
class WheelExports:
    """The shim-named exports of one torch wheel, per library file."""

    source: TorchWheelOrigin
    libraries: Mapping[str, frozenset[str]]

    @property
    def release(self) -> FeatureVersion:
        """The minor release (``x.y.0``): patch releases add no API, so 2.14.1 speaks for 2.14."""
        return _minor(FeatureVersion.parse(self.source.release))

    def to_json(self) -> str:
        doc = {
            "cache_schema": _CACHE_SCHEMA,
            "wheel": self.source.to_json(),
            "libraries": {lib: sorted(names) for lib, names in sorted(self.libraries.items())},
        }
        return json.dumps(doc, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> WheelExports:
        doc = json.loads(text)
        if doc.get("cache_schema") != _CACHE_SCHEMA:
            raise ValueError("stale export cache")
        libraries = {lib: frozenset(names) for lib, names in doc["libraries"].items()}
        return cls(TorchWheelOrigin.from_json(doc["wheel"]), libraries)


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def read_wheel_exports(path: Path, cache_dir: Path | None = None) -> WheelExports:
    """Shim exports of one torch wheel; cached by the wheel's sha256 (a macOS wheel takes
    ~35 s to read, a Linux CUDA one longer, and regenerating reads a dozen)."""
    sha256 = file_sha256(path)
    cached = cache_dir / f"{path.name}.{sha256[:16]}.exports.json" if cache_dir else None
    if cached is not None and cached.is_file():
        try:
            return WheelExports.from_json(cached.read_text(encoding="utf-8"))
        except (ValueError, KeyError, TypeError):
            pass  # written by another layout: read the wheel again
    torch = read_torch(str(path))
    if torch.version is None:
        raise ValueError(f"{path}: no version in the file name")
    platforms = sorted(f"{_OS.get(fmt, fmt)}-{arch}" for fmt, arch in torch.platforms)
    if len(platforms) != 1:
        raise ValueError(f"{path}: torch libraries for {', '.join(platforms) or 'no platform'}")
    libs = {
        lib: frozenset(n for n in names if is_shim_name(n) or n.startswith(_SHIM_LIKE))
        for lib, names in torch.exports.items()
    }
    libs = {lib: names for lib, names in libs.items() if names}
    variant = next((v for v in _DEVICES if any(v in lib for lib in torch.exports)), "cpu")
    release = torch.version.split("+", 1)[0]
    source = TorchWheelOrigin(path.name, sha256, release, platforms[0], variant)
    result = WheelExports(source, libs)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(result.to_json(), encoding="utf-8")
    return result


def date_exports(wheels: Iterable[WheelExports], gates: SymbolTable) -> SymbolTable:
    """The shipped table: export dates where the wheels settle them, gates elsewhere.

    Per symbol of ``gates`` (the header-derived table of the same wheels, :func:`header_dates`):

    * exported by some library L of platform P first in release R, and L of P was read
      in the release before R without it: introduced in R (``export``). Exported by the
      oldest release read, which is :data:`BASELINE`: baseline (``None``).
    * first seen in R but no such earlier reading (the first CUDA wheel read, say): R is
      only an upper bound. A gate at or below R stays (``header-gate``); an ungated
      declaration stays baseline; a gate above R is contradicted and R wins (``export``).
    * exported by nothing read: the gate (``header-gate``).

    Only declared names are dated: libtorch_python exports ``torch_c_dynamo_*`` helpers
    that share the prefix but are not stable ABI.
    """
    wheels = sorted(wheels, key=lambda w: (w.release, w.source.platform, w.source.file))
    releases = sorted({w.release for w in wheels})
    previous = {r: releases[i - 1] if i else None for i, r in enumerate(releases)}
    read: set[tuple[FeatureVersion, str, str]] = set()  # (release, platform, library) read
    seen: dict[str, dict[FeatureVersion, set[tuple[str, str]]]] = {}
    for w in wheels:
        for lib, names in w.libraries.items():
            where = platform_label(w.source.platform, lib)
            read.add((w.release, where, lib))
            for name in names:
                seen.setdefault(name, {}).setdefault(w.release, set()).add((where, lib))
    symbols: dict[str, FeatureVersion | None] = {}
    origins: dict[str, Origin] = {}
    for name, gate in gates.symbols.items():
        sightings = seen.get(name)
        if not sightings:
            symbols[name], origins[name] = gate, Origin("header-gate")
            continue
        first = min(sightings)
        platforms: dict[str, FeatureVersion] = {}
        for release, sites in sorted(sightings.items()):
            for label, _ in sites:
                platforms.setdefault(label, release)
        firsts = tuple((label, release.release) for label, release in platforms.items())
        before = previous[first]
        dated = before is not None and any((before, p, lib) in read for p, lib in sightings[first])
        if first <= BASELINE and releases[0] <= BASELINE:
            symbols[name], origins[name] = None, Origin("export", firsts)
        elif dated or (gate is not None and gate > first):
            symbols[name], origins[name] = first, Origin("export", firsts)
        else:
            symbols[name], origins[name] = gate, Origin("header-gate", firsts)
    sources = tuple(sorted(set(gates.sources) | {w.release.release for w in wheels}))
    return SymbolTable(symbols, sources, origins=origins, wheels=tuple(w.source for w in wheels))


def header_dates(tables: Iterable[SymbolTable]) -> tuple[SymbolTable, dict[str, Gate]]:
    """From per-wheel header scans (one release each): the header-derived table, and the
    plain gates.

    A plain gate is the lowest ``#if`` gate a symbol had in any release read (a retro-gate
    beats an ungated declaration, as in :meth:`SymbolTable.merge`). The header-derived
    version raises it to the first release whose headers declare the symbol when an older
    release was read without it. Computed release by release rather than by folding
    ``merge``: a fold stores an inferred arrival like a gate, and a later release's lower
    gate then undoes it (2.15's ``c_shim_xpu.h`` would date ``aoti_torch_xpu_grid_sampler_3d``
    at its 2.13 gate although no header before 2.14 declares it).
    """
    declared: dict[FeatureVersion, dict[str, Gate]] = {}
    for table in tables:
        for source in table.sources:
            release = _minor(FeatureVersion.parse(source))
            seen = declared.setdefault(release, {})
            for name, gate in table.symbols.items():
                seen[name] = _lowest(seen[name], gate) if name in seen else gate
    releases = sorted(declared)
    gates: dict[str, Gate] = {}
    first: dict[str, FeatureVersion] = {}
    for release in releases:
        for name, gate in declared[release].items():
            gates[name] = _lowest(gates[name], gate) if name in gates else gate
            first.setdefault(name, release)
    symbols = {n: max_gate((g, first[n])) if first[n] > releases[0] else g for n, g in gates.items()}
    return SymbolTable(symbols, tuple(r.release for r in releases)), gates


def _minor(v: FeatureVersion) -> FeatureVersion:
    return FeatureVersion(v.major, v.minor, 0)


def _lowest(a: Gate, b: Gate) -> Gate:
    """Lower of two gates where ungated (``None``) means "no gate", not "lowest"."""
    return b if a is None else a if b is None else min(a, b)


def disagreements(table: SymbolTable, gates: Mapping[str, Gate]) -> list[tuple[str, str, str, str]]:
    """(name, export date, plain header gate, platforms) wherever the two differ."""
    rows = []
    for name, version in table.symbols.items():
        origin = table.origin(name)
        gate = gates.get(name)
        if origin.source == "export" and version != gate:
            where = ", ".join(f"{p} {r}" for p, r in origin.platforms)
            rows.append((name, _text(version), _text(gate), where))
    return rows


def _text(v: FeatureVersion | None) -> str:
    return "baseline" if v is None else str(v)


def platform_label(platform: str, library: str) -> str:
    """``os-arch`` for the CPU library, ``os-arch+device`` for a device library (libtorch_cuda.so,
    torch_cuda.dll): a CUDA shim exported on linux-x86_64 is still absent from a CPU build."""
    base = library.lower().rsplit("/", 1)[-1]
    device = next((d for d in _DEVICES if d in base), None)
    return f"{platform}+{device}" if device else platform
