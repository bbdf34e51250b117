"""The docs a user reads are true for that user: the README's module table names every package
and root module of ``src/torchwheel``, and no page cites a file only this project's developers
have (``shared/...``, a path of the machine the docs were written on) or the project's history
(an issue or a work round: that belongs in CHANGELOG.md).

Each check is a function of text, so the tests below also hold it to a bad string: a check
that cannot fail proves nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "torchwheel"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]

# Files a user does not have: the developers' reference folder and this machine's paths.
_NOT_THE_USERS = (
    re.compile(r"(?<![\w.-])(?:\.\./)*shared/[\w.-]"),
    re.compile(r"(?<![\w.-])reference/[\w-]+\.md"),
    re.compile(r"(?<![\w.~-])/(?:work|root|home|Users)/[\w.-]+"),
    re.compile(r"(?<![\w.-])/tmp/(?:tmp|pip-)[\w-]+"),
    re.compile(r"(?<![\w.-])/[\w./-]*/\.cache/[\w.-]+"),
    re.compile(r"\.venv[\w-]*/lib/python3\.\d+/site-packages"),
)
# Project history: which issue or round of work changed what.
_HISTORY = (
    re.compile(r"\b[Ii]ssues? #?\d+"),
    re.compile(r"\b[Rr]ounds? (?:\d+|one|two|three|four|five|six)\b"),
)


# docs/reference/ is the user's: its pages are no citation of the developers' reference folder.
_OUR_REFERENCE = frozenset(p.name for p in (REPO / "docs" / "reference").glob("*.md"))


def not_the_users(text: str) -> list[str]:
    """Every citation in ``text`` of a file the reader of the page does not have."""
    found = [m.group(0) for rx in _NOT_THE_USERS for m in rx.finditer(text)]
    return [f for f in found if not (f.startswith("reference/") and f.split("/")[1] in _OUR_REFERENCE)]


def history(text: str) -> list[str]:
    """Every mention in ``text`` of the project's own issues or rounds of work."""
    return [m.group(0) for rx in _HISTORY for m in rx.finditer(text)]


_LINK = re.compile(r"\]\(([^()\s#]+)(?:#[^()\s]*)?\)")
_DOCS_PATH = re.compile(r"(?<![\w./$-])docs/[\w./-]*\.md\b")


def _in_a_cache(path: Path) -> bool:
    """A hidden folder below a cited one is a cache, not the repository's: benchmarks/.data
    holds old commits' sources (``run.torchwheel_at``), benchmarks/.venv-peers the peers' venv."""
    return any(part.startswith(".") for part in path.relative_to(REPO).parts[1:])


# Where the repository's own files name a page of docs/ (CHANGELOG.md is history: it keeps the
# paths of its day).
CITERS = [
    path
    for folder in ("src", "tests", "benchmarks", "scripts", ".github")
    for path in sorted((REPO / folder).rglob("*"))
    if path.suffix in {".py", ".toml", ".md", ".yml", ".yaml"} and ".egg-info" not in str(path)
    if not _in_a_cache(path)
] + [REPO / "action.yml", REPO / ".pre-commit-hooks.yaml", REPO / "pyproject.toml"]


def dead_links(text: str, here: Path, repo: Path) -> list[str]:
    """The relative Markdown links in ``text`` (a page in folder ``here``) and the ``docs/...md``
    paths it names (from the repository's root) that lead to no file: a page moved leaves none."""
    links = [t for t in _LINK.findall(text) if ":" not in t and not (here / t).exists()]
    return links + dead_docs_paths(text, repo)


def dead_docs_paths(text: str, repo: Path) -> list[str]:
    """The ``docs/...md`` paths ``text`` names that are no file of ``repo``."""
    return [p for p in _DOCS_PATH.findall(text) if not (repo / p).is_file()]


def source_units(src: Path) -> set[str]:
    """The packages (``name/``) and root modules (``name``) the table must name."""
    packages = {f"{d.name}/" for d in src.iterdir() if (d / "__init__.py").is_file()}
    return packages | {p.stem for p in src.glob("*.py")}


