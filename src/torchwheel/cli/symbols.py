"""What extension authors build with: the marker header (``include``) and the shim table
(``symbols update``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from torchwheel.cli.options import chosen_table, no_config_option, output_option, quiet_option, symbols_option
from torchwheel.errors import Exit


@click.command(short_help="Print the -I flag for the marker header stable_abi_marker.h.")
def include() -> Exit:
    """Print the compiler flag that puts torchwheel's marker header on the include path.

    Use as: CFLAGS="$(torchwheel include)" and #include <torchwheel/stable_abi_marker.h>.
    """
    here = Path(__file__).resolve().parent.parent / "include"
    click.echo(f"-I{here}")
    return Exit.OK


@click.group(short_help="The stable shim table: the torch release that added each symbol.")
def symbols() -> None:
    """The table of stable shim symbols and the torch release that introduced each."""


@symbols.command("update", short_help="Extend the shim table from torch wheels or installations.")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@output_option(
    "Write the tables here; `-` prints them (default: the user tables file every command "
    "reads, $XDG_DATA_HOME/torchwheel/tables.json or ~/.local/share/...; %LOCALAPPDATA% on Windows).",
    click.Path(dir_okay=False, allow_dash=True, path_type=Path),
)
@click.option("--replace", is_flag=True, help="Build from SOURCES only, not on top of the current tables.")
@symbols_option
@no_config_option
@quiet_option("no notes and no line saying what was written")
def symbols_update(
    sources: tuple[Path, ...],
    output: Path | None,
    replace: bool,
    symbols_file: Path | None,
    no_config: bool,
    quiet: bool,
) -> Exit:
    """Refresh every table (shims, exports, releases) from torch wheels or installations.

    Offline: the shim table from their headers, the export index of their platform from
    their libraries, the release list from their versions, on top of the tables a command
    would use now (--symbols, TORCHWHEEL_SYMBOLS, [tool.torchwheel] symbols, the user tables
    file, else the shipped ones).
    """
    from torchwheel.tables.tablechoice import tables_lock, user_tables_path
    from torchwheel.tables.tableupdate import update_tables, write_tables

    target = output if output is not None else user_tables_path()
    printing = str(target) == "-"
    # the user tables file, from choosing the base to writing: a second update at once waits,
    # then builds on this one's file (an -o FILE is the caller's to serialise: no lock file beside it)
    with tables_lock(target) if output is None else contextlib.nullcontext():
        base = chosen_table(symbols_file, no_config)
        indexes = {p: base.exports_index(p) for p in base.indexes}  # the base file's own, read and checked
        tables = update_tables(
            list(sources), base.shims, base.releases.versions, indexes, replace, base.backends.names
        )
        if printing:
            click.echo(tables.to_json(), nl=False)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_tables(target, tables)
    for note in () if quiet else tables.notes:
        click.echo(note, err=True)
    newest = tables.releases[-1] if tables.releases else "none"
    if not printing and not quiet:
        click.echo(
            f"wrote {target}: {len(tables.table.symbols)} symbols (torch {', '.join(tables.table.sources[-1:])}), "
            f"releases to {newest}, exports for {', '.join(sorted(tables.indexes)) or 'no platform'}, "
            f"{len(tables.backends)} backends",
            err=True,
        )
    return Exit.OK
