"""The front page ``torchwheel index`` writes beside ``simple/``: for people, not installers.

Projects that publish per-torch builds keep a hand-written table of which build exists for
which torch, and their users ask which one to take. This page is that table, made from the
wheels: per project, the ``matrix`` of what loads where (the same cells, ``choose.fit``; one
grid per torch build a wheel needs, all with the same columns), each cell that loads linking
its wheel and the pip and uv lines that install exactly that file. Static HTML: no script, a
viewport for phones, wide grids scroll sideways inside their box.

Install lines need the address the folder is served at; ``base_url`` (``index --base-url``)
writes it in, else they spell ``BASE_URL`` and the page says what to put there.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

from torchwheel.publish import matrix
from torchwheel.report.textsafe import html_text
from torchwheel.selection.candidates import Candidate
from torchwheel.torchabi.torch_releases import Minor, show_minor
from torchwheel.torchabi.verdicts import Verdict

PLACEHOLDER = "BASE_URL"
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1rem auto;padding:0 .75rem;max-width:60rem;line-height:1.45}"
    ".grid{overflow-x:auto;margin-bottom:1rem}table{border-collapse:collapse}"
    "th,td{border:1px solid #bbb;padding:.3rem .5rem;text-align:center;white-space:nowrap}"
    "th.wheel{text-align:left;font-weight:normal;white-space:normal;word-break:break-all;min-width:12rem}"
    "code{word-break:break-all}dd{margin:0 0 .75rem 1rem}"
)


def install_lines(c: Candidate, base_url: str | None) -> tuple[str, str]:
    """The pip and uv lines that install exactly this wheel file."""
    url = f"{(base_url or PLACEHOLDER).rstrip('/')}/files/{quote(c.filename)}"
    return f"pip install {url}", f"uv pip install {url}"


def _anchor(c: Candidate) -> str:
    return "install-" + quote(c.filename, safe="")


# what each cell says beside its mark: the page reads without an emoji font (and aloud)
WORD = {"loads": "yes", "only": "only", "some": "some", "partly": "partly", "no": "no", "unknown": "unknown"}


def _cell(c: Candidate, verdict: Verdict) -> str:
    cell = matrix.state(verdict)
    mark = f"{matrix.mark(cell, markdown=True).split()[0]} {WORD.get(cell, cell)}"
    why = html_text(verdict.reason)
    if not verdict.loads:
        return f'<td data-fit="{cell}" title="{why}">{mark}</td>'
    return (
        f'<td data-fit="{cell}" title="{why}"><a href="files/{quote(c.filename)}">{mark}</a> '
        f'<a href="#{_anchor(c)}">install</a></td>'
    )


def _table(name: str, grid: matrix.Matrix, merged: list[list[int]]) -> list[str]:
    build = grid.torch_build.backend if grid.torch_build is not None else ""
    head = []
    for g in merged:
        minors = [grid.torches[i] for i in g]
        shown = matrix.minors_text(minors)
        head.append(f'<th scope="col" data-torches="{" ".join(map(show_minor, minors))}">{shown}</th>')
    lines = [
        *([f"<h3>torch build {html_text(build)}: {html_text(str(grid.torch_build))}</h3>"] if build else []),
        f'<div class="grid"><table data-project="{html_text(name)}" data-build="{html_text(build)}">',
        '<thead><tr><th scope="col">wheel</th>' + "".join(head) + "</tr></thead><tbody>",
    ]
    if not merged:
        lines.insert(-2, "<p>No torch minor to show: these wheels name no torch release this page knows.</p>")
    for r in grid.rows:
        link = f'<a href="files/{quote(r.cand.filename)}">{html_text(r.cand.filename)}</a>'
        cells = "".join(_cell(r.cand, r.cells[g[0]]) for g in merged)
        lines.append(f'<tr><th scope="row" class="wheel">{link}</th>{cells}</tr>')
    return [*lines, "</tbody></table></div>"]


def _project(name: str, cands: list[Candidate], extra: Iterable[Minor], base_url: str | None) -> list[str]:
    axis = matrix.backends(cands)
    cols = matrix.columns(cands, extra, None, axis)
    grids = [matrix.build_matrix(cands, cols, None, b) for b in axis] or [
        matrix.build_matrix(cands, cols, None)
    ]
    merged = matrix.groups(grids)
    lines = [f'<section id="project-{quote(name, safe="")}">', f"<h2>{html_text(name)}</h2>"]
    for grid in grids:
        lines += _table(name, grid, merged)
    lines.append("<h3>Install lines</h3><dl>")
    for c in sorted(cands, key=lambda c: c.filename):
        pip, uv = install_lines(c, base_url)
        lines.append(
            f'<dt id="{_anchor(c)}">{html_text(c.filename)}</dt>'
            f"<dd><code>{html_text(pip)}</code><br><code>{html_text(uv)}</code></dd>"
        )
    return [*lines, "</dl></section>"]


def page(cands: Iterable[Candidate], extra: Iterable[Minor] = (), base_url: str | None = None) -> str:
    """``OUT/index.html``: every project's grids, its wheels' links and install lines."""
    projects: dict[str, list[Candidate]] = {}
    for c in cands:
        projects.setdefault(c.name, []).append(c)
    extra = list(extra)
    legend = "; ".join(
        f"{matrix.MARK[c].split()[0]} {WORD[c]}: {html_text(matrix.MEANING[c])}" for c in matrix.MARK
    )
    body = [
        "<h1>Which wheel loads on which torch</h1>",
        f"<p>Per project, one row per wheel and one column per torch minor. {legend}. A mark that "
        "loads links its wheel; <em>install</em> leads to the pip and uv lines that install that "
        'file. Installers: <a href="simple/">simple/</a> lists every wheel, '
        "<code>torch-X.Y/simple/</code> those that load on torch X.Y.</p>",
    ]
    if base_url is None:
        body.append(
            f"<p>{PLACEHOLDER} in the install lines: the address this folder is served at "
            "(<code>torchwheel index --base-url URL</code> writes it in).</p>"
        )
    for name in sorted(projects):
        body += _project(name, projects[name], extra, base_url)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>torchwheel index: what loads where</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
