"""``torchwheel scan``: whole folders and indexes into JSON Lines, and the report of such a
file (``docs/scan.md``). The work is ``torchwheel.scan``; this is its command line."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from torchwheel.cli.options import (
    chosen_table,
    format_option,
    index_options,
    names_option,
    network_options,
    no_config_option,
    output_option,
    quiet_option,
    renamed_flag,
    symbols_option,
)
from torchwheel.errors import Exit


def _report(report_file: Path, fmt: str) -> Exit:
    from torchwheel.report.textsafe import json_text
    from torchwheel.scan.report import render_summary, summarize

    summary = summarize(report_file)
    click.echo(json_text(summary.to_json()) if fmt == "json" else render_summary(summary, fmt))
    return Exit.OK


@click.command("scan", short_help="Read and check every wheel of whole indexes into JSON Lines.")
@click.argument("sources", nargs=-1)
@index_options
@names_option
@output_option(
    "The JSON Lines file: appended to, so a second run resumes the first.",
    click.Path(dir_okay=False, path_type=Path),
    metavar="FILE.jsonl",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 512),
    default=1,
    show_default=True,
    help="Worker processes, each held to the input budget.",
)
@click.option(
    "--report",
    "report_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE.jsonl",
    help="Count what a scan file holds (no wheel is read) instead of scanning.",
)
@format_option("text", "markdown", "json")
@click.option(
    "--max-host-connections",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="Requests in flight to one host, all workers together.",
)
@click.option(
    "--max-rate",
    type=click.FloatRange(0, min_open=True),
    default=20.0,
    show_default=True,
    help="Requests per second to one host, all workers together.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="A progress bar on stderr (default: on a terminal; else a line every 30 s).",
)
@click.option(
    "--partial",
    is_flag=True,
    help="Hosted wheels: read the need through HTTP ranges, not a whole download (docs/scan.md).",
)
@renamed_flag("--gpu", "--gpu-code", "gpu_code")  # --gpu names a GPU (select, doctor), not a reading
@click.option("--gpu-code", is_flag=True, help="With --partial: read GPU code too (whole compiled members).")
@symbols_option
@no_config_option
@network_options
@quiet_option("no progress on stderr (the file holds every line)")
def scan_command(
    sources: tuple[str, ...],
    index_urls: tuple[str, ...],
    names: tuple[str, ...],
    output: Path | None,
    jobs: int,
    report_file: Path | None,
    fmt: str,
    max_host_connections: int,
    max_rate: float,
    progress: bool | None,
    partial: bool,
    gpu_code: bool,
    symbols_file: Path | None,
    no_config: bool,
    quiet: bool,
) -> Exit:
    """Read and check every wheel of SOURCES (folders, PEP 503/691 indexes local or hosted,
    wheel files or URLs, files listing wheel URLs one a line) and of -i INDEX (with --name,
    only those projects) into FILE.jsonl, one line per wheel: the `show` and `check`
    documents and the need (`docs/scan.md`).

    A second run over the same FILE skips every wheel already in it (same sha256, or an
    unchanged local file). A wheel that cannot be read is a line with its error, and the
    scan goes on. `--report FILE.jsonl [--format markdown]` counts a scan's lines: stable or
    unstable, torch floor, build, error codes. `--partial`: hosted wheels are read through
    HTTP ranges (the need's axes only, hashes not verified; `--gpu-code` adds the GPU code).
    Exit 0 done, 2 a source that cannot be listed or a misuse.
    """
    if report_file is not None:
        if sources or index_urls or names or output is not None:
            raise click.UsageError("--report reads a scan file: give no SOURCES, -i, --name or -o")
        return _report(report_file, fmt)
    if click.get_current_context().get_parameter_source("fmt") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--format is for --report")
    if not (sources or index_urls) or output is None:
        raise click.UsageError("give SOURCES and -o FILE.jsonl (SOURCES or -i INDEX; or --report FILE.jsonl)")
    if gpu_code and not partial:
        raise click.UsageError("--gpu-code is for --partial (a whole read always reads GPU code)")
    from torchwheel import api
    from torchwheel.net.fairness import FairnessPolicy
    from torchwheel.scan.run import Judges, run_scan

    policy = FairnessPolicy(host_connections=max_host_connections, rate=max_rate)
    tty = sys.stderr.isatty() if progress is None else progress
    read = ("partial+gpu" if gpu_code else "partial") if partial else "whole"
    from torchwheel.net.urls import carry_credentials

    table = chosen_table(symbols_file, no_config)
    try:
        judges = Judges(api.check, api.need)
        with contextlib.ExitStack() as stack:
            # -q: the progress goes nowhere (it is only ever progress: every result is in the file)
            stream = stack.enter_context(open(os.devnull, "w")) if quiet else sys.stderr
            run_scan(
                sources,
                output,
                jobs,
                table,
                policy,
                stream,
                tty and not quiet,
                read,
                index_urls,
                names,
                judges=judges,
            )
    finally:
        carry_credentials({})  # the index URLs' credentials end with the command
    return Exit.OK
