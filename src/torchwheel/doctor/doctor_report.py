"""``doctor``'s diagnosis as text, markdown (a CI job summary), GitHub annotations and the
versioned JSON document (``docs/reference/json.md``). Rendering only: every verdict and fix was
decided in ``doctor.diagnosis``. Rows are a list that is only shown, so each renderer
keeps the first ``max-listed`` of them and counts the rest (the exit code counts all)."""

from __future__ import annotations

from typing import Any

from torchwheel.doctor.diagnosis import (
    Diagnosis,
    DiagnosisRow,
    JudgedTorch,
    driver_summary,
    environment_summary,
    torch_words,
)
from torchwheel.doctor.import_error import Explanation, shown_symbol
from torchwheel.doctor.ldcache import LdCache
from torchwheel.doctor.machine import Part, minor_compatibility_words
from torchwheel.limits import listed
from torchwheel.report.facts_document import SCHEMA_VERSION, need_json
from torchwheel.report.textsafe import escape_data, escape_property, markdown_cell, markdown_code, safe_lines
from torchwheel.torchabi.cuda_driver import cuda_text
from torchwheel.torchabi.cxxnames import demangle

_WORD = {
    "loads": "loads",
    "partly": "loads PARTLY",
    "no": "DOES NOT LOAD",
    "excluded": "loads, but its own Requires-Dist EXCLUDES this torch (`pip check` fails; pip may move torch)",
    "unknown": "unknown",
    "not read": "not read",
}


def _rows(d: Diagnosis) -> tuple[list[DiagnosisRow], int]:
    return listed(d.rows, lambda r: r.name + r.verdict.reason + r.fix)


def _judged_line(j: JudgedTorch) -> str:
    how = {"installed": "the environment's own", "planned": "planned", "against": "compared with"}[j.how]
    line = f"{how}: {j.label}"
    if j.gpu is not None:
        line += f", GPU sm_{j.gpu}"
    if j.libraries is not None:
        line += f" (its exports read from {j.libraries.origin})"
    elif j.how == "installed" and j.libraries_problem:
        line += f" (its exports not read: {j.libraries_problem}; judged by its version and build)"
    if j.newer_than_tables:
        line += "; newer than this torchwheel's tables"
    return line


def _not_run_lines(d: Diagnosis) -> list[str]:
    """The ``.pth`` import lines not run, one line each: torchwheel reads an environment and
    never runs it, so what they would add at startup (an editable install's finder, a path
    inserted by code) is not read, and that is said, never hidden."""
    lines = [f"not run (a .pth import line; what it adds at startup is not read): {n}" for n in d.not_run]
    if d.more_not_run:
        lines.append(f"not run: {d.more_not_run} more .pth import lines")
    return lines


def _verdict_text(r: DiagnosisRow) -> str:
    machine = [p.words for p in r.parts if not p.required]
    if r.state == "partly" and machine:  # the torch's reason already names its optional parts
        return f"{_WORD['partly']}: {'; '.join(machine)} (torch: {r.verdict.reason})"
    return f"{_WORD[r.state]}: {r.verdict.reason}" if r.state != "loads" else f"loads ({r.verdict.reason})"


def _machine_lines(d: Diagnosis) -> list[str]:
    """The driver and how libraries outside torch were judged, for the header."""
    m = d.machine
    if m is None:
        return []
    lines = [f"driver: {m.driver.words}"]
    j = d.judged
    if (minor := minor_compatibility_words(j.build, torch_words(j), m.driver)) and j.version is not None:
        lines[0] += f"; {minor}"
    if m.process is not None:
        p = m.process
        cache = p.cache.source if isinstance(p.cache, LdCache) else f"no cache ({p.cache.reason})"
        where = ", ".join([*(["LD_LIBRARY_PATH"] if p.ld_library_path else []), cache, *p.system_dirs])
        lines.append(f"libraries outside torch: found as ld.so finds them ({where})")
    else:
        lines.append(f"libraries outside torch: {m.libraries_note}")
    return lines


def doctor_text(python: str, d: Diagnosis, explanation: Explanation | None = None) -> str:
    """Blocks of a few lines per distribution, then the summary line."""
    lines = [f"environment: {python}", _judged_line(d.judged)]
    if d.installed is not None:
        lines.append(_judged_line(d.installed))
    lines += _not_run_lines(d)
    lines += _machine_lines(d)
    if explanation is not None:
        return "\n".join([safe_lines(lines), "", explain_text(explanation)])
    rows, more = _rows(d)
    for r in rows:
        lines += ["", f"{r.name} {r.version}: {_verdict_text(r)}"]
        if r.need is not None:
            lines.append(f"    need: {r.need}")
            if r.need.optional:
                lines.append(f"    optional: {r.need.optional_words}")
        if r.before is not None:
            now = (
                ("loads, partly" if r.before.partly else "loads")
                if r.before.loads
                else "unknown"
                if r.before.cell == "unknown"
                else "does not load"
            )
            lines.append(f"    on the installed torch: {now}")
        for part in r.parts:
            if part.required or r.state == "partly":
                files = f" ({', '.join(part.files[:3])})" if part.files else ""
                lines.append(f"    {part.axis}: {part.words}{files}")
        if r.fix:
            lines.append(f"    fix: {r.fix}")
    if more:
        lines += ["", f"... and {more} more distributions (max-listed)"]
    lines += ["", environment_summary(d)]
    return safe_lines(lines)


