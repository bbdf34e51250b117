"""Turn command-line arguments into facts: wheel files, directories of wheels, unpacked
wheels, single binaries and installed distributions all end up as ``WheelFacts``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from torchwheel.analysis import analyze_binary
from torchwheel.binary import BinaryError, read_path
from torchwheel.errors import InputError
from torchwheel.sources import Source, WheelArchive, directory_source, installed_source
from torchwheel.symtable import SymbolTable
from torchwheel.wheelfacts import MemberBinary, MetadataFacts, WheelFacts, collect
from torchwheel.wheelfile import WheelContents


def expand(paths: tuple[Path, ...]) -> list[Path]:
    """Wheel files and unpacked wheels as given; a plain directory stands for its wheels."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir() and not any(p.glob("*.dist-info")):
            wheels = sorted(p.glob("*.whl"))
            if not wheels:
                raise InputError(f"{p}: a directory with neither wheels nor a .dist-info")
            out.extend(wheels)
        elif not p.exists():
            raise InputError(f"{p}: no such file or directory")
        else:
            out.append(p)
    return out


def _binary_facts(path: Path, table: SymbolTable) -> WheelFacts:
    """A lone binary: the same facts with empty metadata, so binary rules still apply."""
    try:
        analysis = analyze_binary(read_path(path), table)
    except BinaryError as exc:
        raise InputError(f"{path}: {exc}") from exc
    contents = WheelContents(
        path=str(path),
        filename_name=path.name,
        filename_version="",
        filename_tags=frozenset(),
        build_tag=None,
        dist_info="",
        wheel_text="",
        metadata_text="",
        record=None,
        members=[path.name],
    )
    facts = WheelFacts(contents, MetadataFacts(None, (), ()), kind="binary")
    facts.binaries.append(MemberBinary(path.name, analysis))
    return facts


def _open(path: Path) -> Source:
    if path.is_dir():
        return directory_source(path)
    return WheelArchive(path)


def load(
    paths: tuple[Path, ...], env: tuple[str, ...], table: SymbolTable, verify_hashes: bool = True
) -> Iterator[WheelFacts]:
    for path in expand(paths):
        if path.is_file() and path.suffix != ".whl":
            yield _binary_facts(path, table)
            continue
        source = _open(path)
        try:
            yield collect(source, table, verify_hashes)
        finally:
            source.close()
    for name in env:
        source = installed_source(name)
        try:
            yield collect(source, table, verify_hashes)
        finally:
            source.close()
