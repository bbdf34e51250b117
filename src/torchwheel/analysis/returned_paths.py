"""A file loaded by a path a package function returns, and the torch versions that
function lets the path through: read with ``ast``, never executed.

humming-kernels loads its stable launcher (floor 2.11) with
``torch.ops.load_library(str(precompiled_path))``, where ``precompiled_path`` is what
``_get_precompiled_launcher_path()`` returns, and that function returns ``None`` first
where ``Version(torch.__version__) < Version("2.11")`` (older torches build the launcher
themselves). The file's name is composed two modules away (``get_native_artifact_name``:
a dict looked up by a constant key), so no literal near the load spells it, and the load
happens only on the torches the check lets through.

Read here, for ``reach``: the load's argument (through ``str()``, ``os.fspath``, ``Path``)
is a call of a package function, or a local variable every assignment of which is such a
call or ``None``; each such function returns early (``None`` or ``raise``) under a torch
version check before any return that names a file. Then the names its returns spell
(parameters bound to the call's arguments, helpers of other modules followed
``_DEPTH`` calls deep, a dict looked up by a constant key taken at that key only) are the
files the load reaches, from the lowest release the checks let through. Anything else
(no check, a check with no release read, a name not followed) gives nothing: the reading
around the load stays as it was, so a verdict is relaxed only on this evidence.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from packaging.version import InvalidVersion, Version

from torchwheel.analysis.pyimports import names_of, parsed, resolve
from torchwheel.frozen import frozen

Function = ast.FunctionDef | ast.AsyncFunctionDef

_DEPTH = 4  # helper calls followed, at most
_MAX_HINT = 200  # a longer string is a message, not a file name
_WRAPPERS = frozenset(
    {"str", "fspath", "Path", "PurePath", "PosixPath", "WindowsPath", "abspath", "realpath"}
)


@frozen
class Gated:
    """The names a gated load reaches and the torch release its checks let it through
    from (``2.11``), with the check in words."""

    names: frozenset[str]
    torch_from: str
    check: str


class _Scope:
    """What a name means inside one function: its parameters bound at the call, its local
    assignments, and the module's aliases of the package's modules and functions."""

    def __init__(self, fn: Function | None, module: str, bound: Mapping[str, frozenset[str]]) -> None:
        self.module, self.bound = module, bound
        self.local: dict[str, list[ast.expr]] = {}
        for node in ast.walk(fn) if fn is not None else ():
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.local.setdefault(t.id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                self.local.setdefault(node.target.id, []).append(node.value)


class PackageFunctions:
    """The package's modules by name, each parsed when first asked for and kept as its
    module-level functions and import aliases only (never its whole tree)."""

    def __init__(self, sources: Mapping[str, bytes]) -> None:
        self.members = {names_of(m)[0]: m for m in sources}
        self.sources = sources
        self.read: dict[str, tuple[dict[str, Function], dict[str, str]]] = {}

    def _module(self, module: str) -> tuple[dict[str, Function], dict[str, str]]:
        if module not in self.read:
            member = self.members.get(module)
            tree = parsed(self.sources[member], member) if member is not None else None
            defs: dict[str, Function] = {}
            aliases: dict[str, str] = {}
            package = names_of(member)[1] if member is not None else ""
            for node in tree.body if tree is not None else ():
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    defs[node.name] = node
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        if a.asname:
                            aliases[a.asname] = a.name
                elif isinstance(node, ast.ImportFrom):
                    base = resolve(node.module, node.level, package)
                    for a in node.names if base is not None else ():
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
            self.read[module] = (defs, aliases)
        return self.read[module]

    def function(self, module: str, name: str) -> Function | None:
        return self._module(module)[0].get(name)

    def aliases(self, module: str) -> Mapping[str, str]:
        """Local name -> the dotted name it stands for (``import a.b as x``, ``from .u import f``)."""
        return self._module(module)[1]


class _Reading:
    def __init__(self, code: PackageFunctions) -> None:
        self.code = code

    def function(self, call: ast.Call, module: str) -> tuple[str, Function] | None:
        """The package function a call calls, and its module: a function of this module, or
        one reached through an alias (``jit_utils.get_name``, ``from .utils import get_name``)."""
        func, here = call.func, self.code.aliases(module)
        if isinstance(func, ast.Name):
            mine = self.code.function(module, func.id)
            if mine is not None:
                return module, mine
            target = here.get(func.id)
            if target is not None and "." in target:
                owner, _, name = target.rpartition(".")
                fn = self.code.function(owner, name)
                return (owner, fn) if fn is not None else None
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            target = here.get(func.value.id)
            if target is not None:
                fn = self.code.function(target, func.attr)
                return (target, fn) if fn is not None else None
        return None

    def names(
        self, expr: ast.expr, scope: _Scope, depth: int, seen: frozenset[str] = frozenset()
    ) -> frozenset[str]:
        """The file names an expression's value may be; empty when not read."""
        if depth > _DEPTH:
            return frozenset()
        if isinstance(expr, ast.Constant):
            text = expr.value
            if (
                isinstance(text, str)
                and text
                and len(text) <= _MAX_HINT
                and not any(c.isspace() for c in text)
            ):
                return frozenset({text})
            return frozenset()
        if isinstance(expr, ast.Name):
            if expr.id in seen:
                return frozenset()
            found = set(scope.bound.get(expr.id, ()))
            for value in scope.local.get(expr.id, ()):
                found |= self.names(value, scope, depth, seen | {expr.id})
            return frozenset(found)
        if isinstance(expr, ast.IfExp):
            return self.names(expr.body, scope, depth, seen) | self.names(expr.orelse, scope, depth, seen)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):  # a Path's last part
            return self.names(expr.right, scope, depth, seen)
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Dict):
            keys = self.names(expr.slice, scope, depth, seen)
            if len(keys) != 1:  # a key not read: no value of the dict is named
                return frozenset()
            (key,) = keys
            for k, value in zip(expr.value.keys, expr.value.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == key:
                    return self.names(value, scope, depth, seen)
            return frozenset()
        if isinstance(expr, ast.Call):
            name = _called(expr)
            if name in _WRAPPERS and len(expr.args) == 1:
                return self.names(expr.args[0], scope, depth, seen)
            if name == "join" and expr.args:  # os.path.join(dir, name): its last part
                return self.names(expr.args[-1], scope, depth, seen)
            called = self.function(expr, scope.module)
            if called is None:
                return frozenset()
            owner, fn = called
            return self.returned(fn, owner, self.bind(fn, expr, scope, depth, seen), depth + 1)[0]
        return frozenset()

    def bind(
        self, fn: Function, call: ast.Call, scope: _Scope, depth: int, seen: frozenset[str]
    ) -> dict[str, frozenset[str]]:
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        bound = {p: self.names(a, scope, depth, seen) for p, a in zip(params, call.args, strict=False)}
        for kw in call.keywords:
            if kw.arg is not None:
                bound[kw.arg] = self.names(kw.value, scope, depth, seen)
        return bound

    def returned(
        self, fn: Function, module: str, bound: Mapping[str, frozenset[str]], depth: int
    ) -> tuple[frozenset[str], str, str]:
        """The names the function's returns spell, and the release (and check) an early
        exit before every return that names something lets through ("" when none)."""
        scope = _Scope(fn, module, bound)
        names: set[str] = set()
        torch_from, check, named_before = "", "", False
        for stmt in fn.body:
            gate = _version_gate(stmt)
            if gate is not None and not named_before and not torch_from:
                torch_from, check = gate
                continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Return) and node.value is not None:
                    found = self.names(node.value, scope, depth)
                    names |= found
                    named_before = named_before or bool(found)
        return frozenset(names), torch_from, check


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _release(node: ast.expr) -> Version | None:
    """``Version("2.11")``, ``"2.11"``, ``(2, 11)``: the release a comparison names."""
    if isinstance(node, ast.Call) and len(node.args) == 1:
        node = node.args[0]
    try:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return Version(node.value)
        if isinstance(node, ast.Tuple) and all(
            isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts
        ):
            return Version(".".join(str(e.value) for e in node.elts))  # type: ignore[attr-defined]
    except InvalidVersion:
        return None
    return None


