"""The installer side: ``select`` and ``install``: parse options, call the library, render.

Exit codes: 0 chosen (installed), 1 nothing fits / install refused, 2 unreadable input (a
source that cannot be read, a ``--python`` that does not run, no readable candidate at all).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from torchwheel.cli.options import format_option
from torchwheel.errors import InputError
from torchwheel.report.textsafe import safe_lines

F = TypeVar("F", bound=Callable[..., Any])


def _sources(func: F) -> F:
    func = click.option(
        "-i",
        "--index-url",
        "index_urls",
        multiple=True,
        metavar="URL",
        help="A local index (path or file:// URL; PEP 503 HTML or a PEP 691 index.json), e.g. a "
        "per-target torch-2.12/simple.",
    )(func)
    func = click.option(
        "-f",
        "--find-links",
        "find_links",
        multiple=True,
        metavar="DIR",
        help="A folder of wheels (or a page of links: HTML, or PEP 691 JSON named *.json).",
    )(func)
    func = click.option("--name", metavar="NAME", help="Only this project's wheels.")(func)
    func = click.option(
        "--python",
        "python",
        metavar="PATH",
        help="The interpreter to choose for (default: the one running torchwheel).",
    )(func)
    func = click.argument("sources", nargs=-1)(func)
    return func


def _all_sources(
    sources: tuple[str, ...], find_links: tuple[str, ...], index_urls: tuple[str, ...]
) -> list[str]:
    found = [*sources, *find_links, *index_urls]
    if not found:
        raise click.UsageError("give candidate wheels, folders, -f DIR or -i INDEX")
    return found


@click.command()
@_sources
@click.option("--torch", "torch_version", metavar="X.Y", help="Plan: choose for this torch.")
@click.option("--python-version", metavar="X.Y", help="Plan: choose for this CPython.")
@click.option(
    "--platform", "platforms", multiple=True, metavar="TAG", help="Plan: a platform tag (repeatable)."
)
@click.option(
    "--torch-backend",
    metavar="NAME",
    help="Plan: the torch build, by PyTorch's backend names (uv's): cpu, cu126, cu128, cu130, rocm7.0, xpu.",
)
@format_option("text", "json")
def select(
    sources: tuple[str, ...],
    python: str | None,
    name: str | None,
    find_links: tuple[str, ...],
    index_urls: tuple[str, ...],
    torch_version: str | None,
    python_version: str | None,
    platforms: tuple[str, ...],
    torch_backend: str | None,
    fmt: str,
) -> None:
    """Choose, among candidate wheels, the one that loads on the target's torch; explain
    every other. Exit 0 chosen, 1 nothing fits, 2 unreadable input."""
    from torchwheel.install import target as targets
    from torchwheel.install.choose import choose
    from torchwheel.install.discovery import gather
    from torchwheel.install.explain import select_json, select_text, skipped_summary

    planned = (
        torch_version is not None
        or python_version is not None
        or bool(platforms)
        or torch_backend is not None
    )
    if planned and python is not None:
        raise click.UsageError("--python and a plan (--torch/--python-version/--platform) exclude each other")
    where = _all_sources(sources, find_links, index_urls)
    target = (
        targets.plan(torch_version, python_version, platforms, torch_backend)
        if planned
        else targets.probe(python)
    )
    gathered = gather(where, name)
    choices = choose(gathered.candidates, target)
    click.echo(  # candidate names come from the input: escaped like every text report
        select_json(target, gathered, choices)
        if fmt == "json"
        else safe_lines(select_text(target, gathered, choices).splitlines())
    )
    code = _exit_code(gathered.candidates != [], gathered.skipped != [], choices)
    if code == 2:  # the report above lists every reason; stderr gets the one line of an exit 2
        raise InputError(f"no readable candidate: {skipped_summary(gathered.skipped)}")
    sys.exit(code)


def _exit_code(any_read: bool, any_skipped: bool, choices: list[Any]) -> int:
    if not any_read:
        return 2 if any_skipped else 1
    return 0 if all(ch.chosen is not None for ch in choices) else 1


@click.command()
@_sources
@click.option("--force", is_flag=True, help="Install even when the torch checks refuse (loudly).")
def install(
    sources: tuple[str, ...],
    python: str | None,
    name: str | None,
    find_links: tuple[str, ...],
    index_urls: tuple[str, ...],
    force: bool,
) -> None:
    """Select, then install the chosen wheel into the target interpreter's environment
    with `installer`. Refuses (exit 1) without a torch that the wheel loads on; never
    installs torch; leaves nothing behind on failure."""
    from torchwheel.install.choose import choose
    from torchwheel.install.discovery import gather
    from torchwheel.install.explain import select_text, skipped_summary
    from torchwheel.install.installing import InstallRefused, install_wheel
    from torchwheel.install.target import probe

    where = _all_sources(sources, find_links, index_urls)
    target = probe(python)
    gathered = gather(where, name)
    choices = choose(gathered.candidates, target, force=force)
    code = _exit_code(gathered.candidates != [], gathered.skipped != [], choices)
    text = safe_lines(select_text(target, gathered, choices).splitlines())
    if code == 2:  # every exit 2 is one line on stderr: the report goes to stdout
        click.echo(text)
        raise InputError(f"no readable candidate: {skipped_summary(gathered.skipped)}")
    if code:
        click.echo(text, err=True)
        click.echo(
            "torchwheel: install refused: no candidate loads on the target (--force overrides)", err=True
        )
        sys.exit(code)
    done: list[str] = []
    try:
        for ch in choices:
            assert ch.chosen is not None
            if ch.chosen.name == "torch":
                raise InputError("torchwheel never installs torch itself: use pip for torch")
            installed = install_wheel(ch.chosen, target)
            done.append(
                f"installed {ch.chosen.filename} into {Path(installed.dist_info).parent} ({installed.files} files)"
            )
    except InputError:
        click.echo("\n".join([text, *done]))  # stdout: the error is the one line on stderr
        raise
    except InstallRefused as exc:
        for line in done:
            click.echo(line)
        click.echo(text, err=True)
        click.echo(f"torchwheel: install refused: {exc}", err=True)
        sys.exit(1)
    click.echo(text, err=True)
    for ch in choices:
        reason = ch.verdicts[0].reason
        if reason.startswith("FORCED") and ch.chosen is not None:
            click.echo(
                f"torchwheel: WARNING: --force: installed {ch.chosen.filename} although: "
                f"{reason.removeprefix('FORCED past: ')}; it will likely not load",
                err=True,
            )
    for line in done:
        click.echo(line)
