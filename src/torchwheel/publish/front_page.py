"""The front page ``torchwheel index`` writes beside ``simple/``: for people, not installers.

Projects that publish per-torch builds keep a hand-written table of which build exists for
which torch, and their users ask which one to take. This page is that table, made from the
wheels: per project, the ``matrix`` of what loads where (the same cells, ``choose.fit``; one
grid per torch build a wheel needs, all with the same columns), each cell that loads linking
its wheel and the pip and uv lines that install exactly that file; and per wheel what
``check`` finds in it: a wheel with an error is marked broken and offered for no install.

Read at a glance, on any machine: each verdict is a badge whose colour, lightness, shape
(drawn by CSS: a check, a three-quarter or half disc, a cross, a dashed ring; no emoji font
needed) and word say it, so it reads in greyscale, to colour-blind readers and aloud; the
badges that load (``partly`` too: the package imports) are dark, those that do not are
light and striped. An ``only`` cell names the minors its
build loads on, as a merged column would not. Static HTML: no script; a list of projects
links each one; below 44rem (a phone) each row becomes a card whose cells name their
torch minors, so nothing scrolls sideways.

Install lines need the address the folder is served at; ``base_url`` (``index --base-url``)
writes it in, else they spell ``BASE_URL`` and the page says what to put there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol
from urllib.parse import quote

from torchwheel.errors import clipped
from torchwheel.publish import matrix
from torchwheel.report.textsafe import html_text
from torchwheel.selection.candidates import Candidate
from torchwheel.tables.tableset import Tables
from torchwheel.torchabi.torch_releases import Minor, show_minor
from torchwheel.torchabi.verdicts import Verdict

PLACEHOLDER = "BASE_URL"
BROKEN = "error"  # the severity that makes ``check`` call a wheel broken (its exit 1)
_LISTED = 10  # findings listed per wheel; the rest are counted (``torchwheel check`` lists all)
_MESSAGE = 300  # characters of a finding's message shown

_CHECK = "width:.38em;height:.72em;border:solid currentColor;border-width:0 .16em .16em 0;"
_CHECK += "transform:translateY(-.08em) rotate(45deg);margin:0 .22em"
_BAR = "transparent 38%,currentColor 38% 62%,transparent 62%"
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1rem auto;padding:0 .75rem;max-width:72rem;"
    "line-height:1.45;color:#1b1b1b;background:#fff}"
    "nav ul,ul.legend{display:flex;flex-wrap:wrap;gap:.3rem 1rem;padding:0;list-style:none}"
    "ul.legend{flex-direction:column}"
    ".grid{overflow-x:auto;margin-bottom:1rem}table{border-collapse:collapse}"
    "th,td{border:1px solid #bbb;padding:.3rem .45rem;text-align:center;white-space:nowrap}"
    "th.wheel{text-align:left;font-weight:normal;white-space:normal;word-break:break-all;"
    "min-width:14rem;max-width:28rem}"
    "tr.broken th.wheel{border-left:.4rem solid #a40e26}"
    # a verdict badge: colour, lightness, a CSS-drawn shape and a word
    ".v{display:inline-flex;align-items:center;gap:.25em;padding:.08em .5em .08em .3em;"
    "border:.13em solid;border-radius:.3em;font-weight:600;line-height:1.3;white-space:nowrap}"
    ".v::before{content:'';display:inline-block;flex:none;box-sizing:border-box;width:.85em;height:.85em}"
    ".v-loads{background:#1a7f37;border-color:#1a7f37;color:#fff}"
    ".v-only{background:#1f5fa8;border-color:#1f5fa8;color:#fff}"
    f".v-loads::before,.v-only::before{{{_CHECK}}}"
    # partly: it imports (dark, as the verdicts that load), a three-quarter disc: parts do not load
    ".v-partly{background:#5b3a8c;border-color:#5b3a8c;color:#fff}"
    ".v-partly::before{border:.13em solid currentColor;border-radius:50%;"
    "background:conic-gradient(currentColor 0 75%,transparent 75%)}"
    ".v-some{background:#ffd24a;border-color:#8a6100;color:#3d2b00}"
    ".v-some::before{border:.13em solid currentColor;border-radius:50%;"
    "background:linear-gradient(90deg,currentColor 50%,transparent 50%)}"
    ".v-no{background:repeating-linear-gradient(135deg,#fde4e4 0 .3em,#f2bcbc .3em .6em);"
    "border-color:#b42318;color:#8a1010}"
    f".v-no::before{{background:linear-gradient(45deg,{_BAR}),linear-gradient(-45deg,{_BAR})}}"
    ".v-unknown{background:#fff;border-style:dashed;border-color:#555;color:#333}"
    ".v-unknown::before{border:.13em dashed currentColor;border-radius:50%}"
    ".v-broken{background:#a40e26;border-color:#a40e26;color:#fff}"
    ".v-broken::before{width:0;height:0;border-left:.45em solid transparent;"
    "border-right:.45em solid transparent;border-bottom:.8em solid currentColor}"
    # a broken wheel's verdicts: still said, greyed, hatched and struck through, never linked
    ".v.off{background:repeating-linear-gradient(45deg,#eee 0 .25em,#cfcfcf .25em .5em);"
    "border-color:#777;color:#444;text-decoration:line-through}"
    ".at{display:none;color:#333;margin-right:.3em}a.install{margin-left:.3em}"
    ".check{display:block;margin-top:.2rem;font-size:.9em;word-break:normal;overflow-wrap:anywhere}.check ul{margin:.2rem 0;padding-left:1.1rem}"
    "code{word-break:break-all}dd{margin:0 0 .75rem 1rem}"
    # a phone: each row a card, each cell naming its torch minors; nothing scrolls sideways
    "@media (max-width:44rem){.grid{overflow:visible}"
    ".grid table,.grid tbody,.grid th,.grid td{display:block}"
    ".grid thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}"
    ".grid tr{display:flex;flex-wrap:wrap;gap:.35rem;border:1px solid #bbb;padding:.45rem .6rem;margin-bottom:.6rem}"
    ".grid th.wheel{flex:1 0 100%;box-sizing:border-box;min-width:0;max-width:none;border:0;padding:0}"
    ".grid tr.broken th.wheel{border:0;border-left:.4rem solid #a40e26;padding-left:.4rem}"
    ".grid td{display:inline-flex;align-items:center;border:1px solid #ddd;border-radius:.3rem;padding:.2rem .35rem}"
    ".at{display:inline}}"
)


class PageFinding(Protocol):
    """One of ``check``'s findings on a wheel, as the page reads it: the command line runs the
    rules and hands their findings down (``publish`` does not import the rules)."""

    @property
    def wheel(self) -> str: ...
    @property
    def code(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def member(self) -> str: ...
    @property
    def message(self) -> str: ...


def install_lines(c: Candidate, base_url: str | None) -> tuple[str, str]:
    """The pip and uv lines that install exactly this wheel file."""
    url = f"{(base_url or PLACEHOLDER).rstrip('/')}/files/{quote(c.filename)}"
    return f"pip install {url}", f"uv pip install {url}"


def _anchor(c: Candidate) -> str:
    return "install-" + quote(c.filename, safe="")


def _project_id(name: str) -> str:
    return "project-" + quote(name, safe="")


# the word each badge says: the page reads without colour, without an emoji font, and aloud
WORD = {"loads": "yes", "only": "only", "some": "some", "partly": "partly", "no": "no", "unknown": "unknown"}


def broken(found: Sequence[PageFinding]) -> bool:
    return any(f.severity == BROKEN for f in found)


def _badge(cell: str, word: str, off: bool = False) -> str:
    return f'<span class="v v-{cell}{" off" if off else ""}">{html_text(word)}</span>'


def _cell(c: Candidate, verdict: Verdict, at: str, only: str, off: bool) -> str:
    cell = matrix.state(verdict)  # ``partly`` where optional parts do not load
    word = f"{WORD['only']} {only}" if cell == "only" else WORD[cell]
    head = f'<td data-fit="{cell}" title="{html_text(verdict.reason)}"><span class="at">{at}</span>'
    if not verdict.loads or off:
        return f"{head}{_badge(cell, word, off)}</td>"
    return (
        f'{head}<a href="files/{quote(c.filename)}">{_badge(cell, word)}</a>'
        f'<a class="install" href="#{_anchor(c)}">install</a></td>'
    )


def _counted(found: Sequence[PageFinding]) -> str:
    by = {s: sum(f.severity == s for f in found) for s in ("error", "warning", "info")}
    return ", ".join(f"{n} {s}{'s' if n > 1 else ''}" for s, n in by.items() if n)


def _findings(c: Candidate, found: Sequence[PageFinding]) -> str:
    """What ``check`` finds in the wheel: one line, the findings folded under it."""
    if not found:
        return '<span class="check">check: no findings</span>'
    codes = ", ".join(dict.fromkeys(f.code for f in sorted(found, key=lambda f: f.severity != BROKEN)))
    if broken(found):
        head = f"{_badge('broken', 'broken')} check: {_counted(found)} ({html_text(codes)}): not offered for install"
    else:
        head = f"check: {_counted(found)} ({html_text(codes)})"
    items = [
        f"<li>{html_text(f.code)} {html_text(f.severity)}"
        + (f" <code>{html_text(clipped(f.member, 120))}</code>" if f.member else "")
        + f": {html_text(clipped(f.message, _MESSAGE))}</li>"
        for f in found[:_LISTED]
    ]
    if len(found) > _LISTED:
        items.append(
            f"<li>and {len(found) - _LISTED} more: <code>torchwheel check {html_text(c.filename)}</code></li>"
        )
    return f'<details class="check"><summary>{head}</summary><ul>{"".join(items)}</ul></details>'


def _table(
    name: str, grid: matrix.Matrix, merged: list[list[int]], findings: Mapping[str, Sequence[PageFinding]]
) -> list[str]:
    build = grid.torch_build.backend if grid.torch_build is not None else ""
    head, at = [], []
    for g in merged:
        minors = [grid.torches[i] for i in g]
        shown = matrix.minors_text(minors)
        at.append(f"torch {shown}")
        head.append(f'<th scope="col" data-torches="{" ".join(map(show_minor, minors))}">{shown}</th>')
    lines = [
        *([f"<h3>torch build {html_text(build)}: {html_text(str(grid.torch_build))}</h3>"] if build else []),
        f'<div class="grid"><table data-project="{html_text(name)}" data-build="{html_text(build)}">',
        '<thead><tr><th scope="col">wheel</th>' + "".join(head) + "</tr></thead><tbody>",
    ]
    if not merged:
        lines.insert(-2, "<p>No torch minor to show: these wheels name no torch release this page knows.</p>")
    for r in grid.rows:
        found = findings.get(r.cand.filename, ())
        off = broken(found)
        link = f'<a href="files/{quote(r.cand.filename)}">{html_text(r.cand.filename)}</a>'
        only = matrix.only_minors(grid, r)
        cells = "".join(_cell(r.cand, r.cells[g[0]], a, only, off) for g, a in zip(merged, at, strict=True))
        row = '<tr class="broken">' if off else "<tr>"
        lines.append(f'{row}<th scope="row" class="wheel">{link}{_findings(r.cand, found)}</th>{cells}</tr>')
    return [*lines, "</tbody></table></div>"]


def _project(
    name: str,
    cands: list[Candidate],
    extra: Iterable[Minor],
    base_url: str | None,
    findings: Mapping[str, Sequence[PageFinding]],
    tables: Tables,
) -> list[str]:
    axis = matrix.backend_axis(cands, tables)
    cols = matrix.columns(cands, extra, None, axis, tables=tables)
    grids = [matrix.build_matrix(cands, cols, None, b, tables=tables) for b in axis] or [
        matrix.build_matrix(cands, cols, None, tables=tables)
    ]
    merged = matrix.groups(grids)
    lines = [f'<section id="{_project_id(name)}">', f"<h2>{html_text(name)}</h2>"]
    for grid in grids:
        lines += _table(name, grid, merged, findings)
    lines.append("<h3>Install lines</h3><dl>")
    for c in sorted(cands, key=lambda c: c.filename):
        found = findings.get(c.filename, ())
        if broken(found):
            lines.append(
                f"<dt>{html_text(c.filename)}</dt><dd>none: <code>torchwheel check</code> calls it broken "
                f"({html_text(', '.join(dict.fromkeys(f.code for f in found if f.severity == BROKEN)))})</dd>"
            )
            continue
        pip, uv = install_lines(c, base_url)
        lines.append(
            f'<dt id="{_anchor(c)}">{html_text(c.filename)}</dt>'
            f"<dd><code>{html_text(pip)}</code><br><code>{html_text(uv)}</code></dd>"
        )
    return [*lines, "</dl></section>"]


def _legend() -> str:
    shown = {"only": "only 2.13"}
    items = [
        f"<li>{_badge(c, shown.get(c, WORD[c]))} {html_text(matrix.MEANING[c].removeprefix('unknown: '))}</li>"
        for c in matrix.MARK
    ]
    items.append(
        f"<li>{_badge('broken', 'broken')} <code>torchwheel check</code> finds an error in the wheel: its "
        f"verdicts are struck through ({_badge('loads', 'yes', off=True)}) and no install line offers it</li>"
    )
    return '<ul class="legend">' + "".join(items) + "</ul>"


def page(
    cands: Iterable[Candidate],
    extra: Iterable[Minor] = (),
    base_url: str | None = None,
    findings: Mapping[str, Sequence[PageFinding]] | None = None,
    *,
    tables: Tables,
) -> str:
    """``OUT/index.html``: every project's grids, its wheels' findings, links and install
    lines. ``findings``: file name -> what ``check`` finds in that wheel; ``tables``: the
    run's, whose minors the grids have."""
    projects: dict[str, list[Candidate]] = {}
    for c in cands:
        projects.setdefault(c.name, []).append(c)
    extra = list(extra)
    findings = findings or {}
    nav = []
    for name in sorted(projects):
        bad = sum(broken(findings.get(c.filename, ())) for c in projects[name])
        note = f", {bad} broken" if bad else ""
        count = len(projects[name])
        nav.append(
            f'<li><a href="#{_project_id(name)}">{html_text(name)}</a> '
            f"({count} wheel{'s' if count > 1 else ''}{note})</li>"
        )
    body = [
        "<h1>Which wheel loads on which torch</h1>",
        "<p>Per project, one row per wheel and one column per torch minor (neighbouring minors "
        "with the same verdicts share one). A verdict that loads links its wheel; "
        "<em>install</em> leads to the pip and uv lines that install that file. Installers: "
        '<a href="simple/">simple/</a> lists every wheel, <code>torch-X.Y/simple/</code> those '
        "that load on torch X.Y.</p>",
        _legend(),
        f'<nav aria-label="projects"><ul>{"".join(nav)}</ul></nav>',
    ]
    if base_url is None:
        body.append(
            f"<p>{PLACEHOLDER} in the install lines: the address this folder is served at "
            "(<code>torchwheel index --base-url URL</code> writes it in).</p>"
        )
    for name in sorted(projects):
        body += _project(name, projects[name], extra, base_url, findings, tables)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>torchwheel index: what loads where</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
