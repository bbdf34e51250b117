"""``doctor``'s diagnosis as text, markdown (a CI job summary), GitHub annotations and the
versioned JSON document (``docs/json.md``). Rendering only: every verdict and fix was
decided in ``doctor.diagnosis``. Rows are a list that is only shown, so each renderer
keeps the first ``max-listed`` of them and counts the rest (the exit code counts all)."""

from __future__ import annotations

from typing import Any

from torchwheel.doctor.diagnosis import Diagnosis, Judged, Row, summary
from torchwheel.doctor.import_error import Explanation, shown_symbol
from torchwheel.limits import listed
from torchwheel.report.facts_document import SCHEMA_VERSION, need_json
from torchwheel.report.textsafe import escape_data, escape_property, markdown_cell, markdown_code, safe_lines
from torchwheel.torchabi.cxxnames import demangle

_WORD = {
    "loads": "loads",
    "partly": "loads PARTLY",
    "no": "DOES NOT LOAD",
    "excluded": "loads, but its own Requires-Dist EXCLUDES this torch (`pip check` fails; pip may move torch)",
    "unknown": "unknown",
    "not read": "not read",
}


def _rows(d: Diagnosis) -> tuple[list[Row], int]:
    return listed(d.rows, lambda r: r.name + r.verdict.reason + r.fix)


def _judged_line(j: Judged) -> str:
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


def _verdict_text(r: Row) -> str:
    return f"{_WORD[r.state]}: {r.verdict.reason}" if r.state != "loads" else f"loads ({r.verdict.reason})"


def doctor_text(python: str, d: Diagnosis, explanation: Explanation | None = None) -> str:
    """Blocks of a few lines per distribution, then the summary line."""
    lines = [f"environment: {python}", _judged_line(d.judged)]
    if d.installed is not None:
        lines.append(_judged_line(d.installed))
    lines += _not_run_lines(d)
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
        if r.fix:
            lines.append(f"    fix: {r.fix}")
    if more:
        lines += ["", f"... and {more} more distributions (max-listed)"]
    lines += ["", summary(d)]
    return safe_lines(lines)


def explain_text(e: Explanation) -> str:
    q = e.question
    lines: list[str] = []
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


def doctor_markdown(python: str, d: Diagnosis, explanation: Explanation | None = None) -> str:
    """A table for a CI job summary (``$GITHUB_STEP_SUMMARY``); ``--explain``'s answer after it."""
    rows, more = _rows(d)
    out = [
        "### torchwheel doctor",
        "",
        f"`{markdown_cell(python)}`: {markdown_cell(_judged_line(d.judged))}",
        "",
        f"**{markdown_cell(summary(d))}**",
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
        message = r.verdict.reason + (f"; fix: {r.fix}" if r.fix else "")
        lines.append(f"::{level} title={title}::{escape_data(message)}")
    if more:
        lines.append(
            f"::warning title=torchwheel doctor::{escape_data(f'{more} more distributions not shown')}"
        )
    return "\n".join(lines)


def _judged_json(j: Judged | None) -> dict[str, Any] | None:
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


def _row_json(r: Row) -> dict[str, Any]:
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
        "partly": list(r.verdict.partly),
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
        "without_torch_code": d.without_torch,
        "pth_not_run": list(d.not_run),
        "pth_not_run_omitted": d.more_not_run,
        "summary": summary(d),
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
    }