def _asks_torch_version(node: ast.expr) -> bool:
    """``torch.__version__`` (through ``Version``/``parse``), or ``torch.version...``."""
    text = ast.unparse(node)
    return "torch" in text and "version" in text.lower()


def _version_gate(stmt: ast.stmt) -> tuple[str, str] | None:
    """``if <torch version> < X: return None`` (or ``raise``): what follows runs from torch
    X on; (X, the check in words), else None. Only ``<`` (or ``X >``) is read: another
    comparison lets through something this reading does not name."""
    if not isinstance(stmt, ast.If) or stmt.orelse or not stmt.body:
        return None
    last = stmt.body[-1]
    exits = isinstance(last, ast.Raise) or (
        isinstance(last, ast.Return)
        and (last.value is None or (isinstance(last.value, ast.Constant) and last.value.value is None))
    )
    test = stmt.test
    if not exits or not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.Lt) and _asks_torch_version(left):
        release = _release(right)
    elif isinstance(op, ast.Gt) and _asks_torch_version(right):
        release = _release(left)
    else:
        return None
    if release is None:
        return None
    return str(release), ast.unparse(test)


def gated_load(
    arg: ast.expr,
    around: Function | None,
    module: str,
    code: PackageFunctions,
) -> Gated | None:
    """What a load of ``arg`` reaches, and from which torch, when every value it can take
    comes from a package function gated on the torch version (module docstring); None
    otherwise."""
    reading = _Reading(code)
    while isinstance(arg, ast.Call) and _called(arg) in _WRAPPERS and len(arg.args) == 1:
        arg = arg.args[0]
    scope = _Scope(around, module, {})
    values: Sequence[ast.expr] = scope.local.get(arg.id, []) if isinstance(arg, ast.Name) else [arg]
    calls: list[ast.Call] = []
    for value in values:
        arms = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        for a in arms:
            if isinstance(a, ast.Constant) and a.value is None:
                continue
            if not isinstance(a, ast.Call):
                return None
            calls.append(a)
    if not calls:
        return None
    names: set[str] = set()
    releases: list[tuple[Version, str]] = []
    for call in calls:
        found = reading.function(call, module)
        if found is None:
            return None
        owner, fn = found
        bound = reading.bind(fn, call, scope, 0, frozenset())
        spelled, torch_from, check = reading.returned(fn, owner, bound, 1)
        if not spelled or not torch_from:
            return None
        names |= spelled
        releases.append((Version(torch_from), f"{check} in {fn.name}()"))
    low, check = min(releases)
    return Gated(frozenset(names), str(low), check)
