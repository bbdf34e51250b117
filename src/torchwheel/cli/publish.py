"""Publishing: ``index`` (per-torch indexes) and ``matrix`` (which wheel loads on which torch)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from torchwheel.cli.options import format_option
from torchwheel.errors import InputError
from torchwheel.report.textsafe import safe_lines

_TORCH = click.option(
    "--torch",
    "torches",
    multiple=True,
    metavar="X.Y",
    help="Also this torch minor (repeatable); every minor the wheels load on or name is always in.",
)


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
def index_command(sources: tuple[str, ...], output: Path, torches: tuple[str, ...]) -> None:
    """Write a PEP 503 simple index of SOURCES (wheels, folders) with one sub-index per torch.

    OUT/simple/ lists every wheel; OUT/torch-X.Y/simple/ only the best wheel per release and
    tag set that loads on torch X.Y, so `pip install --index-url file://OUT/torch-X.Y/simple`
    gets the right build. Metadata only (WHEEL Torch-ABI); untagged wheels are read once.
    """
    from torchwheel.install.simple_index import build
    from torchwheel.torchabi.releases import show_minor

    result = build(sources, output, _minors(torches))
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(
        f"wrote {output}: {len(result.entries)} wheels, simple/ and {len(result.targets)} per-torch indexes"
    )
    for (torch, name), entries in result.backend_targets.items():
        click.echo(f"  torch-{show_minor(torch)}-{name}/simple: {len(entries)} wheels")
    for torch, entries in result.targets.items():
        click.echo(f"  torch-{show_minor(torch)}/simple: {len(entries)} wheels")
    for vfile in result.variants_files:
        click.echo(f"  files/{vfile} (wheel variants, draft standard)")


@click.command("matrix")
@click.argument("sources", nargs=-1, required=True)
@format_option("text", "markdown", "json")
@click.option("--why", is_flag=True, help="The reason behind each row's cells.")
@_TORCH
def matrix_command(sources: tuple[str, ...], fmt: str, why: bool, torches: tuple[str, ...]) -> None:
    """Which of these wheels (files or folders) loads on which torch release: a grid.

    Exit 0; 2 when an input cannot be read (the readable wheels are still shown).
    """
    from torchwheel.install import matrix
    from torchwheel.install.discovery import gather
    from torchwheel.install.explain import skipped_summary
    from torchwheel.install.target import installed_torch, probe_here

    got = gather(sources)
    if not got.candidates and got.skipped:
        raise InputError(skipped_summary(got.skipped))
    installed = installed_torch()
    axis = matrix.backends(got.candidates)
    cols = matrix.columns(got.candidates, _minors(torches), installed, axis)
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
    if fmt == "json":
        doc = matrix.to_json_all(grids)
        doc["skipped"] = [{"location": s.location, "reason": s.reason} for s in got.skipped]
        click.echo(json.dumps(doc, indent=2))
    else:
        render = matrix.markdown if fmt == "markdown" else matrix.text
        out = "\n\n".join(render(m, why, legend=m is grids[-1]) for m in grids)
        click.echo(safe_lines(out.splitlines()))  # wheel names come from the input
    if got.skipped:  # listed in the report (text: below the grid); stderr: the one line of an exit 2
        if fmt != "json":
            click.echo(safe_lines([f"skipped {s.location}: {s.reason}" for s in got.skipped]))
        raise InputError(f"skipped an input that cannot be used: {skipped_summary(got.skipped)}")
