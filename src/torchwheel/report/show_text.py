"""show's text: one wheel's summary (tags, requirements, RECORD, torch ABI and build,
accelerator), the table of its compiled files, and the torch symbols that set its minimum.
Rendering only, like facts.py, whose per-slice text it shares.
"""

from __future__ import annotations

from packaging.tags import Tag

from torchwheel.analysis.buildunits import build_choices, own_runtime_notes
from torchwheel.analysis.member import BinaryAnalysis
from torchwheel.analysis.reach import Reach
from torchwheel.analysis.wheelfacts import WheelFacts, iter_slices
from torchwheel.report.accelerator_facts import gpu_text, need_text
from torchwheel.report.facts_document import symbol_lines
from torchwheel.report.textsafe import safe_lines
from torchwheel.torchabi import accelerators
from torchwheel.torchabi.accelerators import AcceleratorNeeds
from torchwheel.torchabi.backend import ANY_BUILD, builds_text, describe_builds
from torchwheel.torchabi.cxxnames import short_name
from torchwheel.torchabi.need import show_release, show_releases


def _requirement_text(w: WheelFacts) -> str:
    return "; ".join(str(r) for r in w.metadata.torch_requirements) or "none"


def _requires_python_text(w: WheelFacts) -> str:
    """METADATA's Requires-Python; without one, what the CPython tags admit (a ``cp39-abi3``
    wheel installs on 3.9 and later, never on "any" Python), said to come from the tags."""
    if w.metadata.requires_python:
        return str(w.metadata.requires_python)
    tags = w.contents.filename_tags or w.contents.wheel_tags
    # cp39: CPython 3.9, cp311: 3.11 (the major is one digit, as packaging reads the tag)
    versions = [t.interpreter[2:] for t in tags if t.interpreter[:2] == "cp" and t.interpreter[2:].isdigit()]
    floors = sorted({(int(v[0]), int(v[1:])) for v in versions if len(v) > 1})
    if not floors or any(t.interpreter[:2] != "cp" for t in tags):
        return "any"  # a py3 or another interpreter's tag: nothing narrower to say
    if any(t.abi in ("abi3", "abi3t") for t in tags):  # the stable ABI: this CPython and every later one
        low = floors[0]
        return f">={low[0]}.{low[1]} (from the tag {_tag_words(tags)}: METADATA has none)"
    shown = ", ".join(f"{a}.{b}" for a, b in floors)
    return f"{shown} only (from the tag {_tag_words(tags)}: METADATA has none)"


def _tag_words(tags: frozenset[Tag]) -> str:
    return ", ".join(sorted({f"{t.interpreter}-{t.abi}" for t in tags}))


def _record_text(w: WheelFacts) -> str:
    if w.kind == "binary":
        return "n/a"
    if not w.record_problems:
        return "ok (every hash verified)" if w.hashes_verified else "ok (sizes only: hashes skipped)"
    return f"{len(w.record_problems) + sum(w.record_problems_omitted.values())} problem(s)"


def _accelerator_cell(a: AcceleratorNeeds) -> str:
    """The accelerator label; a library that links libtorch and needs no accelerator still
    needs some torch, whatever its imports say: "any torch", not "-"."""
    return a.label if a.accelerators or not a.links_torch else "any torch"


def _row(member: str, b: BinaryAnalysis) -> list[list[str]]:
    rows = []
    for s in b.slices:
        d = s.declared
        mark = (
            "-"
            if d is None
            else (str(d.record.version or f"schema {d.record.schema}") + ("" if d.exported else " (hidden)"))
        )
        need = (
            "-"
            if s.torch.min_version is None
            else str(s.torch.min_version) + ("+" if s.torch.min_is_lower_bound else "")
        )
        rows.append(
            [
                member,
                f"{b.facts.format}/{s.facts.arch_label}",
                b.kind,
                mark,
                s.torch.usage,
                need,
                s.python.verdict,
                _accelerator_cell(s.accelerators),
            ]
        )
    return rows


