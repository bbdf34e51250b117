"""The shim headers of one torch build, read out of a wheel (in place: only the few shim
headers are decompressed) or a site-packages or include folder, and the symbol table their
version gates make (``headergates`` reads the gates out of a header's text). What the
cross-check, ``scripts/gen_symtable.py`` and ``torchwheel symbols update`` read; the
shipped table is dated by exports instead (``symtable``).
"""

from __future__ import annotations

import re
from os import PathLike
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from torchwheel.errors import InputError
from torchwheel.tables.shimorigin import Origin
from torchwheel.tables.symtable import SymbolTable
from torchwheel.version import FeatureVersion

if TYPE_CHECKING:  # deferred: headergates is imported when headers are read
    from torchwheel.tables.headergates import Gate


#: Include-root-relative directories whose headers declare the C shim. Other headers also
#: use ``AOTI_TORCH_EXPORT`` (``torch/csrc/shim_exception_state.h`` exports C++ helpers in a
#: namespace and ``#error``s under ``TORCH_STABLE_ONLY``), but those are not stable ABI.
SHIM_HEADER_DIRS = (
    "torch/csrc/stable/c/",
    "torch/csrc/inductor/aoti_torch/c/",
    "torch/csrc/inductor/aoti_torch/generated/",
)

# Where the TORCH_VERSION_MAJOR/MINOR/PATCH macros live, newest layout first.
_VERSION_HEADERS = (
    "torch/headeronly/version.h",
    "torch/version.h",
    "torch/csrc/api/include/torch/version.h",
)
_INCLUDE_PREFIX = "torch/include/"

_VERSION_MACRO = re.compile(
    r"^\s*#\s*define\s+TORCH_VERSION_(?P<part>MAJOR|MINOR|PATCH)\s+(?P<value>\d{1,9})\b",
    re.MULTILINE,
)

Source = str | PathLike[str]


def _is_shim_header(relative: str) -> bool:
    return relative.endswith(".h") and relative.startswith(SHIM_HEADER_DIRS)


def _parse_version_header(text: str, origin: str) -> FeatureVersion:
    parts = {m["part"]: int(m["value"]) for m in _VERSION_MACRO.finditer(text)}
    try:
        return FeatureVersion(parts["MAJOR"], parts["MINOR"], parts["PATCH"])
    except KeyError as exc:
        raise ValueError(f"{origin}: no TORCH_VERSION_{exc.args[0]} macro") from exc


def _read_wheel(path: Path) -> tuple[FeatureVersion, dict[str, str]]:
    """Only the version header and the shim headers are inflated, through the same hardened
    reader as every other wheel (``WheelArchive``: its limits, its refusals)."""
    from torchwheel.wheel.archive import WheelArchive  # here: the variant plugin imports this module

    try:
        wheel = WheelArchive(path)
    except InputError as exc:
        raise ValueError(str(exc)) from exc
    with wheel:
        names = {
            member[len(_INCLUDE_PREFIX) :]: member
            for member in wheel.contents.members
            if member.startswith(_INCLUDE_PREFIX)
        }

        def read(relative: str) -> str:
            return wheel.read_bounded(names[relative]).decode("utf-8", errors="replace")  # max-metadata-bytes

        version_header = next((h for h in _VERSION_HEADERS if h in names), None)
        if version_header is None:
            raise ValueError(f"{path}: no torch/include version header; not a torch wheel?")
        version = _parse_version_header(read(version_header), f"{path}!{version_header}")
        shims = sorted(rel for rel in names if _is_shim_header(rel))
        _bounded(path, sum(wheel.member_size(names[rel]) for rel in shims))
        headers = {rel: read(rel) for rel in shims}
    return version, headers


def _include_root(path: Path) -> Path:
    for candidate in (path / "torch" / "include", path / "include", path):
        if (candidate / "torch" / "csrc").is_dir():
            return candidate
    raise ValueError(
        f"{path}: neither a torch wheel, a directory containing torch/include, nor a torch include directory"
    )


def _bounded(source: Path, size: int) -> None:
    from torchwheel import limits

    limits.current().max_shim_header_bytes.check(f"{source}: its shim headers' size", size)


def _read_text(path: Path) -> str:
    """A header of a torch folder: a regular file (a FIFO named ``.h`` would block the read,
    a link to ``/dev/zero`` never end it) within ``max-metadata-bytes``."""
    from torchwheel import limits
    from torchwheel.safeopen import read_regular

    try:
        return read_regular(path, limits.current().max_metadata_bytes.value).decode("utf-8", errors="replace")
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from exc


def _read_directory(path: Path) -> tuple[FeatureVersion, dict[str, str]]:
    root = _include_root(path)
    for name in _VERSION_HEADERS:
        version_file = root / name
        if version_file.is_file():
            version = _parse_version_header(_read_text(version_file), str(version_file))
            break
    else:
        raise ValueError(f"{root}: no torch version header ({', '.join(_VERSION_HEADERS)})")
    headers: dict[str, str] = {}
    for directory in SHIM_HEADER_DIRS:
        base = root / directory
        if not base.is_dir():
            continue
        for header in sorted(base.rglob("*.h")):
            relative = PurePosixPath(header.relative_to(root)).as_posix()
            headers[relative] = _read_text(header)
            _bounded(path, sum(map(len, headers.values())))
    return version, headers


def scan_headers(source: Source) -> SymbolTable:
    """Symbol table of one torch build, read from a wheel, a site-packages or include dir.

    Wheels are read in place: only the few shim headers are decompressed, which is what
    makes scanning a 500 MB CUDA wheel cheap.
    """
    path = Path(source)
    if path.is_dir():
        version, headers = _read_directory(path)
    elif path.is_file():
        version, headers = _read_wheel(path)
    else:
        raise ValueError(f"{path}: not a torch wheel or directory")
    if not headers:
        raise ValueError(f"{path}: torch {version} ships no stable-ABI shim headers")
    from torchwheel.tables.headergates import min_gate, scan_header_declarations

    symbols: dict[str, Gate] = {}
    needs: dict[str, frozenset[str]] = {}
    for relative, text in headers.items():
        named = _header_needs(relative)
        for name, (gate, need) in scan_header_declarations(text).items():
            need |= named
            symbols[name] = min_gate((symbols[name], gate)) if name in symbols else gate
            needs[name] = needs[name] & need if name in needs else need
    origins = {n: Origin(needs=tuple(sorted(need))) for n, need in needs.items() if need}
    return SymbolTable(symbols=symbols, sources=(version.release,), origins=origins)


#: A shim header named for a torch component declares shims of it: ``c10d`` (torch's
#: distributed library) in the name is a distributed build's need, as ``#ifdef
#: USE_DISTRIBUTED`` around a declaration is (``headergates.BUILD_CONDITIONS``).
_NAMED_NEEDS = (("c10d", "distributed"), ("distributed", "distributed"))


def _header_needs(relative: str) -> frozenset[str]:
    name = PurePosixPath(relative).name.lower()
    return frozenset(need for word, need in _NAMED_NEEDS if word in name)
