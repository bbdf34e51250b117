"""``torchwheel matrix``: which wheel loads on which torch, as a grid people can read.

Rows are wheels, columns torch minors: every minor a wheel loads on or names (its floor, its
build), the installed torch, and any asked for; each cell is ``choose.fit``, the verdict
``select`` gives, over every release of the minor. So old builds get their columns (a wheel
for torch 2.3 shows 2.3), and the grid stays compact: in text and markdown, neighbouring minors
whose cells are the same in every row share one column (``2.10-2.15``). Markdown is for CI job
summaries (``$GITHUB_STEP_SUMMARY``); JSON has every minor and the reason of every cell.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from torchwheel.frozen import frozen
from torchwheel.install.candidates import Candidate
from torchwheel.install.choose import fit, needed_minors
from torchwheel.report.textsafe import markdown_cell, markdown_code
from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild, builds_text, representative_backends
from torchwheel.torchabi.torch_releases import (
    TABLES_WORDS,
    Minor,
    known_minors,
    newer_than_tables,
    show_minor,
)
from torchwheel.torchabi.verdicts import Verdict

SCHEMA_VERSION = 1
SYMBOL = {"loads": "yes", "only": "only", "some": "some", "no": "-", "unknown": "?"}
LEGEND = (
    "yes = loads (stable ABI target <= this torch, or no torch symbols); "
    "only = loads on this minor only (unstable build); some = on some patch releases of it; "
    "- = does not load; ? = unknown: an axis of the wheel could not be read, or the torch is newer than "
    "the tables (the reason says which)"
)


@frozen
class Row:
    cand: Candidate
    cells: list[Verdict]


@frozen
class Matrix:
    """One grid: for one torch build (``torch_build``), or, when no wheel needs a particular
    build, for every build at once (None)."""

    torches: list[Minor]
    installed: Minor | None
    rows: list[Row]
    torch_build: TorchBuild | None = None


def backends(cands: Iterable[Candidate]) -> list[TorchBuild]:
    """The torch builds that tell these wheels apart (the backend axis): none when every wheel
    loads on every build; else the CPU build and one backend per CUDA/ROCm major they name."""
    needs = [c.torch.builds for c in cands]
    if all(n == ANY_BUILD for n in needs):
        return []
    return representative_backends(needs)


def columns(
    cands: Iterable[Candidate],
    asked: Iterable[Minor],
    installed: Minor | None,
    builds: Iterable[TorchBuild] = (),
) -> list[Minor]:
    """Every known minor some wheel loads on (on some build), every minor a wheel names, and
    those asked for."""
    cands = list(cands)
    options: list[TorchBuild | None] = [*builds] or [None]
    cols = set(asked) | needed_minors(c.torch for c in cands) | ({installed} if installed else set())
    cols |= {m for m in known_minors() if any(fit(c, m, b).loads for c in cands for b in options)}
    return sorted(cols)


def build_matrix(
    cands: list[Candidate],
    torches: list[Minor],
    installed: Minor | None,
    torch_build: TorchBuild | None = None,
) -> Matrix:
    cols = sorted(set(torches) | ({installed} if installed else set()))
    rows = [Row(c, [fit(c, t, torch_build) for t in cols]) for c in sorted(cands, key=lambda c: c.filename)]
    return Matrix(cols, installed, rows, torch_build)


def _groups(m: Matrix) -> list[list[int]]:
    """Column indexes merged for display: neighbouring minors (2.10, 2.11) with the same cell
    in every row; the installed torch's column always stands alone."""
    groups: list[list[int]] = []
    for i, t in enumerate(m.torches):
        if groups:
            j = groups[-1][-1]
            prev = m.torches[j]
            same = all(r.cells[i].cell == r.cells[j].cell for r in m.rows)
            adjacent = t == (prev[0], prev[1] + 1)
            if same and adjacent and m.installed not in (t, prev):
                groups[-1].append(i)
                continue
        groups.append([i])
    return groups


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
    "no": "does not load on",
    "unknown": "cannot tell on",
}


def _why(m: Matrix) -> list[str]:
    """One line per row and outcome (the per-cell reasons are in the JSON)."""
    lines = []
    for r in m.rows:
        lines.append(f"{r.cand.filename}: {r.cand.torch} (from {r.cand.torch.source})")
        groups: dict[str, list[str]] = {}
        for t, cell in zip(m.torches, r.cells, strict=True):
            groups.setdefault(cell.cell, []).append(show_minor(t))
        lines += [f"  {_WORDS[f]} torch {', '.join(ts)}" for f, ts in groups.items()]
        lines += [
            f"  {show_minor(t)}: {cell.reason}"
            for t, cell in zip(m.torches, r.cells, strict=True)
            if cell.cell in ("some", "unknown")
        ]
    return lines


def newer_columns(m: Matrix) -> list[Minor]:
    """The minors past the tables: their cells rest on the stable ABI's promise, or are "?"."""
    return [
        t for t in m.torches if newer_than_tables(t) or any(r.cells[m.torches.index(t)].newer for r in m.rows)
    ]


def _footer(m: Matrix) -> str:
    text = LEGEND + ("; * = installed torch" if m.installed else "; no torch installed here")
    newer = newer_columns(m)
    if newer:
        shown = ", ".join(show_minor(t) for t in newer)
        text += f"\ntorch {shown}: {TABLES_WORDS}"
    return text


def heading(m: Matrix) -> list[str]:
    """A grid of the backend axis names its build (``torch build cu130 (CUDA 13.0 build)``)."""
    return [f"torch build {m.torch_build.backend}: {m.torch_build}", ""] if m.torch_build is not None else []


def text(m: Matrix, why: bool, legend: bool = True) -> str:
    groups = _groups(m)
    names = [r.cand.filename for r in m.rows]
    width = max(len("wheel"), *map(len, names))
    head = _header(m, groups)
    cw = [max(len(h), 4) for h in head]
    lines = [
        *heading(m),
        "  ".join(["wheel".ljust(width), *(h.rjust(w) for h, w in zip(head, cw, strict=True))]),
    ]
    for r in m.rows:
        cells = [SYMBOL[r.cells[g[0]].cell].rjust(w) for g, w in zip(groups, cw, strict=True)]
        lines.append("  ".join([r.cand.filename.ljust(width), *cells]))
    lines += ["", _footer(m)] if legend else []
    if why:
        lines += ["", *_why(m)]
    return "\n".join(lines)


def markdown(m: Matrix, why: bool, legend: bool = True) -> str:
    groups = _groups(m)
    head = _header(m, groups)
    lines = [
        *(f"**{line}**" if line else line for line in heading(m)),
        "| wheel | " + " | ".join(head) + " |",
        "|---|" + "|".join(":-:" for _ in head) + "|",
    ]
    for r in m.rows:
        cells = [SYMBOL[r.cells[g[0]].cell] for g in groups]
        lines.append(f"| `{markdown_cell(r.cand.filename)}` | " + " | ".join(cells) + " |")
    lines += ["", _footer(m)] if legend else []
    if why:
        lines += ["", "```", *map(markdown_code, _why(m)), "```"]
    return "\n".join(lines)


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
                    }
                    for t, cell in zip(m.torches, r.cells, strict=True)
                },
            }
            for r in m.rows
        ],
    }