def module_table(readme: str) -> list[str]:
    """The rows of the README's table of folders (the one headed ``| folder |``)."""
    lines = readme.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| folder |"))
    rows = []
    for ln in lines[start + 2 :]:
        if not ln.startswith("|"):
            break
        rows.append(ln)
    return rows


def missing_from_table(readme: str, units: set[str]) -> list[str]:
    """The units the table does not name: a package as its row's first cell, a root module
    in backquotes in the ``root`` row (or as its own row, ``name.py``)."""
    rows = module_table(readme)
    first = {row.split("|")[1].strip().strip("`") for row in rows}
    root = " ".join(row for row in rows if row.split("|")[1].strip() == "root")
    named = set(re.findall(r"`([\w.]+)`", root))

    def named_there(unit: str) -> bool:
        if unit.endswith("/"):
            return unit in first
        return unit in named or f"{unit}.py" in first

    return [unit for unit in sorted(units) if not named_there(unit)]


def test_readme_table_names_every_package_and_root_module() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert missing_from_table(readme, source_units(SRC)) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_pages_cite_only_what_the_user_has(page: Path) -> None:
    assert not_the_users(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", PAGES[1:], ids=lambda p: str(p.relative_to(REPO)))
def test_docs_carry_no_project_history(page: Path) -> None:
    assert history(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_pages_link_only_to_what_exists(page: Path) -> None:
    assert dead_links(page.read_text(encoding="utf-8"), page.parent, REPO) == []


def test_the_repository_names_only_pages_that_exist() -> None:
    cited = {
        str(path.relative_to(REPO)): dead
        for path in CITERS
        if path.is_file() and path != Path(__file__)
        if (dead := dead_docs_paths(path.read_text(encoding="utf-8"), REPO))
    }
    assert cited == {}
    assert len(CITERS) > 100


def test_dead_links_are_found(tmp_path: Path) -> None:
    (tmp_path / "docs" / "reference").mkdir(parents=True)
    (tmp_path / "docs" / "reference" / "json.md").write_text("")
    (tmp_path / "docs" / "guide.md").write_text("")
    here = tmp_path / "docs"
    text = (
        "[ok](reference/json.md#top) [ok](guide.md) [web](https://x.org/a.md) `docs/reference/json.md` "
        "[gone](json.md) [up](../docs/rules.md#x) `docs/json.md` (docs/evidence/corpus.md)"
    )
    assert dead_links(text, here, tmp_path) == [
        "json.md",
        "../docs/rules.md",
        "docs/json.md",
        "docs/evidence/corpus.md",
    ]


def test_the_checks_catch_bad_text(tmp_path: Path) -> None:
    bad = (
        "See shared/reference/ecosystem.md and ../shared/design.md; the table sits in "
        "/work/main/.cache/corpus/x.whl and /root/.cache/pip, pip wrote /tmp/pip-target-ab12/x, "
        "read from .venv/lib/python3.11/site-packages/torch. Fixed in issue 15, round three."
    )
    assert len(not_the_users(bad)) >= 6
    assert not_the_users("see reference/ecosystem.md") == ["reference/ecosystem.md"]
    assert history(bad) == ["issue 15", "round three"]
    fine = (
        "a shared library, `-cudart shared`, `../../../../tmp/evil.py` (the hostile name), "
        "`.cache/corpus/` (gitignored), torch/include/torch/headeronly/version.h, pytorch/vision#6693, "
        "`docs/reference/rules.md`, [the JSON documents](reference/json.md)"
    )
    assert not_the_users(fine) == [] and history(fine) == []

    src = tmp_path / "torchwheel"
    (src / "wheel").mkdir(parents=True)
    (src / "wheel" / "__init__.py").write_text("")
    (src / "newpkg").mkdir()
    (src / "newpkg" / "__init__.py").write_text("")
    (src / "errors.py").write_text("")
    (src / "fresh.py").write_text("")
    readme = "| folder | what |\n|---|---|\n| `wheel/` | the archive |\n| root | `errors` |\n\nafter\n"
    assert missing_from_table(readme, source_units(src)) == ["fresh", "newpkg/"]