def explain_text(e: Explanation) -> str:
    q = e.question
    lines: list[str] = []
    if e.machine is not None:
        lines += _machine_answer_lines(e)
        if e.row is None:
            return safe_lines(lines)
    if q.op is not None:
        lines.append(f"operator {q.op}: registered when its op library loads; it does not exist here")
        lines.append(
            f"registered by: {', '.join(e.candidates[:6])}" if e.candidates
            else "registered by: no distribution read here is named for that namespace"
        )  # fmt: skip
    elif q.hook is not None:
        lines.append(
            f"{q.hook}: imported as a module, but the file exports no such hook: a torch op library "
            "is loaded by path (torch.ops.load_library), never imported (TW304)"
        )
    if q.library is not None:
        lines.append(f"{q.library}: {e.library}")
        lines.append(
            "needed by: "
            + (", ".join(e.needing) if e.needing else "no distribution read here links it by that name")
        )
        if e.file is None:
            return safe_lines(lines)
    if q.op is None or e.file is not None:
        lines.append(f"file: {e.file}")
    lines.append(
        f"owner: {e.row.name} {e.row.version}"
        if e.row is not None
        else "owner: no distribution's RECORD lists it"
    )
    if e.reach is not None:
        lines.append(f"loaded: {e.reach}")
    if q.symbol is not None:
        lines.append(f"undefined symbol: {shown_symbol(q.symbol)}")
        if e.dated is not None:
            lines.append(f"exported by: {e.dated.words}")
        if e.installed_exports is not None:
            lines.append(f"the judged torch {'exports' if e.installed_exports else 'does not export'} it")
    if e.verdict is not None:
        said = "loads" if e.verdict.loads else "unknown" if e.verdict.cell == "unknown" else "does not load"
        lines.append(f"{'these files' if len(e.candidates) > 1 else 'this file'}: {said}: {e.verdict.reason}")
    if e.row is not None:
        lines.append(f"verdict: {_verdict_text(e.row)}")
        if e.row.fix:
            lines.append(f"fix: {e.row.fix}")
    return safe_lines(lines)


def _machine_answer_lines(e: Explanation) -> list[str]:
    m = e.machine
    assert m is not None
    q = e.question
    asked = q.version or {"driver": "the NVIDIA driver", "kernel": "the GPU code"}.get(q.machine or "", "")
    lines = [f"{asked}: the {m.axis} axis"]
    lines += m.lines
    if m.fix:
        lines.append(f"fix: {m.fix}")
    return lines


