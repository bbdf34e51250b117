"""How a package's own Python reaches each of its compiled files: read with ``ast`` and a
byte scan, never executed (issue 46: "loads" means ``import`` works).

Whether a file must export ``PyInit_`` and whether its failure stops ``import pkg`` depend
on the code that loads it, not on the file:

- **how**: ``module`` (the import system loads it: ``from . import _C``,
  ``importlib.import_module``, ``spec.loader.exec_module``: it needs its module hook),
  ``library`` (``torch.ops.load_library`` / ``torch.classes.load_library`` / ``ctypes.CDLL``
  / ``dlopen`` by path: no hook needed, and a ``Py*`` import resolves in a process that
  holds libpython), ``dependency`` (only another of its libraries' ``DT_NEEDED`` names it),
  or ``unreached`` (no code of the wheel names it);
- **when**: ``import`` (the package's import loads it and fails with it), ``optional``
  (loaded at import inside a ``try`` whose handler goes on without it), ``conditional``
  (behind a capability check, a check of what torch provides or of its version: loaded, and
  needed, where the check lets the load through), ``on-use`` (loaded only inside functions
  the import does not call: torchcodec's HEIC decoder, or named by no code the import runs).

Which files a loading call reaches is read from the names it spells: string literals,
``glob`` patterns (``"_C*.so"``) and f-strings with their fields as ``*``
(``f"libtorchcodec_core{major}"``) in the call, in the function around it, and at every call
of that function (a helper ``_load_lib("_torchaudio")`` defined in another file), followed a
few levels up. A name no literal spells (a path passed in from elsewhere) reaches nothing:
such a file stays ``unreached``, which every verdict treats as loaded at import, so the
reading only ever relaxes a verdict where the code says so.

An op library loaded in a ``try`` is optional only if nothing at import needs its ops: a
module-level ``@torch.library.register_fake("torchvision::nms")`` (or ``torch.ops.NS.op``)
for a namespace the package's Python does not define itself (``Library("NS", "DEF")``,
``custom_op("NS::...")``) fails with "operator torchvision::nms does not exist" where the
library did not load (torchvision on a CPU torch), so its libraries are required after all.

Bounded as ``pyimports``: only the ``.py`` files under a folder that holds compiled files
are read (``python_sources``' budget), only those that spell a loading call, a compiled
module's import or a loading helper are parsed (and of those, only the ones whose text can
hold such a call or import: ``calltext``), and helpers are followed at most ``_LEVELS``
deep. The texts are read once and not held (``pytexts``): the few files a level of helpers
or the package's import reads are read again.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import field
from typing import Literal

from torchwheel.analysis.calltext import Spelling, narrow, spelling
from torchwheel.analysis.importtime import import_time_files, import_time_ops
from torchwheel.analysis.importtime import top_package as _top
from torchwheel.analysis.pyimports import (
    dynamic_import,
    names_of,
    parsed,
    python_sources,
    resolve,
    uncollected,
)
from torchwheel.analysis.pytexts import Texts
from torchwheel.analysis.returned_paths import PackageFunctions, gated_load
from torchwheel.analysis.toplevel import Outline, Span, sliceable, statement_span, statements
from torchwheel.binary.bytesearch import holders
from torchwheel.frozen import frozen

How = Literal["module", "library", "dependency", "unreached"]
When = Literal["import", "conditional", "optional", "on-use"]


@frozen
class Reach:
    """How the package reaches one compiled file (module docstring). ``where``: the ``.py``
    file (and line) whose code loads it; ``why``: what makes it optional or on-use."""

    how: How = "unreached"
    when: When = "import"
    where: str = ""
    why: str = ""
    # the torch release from which the package's version check lets the load through
    # (``returned_paths``): on an older torch the file is never loaded; "" when none was read
    torch_from: str = ""

    @property
    def required(self) -> bool:
        """Does ``import pkg`` fail where this file does not load? Unreached files count as
        required: a load the reading could not see must not be excused."""
        return self.when == "import"

    @property
    def words(self) -> str:
        """``loaded by path (torch.ops.load_library), optional: ...`` for ``show``."""
        how = {
            "module": "imported as a module",
            "library": "loaded by path",
            "dependency": "loaded as a dependency of its libraries",
            "unreached": "named by no code of the wheel",
        }[self.how]
        where = f" in {self.where}" if self.where and self.how in ("module", "library") else ""
        if self.when == "import":
            return f"{how}{where} ({self.why})" if self.why else how + where
        return f"{how}{where}, {self.when}: {self.why}" if self.why else f"{how}{where}, {self.when}"


UNREACHED = Reach()


@frozen
class Reaching:
    """Every compiled member's ``Reach`` (members it does not list are ``unreached``)."""

    files: Mapping[str, Reach] = field(default_factory=dict)

    def of(self, member: str) -> Reach:
        return self.files.get(member, UNREACHED)


