"""Which shim table a run judges with, and how it was chosen.

``torchwheel symbols update`` exists for wheels built against a torch newer than this
torchwheel's table. The table it writes only helps if every command that judges symbols
can be pointed at it, the same way in a shell, in CI and in a project's own configuration;
and a verdict reached with a stale or a custom table must say so, or two machines can
disagree without anyone seeing why. The first of these wins:

1. ``--symbols FILE`` on the command line;
2. the ``TORCHWHEEL_SYMBOLS`` environment variable;
3. ``symbols = "FILE"`` in ``[tool.torchwheel]`` (relative to that ``pyproject.toml``);
4. the table shipped in the package.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.torchabi.symtable import SymbolTable, load_shipped, shape

ENV_VAR = "TORCHWHEEL_SYMBOLS"
SHIPPED = "shipped"


@frozen
class ChosenTable:
    table: SymbolTable
    origin: str  # "shipped" or the file the table was read from
    how: str  # "--symbols", ENV_VAR, "pyproject.toml" or "shipped"

    @property
    def label(self) -> str:
        releases = self.table.sources
        span = f"torch {releases[0]}..{releases[-1]}" if releases else "no source releases"
        where = "shipped table" if self.origin == SHIPPED else f"{self.origin} (from {self.how})"
        return f"{where}: {len(self.table.symbols)} shims, {span}"

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "chosen_by": self.how,
            "sources": list(self.table.sources),
            "symbols": len(self.table.symbols),
        }


def read_table(path: Path) -> SymbolTable:
    """A table file as ``symbols update -o`` writes it; any defect is one ``InputError``."""
    from torchwheel import safejson  # only a --symbols table: the shipped one is trusted

    where = f"symbol table {path}"
    try:
        return SymbolTable.from_document(safejson.load_file(path, where, shape()), where)
    except InputError as exc:
        raise InputError(f"{exc} (write one with `torchwheel symbols update -o`)") from exc


def choose_table(cli: Path | None, configured: Path | None) -> ChosenTable:
    """``configured`` is the path from ``[tool.torchwheel]``, already made absolute."""
    if cli is not None:
        return ChosenTable(read_table(cli), str(cli), "--symbols")
    env = os.environ.get(ENV_VAR)
    if env:
        return ChosenTable(read_table(Path(env)), env, ENV_VAR)
    if configured is not None:
        return ChosenTable(read_table(configured), str(configured), "pyproject.toml")
    return ChosenTable(load_shipped(), SHIPPED, SHIPPED)
