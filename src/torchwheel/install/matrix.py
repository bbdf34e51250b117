"""``torchwheel matrix``: which wheel loads on which torch, as a grid people can read.

Rows are wheels, columns torch minors (every release the symbol table was read from, the
installed torch, and any the wheels name); each cell is ``choose.fit``. Markdown is for CI
job summaries (``$GITHUB_STEP_SUMMARY``); JSON carries the reason of every cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchwheel.install.candidates import Candidate
from torchwheel.install.choose import Fit, fit
from torchwheel.torchabi.releases import Minor, show_minor

SCHEMA_VERSION = 1
SYMBOL = {"loads": "yes", "only": "only", "no": "-"}
LEGEND = (
    "yes = loads (stable ABI target <= this torch, or no torch symbols); "
    "only = loads on this minor only (unstable build); - = does not load"
)


@dataclass(frozen=True)
class Row:
    cand: Candidate
    cells: list[tuple[Fit, str]]


@dataclass(frozen=True)
class Matrix:
    torches: list[Minor]
    installed: Minor | None
    rows: list[Row]


def build(cands: list[Candidate], torches: list[Minor], installed: Minor | None) -> Matrix:
    cols = sorted(set(torches) | ({installed} if installed else set()))
    rows = [Row(c, [fit(c.torch, t) for t in cols]) for c in sorted(cands, key=lambda c: c.filename)]
    return Matrix(cols, installed, rows)


def _header(m: Matrix) -> list[str]:
    return [show_minor(t) + ("*" if t == m.installed else "") for t in m.torches]


_WORDS = {"loads": "loads on", "only": "loads only on", "no": "does not load on"}


def _why(m: Matrix) -> list[str]:
    """One line per row and outcome (the per-cell reasons are in the JSON)."""
    lines = []
    for r in m.rows:
        lines.append(f"{r.cand.filename}: {r.cand.torch} (from {r.cand.torch.source})")
        groups: dict[Fit, list[str]] = {}
        for t, (f, _) in zip(m.torches, r.cells, strict=True):
            groups.setdefault(f, []).append(show_minor(t))
        lines += [f"  {_WORDS[f]} torch {', '.join(ts)}" for f, ts in groups.items()]
    return lines


def _footer(m: Matrix) -> str:
    return LEGEND + ("; * = installed torch" if m.installed else "; no torch installed here")


def text(m: Matrix, why: bool) -> str:
    names = [r.cand.filename for r in m.rows]
    width = max(len("wheel"), *map(len, names))
    head = _header(m)
    cw = [max(len(h), 4) for h in head]
    lines = ["  ".join(["wheel".ljust(width), *(h.rjust(w) for h, w in zip(head, cw, strict=True))])]
    for r in m.rows:
        cells = [SYMBOL[f].rjust(w) for (f, _), w in zip(r.cells, cw, strict=True)]
        lines.append("  ".join([r.cand.filename.ljust(width), *cells]))
    lines += ["", _footer(m)]
    if why:
        lines += ["", *_why(m)]
    return "\n".join(lines)


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("`", "'").replace("\n", " ")


def markdown(m: Matrix, why: bool) -> str:
    head = _header(m)
    lines = [
        "| wheel | " + " | ".join(head) + " |",
        "|---|" + "|".join(":-:" for _ in head) + "|",
    ]
    for r in m.rows:
        cells = [SYMBOL[f] for f, _ in r.cells]
        lines.append(f"| `{_md_escape(r.cand.filename)}` | " + " | ".join(cells) + " |")
    lines += ["", _footer(m)]
    if why:
        lines += ["", "```", *_why(m), "```"]
    return "\n".join(lines)


def to_json(m: Matrix) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "torches": [show_minor(t) for t in m.torches],
        "installed_torch": show_minor(m.installed) if m.installed else None,
        "wheels": [
            {
                "file": r.cand.filename,
                "path": str(r.cand.path),
                "torch_need": str(r.cand.torch),
                "source": r.cand.torch.source,
                "cells": {
                    show_minor(t): {"fit": f, "reason": why}
                    for t, (f, why) in zip(m.torches, r.cells, strict=True)
                },
            }
            for r in m.rows
        ],
    }
