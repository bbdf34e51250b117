"""The installer side: ``select`` and ``install``: parse options, call the library, render.

Exit codes are decided per project by ``selection.outcome`` (their meanings: ``cli/exits.py``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from torchwheel.cli.jsonout import json_failures
from torchwheel.cli.options import (
    chosen_table,
    format_option,
    gpu_option,
    index_options,
    names_option,
    network_options,
    no_config_option,
    python_option,
    quiet_option,
    require_sources,
    symbols_option,
    torch_backend_option,
    torch_option,
)
from torchwheel.errors import Exit, InputError
from torchwheel.report.textsafe import safe, safe_lines

if TYPE_CHECKING:
    from torchwheel.selection.candidates import Candidate, Gathered
    from torchwheel.selection.outcome import Outcome
    from torchwheel.selection.target import TorchTarget

F = TypeVar("F", bound=Callable[..., Any])


def _sources(func: F) -> F:
    func = network_options(func)
    func = index_options(func)
    func = click.option(
        "-f",
        "--find-links",
        "find_links",
        multiple=True,
        metavar="DIR|URL",
        help="A folder of wheels, or a page of links (HTML, or PEP 691 JSON named *.json).",
    )(func)
    func = names_option(func)
    func = python_option(func)
    func = symbols_option(func)
    func = no_config_option(func)
    func = click.argument("sources", nargs=-1)(func)
    return func


def _pre_option(func: F) -> F:
    return click.option(
        "--pre",
        is_flag=True,
        help="Pre-releases may be the choice too (as pip's --pre); without it they count only "
        "when no final release has a file for the target.",
    )(func)


@click.command(short_help="Choose the wheel that loads on the target's torch, and say why.")
@quiet_option("one line per project, its choice (no target line, no reasons for the others)")
@_sources
@_pre_option
@torch_option("Plan: choose for this torch (X.Y: any release of the minor).")
@click.option("--python-version", metavar="X.Y", help="Plan: choose for this CPython.")
@click.option(
    "--platform", "platforms", multiple=True, metavar="TAG", help="Plan: a platform tag (repeatable)."
)
@torch_backend_option(
    "Plan: the torch build, by PyTorch's backend names (uv's): cpu, cu126, cu128, cu130, rocm7.0, xpu."
)
@gpu_option
@format_option("text", "json")
@json_failures("select")
def select(
    sources: tuple[str, ...],
    python: str | None,
    names: tuple[str, ...],
    find_links: tuple[str, ...],
    index_urls: tuple[str, ...],
    torch_version: str | None,
    python_version: str | None,
    platforms: tuple[str, ...],
    torch_backend: str | None,
    gpu: str | None,
    fmt: str,
    symbols_file: Path | None,
    no_config: bool,
    pre: bool,
    quiet: bool,
) -> Exit:
    """Choose, among candidate wheels, the one that loads on the target's torch; explain
    every other. Exit 0 chosen, 1 nothing fits, 2 unreadable input (per project: the worst)."""
    from torchwheel.selection import outcome
    from torchwheel.selection import target as targets
    from torchwheel.selection.choose import choose
    from torchwheel.selection.discovery import gathering
    from torchwheel.selection.reasons import select_json, select_text

    planned = (
        torch_version is not None
        or python_version is not None
        or bool(platforms)
        or torch_backend is not None
    )
    if planned and python is not None:
        raise click.UsageError("--python and a plan (--torch/--python-version/--platform) exclude each other")
    require_sources(sources, index_urls, find_links)
    target = (
        targets.target_from_options(torch_version, python_version, platforms, torch_backend)
        if planned
        else targets.probe(python)
    )
    if gpu is not None:
        target = targets.with_gpu(target, gpu)
    tables = chosen_table(symbols_file, no_config)
    with gathering(
        [*sources, *find_links], names, indexes=index_urls, target=target, tables=tables, pre=pre
    ) as gathered:
        found = outcome.outcomes(choose(gathered.candidates, target, pre=pre), gathered, names)
        click.echo(  # candidate names come from the input: escaped like every text report
            select_json(target, gathered, found)
            if fmt == "json"
            else safe_lines(select_text(target, gathered, found, quiet).splitlines())
        )
        code = outcome.exit_code(found, gathered)
        if code == Exit.INPUT:  # the report above lists every reason; stderr gets the one line of an exit 2
            raise InputError(outcome.refusal_line(found, gathered), reference="candidates-unusable")
        if not planned:
            _say_driver([o.choice.chosen for o in found if o.choice.chosen is not None], target)
        for o in found:
            if o.kind == "absent":
                click.echo(f"torchwheel: {safe(outcome.absent_text(o.name, gathered))}", err=True)
    return code


@click.command(short_help="Select the wheel that loads on the target, then install it.")
@quiet_option(
    "nothing on success (no choice report, no line per wheel installed); warnings and refusals stay"
)
@_sources
@_pre_option
@click.option("--force", is_flag=True, help="Install even when the torch checks refuse (loudly).")
@click.option(
    "--upgrade",
    "-U",
    is_flag=True,
    help="Replace an installed version of the project with the choice (rolled back if the install fails).",
)
@click.option(
    "--repair-env",
    is_flag=True,
    help="Only finish or roll back what a killed install left in the target environment (its journal); "
    "every install does this first.",
)
def install(
    sources: tuple[str, ...],
    python: str | None,
    names: tuple[str, ...],
    find_links: tuple[str, ...],
    index_urls: tuple[str, ...],
    force: bool,
    upgrade: bool,
    repair_env: bool,
    symbols_file: Path | None,
    no_config: bool,
    pre: bool,
    quiet: bool,
) -> Exit:
    """Select, then install the chosen wheel of each project into the target interpreter's
    environment with `installer`. Sources that hold several projects need --name for each to
    install. Refuses (exit 1) without a torch that the wheel loads on or when the project is
    installed (--upgrade replaces it); installs no dependencies (it warns about missing ones)
    and never torch; leaves the environment as it was on failure (exit 2), even when killed:
    the next install (or --repair-env) finishes or rolls back what a killed one left."""
    from torchwheel.install.installing import repair_environment
    from torchwheel.selection import outcome
    from torchwheel.selection.choose import choose
    from torchwheel.selection.discovery import gathering
    from torchwheel.selection.reasons import select_text
    from torchwheel.selection.target import probe

    if repair_env:
        if sources or find_links or index_urls or names or force or upgrade or pre:
            raise click.UsageError("--repair-env takes no sources and no other option than --python")
        return _repair_only(python)
    require_sources(sources, index_urls, find_links)
    target = probe(python)
    if target.paths:  # before choosing: a killed install may have left the environment half-changed
        _say_repaired(repair_environment(target))
    tables = chosen_table(symbols_file, no_config)
    with gathering(
        [*sources, *find_links], names, indexes=index_urls, target=target, tables=tables, pre=pre
    ) as gathered:
        found = outcome.outcomes(choose(gathered.candidates, target, force, pre), gathered, names)
        code = outcome.exit_code(found, gathered)
        text = safe_lines(select_text(target, gathered, found).splitlines())
        if len(found) > 1 and not names:
            click.echo(text)
            listed = ", ".join(o.name for o in found)
            raise InputError(
                f"the sources hold {len(found)} projects ({listed}): name the ones to install with "
                "--name (repeatable)",
                reference="misuse",
            )
        if code == Exit.INPUT:  # every exit 2 is one line on stderr: the report goes to stdout
            click.echo(text)
            raise InputError(outcome.refusal_line(found, gathered), reference="candidates-unusable")
        if code != Exit.OK:
            click.echo(text, err=True)
            _say_refused(found, gathered)
            return code
        chosen = [o.choice.chosen for o in found if o.choice.chosen is not None]
        _say_driver(chosen, target)  # a warning: said under -q too
        if _install_all(chosen, target, text, upgrade, quiet) != Exit.OK:
            return Exit.NO
        _warn_forced(found)
    return Exit.OK


def _say_driver(chosen: list[Candidate], target: TorchTarget) -> None:
    """On stderr, for an interpreter whose torch is a CUDA build: each chosen wheel whose CUDA
    code this machine's NVIDIA driver cannot run (read as ``doctor`` reads it, ``docs/doctor.md``).
    The wheel is still the one that loads: the import works, its CUDA calls fail."""
    build = target.build
    if target.python is None or build is None or build.kind != "cuda" or not chosen:
        return
    from torchwheel.doctor.driver import read_driver
    from torchwheel.torchabi.cuda_driver import build_need, cuda_text, driver_runs

    driver = read_driver(target.python)
    if driver.state != "found" or driver.cuda is None:
        return
    torch = f"torch {target.torch}" + (f"+{build.backend}" if target.torch and not target.torch.local else "")
    for c in chosen:
        need = build_need(c.torch.builds, build, torch)
        if need is not None and not driver_runs(driver.cuda, need):
            click.echo(
                f"torchwheel: note: {safe(c.name)} {c.version}: its CUDA code will not run on this machine: it "
                f"needs CUDA {need.cuda[0]} ({need.what}); the NVIDIA driver supports CUDA {cuda_text(driver.cuda)}",
                err=True,
            )


def _repair_only(python: str | None) -> Exit:
    """``install --repair-env``: what a killed install left, finished or rolled back."""
    from torchwheel.install.installing import repair_environment
    from torchwheel.selection.target import probe

    target = probe(python)
    lines = repair_environment(target)
    _say_repaired(lines)
    if not lines:
        click.echo(f"nothing to repair in {safe(target.description)}")
    return Exit.OK


def _say_refused(found: list[Outcome], gathered: Gathered) -> None:
    """Why an install of nothing exits 1: a project the sources lack, or nothing that loads."""
    from torchwheel.selection.outcome import absent_text

    for o in found:
        if o.kind == "absent":
            click.echo(f"torchwheel: install refused: {safe(absent_text(o.name, gathered))}", err=True)
    if any(o.kind == "nothing-fits" for o in found):
        held = any(v.held_back for o in found for v in o.choice.verdicts)
        click.echo(
            "torchwheel: install refused: no candidate loads on the target (--force overrides)"
            if not held
            else "torchwheel: install refused: only a pre-release loads on the target (--pre takes it)",
            err=True,
        )


def _warn_forced(found: list[Outcome]) -> None:
    """Each wheel ``--force`` installed past a torch check, named loudly."""
    for o in found:
        reason = o.choice.verdicts[0].verdict.reason
        if reason.startswith("FORCED") and o.choice.chosen is not None:
            click.echo(
                f"torchwheel: WARNING: --force: installed {safe(o.choice.chosen.filename)} although: "
                f"{safe(reason.removeprefix('FORCED past: '))}; it will likely not load",
                err=True,
            )


def _say_repaired(lines: list[str]) -> None:
    """One stderr line per journal replayed: what a killed run left, and which way it went."""
    for line in lines:
        click.echo(f"torchwheel: repaired {safe(line)}", err=True)


def _install_all(
    chosen: list[Candidate], target: TorchTarget, text: str, upgrade: bool, quiet: bool = False
) -> Exit:
    """Install each choice (each all or nothing); then name the requirements the target lacks.
    ``Exit.NO`` when the environment refuses one (the ones before it stay installed)."""
    from torchwheel.install import dependencies
    from torchwheel.install.installing import InstallRefused, install_wheel

    done: list[str] = []
    try:
        for c in chosen:
            if c.name == "torch":
                raise InputError(
                    "torchwheel never installs torch itself: use pip for torch", reference="misuse"
                )
            result = install_wheel(c, target, upgrade)
            _say_repaired(list(result.repaired))
            where = result.dist_info.parent
            if result.unchanged:
                done.append(f"already installed: {c.filename} in {where} (nothing to do)")
            elif result.replaced is not None:
                done.append(
                    f"replaced {c.name} {result.replaced} with {c.filename} in {where} ({result.files} files)"
                )
            else:
                done.append(f"installed {c.filename} into {where} ({result.files} files)")
    except InputError:
        click.echo(
            "\n".join([text, *safe_lines(done).splitlines()])
        )  # stdout: stderr holds the one error line
        raise
    except InstallRefused as exc:
        for line in done:
            click.echo(safe(line))
        click.echo(text, err=True)
        click.echo(f"torchwheel: install refused: {safe(str(exc))}", err=True)
        return Exit.NO
    if not quiet:
        click.echo(text, err=True)
        for line in done:
            click.echo(safe(line))
    have = dependencies.installed_by_name(target)
    for c in chosen:
        missing = dependencies.unmet(dependencies.requirements(c.path), have, target.markers)
        if missing:
            fix = " ".join(shlex.quote(m.split(" (", 1)[0]) for m in missing)
            click.echo(
                f"torchwheel: warning: {safe(c.name)} {c.version} requires what {safe(target.description)} "
                f"lacks: {safe(', '.join(missing))}; torchwheel installs no dependencies (pip install {safe(fix)})",
                err=True,
            )
    return Exit.OK
