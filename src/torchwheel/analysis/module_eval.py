"""What a package's top-level code does on import for one torch version: a small abstract
evaluator over ``ast``, never executing anything (issue 48: zentorch's import-time lock).

zentorch's ``__init__.py`` compares the running torch's minor with the one recorded in its
``_build_info.py`` and raises ``ImportError`` for any other minor unless a stable-ABI
library is shipped: its binary loads on 2.13-2.15, its import on 2.14 only. Seeing that
needs the values the code computes (``torch.__version__.split(".")``, an f-string, a
package function that returns ``f"{parts[0]}.{parts[1]}"``, ``os.path.exists`` of a path
built from ``__file__``), so this evaluates a whitelisted subset of Python on known values
only: constants, names, f-strings, a few ``str`` methods, subscripts, ``len``/``int``/
``str``, comparisons (``torch.__version__`` compares as torch's ``TorchVersion`` does),
``and``/``or``/``not``, ``packaging.version.Version``, calls of the module's own functions
of that subset, constants imported from the package's modules, and ``os.path`` on paths
inside the wheel (an existence test reads the wheel's member list).

The answer is where the import provably raises, or nothing. A statement whose value is not known binds its names to unknown; a call whose
effect is not known is skipped, since it can only raise (the import fails either way) or
return, unless it may rebind the module's names (``global``, ``exec``, ``setattr``, ...);
anything that changes control flow on an unknown (an ``if`` on an unknown test, ``try``,
``with``, a loop) ends the reading as undecided. The work is bounded by ``_STEPS``
statements and ``_DEPTH`` nested calls, as the rest of the analysis is.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable
from typing import Any

from packaging.version import InvalidVersion, Version

from torchwheel.analysis.module_values import (
    MAX_TEXT,
    SAFE_BUILTINS,
    UNKNOWN,
    FunctionRef,
    ModuleRef,
    TorchVersionText,
    WheelPath,
    added,
    compared,
    formatted,
    is_known,
    library_call,
    str_method,
    subscripted,
)
from torchwheel.analysis.pyimports import resolve

_STEPS = 2000  # statements evaluated per reading, at most
_DEPTH = 4  # nested calls of the package's own functions, at most
# what may rebind a module's names from a call this reading does not follow
_REBINDS = frozenset(
    {"exec", "eval", "compile", "globals", "locals", "vars", "setattr", "delattr", "__import__"}
)
_TORCH_VERSION = frozenset(
    {"torch.__version__", "torch.version.__version__", "torch.torch_version.__version__"}
)
Env = dict[str, Any]


class _Raise(Exception):
    """The code raises, at ``args[0]`` (``member:line``)."""


class _Stop(Exception):
    """The reading cannot go on, for ``args[0]``."""


class _Final(_Stop):
    """The reading ends here whoever asks: its budget is spent, or code may have changed
    what it holds (``global``, ``setattr``, an assignment into a module)."""


class _Return(Exception):
    """A function returns ``args[0]``."""


def _truth(value: Any, line: int) -> bool:
    if not is_known(value) and not isinstance(value, tuple):  # a tuple's truth is its length
        raise _Stop(f"line {line}: a test whose value is not known")
    return bool(value)


class ModuleReading:
    """One reading of one module's top-level code (module docstring). ``imported``: the
    value a ``from X import NAME`` gives (the package's constants, torch's version), or
    ``UNKNOWN``; ``members``: the wheel's files as installed, for ``os.path.exists``."""

    def __init__(
        self,
        member: str,
        tree: ast.Module,
        imported: Callable[[str, str], Any],
        package: str,
        members: frozenset[str],
        torch: TorchVersionText,
    ) -> None:
        self.member, self.tree, self.imported, self.package = member, tree, imported, package
        self.members, self.torch = members, torch
        self.rebinding: set[str] = set()  # the module's functions that may rebind its names
        self.dirs = frozenset(posixpath.dirname(m) for m in members)
        self.steps = 0

    def raises(self) -> str | None:
        """Where (``member:line``) the module's top-level code provably raises on this torch;
        None where it runs to its end or the reading could not follow it (``_Stop``)."""
        env: Env = {"__file__": WheelPath(self.member), "__name__": self.package}
        try:
            self._block(self.tree.body, env, None, 0)
        except _Raise as r:
            return str(r.args[0])
        except (_Stop, RecursionError):
            return None
        return None

    # -- statements ------------------------------------------------------------------------

    def _block(self, body: list[ast.stmt], env: Env, local: Env | None, depth: int) -> None:
        for stmt in body:
            self.steps += 1
            if self.steps > _STEPS:
                raise _Final("too many statements")
            self._statement(stmt, env, local, depth)

    def _statement(self, stmt: ast.stmt, env: Env, local: Env | None, depth: int) -> None:
        scope = local if local is not None else env
        if (
            self.rebinding
            and not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and any(isinstance(n, ast.Name) and n.id in self.rebinding for n in ast.walk(stmt))
        ):
            raise _Final(f"line {stmt.lineno}: a call of a function that may rebind the module's names")
        if isinstance(stmt, ast.Raise):
            raise _Raise(f"{self.member}:{stmt.lineno}")
        if isinstance(stmt, ast.Return):
            if local is None:
                raise _Stop(f"line {stmt.lineno}: return outside a function")
            raise _Return(self._expr(stmt.value, env, local, depth) if stmt.value else None)
        if isinstance(stmt, ast.If):
            taken = _truth(self._expr(stmt.test, env, local, depth), stmt.lineno)
            self._block(stmt.body if taken else stmt.orelse, env, local, depth)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            self._assign(stmt, env, local, depth)
        elif isinstance(stmt, ast.Expr):
            self._effect(stmt, env, local, depth)
        elif isinstance(stmt, ast.Import):
            for a in stmt.names:
                scope[a.asname or a.name.split(".")[0]] = ModuleRef(
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(stmt, ast.ImportFrom):
            base = resolve(stmt.module, stmt.level, self.package)
            for a in stmt.names:
                if a.name == "*":
                    raise _Stop(f"line {stmt.lineno}: a star import binds names not read")
                scope[a.asname or a.name] = UNKNOWN if base is None else self._from_import(base, a.name)
        elif isinstance(stmt, ast.FunctionDef):
            if _rebinds(stmt):
                self.rebinding.add(stmt.name)
            # a nested function's closure is not read: only the module's own are followed
            plain = local is None and not stmt.decorator_list and stmt.name not in self.rebinding
            scope[stmt.name] = FunctionRef(stmt) if plain else UNKNOWN
        elif isinstance(stmt, ast.AsyncFunctionDef | ast.ClassDef):
            if _rebinds(stmt):
                raise _Final(f"line {stmt.lineno}: code that may rebind the module's names")
            scope[stmt.name] = UNKNOWN
        elif isinstance(stmt, ast.Assert):
            if self._expr(stmt.test, env, local, depth) is False:
                raise _Raise(f"{self.member}:{stmt.lineno}")
        elif isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                self._unbind(t, scope, stmt.lineno)
        elif not isinstance(stmt, ast.Pass):
            raise _Stop(f"line {stmt.lineno}: {type(stmt).__name__.lower()} is not read")

    def _from_import(self, base: str, name: str) -> Any:
        dotted = f"{base}.{name}"
        if dotted in _TORCH_VERSION:
            return self.torch
        if dotted == "typing.TYPE_CHECKING":
            return False  # what the import runs, not what a type checker reads
        found = self.imported(base, name)
        return found if found is not UNKNOWN else ModuleRef(dotted)

    def _assign(
        self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, env: Env, local: Env | None, depth: int
    ) -> None:
        scope = local if local is not None else env
        value = self._value(stmt.value, env, local, depth) if stmt.value is not None else UNKNOWN
        if isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.target, ast.Name):
                self._unbind(stmt.target, scope, stmt.lineno)
                return
            before = self._expr(stmt.target, env, local, depth)
            value = added(stmt.op, before, value)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            self._bind(t, value, scope, stmt.lineno)

    def _bind(self, target: ast.expr, value: Any, scope: Env, line: int) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            values = value if isinstance(value, tuple) and len(value) == len(target.elts) else None
            for i, t in enumerate(target.elts):
                self._bind(t, UNKNOWN if values is None else values[i], scope, line)
        else:
            self._unbind(target, scope, line)

    def _unbind(self, target: ast.expr, scope: Env, line: int) -> None:
        """An assignment into something (``x.y = ``, ``x[0] = ``, ``del``): the name it
        changes is unknown from here; a module's attribute (``torch.__version__ = ``) may
        change what this reading trusts, so the reading ends."""
        base = target
        while isinstance(base, ast.Attribute | ast.Subscript | ast.Starred):
            base = base.value
        if not isinstance(base, ast.Name) or isinstance(scope.get(base.id), ModuleRef):
            raise _Final(f"line {line}: an assignment into a module")
        scope[base.id] = UNKNOWN

    def _effect(self, stmt: ast.Expr, env: Env, local: Env | None, depth: int) -> None:
        """A bare expression: a docstring, or a call evaluated where it can be and skipped
        where it cannot (module docstring) unless it may rebind the module's names."""
        node = stmt.value
        if isinstance(node, ast.Constant):
            return
        if not isinstance(node, ast.Call):
            raise _Stop(f"line {stmt.lineno}: an expression statement that is not a call")
        if _rebinds(node):
            raise _Final(f"line {stmt.lineno}: a call that may rebind the module's names")
        self._value(node, env, local, depth)

    def _value(self, node: ast.expr, env: Env, local: Env | None, depth: int) -> Any:
        """An expression's value, unknown where a call in it could not be followed: it
        returns or raises, and nothing the reading holds has changed (module docstring)."""
        try:
            return self._expr(node, env, local, depth)
        except _Final:
            raise
        except _Stop:
            return UNKNOWN

    # -- expressions -----------------------------------------------------------------------

    def _expr(self, node: ast.expr, env: Env, local: Env | None, depth: int) -> Any:
        if isinstance(node, ast.Constant):
            v = node.value
            return v if not isinstance(v, str | bytes) or len(v) <= MAX_TEXT else UNKNOWN
        if isinstance(node, ast.Name):
            if local is not None and node.id in local:
                return local[node.id]
            if node.id in env:
                return env[node.id]
            return SAFE_BUILTINS.get(node.id, UNKNOWN)
        if isinstance(node, ast.Attribute):
            return self._attribute(self._expr(node.value, env, local, depth), node.attr)
        if isinstance(node, ast.Call):
            return self._call(node, env, local, depth)
        if isinstance(node, ast.Compare):
            left = self._expr(node.left, env, local, depth)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self._expr(right_node, env, local, depth)
                found = compared(op, left, right)
                if found is UNKNOWN or not found:
                    return found
                left = right
            return True
        if isinstance(node, ast.BoolOp):
            value: Any = None
            for operand in node.values:
                value = self._expr(operand, env, local, depth)
                if not is_known(value) and not isinstance(value, tuple):
                    return UNKNOWN
                if bool(value) == isinstance(node.op, ast.Or):
                    return value
            return value
        if isinstance(node, ast.UnaryOp):
            operand = self._expr(node.operand, env, local, depth)
            if not is_known(operand) and not isinstance(operand, tuple):
                return UNKNOWN
            if isinstance(node.op, ast.Not):
                return not operand
            return -operand if isinstance(node.op, ast.USub) and type(operand) is int else UNKNOWN
        if isinstance(node, ast.BinOp):
            return added(
                node.op, self._expr(node.left, env, local, depth), self._expr(node.right, env, local, depth)
            )
        if isinstance(node, ast.IfExp):
            taken = _truth(self._expr(node.test, env, local, depth), node.lineno)
            return self._expr(node.body if taken else node.orelse, env, local, depth)
        if isinstance(node, ast.Tuple | ast.List):
            return tuple(self._expr(e, env, local, depth) for e in node.elts)
        if isinstance(node, ast.Subscript):
            return subscripted(
                self._expr(node.value, env, local, depth),
                node.slice,
                lambda e: self._expr(e, env, local, depth),
            )
        if isinstance(node, ast.JoinedStr):
            return formatted(node, lambda e: self._expr(e, env, local, depth))
        return UNKNOWN

    def _attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, ModuleRef):
            dotted = f"{base.name}.{attr}"
            if dotted in _TORCH_VERSION:
                return self.torch
            return False if dotted == "typing.TYPE_CHECKING" else ModuleRef(dotted)
        if isinstance(base, Version) and attr in (
            "major",
            "minor",
            "micro",
            "release",
            "base_version",
            "public",
        ):
            return getattr(base, attr)  # fmt: skip
        return UNKNOWN

    def _call(self, node: ast.Call, env: Env, local: Env | None, depth: int) -> Any:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return UNKNOWN
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self._expr(func.value, env, local, depth)
            if isinstance(receiver, str) and not node.keywords:
                return str_method(receiver, func.attr, [self._expr(a, env, local, depth) for a in node.args])
            callee = self._attribute(receiver, func.attr)
        else:
            callee = self._expr(func, env, local, depth)
        args = [self._expr(a, env, local, depth) for a in node.args]
        found = UNKNOWN
        if isinstance(callee, FunctionRef):
            found = self._call_function(callee.node, args, node, env, local, depth)
        elif node.keywords:
            pass
        elif isinstance(callee, ModuleRef):
            found = library_call(callee.name, args, self.members, self.dirs)
        elif callable(callee) and all(is_known(a) for a in args):
            try:
                found = callee(*args)
            except (TypeError, ValueError, InvalidVersion):
                found = UNKNOWN
        if found is UNKNOWN or isinstance(callee, FunctionRef):  # it may change a list it is given
            receiver = [func.value] if isinstance(func, ast.Attribute) else []
            for n in [*receiver, *node.args, *(k.value for k in node.keywords)]:
                if isinstance(n, ast.Name):
                    scope = local if local is not None and n.id in local else env
                    if isinstance(scope.get(n.id), tuple):
                        scope[n.id] = UNKNOWN
        return found

    def _call_function(
        self, fn: ast.FunctionDef, args: list[Any], node: ast.Call, env: Env, local: Env | None, depth: int
    ) -> Any:
        if depth >= _DEPTH:
            raise _Stop(f"line {node.lineno}: calls nested too deep")
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            return UNKNOWN
        params = [p.arg for p in a.args]
        if len(args) > len(params):
            return UNKNOWN
        frame: Env = dict(zip(params, args, strict=False))
        for kw in node.keywords:
            if kw.arg not in params or kw.arg in frame:
                return UNKNOWN
            frame[kw.arg] = self._expr(kw.value, env, local, depth)
        defaults = dict(zip(params[len(params) - len(a.defaults) :], a.defaults, strict=True))
        for p in params:
            if p not in frame:
                default = defaults.get(p)
                if not isinstance(default, ast.Constant):
                    return UNKNOWN  # a default is evaluated where the function is defined
                frame[p] = default.value
        try:
            self._block(fn.body, env, frame, depth + 1)
        except _Return as r:
            return r.args[0]
        return None


def _rebinds(node: ast.AST) -> bool:
    """Does this code declare ``global``/``nonlocal`` or call what can rebind any name?"""
    for n in ast.walk(node):
        if isinstance(n, ast.Global | ast.Nonlocal):
            return True
        if isinstance(n, ast.Name) and n.id in _REBINDS:
            return True
        if isinstance(n, ast.Attribute) and n.attr == "modules":
            return True  # sys.modules[...]
    return False