# -- what a call does ---------------------------------------------------------------------------

# a library opened by path: torch.ops / torch.classes, ctypes, a dlopen binding
_LIBRARY_CALLS = frozenset(
    {"load_library", "CDLL", "PyDLL", "WinDLL", "OleDLL", "LoadLibrary", "LoadLibraryEx", "dlopen"}
)
# a module loaded by the import system
_MODULE_CALLS = frozenset({"import_module", "__import__", "spec_from_file_location", "load_dynamic"})
_WORDS = tuple(w.encode() for w in sorted(_LIBRARY_CALLS | _MODULE_CALLS))
# what a failed load raises; a handler of an exception class the wheel defines counts too
# (xformers' loader turns the OSError into xFormersInvalidLibException and catches that)
_LOAD_FAILURES = frozenset(
    {"ImportError", "ModuleNotFoundError", "OSError", "RuntimeError", "Exception", "BaseException"}
)
_BUILTIN_NAMES = frozenset(dir(builtins))
_CAPABILITY = frozenset({"is_available", "device_count", "cuda", "hip", "xpu", "mps", "backends", "is_built"})
_LEVELS = 4  # helpers followed up this many calls
_GOES_ON = "its loader goes on without it"  # the words of a try's guard (``_reach_of``)
_MAX_PARSED = 512  # .py files parsed per wheel, at most
# A helper called from more files than this is a generic name (``forward``, ``load_weights``:
# vLLM's model files), never a package's loader, which a few files call; following it made
# ``check`` of vLLM read 900 files four times over (15 s). A file only such a helper would
# reach stays unreached, which every verdict treats as loaded at import: never a relaxed one.
_MAX_CALLERS = 16


def _generic(name: str) -> bool:
    """A dunder (``__call__``, ``__getattr__``) is called by syntax, never by its name."""
    return name.startswith("__") and name.endswith("__")


_MAX_HINT = 200  # a longer string is a message, not a file name


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk``'s nodes (in another order: each before those under it), without its
    two generator levels per node: a function's names (``_hints``) are its whole walk."""
    stack = [node]
    while stack:
        sub = stack.pop()
        yield sub
        for name in sub._fields:
            value = getattr(sub, name, None)
            if isinstance(value, ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))


def _hints(node: ast.AST) -> set[str]:
    """The file names and patterns an expression spells: literals without spaces, and
    f-strings with their fields as ``*``."""
    out: set[str] = set()
    inside: set[int] = set()
    for sub in _walk(node):
        if isinstance(sub, ast.JoinedStr):
            parts = []
            for value in sub.values:
                inside.add(id(value))
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    parts.append(value.value)
                else:
                    parts.append("*")
            out.add("".join(parts))
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in inside:
            out.add(sub.value)
    return {h for h in out if h and len(h) <= _MAX_HINT and not any(c.isspace() for c in h)}


def _type_names(handler: ast.ExceptHandler) -> list[str]:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return [
        k.id if isinstance(k, ast.Name) else k.attr if isinstance(k, ast.Attribute) else "?"
        for k in kinds
        if k is not None
    ]


def _goes_on(handler: ast.ExceptHandler) -> bool:
    """Does this handler catch what a failed load raises and go on (no ``raise`` in it)?"""
    names = _type_names(handler)
    caught = handler.type is None or any(n in _LOAD_FAILURES or n not in _BUILTIN_NAMES for n in names)
    return caught and not any(isinstance(n, ast.Raise) for s in handler.body for n in ast.walk(s))


