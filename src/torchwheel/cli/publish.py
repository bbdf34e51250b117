"""Publishing: ``index`` (per-torch indexes) and ``matrix`` (which wheel loads on which torch).

Exit codes, per project (``install.outcome``): 0 written / shown; 1 a project has no wheel
that loads on a ``--torch`` asked for (the index and grid are still written and shown);
2 unreadable input (``index`` then writes nothing, ``matrix`` still shows the readable wheels).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from torchwheel.cli.jsonout import error_object, json_failures, print_document
from torchwheel.cli.options import (
    chosen_table,
    format_option,
    network_options,
    no_config_option,
    symbols_option,
)
from torchwheel.errors import InputError
from torchwheel.report.textsafe import safe, safe_lines

if TYPE_CHECKING:
    from torchwheel.install.candidates import Gathered

_TORCH = click.option(
    "--torch",
    "torches",
    multiple=True,
    metavar="X.Y",
    help="Also this torch minor (repeatable); every minor the wheels load on or name is always in.",
)


_NAME = click.option(
    "--name", "names", multiple=True, metavar="NAME", help="Only this project's wheels (repeatable)."
)


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _minors(values: tuple[str, ...]) -> list[tuple[int, int]]:
    from torchwheel.torchabi.releases import parse_minor

    try:
        return [parse_minor(v) for v in values]
    except ValueError as exc:
        raise InputError(f"--torch: {exc}") from exc


@click.command("index")
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path),
    help="The index directory (replaced atomically if torchwheel wrote it before).",
)
@_TORCH
@_NAME
@symbols_option
@no_config_option
@network_options
def index_command(
    sources: tuple[str, ...],
    output: Path,
    torches: tuple[str, ...],
    names: tuple[str, ...],
    symbols_file: Path | None,
    no_config: bool,
) -> None:
    """Write a PEP 503 simple index of SOURCES (wheels, folders, or a hosted index) with one
    sub-index per torch.

    OUT/simple/ lists every wheel; OUT/torch-X.Y/simple/ only the best wheel per release and
    tag set that loads on torch X.Y, so `pip install --index-url https://.../torch-X.Y/simple`
    gets the right build, and OUT/torch-X.Y/constraints.txt keeps pip and uv to it beside
    another index. Metadata only (WHEEL Torch-ABI); untagged wheels are read once. Exit 0
    written, 1 a project has nothing for a --torch asked for, 2 unreadable input (nothing written).
    """
    from torchwheel.install.outcome import uncovered
    from torchwheel.install.simple_index import build
    from torchwheel.torchabi.releases import show_minor

    asked = _minors(torches)
    result = build(sources, output, asked, names, chosen_table(symbols_file, no_config).table)
    for note in result.notes:
        click.echo(f"note: {safe(note)}", err=True)
    lines = [
        f"wrote {output}: {_plural(len(result.entries), 'wheel', 'wheels')}, simple/ and "
        f"{_plural(len(result.targets), 'per-torch index', 'per-torch indexes')}"
    ]
    for (torch, name), entries in result.backend_targets.items():
        lines.append(f"  torch-{show_minor(torch)}-{name}/simple: {len(entries)} wheels")
    for torch, entries in result.targets.items():
        lines.append(f"  torch-{show_minor(torch)}/simple: {_plural(len(entries), 'wheel', 'wheels')}")
    lines += [f"  files/{vfile} (wheel variants, draft standard)" for vfile in result.variants_files]
    click.echo(safe_lines(lines))  # the paths and file names come from the command line and the input
    missing = uncovered([e.cand for e in result.entries], asked)
    for line in missing:
        click.echo(f"torchwheel: {safe(line)}", err=True)
    sys.exit(1 if missing else 0)


@click.command("matrix")
@click.argument("sources", nargs=-1, required=True)
@format_option("text", "markdown", "json")
@json_failures("matrix")
@click.option("--why", is_flag=True, help="The reason behind each row's cells.")
@_TORCH
@_NAME
@symbols_option
@no_config_option
@network_options
def matrix_command(
    sources: tuple[str, ...],
    fmt: str,
    why: bool,
    torches: tuple[str, ...],
    names: tuple[str, ...],
    symbols_file: Path | None,
    no_config: bool,
) -> None:
    """Which of these wheels (files, folders or a hosted index) loads on which torch release:
    a grid.

    Exit 0; 1 when a project has no wheel that loads on a --torch asked for; 2 when an input
    cannot be read (the readable wheels are still shown).
    """
    from torchwheel.install.discovery import gathering

    asked = _minors(torches)
    with gathering(sources, names, table=chosen_table(symbols_file, no_config).table) as got:
        _matrix(got, fmt, why, asked)


def _first_skipped(got: Gathered) -> str:
    first = got.skipped[0]
    more = f" (and {len(got.skipped) - 1} more)" if len(got.skipped) > 1 else ""
    return f"{first.location}: {first.reason}{more}"


def _matrix(got: Gathered, fmt: str, why: bool, asked: list[tuple[int, int]]) -> None:
    from torchwheel.install import matrix
    from torchwheel.install.outcome import uncovered
    from torchwheel.install.target import installed_torch, probe_here

    skipped = [{"location": s.location, "reason": s.reason} for s in got.skipped]
    if not got.candidates:
        empty = f"no readable wheel: {_first_skipped(got)}" if got.skipped else "no wheels in the sources"
        if fmt == "json":  # the document, empty, with the error: a CI step parses it all the same
            print_document(
                {
                    "schema_version": matrix.SCHEMA_VERSION,
                    "torches": [],
                    "installed_torch": None,
                    "wheels": [],
                    "skipped": skipped,
                    "error": error_object(empty),
                }
            )
        raise InputError(empty)
    installed = installed_torch()
    axis = matrix.backends(got.candidates)
    cols = matrix.columns(got.candidates, asked, installed, axis)
    here = probe_here().build  # the installed torch's column is marked in its own build's grid
    grids = [
        matrix.build(
            got.candidates,
            cols,
            installed if here is None or (b.kind, b.major) == (here.kind, here.major) else None,
            b,
        )
        for b in axis
    ] or [matrix.build(got.candidates, cols, installed)]
    failure = f"skipped an input that cannot be used: {_first_skipped(got)}" if got.skipped else None
    if fmt == "json":
        doc = matrix.to_json_all(grids)
        doc["skipped"] = skipped
        if failure is not None:
            doc["error"] = error_object(failure)
        print_document(doc)
    else:
        render = matrix.markdown if fmt == "markdown" else matrix.text
        out = "\n\n".join(render(m, why, legend=m is grids[-1]) for m in grids)
        click.echo(safe_lines(out.splitlines()))  # wheel names come from the input
    if failure is not None:  # listed in the report (text: below the grid); stderr: the one line of an exit 2
        if fmt != "json":
            click.echo(safe_lines([f"skipped {s.location}: {s.reason}" for s in got.skipped]))
        raise InputError(failure)
    missing = uncovered(got.candidates, asked)
    for line in missing:
        click.echo(f"torchwheel: {safe(line)}", err=True)
    sys.exit(1 if missing else 0)
