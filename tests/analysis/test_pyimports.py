"""analysis/pyimports.py: the imports of a wheel's Python, read from its statements alone
(and its calls only when the text may name an importer), held to a walk of every node."""

from __future__ import annotations

import ast
import gc
import random
from pathlib import Path

import pytest

from torchwheel.analysis import pyimports


def _every_node(source: bytes, member: str) -> frozenset[str]:
    """The reference: every node of the tree visited (what ``imports_of`` once did)."""
    try:
        tree = ast.parse(source, filename=member)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    module, package = pyimports.names_of(member)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = pyimports.resolve(node.module, node.level, package)
            if base is not None:
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call):
            name = pyimports.dynamic_import(node, module, package)
            if name:
                found.add(name)
    return frozenset(found)


NESTED = b"""
import a
if x:
    import b
else:
    from . import c
for i in y:
    import d
else:
    import e
while z:
    from .f import g
try:
    import h
except ImportError:
    import i
else:
    import j
finally:
    from .. import k
with m:
    import n
class O:
    import p
    def q(self):
        import r
        async def s():
            async with t:
                import u
            async for v in w:
                import x1
match cmd:
    case 1:
        import y1
    case _:
        from .z1 import *
try:
    pass
except* ValueError:
    import z2
lazy = importlib.import_module("mod.dyn")
rel = import_module("._rel", __package__)
"""
NFKC = (
    "\uff49\uff4d\uff50\uff4f\uff52\uff54_module('nfkc.target')\n".encode()
)  # fullwidth: NFKC reads import_module


@pytest.mark.parametrize(("source", "member"), [(NESTED, "pkg/sub/mod.py"), (NFKC, "pkg/mod.py")])
def test_nested_statements_and_dynamic_imports(source: bytes, member: str) -> None:
    found = pyimports.imports_of(source, member)
    assert found == _every_node(source, member)
    if source is NESTED:
        assert {"a", "pkg.sub.c", "x1", "y1", "pkg.sub.z1", "z2", "pkg.k", "mod.dyn", "pkg.sub._rel"} <= found
    else:
        assert found == {"nfkc.target"}


def test_no_importer_named_no_call_visited() -> None:
    """A file that names neither importer gets its statements read, not its expressions."""
    source = b"import a\nx = f(g(h('b')))\n"
    assert pyimports.imports_of(source, "m.py") == {"a"}
    assert not pyimports._may_call_an_importer(source)
    assert pyimports._may_call_an_importer(b"__import__('x')")


def test_agrees_with_every_node_on_the_standard_library() -> None:
    """150 files of CPython's own library (seeded sample): the same imports either way."""
    lib = Path(ast.__file__).parent
    files = sorted(p for p in lib.rglob("*.py") if p.stat().st_size < pyimports.MAX_FILE_BYTES)
    assert len(files) > 150
    sample = random.Random(49).sample(files, 150)
    for path in sample:
        source = path.read_bytes()
        member = str(path.relative_to(lib))
        assert pyimports.imports_of(source, member) == _every_node(source, member), member


def test_no_collection_while_trees_are_read_and_as_before_after() -> None:
    """``uncollected``: collection is off inside (a parse inside leaves it off), back as it
    was after, an error included; where it was off, it stays off."""
    was = gc.isenabled()
    gc.enable()
    try:
        with pyimports.uncollected():
            assert not gc.isenabled()
            assert pyimports.parsed(b"x = (", "m.py") is None and not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(ValueError), pyimports.uncollected():
            raise ValueError
        assert gc.isenabled()
        gc.disable()
        with pyimports.uncollected():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()