def _passes_on(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.AST) -> bool:
    """Does a loading call take one of its function's parameters (``_load(name, path)``)? Then
    its callers say what it loads."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)} - {"self", "cls"}
    return any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(call))


def _early_exit(stmt: ast.stmt) -> str:
    """``if <capability or version check>: return`` (or raise): what comes after it in the
    function runs only where the check fails; its guard, else ""."""
    if not isinstance(stmt, ast.If) or stmt.orelse or not stmt.body:
        return ""
    if not isinstance(stmt.body[-1], ast.Return | ast.Raise):
        return ""
    return _condition(stmt.test)


def _condition(test: ast.expr) -> str:
    """Why an ``if`` makes a load conditional, in words; "" for other tests."""
    words = {n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)}
    words |= {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    asks_torch = any(
        isinstance(n, ast.Call) and _called(n) in ("hasattr", "getattr") and n.args
        and any(isinstance(a, ast.Name) and a.id == "torch" for a in ast.walk(n.args[0]))
        for n in ast.walk(test)
    )  # fmt: skip
    if asks_torch:
        return f"behind a check of what torch provides (`{_short(test)}`)"
    if words & _CAPABILITY:
        return f"behind a capability check (`{_short(test)}`)"
    if any("version" in w.lower() for w in words) and any(isinstance(n, ast.Compare) for n in ast.walk(test)):
        return f"only on some torch versions (`{_short(test)}`)"
    return ""


def _short(node: ast.AST) -> str:
    return _short_text(ast.unparse(node))


def _short_text(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


@frozen
class _Event:
    """One place that loads something: ``function`` is the function around it (None: the
    module's own code, run at import)."""

    how: How
    hints: frozenset[str]
    modules: frozenset[str]
    where: str
    guard: str
    function: str | None
    torch_from: str = ""  # ``Reach.torch_from``


class _Reader(ast.NodeVisitor):
    """One file's loading events and the functions they sit in (to follow helpers)."""

    def __init__(
        self,
        member: str,
        helpers: Mapping[str, list[_Event]],
        modules: frozenset[str],
        basenames: frozenset[str],
        code: PackageFunctions,
        spelled: Spelling,
        narrow: bool,
    ) -> None:
        self.member = member
        self.code = code  # the package's functions, for a path one of them returns
        self.modules = modules  # the compiled modules: an import of anything else is no event
        self.basenames = basenames  # the compiled files' names: what an event's names must reach
        self.exact = basenames | {b.split(".", 1)[0] for b in basenames}  # and their stems
        self.module, self.package = names_of(member)
        self.helpers = helpers
        self.events: list[_Event] = []
        self.function: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.guards: list[str] = []
        self.latent: dict[str, list[_Event]] = {}  # function -> events inside it
        self.top: ast.stmt | None = None  # the module-level statement being read
        self.classes: list[str] = []
        self.names: list[str] = []  # the outermost function's name, as its callers spell it
        self.assigned: dict[str, set[str]] = {}  # module-level name -> the names its value spells
        # the module's functions by name: where each is (its ``_hints``' key), and its tree
        self.defs: dict[str, Span] = {}
        self.def_tree: Callable[[str], ast.stmt] = _no_tree
        self.spelled = spelled  # which lines spell a needle, and which a call of one
        self.narrow = narrow  # ``calltext.narrow``: a statement that spells no call is not read
        # a function's or statement's names (``_hints``) by where it is, once per file (``_events``)
        self.hints_of: dict[Span, set[str]] = {}

    def _spells(self, node: ast.stmt) -> bool:
        """Does the statement's text spell a loading call, a helper or a compiled module?
        A statement that spells none can hold no event: not walked (a big package's
        thousands of functions cost the walk, not the parse)."""
        return self.spells_lines(node.lineno, node.end_lineno) and self._calls(node)

    def spells_lines(self, lineno: int, end_lineno: int | None) -> bool:
        """Do the lines of a statement spell a needle at all (``_spells``, where the
        statement is not parsed yet: ``_events``)?"""
        spelled = self.spelled.spelled
        last = len(spelled) - 1
        end = min(end_lineno or last, last)
        return spelled[end] > spelled[min(lineno - 1, end)]

    def _calls(self, node: ast.stmt | ast.excepthandler) -> bool:
        """Can the statement (its decorators too) hold an event: does its text spell a call
        of a loading word or a helper, or a compiled module (``calltext``)? Where the text
        says what the tree holds, one that does not is not read, at any depth."""
        if not self.narrow:
            return True
        decorators: list[ast.expr] = getattr(node, "decorator_list", [])
        return self.calls_lines(min([node.lineno, *(d.lineno for d in decorators)]), node.end_lineno)

    def calls_lines(self, first: int, end_lineno: int | None) -> bool:
        """``_calls`` of the lines from ``first`` to ``end_lineno``."""
        if not self.narrow:
            return True
        calling = self.spelled.calling
        last = len(calling) - 1
        end = min(end_lineno or last, last)
        return calling[end] > calling[min(first - 1, end)]

    def generic_visit(self, node: ast.AST) -> None:
        """``ast.NodeVisitor``'s, but a statement (or handler) that cannot hold an event
        (``_calls``) is not visited."""
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST) and (
                        not isinstance(item, ast.stmt | ast.excepthandler) or self._calls(item)
                    ):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def visit_Module(self, node: ast.Module) -> None:
        defs = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.defs = {name: statement_span(n) for name, n in defs.items()}
        self.def_tree = defs.__getitem__
        for stmt in node.body:
            if isinstance(stmt, ast.Assign | ast.AnnAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    if isinstance(t, ast.Name) and stmt.value is not None:
                        self.assigned.setdefault(t.id, set()).update(_hints(stmt.value))
        self.read_statements(node.body)

    def read_statements(self, body: Iterable[ast.stmt]) -> None:
        """The module's statements (or those of them ``_events`` parsed again, with the
        ``defs`` and ``assigned`` of its first reading)."""
        for stmt in body:
            self.top = stmt
            if self._spells(stmt):
                self.visit(stmt)

    # context ---------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        for d in node.decorator_list:
            self.visit(d)
        for stmt in node.body:
            if self._spells(stmt):
                self.visit(stmt)
        self.classes.pop()

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        outer = self.guards
        if not self.function:  # what a caller calls: a constructor by its class's name
            self.names.append(self.classes[-1] if node.name == "__init__" and self.classes else node.name)
        self.function.append(node)
        self.guards = []  # a function's body runs where it is called: the caller's guards apply there
        pushed = 0
        for stmt in node.body:
            if self._spells(stmt):
                self.visit(stmt)
            guard = _early_exit(stmt)  # `if hasattr(torch.Tensor, ...): return`: the rest is conditional
            if guard:
                self.guards.append(guard)
                pushed += 1
        del self.guards[len(self.guards) - pushed :]
        self.function.pop()
        if not self.function:
            self.names.pop()
        self.guards = outer

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        kept = [h for h in node.handlers if _goes_on(h)]
        guard = ""
        if kept:
            caught = ", ".join(dict.fromkeys(n for h in kept for n in (_type_names(h) or ["everything"])))
            guard = f"{_GOES_ON} (`except {caught}` at {self.member}:{node.lineno})"
        self._guarded(node.body, guard)
        parts: list[ast.stmt | ast.excepthandler] = [*node.handlers, *node.orelse, *node.finalbody]
        for part in parts:
            if self._calls(part):
                self.visit(part)

    visit_TryStar = visit_Try

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        guard = _condition(node.test)
        self._guarded(node.body, guard)
        self._guarded(node.orelse, guard)

    def _guarded(self, body: Iterable[ast.stmt], guard: str) -> None:
        if guard:
            self.guards.append(guard)
        for stmt in body:
            if self._calls(stmt):
                self.visit(stmt)
        if guard:
            self.guards.pop()

    # events ----------------------------------------------------------------------------------
    def _add(
        self,
        how: How,
        node: ast.AST,
        hints: set[str],
        modules: set[str],
        guard: str = "",
        torch_from: str = "",
    ) -> None:
        """One event. Its names: the call's own, those of the function around it (or, at
        module level, of the statement around it: a glob one line above the loop that
        loads), and those module-level assignments give the names it uses."""
        fn = self.function[0] if self.function else None  # the outermost: what a caller calls
        around = fn if fn is not None else self.top
        name = self.names[0] if self.names else None
        if around is not None and around is not node:
            hints = set(hints) | self._hints(around)
        for n in _walk(node):
            if isinstance(n, ast.Name) and n.id in self.assigned:
                hints |= self.assigned[n.id]
            elif isinstance(n, ast.Call) and n is not node and _called(n) in self.defs:
                hints |= self._def_hints(_called(n))  # load_library(_lib_path()): the path's names
        event = _Event(
            how,
            frozenset(hints),
            frozenset(modules),
            f"{self.member}:{getattr(node, 'lineno', 0)}",
            (self.guards[-1] if self.guards else "") or guard,
            name,
            torch_from,
        )
        self.events.append(event)
        if (
            name is not None
            and fn is not None
            and (how == "library" or modules or self._reaches(hints) or _passes_on(fn, node))
        ):
            self.latent.setdefault(name, []).append(event)  # a helper: its callers are read too

    def _hints(self, node: ast.stmt) -> set[str]:
        where = statement_span(node)
        if where not in self.hints_of:
            self.hints_of[where] = _hints(node)
        return self.hints_of[where]

    def _def_hints(self, name: str) -> set[str]:
        """A module-level function's names, its tree asked for only the first time."""
        where = self.defs[name]
        if where not in self.hints_of:
            self.hints_of[where] = _hints(self.def_tree(name))
        return self.hints_of[where]

    def _reaches(self, hints: Iterable[str]) -> bool:
        """Does any hint reach a compiled file (``_matches``)? A name that is no pattern
        reaches one it is the name or stem of: a set's look-up, not a loop over them."""
        for h in hints:
            tail = h.rsplit("/", 1)[-1]
            if _glob(tail):
                if any(_matches(h, b) for b in self.basenames):
                    return True
            elif tail in self.exact:
                return True
        return False

    def visit_Import(self, node: ast.Import) -> None:
        self._imported(node, {a.name for a in node.names})

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = resolve(node.module, node.level, self.package)
        if base is not None:
            self._imported(node, {base} | {f"{base}.{a.name}" for a in node.names if a.name != "*"})

    def _imported(self, node: ast.stmt, names: set[str]) -> None:
        names &= self.modules
        if not names:
            return
        name = self.names[0] if self.names else None
        event = _Event(
            "module", frozenset(), frozenset(names), f"{self.member}:{node.lineno}",
            self.guards[-1] if self.guards else "", name,
        )  # fmt: skip
        self.events.append(event)
        if name is not None:
            self.latent.setdefault(name, []).append(event)

    def visit_Call(self, node: ast.Call) -> None:
        name = _called(node)
        if name in _LIBRARY_CALLS:
            gated = (
                gated_load(node.args[0], self.function[-1] if self.function else None, self.module, self.code)
                if node.args
                else None
            )
            if gated is None:
                self._add("library", node, _hints(node), set())
            else:  # a path a package function returns, from the torch its version check lets through
                words = f"only from torch {gated.torch_from} on (`{_short_text(gated.check)}`)"
                self._add("library", node, _hints(node) | gated.names, set(), words, gated.torch_from)
        elif name in _MODULE_CALLS:
            found = dynamic_import(node, self.module, self.package)
            if found is None or found in self.modules:
                self._add("module", node, _hints(node), {found} if found else set())
        elif name in self.helpers and not (self.names and self.names[0] == name):
            here = _hints(node)
            for inner in self.helpers[name]:
                self._add(
                    inner.how,
                    node,
                    set(inner.hints) | here,
                    set(inner.modules),
                    inner.guard,
                    inner.torch_from,
                )
        self.generic_visit(node)


_UNSPELLED = Spelling([0], [0])


def _no_tree(name: str) -> ast.stmt:
    raise KeyError(name)


# what a file's first reading keeps for the next: its outline, functions, assignments, names
_Kept = tuple[Outline, dict[str, Span], dict[str, set[str]], dict[Span, set[str]]]


def _read(reader: _Reader, data: bytes, kept: _Kept | None) -> tuple[bool, _Kept | None]:
    """The file read whole (its first reading) or, where an earlier one kept its outline,
    only the top-level statements that spell a call now, parsed from their lines
    (``toplevel``): whether it parses, and what the next reading keeps of it."""
    if kept is not None:
        outline, defs, assigned, hints_of = kept
        spans = outline.spans
        wanted = [
            i for i, (first, line, _, end, _) in enumerate(spans)
            if reader.spells_lines(line, end) and reader.calls_lines(first, end)
        ]  # fmt: skip
        body = statements(data, reader.member, outline, wanted)
        if body is not None:

            def tree_of(name: str) -> ast.stmt:  # a function's lines, or the whole file's
                found = statements(data, reader.member, outline, [spans.index(defs[name])])
                return found[0] if found else _whole(data, reader.member)[name]

            reader.defs, reader.assigned, reader.hints_of, reader.def_tree = defs, assigned, hints_of, tree_of
            reader.read_statements(body)
            reader.def_tree, reader.top = _no_tree, None  # nothing of the trees outlives the reading
            return True, kept
    tree = parsed(data, reader.member)
    if tree is None:
        return False, None
    if kept is not None:
        reader.hints_of = kept[3]
    reader.visit(tree)
    lines = Outline.of(tree) if sliceable(data) else None
    reader.def_tree, reader.top = _no_tree, None  # nothing of the tree outlives the reading
    return True, None if lines is None else (lines, reader.defs, reader.assigned, reader.hints_of)


def _whole(data: bytes, member: str) -> dict[str, ast.stmt]:
    tree = parsed(data, member)
    return (
        {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        if tree
        else {}
    )


def _narrowed(member: str, data: bytes, modules: frozenset[str]) -> bool:
    """Does the file's text say where its events can be (``calltext.narrow``)? Not where a
    compiled module is the file's package or one above it: ``from . import x`` there
    imports it without spelling its name."""
    package = names_of(member)[1]
    parts = package.split(".") if package else []
    return narrow(data) and not any(".".join(parts[:i]) in modules for i in range(1, len(parts) + 1))


# -- which files an event reaches ------------------------------------------------------------------


def _glob(hint: str) -> bool:
    return any(c in hint for c in "*?[")


def _matches(hint: str, basename: str) -> bool:
    """Does a spelled name reach the file ``basename``? The name itself, its stem (the part
    before the first dot: ``_C`` for ``_C.abi3.so``), or a pattern over either."""
    hint = hint.rsplit("/", 1)[-1]
    stem = basename.split(".", 1)[0]
    if _glob(hint):
        if len(re.sub(r"[*?\[\]]", "", hint)) < 2:  # f"{lib}*{suffix}" names nothing
            return False
        return fnmatch.fnmatchcase(basename, hint) or fnmatch.fnmatchcase(stem, hint)
    return hint in (basename, stem)


@frozen
class Compiled:
    """What the reading needs of one compiled member: its path, the module its name makes
    (``pkg._C``; None for a library name) and the libraries it links (``DT_NEEDED``)."""

    member: str
    module: str | None
    needed: tuple[str, ...] = ()
    hooked: bool = False  # it exports a module hook: an extension module users may import


_RANK: dict[When, int] = {"import": 0, "conditional": 1, "optional": 2, "on-use": 3}


def _best(reaches: Iterable[Reach]) -> Reach | None:
    found = sorted(reaches, key=lambda r: (_RANK[r.when], r.how != "module"))
    return found[0] if found else None


# -- the reading -----------------------------------------------------------------------------------


def _module_names(compiled: Sequence[Compiled]) -> dict[str, str]:
    return {c.module: c.member for c in compiled if c.module}


@frozen
class PythonReading:
    """What the reading takes from the package's Python, which the compiled members' names
    alone decide (``key``: each one's member and module), not what their reads find: read
    while the members inflate (``collect``), used when the members read are those it
    assumed. The sources are not kept: the events are all that is needed of them."""

    key: frozenset[tuple[str, str | None]]
    complete: bool  # every .py file of the folders that hold compiled files was read
    events: tuple[_Event, ...]
    ran: frozenset[str]  # the files ``import TOP`` may run
    packages: frozenset[str]
    ops: Mapping[str, tuple[str, str]]  # ``import_time_ops``


def _key(compiled: Sequence[Compiled]) -> frozenset[tuple[str, str | None]]:
    return frozenset((c.member, c.module) for c in compiled)


def read_python(
    members: Iterable[str],
    size: Callable[[str], int],
    read: Callable[[str], bytes],
    compiled: Sequence[Compiled],
) -> PythonReading:
    """The package's ``.py`` files in the folders that hold compiled files, read for what
    loads them (``_events``) and for what its import runs."""
    members = list(members)
    tops = {_top(c.member) for c in compiled}

    def wanted(m: str) -> bool:  # files at the top level: any package of the wheel may load them
        return ".dist-info/" not in m and ("" in tops or _top(m) in tops)

    texts = Texts(read)
    basenames = frozenset(c.member.rsplit("/", 1)[-1] for c in compiled)
    with uncollected():
        sources = python_sources(members, size, read, wanted)
        events = tuple(_events(texts, sources, _module_names(compiled), basenames))
        return PythonReading(
            _key(compiled),
            complete=len(texts) == sum(1 for m in members if m.endswith(".py") and wanted(m)),
            events=events,
            ran=frozenset(import_time_files(texts, conditional=True)),
            packages=frozenset(_top(m) for m in texts if m.endswith("/__init__.py") and m.count("/") == 1),
            ops=import_time_ops(texts),
        )


def read_reach(
    members: Iterable[str],
    size: Callable[[str], int],
    read: Callable[[str], bytes],
    compiled: Sequence[Compiled],
    ahead: PythonReading | None = None,
) -> Reaching:
    """Every compiled member's ``Reach`` (module docstring), from the wheel's ``.py`` files
    in the folders that hold compiled files (``ahead``, when it read them for these
    compiled members; else read here)."""
    if not compiled:
        return Reaching()
    python = ahead if ahead is not None and ahead.key == _key(compiled) else None
    if python is None:
        python = read_python(members, size, read, compiled)
    events, ran, packages = python.events, python.ran, python.packages
    basenames = frozenset(c.member.rsplit("/", 1)[-1] for c in compiled)
    found: dict[str, list[Reach]] = {}
    for c in compiled:
        base = c.member.rsplit("/", 1)[-1]
        top = _top(c.member)
        for e in events:
            source = e.where.rsplit(":", 1)[0]
            if top and _top(source) != top:
                continue
            by_module = c.module is not None and c.module in e.modules
            by_name = e.how == "library" or (e.how == "module" and not e.modules)
            if by_module or (by_name and any(_matches(h, base) for h in e.hints)):
                reach = _reach_of(e, "module" if by_module else e.how)
                if e.function is None and _top(source) in packages and source not in ran:
                    module = names_of(source)[0]
                    why = f"loaded when {module} is imported, which the package's import does not do"
                    reach = Reach(reach.how, "on-use", reach.where, why)
                found.setdefault(c.member, []).append(reach)
    reached = {m: r for m, rs in found.items() if (r := _best(rs)) is not None}
    reached = _with_dependencies(reached, compiled)
    reached = _ops_needed_at_import(reached, python.ops)
    blind = [
        e for e in events
        if e.function is None and not e.modules and not any(_matches(h, b) for h in e.hints for b in basenames)
    ]  # fmt: skip
    if (
        reached and python.complete and not blind
    ):  # its code loads its libraries itself, and all of it was read
        reached = _not_at_import(reached, compiled)
    return Reaching(reached)


def _not_at_import(reached: dict[str, Reach], compiled: Sequence[Compiled]) -> dict[str, Reach]:
    """Files no code names that the package's import cannot load: its code loads some of its
    libraries itself (a package whose Python names none says nothing of how they are used:
    they stay required), every ``.py`` was read, and no load at import spells a name the
    reading could not follow, so only a function called
    on use (a path built at run time, torch-memory-saver's hook libraries) or a user's own
    import can reach them. An extension module (it has a hook) is what users import
    themselves, and so is any module at the top level: required."""
    out = dict(reached)
    for c in compiled:
        if c.member in out or c.hooked or (not _top(c.member) and c.module is not None):
            continue
        out[c.member] = Reach("unreached", "on-use", "", "no code the package's import runs names it")
    return out


def _ops_needed_at_import(
    reached: dict[str, Reach], needs_ops: Mapping[str, tuple[str, str]]
) -> dict[str, Reach]:
    """An optional op library is required after all where the package's import uses an op
    of a namespace only its libraries register and no library it loads unconditionally can
    be the one that does (torchcodec's image library, loaded at import, registers the ops
    its import names; torchvision loads both of its libraries in a ``try``). Of the
    optional ones, those named for the namespace or ``_C`` are taken, else all of them."""
    out = dict(reached)
    for top, (op, where) in needs_ops.items():
        mine = {m: r for m, r in reached.items() if _top(m) == top and r.how == "library"}
        if any(r.when == "import" for r in mine.values()):
            continue
        optional = [m for m, r in mine.items() if r.when == "optional"]
        ns = op.split("::", 1)[0].lower()
        named = [
            m
            for m in optional
            if ns in (stem := m.rsplit("/", 1)[-1].split(".", 1)[0].lower()) or stem == "_c"
        ]
        for member in named or optional:
            r = reached[member]
            out[member] = Reach(
                r.how, "import", r.where,
                f"its loader goes on without it, but {where} uses {op} at import, which only its libraries define",
            )  # fmt: skip
    return out


def _reach_of(e: _Event, how: How) -> Reach:
    where = e.where.rsplit(":", 1)[0]
    if e.function is not None:
        why = f"only {e.function}() loads it, and the package's import does not call it"
        if e.torch_from:
            why += f"; {e.guard}" if e.guard else ""
        return Reach(how, "on-use", where, why, e.torch_from)
    if e.guard:
        # a try that goes on makes it optional; an if (a capability, what torch provides, its
        # version) makes it conditional: loaded, and needed, where the check lets it through
        kind: When = "optional" if e.guard.startswith(_GOES_ON) else "conditional"
        return Reach(how, kind, where, e.guard, e.torch_from)
    return Reach(how, "import", where)


def _with_dependencies(reached: dict[str, Reach], compiled: Sequence[Compiled]) -> dict[str, Reach]:
    """Files only another's ``DT_NEEDED`` names load with it: as early as the earliest of
    those that need them (transitively); a reached file a required one needs is required."""
    by_name: dict[str, list[str]] = {}
    for c in compiled:
        by_name.setdefault(c.member.rsplit("/", 1)[-1], []).append(c.member)
    needed_by = {c.member: c.needed for c in compiled}
    out = dict(reached)
    for _ in range(8):  # a dependency chain is short; never a runaway
        changed = False
        for member, r in list(out.items()):
            for lib in needed_by.get(member, ()):
                for dep in by_name.get(lib, ()):
                    have = out.get(dep)
                    if have is None:
                        out[dep] = Reach("dependency", r.when, member, r.why)
                        changed = True
                    elif _RANK[r.when] < _RANK[have.when]:
                        out[dep] = Reach(have.how, r.when, have.where, r.why)
                        changed = True
        if not changed:
            break
    return out


def _import_needles(modules: Iterable[str]) -> re.Pattern[bytes] | None:
    """An import that may name a compiled module: its dotted name, or a relative import of
    its last part (``from . import _C``, ``from ._C import x``); never ``torch._C``."""
    alternatives: list[bytes] = []
    for name in sorted(set(modules)):
        parent, _, last = name.rpartition(".")
        stem = re.escape(last.encode())
        alternatives.append(re.escape(name.encode()) + rb"\b")
        alternatives.append(rb"from\s+\.[\w.]*\s+import\s[^\n]*\b" + stem + rb"\b")
        alternatives.append(rb"from\s+\.+(?:\w+\.)*" + stem + rb"\b")
        alternatives.append(rb"import\s*\([^)]*\b" + stem + rb"\b")  # a parenthesized list
        if parent:  # from pkg import _C
            alternatives.append(
                rb"from\s+" + re.escape(parent.encode()) + rb"\s+import\s[^\n]*\b" + stem + rb"\b"
            )
    return re.compile(b"|".join(alternatives)) if alternatives else None


def _loading(
    texts: Texts, sources: Iterable[tuple[str, bytes]], modules: Mapping[str, str], stems: set[bytes]
) -> set[str]:
    """The files (each read once, into ``texts``) that spell a loading word or an import of
    a compiled module: a batch of them searched at a time, then let go."""
    imports = _import_needles(modules)
    found: set[str] = set()
    for batch in texts.take(sources):
        first = len(texts) - len(batch)
        held = holders(batch, [*_WORDS, *stems])
        loading = {i for w in _WORDS for i in held[w]}
        # every import ``imports`` finds spells a module's last part (``stems``): the
        # pattern (slow on 33 MB) runs only on the files that do
        if imports is not None:
            naming = {i for s in stems for i in held[s]} - loading
            loading |= {i for i in naming if imports.search(batch[i])}
        found |= {texts.members[first + i] for i in loading}
    return found


def _events(
    texts: Texts,
    sources: Iterable[tuple[str, bytes]],
    modules: Mapping[str, str],
    basenames: frozenset[str],
) -> list[_Event]:
    """Every loading event of the files that spell one, helpers followed ``_LEVELS`` deep:
    a file read again only when a helper it calls changed. A file whose text spells no call
    that can be an event (``calltext``) is not parsed; a file is parsed whole once, and a
    later level parses only the top-level statements it reads (``toplevel``: vLLM, 69
    files parsed once, and a third of their text again). Neither the texts (``pytexts``:
    33 MB on vLLM) nor the trees (one level's were 25-30 MB) are held from one file to the
    next, and no garbage collection walks a tree while it is built and read
    (``uncollected``): 512 trees held and walked by every collection once made parsing
    slow (450 MB)."""
    names = frozenset(modules)
    stems = {n.rpartition(".")[2].encode() for n in modules}
    todo = _loading(texts, sources, modules, stems)
    seen: set[str] = set()  # the files parsed, at most ``_MAX_PARSED``
    broken: set[str] = set()  # those that do not parse
    helpers: dict[str, list[_Event]] = {}
    readers: dict[str, _Reader] = {}
    code = PackageFunctions(texts)
    calling: dict[str, set[str]] = {}  # a helper's name -> the files that call it, searched once
    kept: dict[str, _Kept] = {}  # what a later level reads a file read before from (``_read``)
    for level in range(_LEVELS):
        for m in sorted(todo)[:_MAX_PARSED]:
            if m in broken or (m not in seen and len(seen) >= _MAX_PARSED):
                continue
            seen.add(m)
            data = texts[m]
            spelled = spelling(data, [*_WORDS, *(n.encode() for n in helpers)], stems, names)
            narrowed = _narrowed(m, data, names)
            reader = _Reader(m, helpers, names, basenames, code, spelled, narrowed)
            # a file that can hold no event is not parsed
            parses, read = (
                (True, None) if narrowed and not spelled.calls else _read(reader, data, kept.get(m))
            )
            if not parses:
                broken.add(m)
                continue
            reader.spelled = _UNSPELLED  # its lines' counts serve this reading alone
            readers[m] = reader
            if read is not None:
                kept[m] = read
        if level == _LEVELS - 1:
            break
        latent: dict[str, list[_Event]] = {}
        for r in readers.values():
            for name, found in r.latent.items():
                latent.setdefault(name, []).extend(found)
        changed = [n for n in latent if len(latent[n]) != len(helpers.get(n, ()))]
        searched = [n for n in changed if not _generic(n) and n not in calling]
        calling |= {n: set(found) for n, found in texts.callers(searched, most=_MAX_CALLERS + 1).items()}
        callers = {n: calling[n] for n in changed if not _generic(n)}
        followed = {n: found for n, found in callers.items() if len(found) <= _MAX_CALLERS}
        if not followed:
            break
        helpers = {n: found for n, found in latent.items() if n in followed or n in helpers}
        todo = set().union(*followed.values())
    return [e for r in readers.values() for e in r.events if not _import_of_stdlib(e)]


def _import_of_stdlib(e: _Event) -> bool:
    """Imports name modules of every kind; only those of compiled files matter (matched by
    name later), so an import with no module spelled is nothing."""
    return e.how == "module" and not e.modules and not e.hints
