"""docs/reference/rules.md is written from one source (``torchwheel/data/rules.toml`` for the prose,
``rules/codes.py`` for the table) by ``scripts/rules_doc.py``; ``torchwheel rule`` reads the
same. A page edited by hand, or a source changed without running the script, fails here."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib

from torchwheel.rules import REGISTRY
from torchwheel.rules.codes import CODES
from torchwheel.rules.explain import SOURCE, book, rules_page

from .lib.helpers import REPO


def test_the_page_is_written_from_the_source() -> None:
    written = (REPO / "docs" / "reference" / "rules.md").read_text(encoding="utf-8")
    assert written == rules_page(), "docs/reference/rules.md is stale: run python scripts/rules_doc.py"
    check = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "rules_doc.py"), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_every_code_is_explained_and_registered() -> None:
    rules = book().rules
    assert list(rules) == [c.code for c in CODES] and set(REGISTRY) == set(rules)
    for r in rules.values():
        labels = [label for label, _ in r.sections]
        assert labels[0] == "What" and "Fix" in labels, r.code.code
        assert len(set(labels)) == len(labels), r.code.code


def test_the_wheel_ships_the_source() -> None:
    """``[tool.setuptools.package-data]`` takes rules.toml into the wheel (``rule`` reads it
    beside the installed package's modules)."""
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = SOURCE.removeprefix("src/torchwheel/")
    assert any(fnmatch.fnmatch(shipped, g) for g in globs["torchwheel"]), globs
    assert (REPO / SOURCE).is_file()
