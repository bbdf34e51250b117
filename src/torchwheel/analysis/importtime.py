"""What a package's import runs, and the ops it uses on the way, read from its ``.py``
texts by byte patterns (never run): ``reach`` tells a load at import from one on use by
whether ``import pkg`` runs the file that makes it, and a library loaded in a ``try`` is
needed after all where the import uses an op only that library registers.

Each file the import reaches is read when the walk gets to it (``sources`` is a mapping:
``reach`` reads a file again when asked rather than hold them all).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from torchwheel.analysis.pyimports import installed_path, names_of, resolve


def top_package(member: str) -> str:
    """The top-level package a member installs into ("" for a file at the import root)."""
    parts = installed_path(member).split("/")
    return parts[0] if len(parts) > 1 else ""


_top = top_package


# -- ops an import needs from a namespace only the libraries register ---------------------------

# module-level (column 0, so unconditional) registrations or uses of an op of namespace NS
_OP_USE = re.compile(
    rb"^@?[A-Za-z_][\w.]*\.(?:register_fake|register_kernel|register_autograd|impl_abstract|"
    rb"register_torch_dispatch|register_vmap|register_autocast|impl)\(\s*[\"']([A-Za-z_]\w*)::(\w+)"
    rb"|^(?![ \t#@]).*?\btorch\.ops\.([A-Za-z_]\w*)\.([A-Za-z_]\w*)",
    re.M,
)
# namespaces the package's Python defines itself: their ops exist without its libraries
_OP_DEFINED = re.compile(
    rb"Library\(\s*[\"']([A-Za-z_]\w*)[\"']\s*,\s*[\"'](?:DEF|FRAGMENT)"
    rb"|(?:define|custom_op|triton_op)\(\s*f?[\"']([A-Za-z_]\w*)::"
)
# torch's own namespaces: always there
_TORCH_NAMESPACES = frozenset(
    {"aten", "prim", "prims", "quantized", "_quantized", "quantized_decomposed", "c10d", "_c10d_functional",
     "_c10d_functional_autograd", "_dtensor", "inductor", "higher_order", "profiler", "mkldnn", "onednn",
     "mkl", "xpu", "cuda", "debugprims", "rngprims", "fsdp", "streams", "_test", "_inductor_test",
     "torch", "_prims", "_refs", "sparse", "_TorchScriptTesting", "autograd", "symm_mem"}
)  # fmt: skip


def import_time_ops(sources: Mapping[str, bytes]) -> dict[str, tuple[str, str]]:
    """Top-level package -> (``NS::op``, the file) of the first op the package's import
    runs into (``import_time_files``) from a namespace its Python does not define and torch
    does not provide. The namespaces a package defines are read only where its import uses
    an op (vLLM's does not: 0.1 s of its reading was reading them)."""
    at_import = import_time_files(sources)
    used: dict[str, list[tuple[str, str, str]]] = {}
    for member in sources:
        data = sources[member] if member in at_import else b""
        if b"::" in data or b"torch.ops." in data:
            for m in _OP_USE.finditer(data):
                ns, op = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                used.setdefault(_top(member), []).append((ns.decode(), op.decode(), member))
    defined: dict[str, set[str]] = {}
    for member in sources if used else ():
        top = _top(member)
        data = sources[member] if top in used else b""
        if b"Library(" in data or b"define(" in data or b"_op(" in data:
            for m in _OP_DEFINED.finditer(data):
                defined.setdefault(top, set()).add((m.group(1) or m.group(2)).decode())
    out = {}
    for top, uses in used.items():
        mine = defined.get(top, set())
        for ns, op, member in uses:
            if ns not in mine and ns not in _TORCH_NAMESPACES:
                out[top] = (f"{ns}::{op}", member)
                break
    return out


# an unconditional module-level import: at column 0 (not in an ``if``, ``try`` or function)
_COL0_IMPORT = re.compile(
    rb"^(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)|import[ \t]+([^\n#;]+))", re.M
)
_ANY_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)|import[ \t]+([^\n#;]+))", re.M
)


# a line (after its "\n") that opens a function, and one of code (not blank, not a comment)
_DEF_LINE = re.compile(rb"\n([ \t]*)(?:def |async def )")
_CODE_LINE = re.compile(rb"\n([ \t]*[^ \t\n#][^\n]*)")


def _outside_functions(data: bytes) -> list[bytes]:
    """The lines of code of a file outside function bodies, by indentation (never run): an
    import inside a function runs when it is called, not when the module is. A body is the
    lines after its ``def`` indented deeper, blank, comments, or closing a bracket (``)``,
    ``]``, ``}``) no deeper. Found by patterns that start at a line break, not line by
    line: vLLM's import runs 589 files (the same lines on the 27,000 ``.py`` files of the
    benchmark corpus, in 60% of the time)."""
    text = b"\n" + data
    kept: list[bytes] = []
    at = 0
    while True:
        opens = _DEF_LINE.search(text, at)
        kept += _CODE_LINE.findall(text, at, len(text) if opens is None else opens.start())
        line_end = -1 if opens is None else text.find(b"\n", opens.end())
        if opens is None or line_end < 0:
            return kept
        ends = re.compile(rb"\n[ \t]{0,%d}[^ \t\n#)\]}]" % len(opens[1])).search(text, line_end)
        if ends is None:
            return kept
        at = ends.start()


def import_time_files(sources: Mapping[str, bytes], conditional: bool = False) -> set[str]:
    """The ``.py`` members ``import TOP`` runs: each top-level package's ``__init__.py`` and
    what it imports, transitively: unconditionally (column-0 imports, a byte scan), or with
    ``conditional`` also those in a module-level ``if`` or ``try`` (any import outside a
    function body): what the import may run."""
    by_module: dict[str, str] = {}
    for member in sources:
        module, _ = names_of(installed_path(member))
        by_module[module] = member
    todo = [m for m in by_module if "." not in m]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or module not in by_module:
            continue
        seen.add(module)
        member = by_module[module]
        data = sources[member]
        package = module if member.endswith("/__init__.py") else module.rpartition(".")[0]
        found = (
            _ANY_IMPORT.finditer(b"\n".join(_outside_functions(data)))
            if conditional
            else _COL0_IMPORT.finditer(data)
        )
        for m in found:
            names: list[str] = []
            if m.group(1) is not None:
                text = m.group(1).decode("ascii", "replace")
                level = len(text) - len(text.lstrip("."))
                base = resolve(text[level:] or None, level, package)
                if base is None:
                    continue
                names.append(base)
                listed = m.group(2).decode("ascii", "replace").strip("()")
                names += [f"{base}.{n.split()[0]}" for n in listed.replace("\n", " ").split(",") if n.split()]
            else:
                names += [n.split()[0] for n in m.group(3).decode("ascii", "replace").split(",") if n.split()]
            for name in names:
                parts = name.split(".")
                todo += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return {by_module[m] for m in seen}
