"""ruff (lint and format) and mypy --strict are part of the suite, so CI fails when either is unhappy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_clean() -> None:
    result = _run("ruff", "check", "src", "tests", "fixtures", "scripts", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_clean() -> None:
    result = _run("ruff", "format", "--check", "src", "tests", "fixtures", "scripts", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    result = _run("mypy", "--strict", "src/torchwheel")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_layers_and_no_circles() -> None:
    """The contracts of ``[tool.importlinter]`` in pyproject.toml: each stage of src/torchwheel
    imports only the stages below it, no package has an import circle, and choosing, installing,
    publishing, scanning and the network never import the rules, function-level imports included (grimp reads every import statement)."""
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports"))], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout, result.stdout


def test_no_two_modules_share_a_name() -> None:
    """A traceback or a grep hit that names ``explain.py`` names one file: no module name
    under src/torchwheel is used twice (``__init__`` aside)."""
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / "src" / "torchwheel").rglob("*.py")):
        if path.stem != "__init__":
            seen.setdefault(path.stem, []).append(str(path.relative_to(ROOT / "src")))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_benchmarks_have_no_import_circle() -> None:
    """benchmarks/ is not a package, so import-linter does not see it: its scripts import one
    another by name (function-level imports included), and no chain of them comes back."""
    scripts = {p.stem: p for p in (ROOT / "benchmarks").glob("*.py")}
    imports: dict[str, set[str]] = {}
    for name, path in scripts.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
        imports[name] = found & scripts.keys()

    def circle(start: str, at: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in sorted(imports[at]):
            if nxt == start:
                return (*path, nxt)
            if nxt not in path:
                found = circle(start, nxt, (*path, nxt))
                if found:
                    return found
        return None

    assert {name: circle(name, name, (name,)) for name in imports} == dict.fromkeys(imports)


def test_no_dead_code() -> None:
    """vulture over the package, with the names only a framework calls listed (and
    explained) in tests/vulture_whitelist.py: a function nothing calls is deleted, not kept.
    Rule checks are registered by ``@rule(CODE)`` and run through the registry."""
    result = _run(
        "vulture",
        "src/torchwheel",
        "tests/vulture_whitelist.py",
        "--min-confidence",
        "60",
        "--ignore-decorators",
        "@rule",
    )
    assert result.returncode == 0, result.stdout + result.stderr
