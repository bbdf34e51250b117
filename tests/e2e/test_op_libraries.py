"""Torch op libraries are not Python modules: the library kind and the wheel's own imports.

The check codes of the op-library fixture wheels (loaded by path: clean; imported by name:
TW304) are in ``fixtures/wheels.py`` and run by ``tests/e2e/test_check.py``; here are the parts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchwheel.analysis.libkind import links_torch
from torchwheel.analysis.member import analyze_binary
from torchwheel.analysis.pyimports import MAX_FILE_BYTES, imports_of, module_name, wheel_imports
from torchwheel.binary import read_path
from torchwheel.tables.symtable import load_shipped

from ..lib.helpers import torchwheel


@pytest.mark.parametrize(
    ("scenario", "kind"),
    [
        ("elf_op_library", "torch-op-library"),
        ("elf_marker_2_10", "extension-module"),
        ("elf_cpython_abi3", "extension-module"),
        ("macho_universal_differ", "extension-module"),
        ("elf_no_torch", "shared-library"),
        ("elf_probe_aarch64", "shared-library"),
    ],
)
def test_kind_of_fixtures(scenario: str, kind: str, built_fixtures: dict[str, Path]) -> None:
    assert analyze_binary(read_path(built_fixtures[scenario]), load_shipped()).kind == kind


@pytest.mark.parametrize(
    ("lib", "torch"),
    [
        ("libtorch.so", True),
        ("libtorch_cpu.so", True),
        ("libc10.so", True),
        ("libc10_cuda.so", True),
        ("@rpath/libtorch_cpu.dylib", True),
        ("torch_cpu.dll", True),
        ("C10.DLL", True),
        ("libtorchvision.so", False),
        ("libcurl.so.4", False),
        ("python3.dll", False),
    ],
)
def test_links_torch(lib: str, torch: bool) -> None:
    assert links_torch([lib]) is torch


SOURCE = b"""
import os, pkg._C_a
from . import _C_b
from .sub import _C_c as c
from .. import sibling
from pkg import _C_d
from pkg.inner import *
import importlib
importlib.import_module("pkg._C_e")
importlib.import_module("._C_f", __package__)
importlib.import_module("._C_g", "pkg.other")
__import__("pkg._C_h")
importlib.import_module(name_in_a_variable)
"""


def test_imports_of_every_spelling() -> None:
    found = imports_of(SOURCE, "pkg/__init__.py")
    for name in (
        "os",
        "pkg._C_a",
        "pkg._C_b",
        "pkg.sub._C_c",
        "pkg._C_d",
        "pkg.inner",
        "pkg._C_e",
        "pkg._C_f",
        "pkg.other._C_g",
        "pkg._C_h",
    ):
        assert name in found, name
    assert not any(n.endswith("sibling") for n in found)  # beyond the top-level package


def test_relative_imports_resolve_from_the_files_package() -> None:
    assert "pkg.sub._C" in imports_of(b"from . import _C\n", "pkg/sub/mod.py")
    assert "pkg._C" in imports_of(b"from .. import _C\n", "pkg/sub/mod.py")
    assert "pkg._C" in imports_of(b"from . import _C\n", "x-1.0.data/platlib/pkg/__init__.py")


def test_unparsable_text_yields_nothing() -> None:
    assert imports_of(b"from . import _C_ops\nthis is not python(\n", "pkg/__init__.py") == frozenset()
    assert imports_of(b"import a\0b\n", "pkg/__init__.py") == frozenset()
    assert imports_of(b"x = " + b"(" * 100_000 + b")" * 100_000, "pkg/deep.py") == frozenset()


def test_module_name_of_members() -> None:
    assert module_name("pkg/sub/_C.abi3.so", "_C") == "pkg.sub._C"
    assert module_name("dist-1.0.data/platlib/pkg/_C.abi3.so", "_C") == "pkg._C"


def test_wheel_imports_parses_only_bounded_files_that_mention_a_name() -> None:
    files = {
        "pkg/__init__.py": b"from . import _C_ops\n",
        "pkg/other.py": b"import not_mentioned\n",
        "pkg/huge.py": b"import pkg._C_ops_big\n" + b"#" * MAX_FILE_BYTES,
        "pkg-1.0.dist-info/x.py": b"import pkg._C_ops_meta\n",
    }
    read: list[str] = []

    def reader(m: str) -> bytes:
        read.append(m)
        return files[m]

    found = wheel_imports(files, lambda m: len(files[m]), reader, ["_C_ops"])
    assert "pkg._C_ops" in found
    assert "not_mentioned" not in found and "pkg._C_ops_big" not in found and "pkg._C_ops_meta" not in found
    assert sorted(read) == ["pkg/__init__.py", "pkg/other.py"]
    assert wheel_imports(files, lambda m: len(files[m]), reader, []) == frozenset()


def test_show_reports_the_kind(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = str(fixture_wheels["op_library"])
    shown = torchwheel("show", "--json", wheel, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["wheels"][0]["files"][0]["kind"] == "torch-op-library"
    text = torchwheel("show", wheel, cwd=tmp_path).stdout
    header = next(line for line in text.splitlines() if line.strip().startswith("file"))
    assert header.split()[:3] == ["file", "format", "kind"]
    assert "torch-op-library" in text
