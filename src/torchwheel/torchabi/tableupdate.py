"""The work behind ``torchwheel symbols update``, kept free of click so it can be tested.

Users need this when they check wheels built against a torch newer than the table that
shipped with their torchwheel: scanning that torch's wheel (or site-packages) teaches the
table the new gates without waiting for a torchwheel release.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from torchwheel.errors import InputError
from torchwheel.torchabi.shim_headers import scan_headers
from torchwheel.torchabi.symtable import SymbolTable, load_shipped, merge_all, shape
from torchwheel.wheel.temps import OutputKind, replace_atomically

__all__ = ["regenerate", "write_atomically"]


def regenerate(sources: list[Path], output: Path | None, extend: bool) -> SymbolTable:
    """Scan ``sources`` and merge them, onto the shipped table when ``extend`` is true.

    Replacing (``extend=False``) is for building a table from scratch, as
    scripts/gen_symtable.py does; extending is what users want, because the shipped table
    already covers releases they may no longer have wheels of. The table is written to
    ``output`` when given and returned either way, so the CLI can print a summary.
    """
    if not sources:
        raise InputError("no torch wheel or directory to scan")
    try:
        tables = [scan_headers(source) for source in sources]
    except ValueError as exc:  # not a torch wheel or include tree: the user's input, one line
        raise InputError(str(exc)) from exc
    if extend:
        tables.append(load_shipped())
    table = merge_all(tables)
    if output is not None:
        write_atomically(output, table.to_json())
    return table


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` in one step (``wheel.temps.replace_atomically``), so an interrupted
    run never leaves half a table. The table is package data, meant to be readable: it keeps
    the replaced file's mode, or gets a plain 0644."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644

    def write(out: BinaryIO) -> None:
        out.write(text.encode("utf-8"))

    replace_atomically(path, write, mode, kind_of=SYMBOL_TABLE)


def _is_table(fd: int) -> bool:
    """A file a previous ``symbols update -o`` wrote: a table ``--symbols`` reads (bounded and
    schema-checked by ``safejson``), not a file that only happens to be where one would go."""
    from torchwheel import limits, safejson

    limit = limits.current().max_json_bytes.value
    data = os.pread(fd, limit + 1, 0)
    try:
        SymbolTable.from_document(safejson.load(data, "table", shape()), "table")
    except InputError:
        return False
    return True


SYMBOL_TABLE = OutputKind("symbol table", _is_table)
