"""A package's own import-time lock on the torch version: the torch minors on which
``import pkg`` raises before anything else can fail, read without running it (issue 48).

zentorch 2.14.0.1's ``libzentorch.so`` imports only names torch 2.13, 2.14 and 2.15 all
export, so its binary dates it to all three; but its ``__init__.py`` compares the running
torch's minor with ``_build_info.__torchversion__`` (``2.14.0+cpu``) and raises
``ImportError`` on any other minor unless a ``libzentorch_stable.so`` is shipped (this wheel
ships none). "Loads" means ``import`` works, so only 2.14 is right.

Each top-level package that holds compiled files has its ``__init__.py`` read by
``module_eval`` once per spelling of every known torch release of a minor (``2.14.1``,
``2.14.1+cpu``, ``2.14.1+cu130``: what PyPI's and the PyTorch indexes' builds report), with
the package's own modules' constants for its ``from ._build_info import ...``. A minor is
refused only where every spelling provably raises; a lock that refuses every minor, or none,
is no lock (a raise that does not depend on torch is not this reading's to date). Anything
the evaluator cannot decide refuses nothing: a need is only ever narrowed on this evidence.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from torchwheel.analysis.module_eval import ModuleReading
from torchwheel.analysis.module_values import UNKNOWN, TorchVersionText, is_known
from torchwheel.analysis.pyimports import MAX_FILE_BYTES, installed_path, parsed
from torchwheel.frozen import frozen
from torchwheel.torchabi.torch_releases import Minor, Releases

# the local labels torch's builds report: PyPI's (none), the CPU index's, a CUDA index's
_LOCALS = ("", "+cpu", "+cu130")
_MAX_MODULES = 16  # package modules read for their constants, per package


@frozen
class VersionLock:
    """The torch minors on which ``import pkg`` provably raises (``refused``), and the
    statement that raises (``where``: ``zentorch/__init__.py:88``); empty: no lock read."""

    refused: frozenset[Minor] = frozenset()
    where: str = ""


NO_LOCK = VersionLock()


def _constants(tree: ast.Module | None) -> dict[str, Any]:
    """A module's top-level ``NAME = <constant>`` bindings (a build-info module's)."""
    found: dict[str, Any] = {}
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                value = UNKNOWN
            for t in targets:
                if isinstance(t, ast.Name):
                    found[t.id] = (
                        value if isinstance(value, str | int | tuple) and is_known(value) else UNKNOWN
                    )
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = UNKNOWN
    return found


class _Package:
    """One top-level package: its ``__init__.py`` and the constants of its other modules."""

    def __init__(
        self,
        name: str,
        installed: Mapping[str, str],
        size: Callable[[str], int],
        read: Callable[[str], bytes],
    ) -> None:
        self.name, self.installed, self.size, self.read = name, installed, size, read
        self.modules: dict[str, dict[str, Any]] = {}

    def source(self, path: str) -> ast.Module | None:
        member = self.installed.get(path)
        if member is None or self.size(member) > MAX_FILE_BYTES:
            return None
        return parsed(self.read(member), member)

    def imported(self, module: str, name: str) -> Any:
        """``from MODULE import NAME`` where MODULE is one of the package's own: its constant."""
        if not module.startswith(self.name + "."):  # the package itself is being run
            return UNKNOWN
        if module not in self.modules:
            if len(self.modules) >= _MAX_MODULES:
                return UNKNOWN
            path = module.replace(".", "/")
            tree = self.source(f"{path}.py") or self.source(f"{path}/__init__.py")
            self.modules[module] = _constants(tree)
        return self.modules[module].get(name, UNKNOWN)


def _spellings(releases: Releases, minor: Minor) -> list[TorchVersionText]:
    return [TorchVersionText(f"{v.public}{label}") for v in releases.releases_of(minor) for label in _LOCALS]


def read_lock(
    package: str,
    members: Iterable[str],
    size: Callable[[str], int],
    read: Callable[[str], bytes],
    releases: Releases,
) -> VersionLock:
    """The lock of one top-level package (module docstring), or ``NO_LOCK``."""
    installed = {installed_path(m): m for m in members}
    files = frozenset(installed)
    code = _Package(package, installed, size, read)
    init = f"{package}/__init__.py"
    member = installed.get(init)
    if member is None or size(member) > MAX_FILE_BYTES:
        return NO_LOCK
    data = read(member)
    if (b"raise" not in data and b"assert" not in data) or b"version" not in data:
        return NO_LOCK  # nothing raises, or nothing asks the version: no tree to walk
    tree = parsed(data, init)
    if tree is None:
        return NO_LOCK

    def raises(torch: TorchVersionText) -> str | None:
        return ModuleReading(init, tree, code.imported, package, files, torch).raises()

    minors = releases.known_minors()
    where: Counter[str] = Counter()
    refused = set()
    for minor in minors:
        first, *others = _spellings(releases, minor)
        at = raises(first)
        if at is None or any(raises(s) is None for s in others):
            continue  # one spelling that gets through is enough to refuse nothing here
        refused.add(minor)
        where[at] += 1
    if not refused or len(refused) == len(minors):
        return NO_LOCK
    return VersionLock(frozenset(refused), where.most_common(1)[0][0])


def read_locks(
    members: Iterable[str],
    size: Callable[[str], int],
    read: Callable[[str], bytes],
    compiled: Iterable[str],
    releases: Releases,
) -> dict[str, VersionLock]:
    """Each top-level package holding a compiled member -> its lock, where it has one."""
    members = list(members)
    packages = sorted({p[0] for c in compiled if len(p := installed_path(c).split("/")) > 1})
    found = {p: read_lock(p, members, size, read, releases) for p in packages}
    return {p: lock for p, lock in found.items() if lock.refused}
