"""What extension authors build with: the marker header (``include``) and the shim table
(``symbols update``)."""

from __future__ import annotations

from pathlib import Path

import click

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
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the table here (default: print it).",
)
@click.option("--replace", is_flag=True, help="Build from SOURCES only, not on top of the shipped table.")
def symbols_update(sources: tuple[Path, ...], output: Path | None, replace: bool) -> Exit:
    """Extend the shim table from torch wheels or installations (offline: headers only)."""
    from torchwheel.torchabi.tableupdate import regenerate

    table = regenerate(list(sources), output, extend=not replace)
    if output is None:
        click.echo(table.to_json())
    else:
        click.echo(f"wrote {output}: {len(table.symbols)} symbols", err=True)
    return Exit.OK
