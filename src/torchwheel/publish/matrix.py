"""``torchwheel matrix``: which wheel loads on which torch, as a grid people can read.

Rows are wheels, columns torch minors: every minor a wheel loads on or names (its floor, its
build), the installed torch, and any asked for; each cell is ``choose.fit``, the verdict
``select`` gives, over every release of the minor. So old builds get their columns (a wheel
for torch 2.3 shows 2.3), and the grid stays compact: in text and markdown, neighbouring minors
whose cells are the same in every row share one column (``2.10-2.15``). Markdown is for CI job
summaries (``$GITHUB_STEP_SUMMARY``); JSON has every minor and the reason of every cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import field
from typing import Any

from torchwheel.frozen import frozen
from torchwheel.report.textsafe import markdown_cell, markdown_code
from torchwheel.selection.candidates import Candidate
from torchwheel.selection.choose import fit, needed_minors
from torchwheel.tables.tableset import Tables
from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild, builds_text
from torchwheel.torchabi.torch_releases import (
    TABLES_WORDS,
    Minor,
    show_minor,
)
from torchwheel.torchabi.verdicts import Verdict

SCHEMA_VERSION = 1
SYMBOL = {"loads": "yes", "only": "only", "some": "some", "partly": "part", "no": "-", "unknown": "?"}  # text
# markdown (CI job summaries, the index's front page): told apart at a glance
MARK = {"loads": "✅", "only": "✅ only", "some": "⚠️ some", "partly": "⚠️ partly", "no": "❌", "unknown": "❓"}
MEANING = {
    "loads": "loads (stable ABI target <= this torch, or no torch symbols)",
    "only": "loads on the torch minors it names and no other (a version-locked build: unstable ABI)",
    "some": "loads on some patch releases of the minor, not all (the reason names them)",
    "partly": "imports, but optional parts of it do not load (the reason names them)",
    "no": "does not load",
    "unknown": "unknown: an axis of the wheel could not be read, or the torch is newer than the tables "
    "(the reason says which)",
}


def state(v: Verdict) -> str:
    """A cell's state: its verdict's, or ``partly`` where optional parts do not load."""
    return "partly" if v.loads and v.partly else v.cell


def mark(cell: str, markdown: bool) -> str:
    """A cell's mark; a verdict state without a markdown mark of its own shows its text one."""
    return MARK.get(cell, SYMBOL[cell]) if markdown else SYMBOL[cell]


@frozen
class Row:
    cand: Candidate
    cells: list[Verdict]


def only_minors(m: Matrix, r: Row) -> str:
    """``2.4-2.15``: every minor a version-locked wheel loads on (its ``only`` cells). Said in
    each such cell, because "only" under a column of twelve minors, or under two columns,
    would not say which: a build per minor (``_C_torch24.so`` ...) loads on all of them."""
    return minors_text([t for t, v in zip(m.torches, r.cells, strict=True) if v.cell == "only"])


@frozen
class Matrix:
    """One grid: for one torch build (``torch_build``), or, when no wheel needs a particular
    build, for every build at once (None)."""

    torches: list[Minor]
    installed: Minor | None
    rows: list[Row]
    torch_build: TorchBuild | None = None
    # the tables the cells were judged with: which columns are past them (``newer_columns``)
    tables: Tables = field(kw_only=True, repr=False, compare=False)


def backend_axis(cands: Iterable[Candidate], tables: Tables) -> list[TorchBuild]:
    """The torch builds that tell these wheels apart (the backend axis): none when every wheel
    loads on every build; else the CPU build and one backend per CUDA/ROCm major they name."""
    needs = [n for c in cands for n in (c.torch.builds, *(p.need.builds for p in c.torch.optional))]
    if all(n == ANY_BUILD for n in needs):
        return []
    return tables.backends.representative_backends(needs)


def columns(
    cands: Iterable[Candidate],
    asked: Iterable[Minor],
    installed: Minor | None,
    builds: Iterable[TorchBuild] = (),
    *,
    tables: Tables,
) -> list[Minor]:
    """Every minor of ``tables`` some wheel loads on (on some build), every minor a wheel
    names, and those asked for."""
    cands = list(cands)
    options: list[TorchBuild | None] = [*builds] or [None]
    cols = set(asked) | needed_minors(c.torch for c in cands) | ({installed} if installed else set())
    cols |= {
        m for m in tables.releases.known_minors() if any(fit(c, m, b).loads for c in cands for b in options)
    }
    return sorted(cols)


