"""ruff (lint and format) and mypy --strict are part of the suite, so CI fails when either is unhappy."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from torchwheel.errors import InputError

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


# Public names defined in more than one module on purpose, each with the modules that may: one
# concept spelled once per place it must live. Any other name defined twice fails.
SHARED_NAMES = {
    # slots of the format table (binary/format.py's ``Format``), one function per binary format
    "needed_ranges": {"binary.elf", "binary.macho", "binary.pe"},
    "gpu_sections": {"binary.elf", "binary.pe"},
    "gpu_zones": {"binary.elf", "binary.pe"},
}


def public_definitions(src: Path) -> dict[str, set[str]]:
    """Each public (no leading underscore) top-level class and function name -> the modules
    under ``src`` that define it (``pkg.mod``; a package's ``__init__`` as ``pkg``)."""
    found: dict[str, set[str]] = {}
    for path in sorted(src.rglob("*.py")):
        module = ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(
                node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            ) and not node.name.startswith("_"):
                found.setdefault(node.name, set()).add(module)
    return found


def names_defined_twice(found: dict[str, set[str]], shared: dict[str, set[str]]) -> dict[str, list[str]]:
    """The names defined in more than one module beyond what ``shared`` allows them."""
    return {
        name: sorted(modules)
        for name, modules in sorted(found.items())
        if len(modules) > 1 and not modules <= shared.get(name, set())
    }


def test_one_name_per_public_class_or_function() -> None:
    """A name says one thing: ``Installed`` in a traceback, a grep or an import names one class.
    No public top-level class or function of src/torchwheel is defined in two modules, but for
    ``SHARED_NAMES``, and every entry there is still needed."""
    found = public_definitions(ROOT / "src" / "torchwheel")
    assert names_defined_twice(found, SHARED_NAMES) == {}
    assert {name: found.get(name) for name in SHARED_NAMES if found.get(name) != SHARED_NAMES[name]} == {}


def test_names_defined_twice_are_found(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "__init__.py").write_text("def run(): ...\nclass _Hidden: ...\n")
    (tmp_path / "a" / "one.py").write_text(
        "class Plan: ...\ndef run(): ...\ndef helper():\n    def run(): ...\n"
    )
    (tmp_path / "two.py").write_text("class Plan: ...\nclass _Hidden: ...\nimport os\nrun = os.getcwd\n")
    (tmp_path / "three.py").write_text("class Plan: ...\n")
    found = public_definitions(tmp_path)
    assert found["run"] == {"a", "a.one"} and "_Hidden" not in found and "helper" in found
    assert names_defined_twice(found, {}) == {"Plan": ["a.one", "three", "two"], "run": ["a", "a.one"]}
    assert names_defined_twice(found, {"run": {"a", "a.one"}, "Plan": {"a.one", "two"}}) == {
        "Plan": ["a.one", "three", "two"]
    }


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


def test_the_unit_tier_needs_no_compiler() -> None:
    """The unit tier, ``tests/<package>/`` mirroring ``src/torchwheel``, runs where no compiler
    is: its binaries are committed with the scripts that rebuild them (``fixtures/prebuilt``,
    ``fixtures/machine/prebuilt``, ``fixtures/dating/prebuilt``, ``fixtures/real_ext/prebuilt``,
    ``fixtures/cuda/bin``), and building them from source is ``tests/test_fixtures_build.py``'s
    and ``tests/e2e``'s."""
    import re

    calls = re.compile(
        r"[\"'](?:gcc|g\+\+|clang|nvcc)[\"']|ziglang|build_some\(|build_real_wheels\(|\.build\("
    )
    found = []
    for folder in sorted((ROOT / "tests").iterdir()):
        if folder.is_dir() and (ROOT / "src" / "torchwheel" / folder.name).is_dir():
            for path in sorted(folder.rglob("*.py")):
                found += [f"{path.relative_to(ROOT)}: {m[0]}" for m in calls.finditer(path.read_text())]
    assert not found, found


def _error_classes() -> list[type[InputError]]:
    """``InputError`` and every subclass, once each module of the package is imported."""
    import importlib
    import pkgutil

    import torchwheel

    for module in pkgutil.walk_packages(torchwheel.__path__, "torchwheel."):
        if module.name != "torchwheel.__main__":
            importlib.import_module(module.name)
    found: list[type[InputError]] = []
    todo: list[type[InputError]] = [InputError]
    while todo:
        kind = todo.pop()
        todo.extend(kind.__subclasses__())
        found.append(kind)
    return found


def _error_classes_without_a_reference() -> set[str]:
    """The names of ``InputError`` and of each subclass that fixes no ``fixed_reference``:
    whoever raises one of them names the reference."""
    return {
        kind.__name__
        for kind in _error_classes()
        if kind.fixed_reference is None and not kind.__name__.startswith("_")
    }


def _calls() -> Iterator[tuple[str, str, dict[str | None, ast.expr]]]:
    """Every call in src/torchwheel: where (``file:line``), the name called (a function's or
    an attribute's; "" for another callee) and its keyword arguments."""
    for path in sorted((ROOT / "src" / "torchwheel").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            yield f"{path.relative_to(ROOT)}:{node.lineno}", name, {k.arg: k.value for k in node.keywords}


def test_every_input_error_names_a_reference() -> None:
    """Every ``InputError(...)`` of src/torchwheel passes ``reference=`` (what the error is,
    for the JSON error document and a scan line's code: never read from the message), and
    every reference written out is one of ``errors.REFERENCES``."""
    from torchwheel.errors import REFERENCES

    bare = _error_classes_without_a_reference()
    assert "InputError" in bare
    missing, unknown, calls = [], [], 0
    for where, name, given in _calls():
        if name in bare:
            calls += 1
            if "reference" not in given:
                missing.append(where)
        value = given.get("reference")
        for literal in ast.walk(value) if value is not None else ():
            if (
                isinstance(literal, ast.Constant)
                and isinstance(literal.value, str)
                and literal.value not in REFERENCES
            ):
                unknown.append(f"{where}: {literal.value}")
    assert missing == [] and unknown == []
    assert calls > 250  # the walk saw the raises


_LIMIT_FAMILY = ("limit-exceeded", "network-budget-spent")


def test_a_limit_error_names_its_limit() -> None:
    """Every raise of the limit family (``reference=`` one of ``_LIMIT_FAMILY``, or a class
    that fixes one) passes ``limit=``, the limit's name, for the JSON error document; a
    ``LimitExceeded`` sets it from the ``Limit`` it is given."""
    from torchwheel.limits import Limit, LimitExceeded

    fixed = {
        kind.__name__
        for kind in _error_classes()
        if kind.fixed_reference in _LIMIT_FAMILY and kind is not LimitExceeded
    }
    missing, calls = [], 0
    for where, name, given in _calls():
        reference = given.get("reference")
        named = isinstance(reference, ast.Constant) and reference.value in _LIMIT_FAMILY
        if name in fixed or named:
            calls += 1
            if "limit" not in given:
                missing.append(where)
    assert missing == []
    assert calls >= 3  # the walk saw the raises (max-index-projects, the network budget)
    assert LimitExceeded("members", 7, Limit("max-members", 5)).limit == "max-members"
