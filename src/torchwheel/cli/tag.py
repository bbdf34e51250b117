"""The commands that rewrite: ``tag`` after a build, ``repair`` for cibuildwheel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from torchwheel.cli import colour
from torchwheel.cli.options import (
    build_tag_option,
    chosen_table,
    config_folder,
    dry_run_option,
    ignore_option,
    no_config_option,
    overwrite_option,
    quiet_option,
    select_option,
    symbols_option,
    verbose_option,
    wheel_dir_option,
)
from torchwheel.errors import Exit, InputError
from torchwheel.frozen import frozen
from torchwheel.report.textsafe import safe

if TYPE_CHECKING:
    from torchwheel.analysis.wheelfacts import WheelFacts
    from torchwheel.rules.registry import Findings, Policy, RuleFinding
    from torchwheel.tables.tableset import Tables
    from torchwheel.tagging.apply import TagResult
    from torchwheel.tagging.tag_options import TagOptions
    from torchwheel.wheel.archive import WheelArchive

F = TypeVar("F", bound=Callable[..., Any])


def _tag_options(
    upper_bound: str | None,
    keep: bool,
    build_torch: str | None,
    relax_pin: bool | None,
    use_config: bool,
    start: Path | None = None,
) -> TagOptions:
    from torchwheel.cli.config import configured_relax_pin
    from torchwheel.tagging.tag_options import TagOptions, build_torch_of

    if build_torch is not None:
        build_torch = build_torch_of(build_torch, "--build-torch")
    if relax_pin is None:  # the command line wins over [tool.torchwheel] relax-pin
        relax_pin = configured_relax_pin(start or Path.cwd(), use_config)
    return TagOptions(
        upper_bound=upper_bound, keep_correct=keep, build_torch=build_torch, relax_pin=relax_pin
    )


_TAG_OPTIONS = [
    click.option(
        "--upper-bound", metavar="VERSION", help="Also cap a stable torch requirement: torch>=T,<VERSION."
    ),
    click.option(
        "--keep-correct/--rewrite-requirement",
        default=True,
        show_default=True,
        help="Keep the project's torch requirement when it already matches the binaries.",
    ),
    click.option(
        "--build-torch",
        metavar="X.Y|installed",
        help="The torch an unstable wheel was built with, or 'installed' (the torch installed here): "
        "pins torch==X.Y.*.",
    ),
    click.option(
        "--relax-pin/--keep-pin",
        default=None,
        help="Widen the project's torch pin to what the stable ABI allows (default: keep it, only "
        "narrow; also [tool.torchwheel] relax-pin).",
    ),
]


_OVERWRITE = overwrite_option("Replace an output file of the same name (default: refuse, exit 2).")


def _with_tag_options(func: F) -> F:
    for option in reversed(_TAG_OPTIONS):
        func = option(func)
    return func


def _report_tag(result: TagResult) -> None:
    from torchwheel.report.textsafe import safe_lines

    if result.target is None:
        diff = safe_lines(result.diff.split("\n"))  # only "\n": splitlines() breaks at \x1c, \u2028
        click.echo(diff or safe(f"{result.source.name}: nothing would change"), nl=not result.diff)
        return
    status = "wrote" if result.changed else "unchanged"
    click.echo(safe_lines([f"{status} {result.target}", *(f"  - {change}" for change in result.changes)]))


@click.command("tag", short_help="Write the torch ABI into wheels: WHEEL, the requirement, RECORD.")
@click.argument("wheels", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@wheel_dir_option("Write here (default: next to the input).")
@click.option("--in-place", is_flag=True, help="Replace the input wheel (atomically).")
@_OVERWRITE
@dry_run_option("Print the metadata diff (WHEEL, METADATA); write nothing.")
@verbose_option("With --dry-run: also the facts side file's diff.")
@click.option(
    "--variant",
    is_flag=True,
    help="Also write the wheel-variant copy (DRAFT standard, PEP 817/825): variant.json and a "
    "labelled name beside the plain wheel, which stays the fallback (docs/installers.md).",
)
@click.option(
    "--release/--no-release",
    default=None,
    help="One identical torch requirement set for all wheels of one release, with sys_platform "
    "markers where floors differ (default: on when several wheels of one release are given).",
)
@build_tag_option("Add this build tag to the file name (and WHEEL Build).")
@click.option(
    "--local-label",
    metavar="LABEL",
    help="Version 1.0 -> 1.0+LABEL (e.g. torch2.12): file name and METADATA.",
)
@symbols_option
@no_config_option
@quiet_option("nothing on success (no line per wheel written, no notes); a refusal still names its reasons")
@_with_tag_options
def tag_command(
    wheels: tuple[Path, ...],
    wheel_dir: Path | None,
    in_place: bool,
    overwrite: bool,
    dry_run: bool,
    verbose: bool,
    variant: bool,
    release: bool | None,
    build_tag: str | None,
    local_label: str | None,
    symbols_file: Path | None,
    no_config: bool,
    quiet: bool,
    upper_bound: str | None,
    keep_correct: bool,
    build_torch: str | None,
    relax_pin: bool | None,
) -> Exit:
    """Write the torch ABI into wheels: WHEEL Torch-ABI and Tag lines, the torch requirement,
    a facts side file and RECORD; the file name follows the tags."""
    import dataclasses

    from torchwheel import api
    from torchwheel.report.findings import check_text

    if in_place and wheel_dir is not None:
        raise click.UsageError("--in-place and -w/--wheel-dir exclude each other")
    start = config_folder(wheels, no_config)
    opts = _tag_options(upper_bound, keep_correct, build_torch, relax_pin, not no_config, start)
    opts = dataclasses.replace(opts, build_tag=build_tag, local_label=local_label)
    try:
        api.tag_wheels(
            wheels,
            wheel_dir,
            opts,
            in_place=in_place,
            dry_run=dry_run,
            verbose=verbose,
            variant=variant,
            release=release,
            symbols=chosen_table(symbols_file, no_config, start),
            each=None if quiet and not dry_run else _report_tag,
            overwrite=overwrite,
        )
    except api.RewriteRefused as refused:
        colour.echo(check_text(refused.wheels, refused.findings))
        click.echo(f"torchwheel: {refused}", err=True)
        return Exit.NO
    if local_label is not None and not quiet:
        click.echo(
            f"torchwheel: note: a local version label (+{safe(local_label)}) is for your own index: PyPI refuses "
            "local versions at upload (`torchwheel check` says TW413); docs/authors.md",
            err=True,
        )
    return Exit.OK


@click.command(short_help="cibuildwheel's repair-wheel-command: check, then tag into DIR.")
@click.argument("wheel", type=click.Path(dir_okay=False, path_type=Path))
@wheel_dir_option("cibuildwheel's {dest_dir}.", required=True)
@_OVERWRITE
@no_config_option
@select_option
@ignore_option
@symbols_option
@click.option(
    "--repair-with",
    metavar="COMMAND",
    help="Run this repair tool first, writing to {repair_dir} (a fresh temp dir), then check and tag its wheel.",
)
@quiet_option("nothing on success (no fixed findings, no line for the wheel written, no notes)")
@_with_tag_options
def repair(
    wheel: Path,
    wheel_dir: Path,
    overwrite: bool,
    no_config: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    symbols_file: Path | None,
    repair_with: str | None,
    quiet: bool,
    upper_bound: str | None,
    keep_correct: bool,
    build_torch: str | None,
    relax_pin: bool | None,
) -> Exit:
    """cibuildwheel's repair-wheel-command: check, refuse (exit 1) on errors that the
    rewrite cannot fix, else tag into WHEEL_DIR, adding exactly one wheel (and naming any
    other wheels already there)."""
    from torchwheel.cli.config import load_policy
    from torchwheel.tagging.chain import first_stage

    start = config_folder([wheel], no_config)
    policy = load_policy(start, select, ignore, use_config=not no_config)
    chosen = chosen_table(symbols_file, no_config, start)
    opts = _tag_options(upper_bound, keep_correct, build_torch, relax_pin, not no_config, start)
    out = _Output(wheel_dir, overwrite, str(wheel), quiet)
    if repair_with is None:
        return _repair(wheel, out, policy, chosen, opts)
    with first_stage(repair_with, wheel, quiet) as repaired:
        return _repair(repaired, out, policy, chosen, opts)


@frozen
class _Output:
    """Where repair writes, whether it may replace a file there, and the name its report gives
    the wheel: the user's, never the repair tool's temporary copy, gone when the log is read."""

    wheel_dir: Path
    overwrite: bool
    shown: str
    quiet: bool = False  # ``-q``: a success says nothing


def _repair(wheel: Path, out: _Output, policy: Policy, chosen: Tables, opts: TagOptions) -> Exit:
    """Judge the wheel as the rewrite will leave it: what ``tag`` fixes is no reason to refuse."""
    from torchwheel.analysis.load import opened

    with opened((wheel,), chosen) as loaded:  # the output is copied from this descriptor
        return _repair_loaded([w for w, _ in loaded], loaded[0][1], out, policy, opts)


def _repair_loaded(
    facts: list[WheelFacts], archive: WheelArchive | None, out: _Output, policy: Policy, opts: TagOptions
) -> Exit:
    from torchwheel import rules
    from torchwheel.rules.registry import Findings
    from torchwheel.tagging import apply
    from torchwheel.tagging.plan import plan, planned_facts

    path = facts[0].contents.path
    findings = rules.run_all(facts, policy).relabelled(path, out.shown)
    blocking = rules.run_all(facts, rules.rewrite_blockers()).relabelled(path, out.shown)
    blockers = sorted({f.code for f in blocking if f.severity == "error"})
    try:
        planned, unplanned = plan(facts[0], opts), None
    except InputError as exc:  # no honest rewrite exists (an unknown build torch, a pin conflict)
        planned, unplanned = None, exc
    after = Findings() if planned is None else rules.run_rules(planned_facts(facts[0], planned), policy)
    after = after.relabelled(path, out.shown)
    # what the rewrite fixes: nothing while a blocker stops it, or without a plan
    fixed = (
        {f.code for f in findings} - {f.code for f in after}
        if planned is not None and not blockers
        else set()
    )
    refusal = _refusal(findings, after if planned is not None else None, blockers, unplanned)
    if refusal and planned is not None:  # an output in the way is one more reason, said with the others
        try:
            apply.refuse_existing(apply.output_path(facts[0], opts, out.wheel_dir, False), out.overwrite)
        except InputError as exc:
            refusal.append(str(exc))
    if refusal:
        _report_refused(facts, findings or blocking, fixed)
        click.echo(f"torchwheel: repair refused: {safe('; and '.join(refusal))}", err=True)
        return Exit.NO
    assert planned is not None
    before = _present_dir(out.wheel_dir)
    try:
        result = apply.write_tagged(
            facts[0], opts, out.wheel_dir, False, False, archive=archive, overwrite=out.overwrite
        )
    except InputError:  # an exit 2 is one line on stderr: what the rewrite would not fix goes to stdout
        if any(f.code not in fixed for f in findings):
            _report_refused(facts, findings, fixed)
        raise
    if not out.quiet:
        _report_repair(facts, [f for f in findings if f.code in fixed], after)
        _report_tag(result)
        _note_others(out.wheel_dir, before, result.target)
    return Exit.OK


def _refusal(
    findings: Findings, after: Findings | None, blockers: list[str], unplanned: InputError | None
) -> list[str]:
    """Every reason ``repair`` refuses, said at once, each with the fix that works: the
    facts that make any rewrite dishonest, the errors no rewrite fixes (``after``: the wheel
    as the rewrite leaves it; None without a plan: the errors no rewrite fixes whatever the
    options), and the plan's own refusal (an option that contradicts the wheel). A request
    for a build torch is left out beside faults to fix in the build: the rebuild decides
    whether it still holds."""
    from torchwheel.rules.codes import BY_CODE
    from torchwheel.tagging.requirement import BuildTorchNeeded

    reasons: list[str] = []
    if blockers:
        reasons.append(f"{', '.join(blockers)} make the new metadata untrustworthy")
    remaining = after if after is not None else [f for f in findings if BY_CODE[f.code].fixed_by is None]
    unfixable = sorted({f.code for f in remaining if f.severity == "error"} - set(blockers))
    if unfixable:
        reasons.append(f"the rewrite cannot fix {', '.join(unfixable)}; fix them in the build")
    if unplanned is not None and not (isinstance(unplanned, BuildTorchNeeded) and reasons):
        reasons.append(str(unplanned))
    return reasons


def _report_refused(facts: list[WheelFacts], findings: Findings, fixed: set[str]) -> None:
    """A refused repair's report on stdout, as ``check`` prints it, but counting only what the
    rewrite cannot fix: a finding it fixes is said as such, never counted as an error."""
    from torchwheel.report.findings import check_text
    from torchwheel.report.textsafe import safe_lines
    from torchwheel.rules.registry import Findings

    if not findings:
        return
    omitted = {key: n for key, n in findings.omitted.items() if key[1] not in fixed}
    kept = Findings([f for f in findings if f.code not in fixed], omitted)
    body, _, summary = check_text(facts, kept).rpartition("\n")
    fixes = [
        f"{f.location}: {f.code} fixed by the rewrite (not counted): {f.message}"
        for f in findings
        if f.code in fixed
    ]
    colour.echo("\n".join(filter(None, [body, safe_lines(fixes), summary])))


def _report_repair(facts: list[WheelFacts], fixed: list[RuleFinding], after: Findings) -> None:
    """What a successful repair tells the CI log, on stderr: each finding the rewrite fixed
    as fixed, never as an error (the job passed), then what the rewritten wheel still has."""
    from torchwheel.report.findings import check_text
    from torchwheel.report.textsafe import safe_lines

    lines: list[str] = [f"{f.location}: {f.code} fixed by the rewrite: {f.message}" for f in fixed]
    if after:
        lines.append(check_text(facts, after).rpartition("\n")[0])  # its summary is said below
    if not lines:
        return
    counts = after.severities()
    codes = ", ".join(sorted({f.code for f in fixed}))
    lines.append(
        "repaired: "
        + (f"{codes} fixed by the rewrite; " if codes else "")
        + f"{counts['warning']} warning(s) remain"
        + (f", {counts['info']} info" if counts["info"] else "")
    )
    colour.echo(safe_lines(lines), err=True)


def _present_dir(wheel_dir: Path) -> set[str]:
    try:
        return {p.name for p in wheel_dir.glob("*.whl")}
    except OSError:
        return set()


def _note_others(wheel_dir: Path, before: set[str], written: Path | None) -> None:
    """cibuildwheel hands over an empty {dest_dir} and takes every wheel in it: say when the
    directory held other wheels, which a later upload of the folder would take along."""
    others = sorted(before - {written.name} if written else before)
    if written is not None and written.name in before:
        click.echo(safe(f"torchwheel: note: replaced the older {written.name} in {wheel_dir}"), err=True)
    if others:
        shown = ", ".join(others[:5]) + (f", ... {len(others) - 5} more" if len(others) > 5 else "")
        click.echo(
            safe(
                f"torchwheel: note: {wheel_dir} already held {len(others)} other wheel(s), left as they were: "
                f"{shown}; this run wrote one"
            ),
            err=True,
        )