def build_matrix(
    cands: list[Candidate],
    torches: list[Minor],
    installed: Minor | None,
    torch_build: TorchBuild | None = None,
    *,
    tables: Tables,
) -> Matrix:
    cols = sorted(set(torches) | ({installed} if installed else set()))
    rows = [Row(c, [fit(c, t, torch_build) for t in cols]) for c in sorted(cands, key=lambda c: c.filename)]
    return Matrix(cols, installed, rows, torch_build, tables=tables)


def groups(grids: list[Matrix]) -> list[list[int]]:
    """Column indexes merged for display, the same in every grid of a run: neighbouring minors
    (2.10, 2.11) with the same cell in every row of every grid; a marked installed torch's
    column always stands alone."""
    torches = grids[0].torches
    starred = {g.installed for g in grids if g.installed is not None}
    merged: list[list[int]] = []
    for i, t in enumerate(torches):
        if merged:
            j = merged[-1][-1]
            prev = torches[j]
            same = all(state(r.cells[i]) == state(r.cells[j]) for g in grids for r in g.rows)
            adjacent = t == (prev[0], prev[1] + 1)
            if same and adjacent and not starred & {t, prev}:
                merged[-1].append(i)
                continue
        merged.append([i])
    return merged


def _header(m: Matrix, groups: list[list[int]]) -> list[str]:
    out = []
    for g in groups:
        first, last = m.torches[g[0]], m.torches[g[-1]]
        text = show_minor(first) if len(g) == 1 else f"{show_minor(first)}-{show_minor(last)}"
        out.append(text + ("*" if first == m.installed else ""))
    return out


_WORDS = {
    "loads": "loads on",
    "only": "loads only on",
    "some": "loads on some releases of",
    "partly": "loads, partly, on",
    "no": "does not load on",
    "unknown": "cannot tell on",
}
_T = "\x00"  # stands for the torch a reason names, while runs of minors are compared


def minors_text(minors: list[Minor]) -> str:
    """``2.3, 2.10-2.15``: neighbouring minors as one range."""
    runs: list[list[Minor]] = []
    for t in minors:
        if runs and t == (runs[-1][-1][0], runs[-1][-1][1] + 1):
            runs[-1].append(t)
        else:
            runs.append([t])
    return ", ".join(
        show_minor(r[0]) if len(r) == 1 else f"{show_minor(r[0])}-{show_minor(r[-1])}" for r in runs
    )


def _general(reason: str, minor: Minor) -> str:
    """The reason with the torch of its minor (a release, ``torch 2.9.1``, or the minor, ``the
    target has 2.9``) as ``_T``: minors refused for the same reason compare equal."""
    torch = rf"{minor[0]}\.{minor[1]}(?:\.\d+)?(?![\w.])"
    return re.sub(rf"(?:(?<=torch )|(?<=the target has )){torch}", _T, reason)


def _why(m: Matrix) -> list[str]:
    """Per row, each run of minors with the same outcome and reason, worded as ``select``
    words the refusal: ``does not load on torch 2.0-2.15: needs a CUDA 13 build of torch, ...``."""
    lines = []
    for r in m.rows:
        lines.append(f"{r.cand.filename}: {r.cand.torch} (from {r.cand.torch.source})")
        runs: list[tuple[str, str, list[Minor], str]] = []  # (cell, general reason, minors, reason)
        for t, verdict in zip(m.torches, r.cells, strict=True):
            key = (state(verdict), "" if state(verdict) == "loads" else _general(verdict.reason, t))
            if runs and runs[-1][:2] == key:
                runs[-1][2].append(t)
            else:
                runs.append((*key, [t], verdict.reason))
        for cell, general, minors, reason in runs:
            said = reason if len(minors) == 1 else general.replace(_T, minors_text(minors))
            lines.append(f"  {_WORDS[cell]} torch {minors_text(minors)}" + (f": {said}" if general else ""))
    return lines


def legend(grids: list[Matrix], markdown: bool, installed: Minor | None, build: TorchBuild | None) -> str:
    """What every mark means, and where the torch installed here is, true for the whole run:
    the grid of its build marks it, and a run none of whose grids is its build says so."""
    marks = "; ".join(f"{mark(c, markdown)} = {MEANING[c]}" for c in SYMBOL)
    here = show_minor(installed) if installed else ""
    if build is not None and installed is not None:
        here += f", {build}"
    if installed is None:
        text = f"{marks}; no torch installed here"
    elif any(g.installed is not None for g in grids):
        text = f"{marks}; * = installed torch ({here})"
    else:
        text = f"{marks}; the installed torch ({here}) is none of these builds: no column is marked"
    newer = sorted({t for g in grids for t in newer_columns(g)})
    if newer:
        text += f"\ntorch {', '.join(show_minor(t) for t in newer)}: {TABLES_WORDS}"
    return text


