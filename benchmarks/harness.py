"""What the benchmark harnesses share: a file's sha256, a tool's version line, a Markdown
table cell, and a generated section of a docs page, written between its markers
(``<!-- NAME: begin -->`` ... ``<!-- NAME: end -->``) with the rest of the page left as it is,
so that two harnesses can write one page.

``benchmarks/`` is not a package: a harness run as ``python benchmarks/NAME.py`` has this
folder on ``sys.path``; one that the tests load by path (``tests/lib/helpers.load_script``) puts
it there before ``import harness``.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def first_line(cmd: list[str]) -> str:
    """The first line a command prints (``--version``, ``git describe``), ``?`` when it cannot run."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError:
        return "?"
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else "?"


def md_cell(text: str) -> str:
    """``text`` as one cell of a Markdown table: no column break, no line break."""
    return text.replace("|", "\\|").replace("\n", " ")


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of the section ``name`` of a page."""
    return f"<!-- {name}: begin -->", f"<!-- {name}: end -->"


def put_section(page: Path, section: str, name: str) -> None:
    """``section`` (from its begin marker to its end marker) in place of the page's section
    ``name``, or appended when the page has none yet."""
    begin, end = markers(name)
    text = page.read_text(encoding="utf-8")
    if begin in text and end in text:
        text = text[: text.index(begin)] + section + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    page.write_text(text, encoding="utf-8")


def kept_sections(page: Path) -> str:
    """Every marked section of ``page``, each on its own lines: what a harness that writes the
    whole page keeps of the sections other harnesses write into it."""
    text = page.read_text(encoding="utf-8") if page.is_file() else ""
    names = re.findall(r"<!-- ([a-z-]+): begin -->.*?<!-- \1: end -->", text, re.DOTALL)
    spans = [re.search(rf"<!-- {name}: begin -->.*?<!-- {name}: end -->", text, re.DOTALL) for name in names]
    return "".join("\n" + m.group(0) + "\n" for m in spans if m)
