"""The tables a run judges with, as one immutable value held by the caller and passed down.

torchwheel's verdicts rest on four tables: the shim table (``symtable``), the list of torch
releases (``torchabi.torch_releases``), the backend list (``torchabi.torch_backends``) and what
each torch minor exports (``exports``). Switched process-wide, two sets of tables could not
coexist in one process (an API caller's next to a scan's), a thread pool had to rely on the
switch being global, and nothing in a function's arguments said which tables decided. So a
set of tables is a value, as auditwheel's ``WheelPolicies`` is for its policies: chosen once
at the edge (``tablechoice``: ``--symbols``, the environment, ``pyproject.toml``, the user
tables file, else ``shipped_tables()``) and passed to what reads a wheel, judges it or
chooses one. The export indexes are read and checked when a verdict first needs one (most
runs judge no unstable wheel); the parsed index is kept inside the value, so the value stays
what it was built as and two values never share a cache.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from torchwheel.errors import InputError, clipped
from torchwheel.frozen import frozen
from torchwheel.tables.symtable import SymbolTable, load_shipped
from torchwheel.torchabi.torch_backends import Backends, shipped_backends
from torchwheel.torchabi.torch_releases import Releases, shipped_releases

if TYPE_CHECKING:
    from torchwheel.tables.exports import ExportIndex

SHIPPED = "shipped"


@frozen
class Tables:
    """The tables of a run: the shim table, the release list, the backend list and the export
    indexes (a tables file's ``indexes`` by platform, read on first use; a platform it lacks
    keeps the shipped index); where they came from (``origin``, chosen by ``how``); and which
    of the lists the file gave itself (``from_file``: ``releases``, ``backends``; the others
    are the shipped ones)."""

    shims: SymbolTable
    releases: Releases
    backends: Backends
    origin: str = SHIPPED  # "shipped" or the file the tables were read from
    how: str = SHIPPED  # "--symbols", ENV_VAR, "pyproject.toml", USER_FILE or "shipped"
    indexes: Mapping[str, bytes] = field(default_factory=dict, repr=False, compare=False)
    warning: str = ""  # the user tables file could not be read and was set aside (tablechoice)
    from_file: frozenset[str] = frozenset()
    # each platform's index once read: inside the value, never shared with another
    _read: dict[str, ExportIndex] = field(default_factory=dict, init=False, repr=False, compare=False)

    def exports_index(self, platform: str) -> ExportIndex | None:
        """The export index for ``platform`` (the shim table's keys: ``linux-x86_64``,
        ``macos-arm64``, ``windows-x86_64``): the tables file's, else the shipped one; None
        when neither has one. A defect of the file's is one ``InputError``, raised when a
        verdict first needs that index."""
        from torchwheel.tables.exports import ExportIndex, shipped_index

        if platform not in self.indexes:
            return shipped_index(platform)
        # no lock: two threads that both miss parse the same bytes to equal indexes (no
        # lock either keeps the value picklable for a spawned scan worker)
        index = self._read.get(platform)
        if index is None:
            where = f"{self.origin} ({self.how}): exports {clipped(platform, 40)!r}"
            index = ExportIndex.from_bytes(self.indexes[platform], where)
            if index.platform != platform:
                raise InputError(
                    f"{where}: the index inside is for {index.platform!r}", reference="tables-file-invalid"
                )
            self._read[platform] = index
        return index

    @property
    def newest(self) -> Version:
        """The newest torch the tables the file gave speak for (the shim table's, and its
        release list's when it has one)."""
        newest = Version(self.shims.newest.release)
        if "releases" in self.from_file:
            return max(newest, self.releases.newest())
        return newest

    @property
    def label(self) -> str:
        releases = self.shims.sources
        span = f"torch {releases[0]}..{releases[-1]}" if releases else "no source releases"
        where = "shipped table" if self.origin == SHIPPED else f"{self.origin} (from {self.how})"
        extra = f", releases to {self.releases.newest()}" if "releases" in self.from_file else ""
        extra += "".join(f", {p} exports" for p in sorted(self.indexes))
        extra += (
            f", backends to {', '.join(self.backends.names[-3:])}" if "backends" in self.from_file else ""
        )
        return f"{where}: {len(self.shims.symbols)} shims, {span}{extra}"

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "chosen_by": self.how,
            "sources": list(self.shims.sources),
            "symbols": len(self.shims.symbols),
            "releases_newest": str(self.releases.newest()),
            "exports_from_file": sorted(self.indexes),
            "backends": list(self.backends.names),
        }


@functools.cache
def shipped_tables() -> Tables:
    """The tables shipped in the package, built once: the default of every caller that is
    given none (the library face, a test)."""
    return Tables(load_shipped(), shipped_releases(), shipped_backends())