def doctor_markdown(python: str, d: Diagnosis, explanation: Explanation | None = None) -> str:
    """A table for a CI job summary (``$GITHUB_STEP_SUMMARY``); ``--explain``'s answer after it."""
    rows, more = _rows(d)
    out = [
        "### torchwheel doctor",
        "",
        f"`{markdown_cell(python)}`: {markdown_cell(_judged_line(d.judged))}",
        *(f"<br>{markdown_cell(line)}" for line in _machine_lines(d)),
        "",
        f"**{markdown_cell(environment_summary(d))}**",
        "",
        *(f"{markdown_cell(line)}  " for line in _not_run_lines(d)),
        *([""] if d.not_run else []),
        "| distribution | version | need | verdict | fix |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        need = str(r.need) if r.need is not None else ""
        cells = (r.name, r.version, need, _verdict_text(r), r.fix)
        out.append("| " + " | ".join(f"`{markdown_cell(c)}`" if c else "" for c in cells) + " |")
    if more:
        out.append(f"| ... and {more} more | | | | |")
    if explanation is not None:
        out += ["", "```", *map(markdown_code, explain_text(explanation).splitlines()), "```"]
    return "\n".join(out)


def doctor_github(d: Diagnosis) -> str:
    """One annotation per distribution that does not load or loads against its own
    requirement (error), is unknown or loads partly (warning)."""
    rows, more = _rows(d)
    lines = []
    for r in rows:
        if r.state == "loads":
            continue
        level = "error" if r.state in ("no", "excluded") else "warning"
        title = escape_property(f"torchwheel doctor: {r.name} {r.version}")
        reason = f"loads partly: {'; '.join(r.partly)}" if r.state == "partly" else r.verdict.reason
        message = reason + (f"; fix: {r.fix}" if r.fix else "")
        lines.append(f"::{level} title={title}::{escape_data(message)}")
    if more:
        lines.append(
            f"::warning title=torchwheel doctor::{escape_data(f'{more} more distributions not shown')}"
        )
    return "\n".join(lines)


def _judged_json(j: JudgedTorch | None) -> dict[str, Any] | None:
    if j is None:
        return None
    return {
        "judged": j.how,
        "version": None if j.version is None else j.version.public,
        "minor_only": j.minor_only,
        "torch_backend": j.build.backend if j.build is not None else None,
        "gpu": f"sm_{j.gpu}" if j.gpu is not None else None,
        "exports_from": j.libraries.origin if j.libraries is not None else None,
        "exports_problem": j.libraries_problem or None,
        "newer_than_tables": j.newer_than_tables,
    }


def _row_json(r: DiagnosisRow) -> dict[str, Any]:
    missing, missing_more = listed(r.missing)
    return {
        "name": r.name,
        "version": r.version,
        "location": r.where,
        "need": need_json(r.need) if r.need is not None else None,
        "state": r.state,
        "fit": r.verdict.cell,
        "reason": r.verdict.reason,
        "axis": r.verdict.axis,
        "fix": r.fix or None,
        "missing_symbols": [{"name": m, "demangled": demangle(m)} for m in missing],
        "missing_symbols_omitted": missing_more,
        "installed_fit": r.before.cell if r.before is not None else None,
        "breaks": r.breaks,
        "partly": list(r.partly),
        "machine": [_part_json(p) for p in r.parts],
    }


def _part_json(p: Part) -> dict[str, Any]:
    return {
        "axis": p.axis,
        "required": p.required,
        "files": list(p.files),
        "missing_libraries": list(p.missing),
        "missing_versions": list(p.versions),
        "reason": p.words,
        "fix": p.fix or None,
    }


def _machine_json(d: Diagnosis) -> dict[str, Any] | None:
    m = d.machine
    if m is None:
        return None
    driver = m.driver
    p = m.process
    return {
        "driver": {
            "state": driver.state,
            "cuda": cuda_text(driver.cuda) if driver.cuda is not None else None,
            "source": driver.source or None,
            "note": driver.note or None,
        },
        "driver_verdict": driver_summary(d) or None,
        "libraries_judged": p is not None,
        "libraries_note": m.libraries_note or None,
        "ld_library_path": list(p.ld_library_path) if p is not None else [],
        "ld_cache": (p.cache.source if isinstance(p.cache, LdCache) else None) if p is not None else None,
        "system_dirs": list(p.system_dirs) if p is not None else [],
    }


def doctor_json(python: str, d: Diagnosis, explanation: Explanation | None = None) -> dict[str, Any]:
    rows, more = _rows(d)
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": "doctor",
        "python": python,
        "torch": _judged_json(d.judged),
        "installed_torch": _judged_json(d.installed),
        "distributions": [_row_json(r) for r in rows],
        "distributions_omitted": more,
        "machine": _machine_json(d),
        "without_torch_code": d.without_torch,
        "pth_not_run": list(d.not_run),
        "pth_not_run_omitted": d.more_not_run,
        "summary": environment_summary(d),
    }
    if explanation is not None:
        document["explain"] = _explain_json(explanation)
    return document


def _explain_json(e: Explanation) -> dict[str, Any]:
    q = e.question
    return {
        "asked": q.asked,
        "module": q.module,
        "file": e.file,
        "symbol": q.symbol,
        "demangled": demangle(q.symbol) if q.symbol else None,
        "exported_by": e.dated.words if e.dated is not None else None,
        "shim_since": e.dated.shim_since if e.dated is not None else None,
        "exported_by_minors": list(e.dated.minors) if e.dated is not None else [],
        "judged_torch_exports": e.installed_exports,
        "library": q.library,
        "library_is": e.library,
        "needed_by": list(e.needing),
        "operator": q.op,
        "hook": q.hook,
        "member": e.member,
        "reach": e.reach,
        "file_fit": e.verdict.cell if e.verdict is not None else None,
        "file_reason": e.verdict.reason if e.verdict is not None else None,
        "candidates": list(e.candidates),
        "distribution": _row_json(e.row) if e.row is not None else None,
        "version": q.version,
        "machine": None
        if e.machine is None
        else {
            "axis": e.machine.axis,
            "found": list(e.machine.lines),
            "needed_by": list(e.machine.needing),
            "fix": e.machine.fix or None,
            "runs_here": e.machine.fits,
        },
    }