def wheel_text(w: WheelFacts, brief: bool = False) -> str:
    """show's text for one wheel; ``brief`` (``show -q``): its summary lines alone, without
    the table of compiled files and the symbols that set the minimum."""
    c = w.contents
    need = w.torch_need
    lines = [c.path]
    if w.kind != "binary":
        tags = sorted(str(t) for t in (c.filename_tags or c.wheel_tags))
        lines += [
            f"  tags             {', '.join(tags) or 'none'}"
            + (
                f" (WHEEL's: the file name is no wheel name, {c.name_problem}: TW414)"
                if c.name_problem
                else ""
            ),
            f"  requires-python  {_requires_python_text(w)}",
            f"  requires torch   {_requirement_text(w)}",
            f"  RECORD           {_record_text(w)}",
        ]
    lines.append(
        f"  torch ABI        {need.label}"
        + (f" (declared {need.declared})" if need.declared and need.kind != "none" else "")
        + (f": per-minor builds, loads on torch {show_releases(need.releases)}" if need.per_release else "")
        + (
            " (a lower bound: it imports shims newer than the tables)"
            if need.newer and need.kind == "stable"
            else ""
        )
    )
    lines += [
        f"  per-minor        {a.key}: "
        + ", ".join(f"{show_release(b)}={member.rsplit('/', 1)[-1]}" for b, member in a.members)
        for a in (w.alternatives if need.per_release else ())
    ]
    if (need.kind == "unstable" and not need.per_release) or need.newer:
        lines.append(f"  torch version    {need}")
    for part in need.optional:
        build = "" if part.need.builds == ANY_BUILD else f", on {describe_builds(part.need.builds)}"
        lines.append(f"  {part.when.ljust(17)}{part.files_words}: {part.need}{build} ({part.why})")
    lines += _build_lines(w)
    lines += [
        f"  device-side      {member} (the accelerator's own cores: {manifest} names it, no host code loads it)"
        for member, manifest in sorted(w.device_code.items())
    ]
    if not brief:
        lines += _file_table(w)
        lines += _symbol_detail(w)
    return safe_lines(lines)  # input-derived text escaped (textsafe)


def _build_lines(w: WheelFacts) -> list[str]:
    """The torch build and accelerator a wheel needs: the lines below its torch ABI."""
    lines: list[str] = []
    need = w.torch_need
    own = own_runtime_notes(w.binaries, w.brought_runtimes)
    if need.builds != ANY_BUILD:
        lines.append(
            f"  torch build      loads on {describe_builds(need.builds)} ({builds_text(need.builds)})"
        )
    elif own:
        lines.append(
            f"  torch build      any: {own[0]}" + (f" (and {len(own) - 1} more)" if len(own) > 1 else "")
        )
    if need.build_needs:
        lines.append(f"  torch needs      {need.build_needs_text} (its shims, by the tables)")
    choices = build_choices(w.build_units)
    lines += [f"  flavours         {choice}" for choice in choices]
    # what the import needs: the optional parts' accelerators are on their own lines
    acc = accelerators.combine(s.accelerators for m, _, s in iter_slices(w) if w.reach.of(m).required)
    wanted = need_text(acc)
    if need.builds and (
        choices or max(len(acc.accelerators), len(acc.cuda_majors), len(acc.rocm_majors)) > 1
    ):
        # alternatives the package picks from, not one library needing all at once: the
        # line must not contradict "torch build" above it
        wanted = wanted.replace("needs ", "has builds that need ", 1).replace(" + ", " or ")
    summary = "; ".join(t for t in (wanted, gpu_text(acc.gpu, span=True)) if t)
    if summary:
        lines.append(f"  accelerator      {summary}")
    return lines


def _loaded(r: Reach) -> str:
    """How the package's own Python reaches a file, in a word or two (``analysis.reach``;
    the JSON's ``reach`` says where and why)."""
    how = {"module": "import", "library": "by path", "dependency": "as a dep", "unreached": "not named"}[
        r.how
    ]
    return how if r.when == "import" else f"{how}, {r.when}"


def _file_table(w: WheelFacts) -> list[str]:
    """One row per compiled file (and per unreadable member), columns aligned."""
    lines: list[str] = []
    table = [["file", "format", "kind", "marker", "torch", "needs", "python", "accelerator", "loaded"]]
    for b in w.binaries:
        table += [[*row, _loaded(w.reach.of(b.member))] for row in _row(b.member, b.analysis)]
    for u in w.unreadable:
        table.append([u.member, "?", "?", "?", "?", "?", f"unreadable: {u.error}", "?", "?"])
    if len(table) > 1:
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        lines.append("")
        lines += [
            "  " + "  ".join(cell.ljust(wd) for cell, wd in zip(r, widths, strict=True)).rstrip()
            for r in table
        ]
    else:
        lines.append("  (no compiled files)")
    return lines


def _symbol_detail(w: WheelFacts) -> list[str]:
    """The symbols that set each slice's torch floor, for the files that have any."""
    lines: list[str] = []
    detailed = False
    shown: set[str] = set()  # the libraries whose dating is shown (once, whatever their slices)
    for b in w.binaries:
        for s in b.analysis.slices:
            t = s.torch
            if t.pinning_symbols or t.unknown_count or t.unstable_count or t.weak_symbols or t.weak_omitted:
                if not detailed:
                    lines += ["", "  torch symbols that set the minimum:"]
                    detailed = True
                lines.append(f"  {b.member} [{s.facts.arch}]")
                lines += symbol_lines(t, 12)
                if t.unstable_count:
                    example = f", e.g. {short_name(t.unstable_symbols[0])}" if t.unstable_symbols else ""
                    lines.append(f"    unstable    {t.unstable_count}{example}")
                    if (dated := w.library_datings.get(b.member)) is not None and b.member not in shown:
                        lines.append(f"    dated       {dated}")
                        shown.add(b.member)
    return lines