def newer_columns(m: Matrix) -> list[Minor]:
    """The minors past the tables: their cells rest on the stable ABI's promise, or are "?"."""
    return [
        t
        for t in m.torches
        if m.tables.releases.release_newer_than_tables(t)
        or any(r.cells[m.torches.index(t)].newer for r in m.rows)
    ]


def render(
    grids: list[Matrix],
    markdown: bool,
    why: bool,
    installed: Minor | None,
    build: TorchBuild | None,
    with_legend: bool = True,
) -> str:
    """Every grid of a run with the same columns, then one legend for all (none for
    ``matrix -q``); ``--why`` per grid."""
    merged = groups(grids)
    tables = [(_markdown if markdown else _text)(g, merged, why) for g in grids]
    return "\n\n".join([*tables, *([legend(grids, markdown, installed, build)] if with_legend else [])])


def _text(m: Matrix, groups: list[list[int]], why: bool) -> str:
    names = [r.cand.filename for r in m.rows]
    width = max(len("wheel"), *map(len, names))
    head = _header(m, groups)
    cw = [max(len(h), 4) for h in head]
    lines = [
        *heading(m),
        "  ".join(["wheel".ljust(width), *(h.rjust(w) for h, w in zip(head, cw, strict=True))]),
    ]
    for r in m.rows:
        cells = [SYMBOL[state(r.cells[g[0]])].rjust(w) for g, w in zip(groups, cw, strict=True)]
        lines.append("  ".join([r.cand.filename.ljust(width), *cells]))
    if why:
        lines += ["", *_why(m)]
    return "\n".join(lines)


def _markdown(m: Matrix, groups: list[list[int]], why: bool) -> str:
    head = _header(m, groups)
    lines = [
        *(f"**{line}**" if line else line for line in heading(m)),
        "| wheel | " + " | ".join(head) + " |",
        "|---|" + "|".join(":-:" for _ in head) + "|",
    ]
    for r in m.rows:
        cells = [
            f"{MARK['only']} {only_minors(m, r)}"
            if state(r.cells[g[0]]) == "only"
            else mark(state(r.cells[g[0]]), True)
            for g in groups
        ]
        lines.append(f"| `{markdown_cell(r.cand.filename)}` | " + " | ".join(cells) + " |")
    if why:
        lines += ["", "```", *map(markdown_code, _why(m)), "```"]
    return "\n".join(lines)


def heading(m: Matrix) -> list[str]:
    """A grid of the backend axis names its build (``torch build cu130 (CUDA 13.0 build)``)."""
    return [f"torch build {m.torch_build.backend}: {m.torch_build}", ""] if m.torch_build is not None else []


def to_json_all(grids: list[Matrix]) -> dict[str, Any]:
    """One grid: as ``to_json``. A backend axis: the same document plus ``backends`` (their
    names) and per wheel ``by_backend``: backend -> minor -> cell."""
    doc = to_json(grids[0])
    if grids[0].torch_build is None:
        return doc
    doc["backends"] = [g.torch_build.backend for g in grids if g.torch_build is not None]
    for i, wheel in enumerate(doc["wheels"]):
        wheel["by_backend"] = {
            g.torch_build.backend: to_json(g)["wheels"][i]["cells"]
            for g in grids
            if g.torch_build is not None
        }
        wheel["torch_build"] = builds_text(grids[0].rows[i].cand.torch.builds)
    return doc


def to_json(m: Matrix) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "torches": [show_minor(t) for t in m.torches],
        "installed_torch": show_minor(m.installed) if m.installed else None,
        "newer_than_tables": [show_minor(t) for t in newer_columns(m)],
        "wheels": [
            {
                "file": r.cand.filename,
                "path": str(r.cand.path) if r.cand.url is None else None,
                "url": r.cand.url,  # a hosted wheel: downloaded for the grid, gone after it
                "torch_need": str(r.cand.torch),
                "source": r.cand.torch.source,
                "cells": {
                    show_minor(t): {
                        "fit": cell.cell,
                        "reason": cell.reason,
                        "axis": cell.axis,
                        "releases": [str(v) for v in cell.loads_on],
                        "newer_than_tables": cell.newer,
                        "partly": list(cell.partly),
                    }
                    for t, cell in zip(m.torches, r.cells, strict=True)
                },
            }
            for r in m.rows
        ],
    }
