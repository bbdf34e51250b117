"""Publishing: ``index`` (per-torch indexes), ``matrix`` (which wheel loads on which torch) and
``unlabel`` (the copy of a local-label build that PyPI takes).

``index`` and ``matrix`` take their exit codes from ``selection.outcome``, per project, as
``select`` does; what each code means per command: ``cli/exits.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from torchwheel.cli.jsonout import error_object, json_failures, print_document
from torchwheel.cli.options import (
    build_tag_option,
    chosen_table,
    dry_run_option,
    format_option,
    index_options,
    names_option,
    network_options,
    no_config_option,
    output_option,
    overwrite_option,
    quiet_option,
    require_sources,
    symbols_option,
    torch_option,
    verbose_option,
    wheel_dir_option,
)
from torchwheel.errors import Exit, InputError, Reference
from torchwheel.report.textsafe import safe, safe_lines

if TYPE_CHECKING:
    from torchwheel.analysis.wheelfacts import WheelFacts
    from torchwheel.publish.simple_index import IndexResult
    from torchwheel.selection.candidates import Gathered
    from torchwheel.tables.tableset import Tables
    from torchwheel.wheel.archive import WheelArchive

_TORCH = torch_option(
    "Also this torch minor (repeatable); every minor the wheels load on or name is always in.",
    repeatable=True,
)


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _minors(values: tuple[str, ...]) -> list[tuple[int, int]]:
    from torchwheel.torchabi.torch_named import named_torch
    from torchwheel.torchabi.torch_releases import minor_of

    return [minor_of(named_torch(v)) for v in values]


@click.command("index", short_help="Write a PEP 503 index, and one per torch of what loads there.")
@click.argument("sources", nargs=-1)
@index_options
@output_option(
    "The index directory (replaced atomically if torchwheel wrote it before).",
    click.Path(path_type=Path),
    required=True,
)
@click.option(
    "--base-url",
    metavar="URL",
    help="Where OUT will be served (https://example.org/whl): the front page's install lines name it.",
)
@_TORCH
@names_option
@verbose_option(
    "Also each sub-index written, and each wheel a note is about (default: one line, notes counted)."
)
@quiet_option(
    "no line saying what was written, no notes but those on what is published otherwise than it may "
    "seem (wheels `check` calls broken, variant wheels left out)"
)
@symbols_option
@no_config_option
@network_options
def index_command(
    sources: tuple[str, ...],
    index_urls: tuple[str, ...],
    output: Path,
    base_url: str | None,
    torches: tuple[str, ...],
    names: tuple[str, ...],
    verbose: bool,
    quiet: bool,
    symbols_file: Path | None,
    no_config: bool,
) -> Exit:
    """Write a PEP 503 simple index of SOURCES (wheels, folders, or a hosted index; or -i
    INDEX) with one sub-index per torch, and per torch and build.

    OUT/simple/ lists every wheel; OUT/torch-X.Y/simple/ only the best wheel per release and
    tag set that loads on torch X.Y, so `pip install --index-url https://.../torch-X.Y/simple`
    gets the right build, and OUT/torch-X.Y/constraints.txt keeps pip and uv to it beside
    another index; OUT/torch-X.Y-BUILD/ (cpu, cu130, ...) the same for one torch build.
    OUT/index.html is the page for people: per project, the matrix of what loads where, each
    cell linking its wheel and the pip and uv lines that install it, and what `check` finds in
    each wheel (one it calls broken is marked there, with no install line). Torch needs from
    WHEEL Torch-ABI (untagged wheels: from their binaries); every wheel is read once, for its
    hashes and for check's rules ([tool.torchwheel] applies). Prints one line (-v: each
    sub-index, and each wheel a note is about; -q: nothing but the warnings). Exit 0 written,
    1 a project has nothing for a --torch asked for, 2 unreadable input (nothing written).
    """
    from torchwheel import rules
    from torchwheel.cli.config import load_policy
    from torchwheel.publish.simple_index import write_indexes
    from torchwheel.selection.outcome import grid_exit_code

    require_sources(sources, index_urls)
    _public_base_url(base_url)
    asked = _minors(torches)
    tables = chosen_table(symbols_file, no_config)
    policy = load_policy(Path.cwd(), use_config=not no_config)  # where the table's configuration is read
    result = write_indexes(
        sources,
        output,
        asked,
        names,
        tables,
        base_url,
        indexes=index_urls,
        judge=lambda w: rules.run_all(w, policy),
    )
    for note in (n for n in result.notes if n.warning or not quiet):
        if verbose:
            for item, what in note.items:
                click.echo(f"note: {safe(item)}: {safe(what)}", err=True)
        else:
            more = f" ({note.items[0][0]} ...; -v names each)" if len(note.items) > 1 else ""
            click.echo(f"note: {safe(note.summary)}{safe(more)}", err=True)
    lines = _index_lines(output, result)
    if not quiet:
        click.echo(
            safe_lines(lines if verbose else lines[:1])
        )  # paths from the command line, names from the input
    code, missing = grid_exit_code([e.cand for e in result.entries], asked)
    for line in missing:
        click.echo(f"torchwheel: {safe(line)}", err=True)
    return code


def _public_base_url(base_url: str | None) -> None:
    """``--base-url`` goes into every install line of a page anyone may read: a user part
    (``user:token@``) there would publish the token, so it is refused (exit 2), shown hidden."""
    from torchwheel.net.urls import has_credentials, shown

    if base_url is not None and has_credentials(base_url):
        raise InputError(
            f"--base-url {shown(base_url)}: holds a user part (user:password@ or token@), which the "
            "front page would print in every install line; give the address without it",
            reference="bad-option-value",
        )


def _index_lines(output: Path, result: IndexResult) -> list[str]:
    """A headline that counts every sub-index listed below it: one per torch (``torch-X.Y/``:
    the wheels any torch build loads) and one per torch and build some wheel loads on
    (``torch-X.Y-cpu/``, ``torch-X.Y-cu130/``: ``simple_index.write_indexes``)."""
    from torchwheel.torchabi.torch_releases import show_minor

    head = f"wrote {output}: {_plural(len(result.entries), 'wheel', 'wheels')}"
    if result.broken:
        head += f" ({len(result.broken)} `check` calls broken)"
    head += ", simple/"
    per_torch = _plural(len(result.targets), "per-torch index", "per-torch indexes")
    if result.backend_targets:
        builds = ", ".join(dict.fromkeys(name for _, name in result.backend_targets))
        per_build = _plural(len(result.backend_targets), "per-torch-build index", "per-torch-build indexes")
        head += f", {per_torch}, {per_build} ({builds})"
    else:
        head += f", {per_torch}"
    if result.variants_files:
        head += f", {_plural(len(result.variants_files), 'variants.json', 'variants.json files')}"
    lines = [head + " and index.html"]
    for torch, entries in result.targets.items():
        lines.append(f"  torch-{show_minor(torch)}/simple: {_plural(len(entries), 'wheel', 'wheels')}")
    for (torch, name), entries in result.backend_targets.items():
        lines.append(f"  torch-{show_minor(torch)}-{name}/simple: {_plural(len(entries), 'wheel', 'wheels')}")
    lines += [f"  files/{vfile} (wheel variants, draft standard)" for vfile in result.variants_files]
    return lines


@click.command("matrix", short_help="A grid of wheels by torch minor: which loads where.")
@click.argument("sources", nargs=-1)
@index_options
@format_option("text", "markdown", "json")
@json_failures("matrix")
@click.option("--why", is_flag=True, help="The reason behind each row's cells.")
@_TORCH
@names_option
@symbols_option
@no_config_option
@network_options
@quiet_option("the grids alone, no legend")
def matrix_command(
    sources: tuple[str, ...],
    index_urls: tuple[str, ...],
    fmt: str,
    why: bool,
    torches: tuple[str, ...],
    names: tuple[str, ...],
    symbols_file: Path | None,
    no_config: bool,
    quiet: bool,
) -> Exit:
    """Which of these wheels (files, folders or a hosted index; or -i INDEX) loads on which
    torch release: a grid.

    Exit 0; 1 when a project has no wheel that loads on a --torch asked for; 2 when an input
    cannot be read (the readable wheels are still shown).
    """
    from torchwheel.selection.discovery import gathering

    require_sources(sources, index_urls)
    asked = _minors(torches)
    tables = chosen_table(symbols_file, no_config)
    with gathering(sources, names, indexes=index_urls, tables=tables) as got:
        return _matrix(got, fmt, why, asked, tables, quiet)


def _first_skipped(got: Gathered) -> str:
    first = got.skipped[0]
    more = f" (and {len(got.skipped) - 1} more)" if len(got.skipped) > 1 else ""
    return f"{first.location}: {first.reason}{more}"


def _matrix(
    got: Gathered, fmt: str, why: bool, asked: list[tuple[int, int]], tables: Tables, quiet: bool = False
) -> Exit:
    from torchwheel.publish import matrix
    from torchwheel.selection.outcome import grid_exit_code
    from torchwheel.selection.target import installed_torch, probe_here

    skipped = [{"location": s.location, "reason": s.reason} for s in got.skipped]
    if not got.candidates:
        empty = f"no readable wheel: {_first_skipped(got)}" if got.skipped else "no wheels in the sources"
        empty_reference: Reference = "candidates-unusable" if got.skipped else "not-found"
        if fmt == "json":  # the document, empty, with the error: a CI step parses it all the same
            print_document(
                {
                    "schema_version": matrix.SCHEMA_VERSION,
                    "torches": [],
                    "installed_torch": None,
                    "wheels": [],
                    "skipped": skipped,
                    "error": error_object(empty, empty_reference),
                }
            )
        raise InputError(empty, reference=empty_reference)
    installed = installed_torch()
    axis = matrix.backend_axis(got.candidates, tables)
    cols = matrix.columns(got.candidates, asked, installed, axis, tables=tables)
    here = probe_here().build  # the installed torch's column is marked in its own build's grid
    grids = [
        matrix.build_matrix(
            got.candidates,
            cols,
            installed if here is None or (b.kind, b.major) == (here.kind, here.major) else None,
            b,
            tables=tables,
        )
        for b in axis
    ] or [matrix.build_matrix(got.candidates, cols, installed, tables=tables)]
    failure = f"skipped an input that cannot be used: {_first_skipped(got)}" if got.skipped else None
    if fmt == "json":
        doc = matrix.to_json_all(grids)
        doc["skipped"] = skipped
        if failure is not None:
            doc["error"] = error_object(failure, "candidates-unusable")
        print_document(doc)
    else:
        out = matrix.render(grids, fmt == "markdown", why, installed, here, with_legend=not quiet)
        click.echo(safe_lines(out.splitlines()))  # wheel names come from the input
    if failure is not None:  # listed in the report (below the grid); stderr: the one line of an exit 2
        if fmt != "json":
            bullet = (
                "- " if fmt == "markdown" else ""
            )  # a list of its own in markdown, not the legend's paragraph
            skips = [f"{bullet}skipped {s.location}: {s.reason}" for s in got.skipped]
            click.echo(safe_lines(["", *skips] if fmt == "markdown" else skips))
        raise InputError(failure, reference="candidates-unusable")
    code, missing = grid_exit_code(got.candidates, asked)
    for line in missing:
        click.echo(f"torchwheel: {safe(line)}", err=True)
    return code


@click.command("unlabel", short_help="Copy local-label wheels as their public version, for PyPI.")
@click.argument("wheels", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@wheel_dir_option("Write the copies here: the upload set, apart from the labelled builds.", required=True)
@build_tag_option(
    "Give the copy this build tag (file name and WHEEL Build); default: the input's own, if any."
)
@overwrite_option("Replace an output wheel of the same name (never a file that is no wheel).")
@dry_run_option("Say what would be written; write nothing.")
@quiet_option("no line per wheel written, no notes but the one that PyPI still refuses a copy")
def unlabel_command(
    wheels: tuple[Path, ...],
    wheel_dir: Path,
    build_tag: str | None,
    overwrite: bool,
    dry_run: bool,
    quiet: bool,
) -> Exit:
    """Copy local-label wheels (1.0+cu129) as their public version (1.0), for PyPI.

    The version changes in the file name, METADATA Version and the .dist-info (and .data)
    directory; RECORD is rewritten; every other byte is kept, Requires-Dist: torch included.
    Refused (exit 2, nothing written): a wheel without a local label, an unstable build that
    only its label dates, two builds of one release and tag set (PyPI holds one: give only
    the build PyPI gets; a build tag cannot tell torch targets apart), an output that exists
    (--overwrite) or another build of the release and tags already in WHEEL_DIR. Exit 1: the
    wheel is broken (check's findings).
    """
    from torchwheel.analysis.load import opened
    from torchwheel.tables.tablechoice import choose_tables

    # the tables: TORCHWHEEL_SYMBOLS, else the shipped ones (they only decide whether a
    # build is unstable, for the label-only-pin refusal)
    with opened(wheels, choose_tables(None, None)) as loaded:  # written from these descriptors
        return _unlabel(loaded, wheel_dir, build_tag, overwrite, dry_run, quiet and not dry_run)


def _unlabel(
    loaded: list[tuple[WheelFacts, WheelArchive | None]],
    wheel_dir: Path,
    build_tag: str | None,
    overwrite: bool,
    dry_run: bool,
    quiet: bool = False,
) -> Exit:
    from torchwheel import rules
    from torchwheel.cli import colour
    from torchwheel.report.findings import check_text
    from torchwheel.rules.registry import Policy
    from torchwheel.tagging.public_version import public_plan, refuse_one_release, refuse_taken, write_public

    facts = [w for w, _ in loaded]
    # the archive's own integrity (TW4xx that block tag): a RECORD that lies is not rewritten
    archive_codes = frozenset(c for c in rules.rewrite_blockers().select if c.startswith("TW4"))
    broken = rules.run_all(facts, Policy(select=archive_codes))
    if broken:
        colour.echo(check_text(facts, broken))
        codes = ", ".join(sorted({f.code for f in broken}))
        click.echo(f"torchwheel: unlabel refused: {codes} (above): a broken wheel is not rewritten", err=True)
        return Exit.NO
    plans = [public_plan(w, build_tag) for w in facts]
    refuse_one_release(plans)
    for p in plans:  # every refusal before the first wheel is written
        refuse_taken(p, wheel_dir, overwrite)
    # what else PyPI refuses at upload and unlabel leaves as it is (the platform tags: TW415)
    upload = {f.wheel: f.message for f in rules.run_all(facts, Policy(select=frozenset({"TW415"})))}
    for (w, archive), p in zip(loaded, plans, strict=True):
        if dry_run:
            target = wheel_dir / p.filename
        else:
            assert archive is not None  # a wheel file: public_plan refuses anything else
            target = write_public(w, archive, p, wheel_dir, overwrite)
        status = "would write" if dry_run else "wrote"
        if not quiet:
            click.echo(safe_lines([f"{status} {target}", *(f"  - {change}" for change in p.changes)]))
        refused = upload.get(w.contents.path)
        notes = [
            *([] if quiet else p.notes),
            *([f"{p.filename}: PyPI still refuses it: {refused}"] if refused else []),
        ]
        for note in notes:
            click.echo(f"torchwheel: note: {safe(note)}", err=True)
    return Exit.OK
