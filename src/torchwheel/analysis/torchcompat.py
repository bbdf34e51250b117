"""Will a wheel's compiled files load on a given torch? Ask the torch libraries themselves.

``check`` judges a wheel against what it *declares* and against torchwheel's table of when
each shim appeared. That table can lag behind torch, and the unstable C++ API has no table at
all. The dynamic loader has the final word: a library loads when every symbol it imports is
exported by something in scope. For the torch part of that question the answer is in torch's
own libraries (``torchabi.torchlibs``), so this module compares each binary's torch imports
with their export tables: no import, no ``dlopen``, and it works for a torch of another
platform's wheel as well as for one that cannot be installed here.

Only torch's symbols are compared: the C shim (``aoti_torch_*``, ``torch_*`` and every name
in the shim table) and unstable libtorch C++ (``at::``, ``c10::``, ``c10d::``, ...; see
``cxxnames``). CPython, libc and libstdc++ symbols are someone else's contract (TW3xx covers
CPython's).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from packaging.markers import default_environment
from packaging.version import Version

from torchwheel.analysis.usage import is_shim_name
from torchwheel.analysis.wheelfacts import WheelFacts, torch_need_of
from torchwheel.binary.facts import SliceFacts
from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.tables.symtable import SymbolTable
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.cxxnames import is_unstable
from torchwheel.torchabi.need import TorchNeed, release_matches, show_release
from torchwheel.torchabi.torchlibs import TorchLibraries
from torchwheel.torchabi.verdicts import Verdict, verdict


def is_torch_import(name: str, table: SymbolTable) -> bool:
    return is_shim_name(name) or name in table.symbols or is_unstable(name)


def torch_imports(wheels: Iterable[WheelFacts], table: SymbolTable) -> frozenset[str]:
    """Every torch symbol the inputs import: all ``compat`` needs to know of torch's exports."""
    return frozenset(
        imp.name
        for w in wheels
        for b in w.binaries
        for s in b.analysis.slices
        for imp in s.facts.imports
        if is_torch_import(imp.name, table)
    )


@frozen
class SliceCompat:
    """One architecture of one compiled file: which of its torch imports torch lacks."""

    member: str
    format: str
    arch: str
    torch_imports: tuple[str, ...]
    missing: tuple[str, ...]
    problem: str | None = None  # set when the comparison itself is meaningless
    unstable: int = 0  # how many of the imports are unstable C++ (present is not enough)
    # weak imports torch lacks: the loader leaves them null and the library runs without them
    missing_weak: tuple[str, ...] = ()
    # a per-minor build for another torch minor: the package does not load it on this torch
    other_minor: str | None = None

    @property
    def loads(self) -> bool:
        return not self.missing and self.problem is None


@frozen
class InputCompat:
    """One input against one torch: every slice's symbols, and the one verdict for that
    torch's release (``torchabi.verdicts.verdict``; None when the torch's version is unknown)."""

    path: str
    slices: tuple[SliceCompat, ...]
    verdict: Verdict | None = None

    @property
    def symbols_load(self) -> bool:
        """Every library the package loads on this torch finds its torch symbols."""
        return all(s.loads for s in self.slices if s.other_minor is None)

    @property
    def loads(self) -> bool:
        return self.symbols_load and (self.verdict is None or self.verdict.loads)


def compare_slice(
    member: str, fmt: str, facts: SliceFacts, torch: TorchLibraries, table: SymbolTable
) -> SliceCompat:
    imports = [imp for imp in facts.imports if is_torch_import(imp.name, table)]  # distinct (slice_facts)
    names = tuple(sorted({imp.name for imp in imports}))
    unstable = sum(1 for n in names if is_unstable(n))
    # an AnyCPU .NET assembly runs in torch's process whatever its PE machine field says
    if facts.runs_in != "any" and (fmt, facts.arch) not in torch.platforms:
        have = ", ".join(f"{f}/{a}" for f, a in sorted(torch.platforms))
        problem = f"built for {fmt}/{facts.arch}, but the torch libraries are {have}"
        return SliceCompat(member, fmt, facts.arch, names, (), problem, unstable)
    lacking = [imp for imp in imports if not torch.provides(imp)]
    missing = tuple(sorted({imp.name for imp in lacking if not imp.weak}))
    weak = tuple(sorted({imp.name for imp in lacking if imp.weak} - set(missing)))
    return SliceCompat(member, fmt, facts.arch, names, missing, None, unstable, weak)


def _markers(torch: TorchLibraries) -> dict[str, str]:
    """The environment torch's libraries imply, for the wheel's requirement markers."""
    env = {k: str(v) for k, v in default_environment().items()}
    formats = {fmt for fmt, _ in torch.platforms}
    if len(formats) == 1:
        system = {
            "elf": ("linux", "Linux", "posix"),
            "macho": ("darwin", "Darwin", "posix"),
            "pe": ("win32", "Windows", "nt"),
        }
        env["sys_platform"], env["platform_system"], env["os_name"] = system[formats.pop()]
    return env


def compare(wheel: WheelFacts, torch: TorchLibraries, table: SymbolTable) -> InputCompat:
    """Symbols and the verdict: a library loads when torch exports what it imports; the
    wheel loads when every library it loads on this torch does (of per-minor builds, only
    the one for this torch's minor: its name is the claim, the exports confirm it) and the
    one verdict (need and Requires-Dist) admits this torch."""
    if wheel.unreadable:
        bad = wheel.unreadable[0]
        raise InputError(f"{wheel.contents.path}: {bad.member}: {bad.error}", reference="wheel-invalid")
    release = torch_releases.release_of(torch.version) if torch.version else None
    others: dict[str, str] = {}
    if release is not None:
        for group in wheel.alternatives:
            for build, member in group.members:
                if not release_matches(build, release):
                    others[member] = show_release(build)
    slices = tuple(
        replace(
            compare_slice(b.member, b.analysis.facts.format, s.facts, torch, table),
            other_minor=others.get(b.member),
        )
        for b in wheel.binaries
        for s in b.analysis.slices
    )
    found = None
    if release is not None and wheel.kind != "binary":  # a lone binary has no metadata to judge
        need = torch_need_of(wheel, "binaries")
        if all(s.loads for s in slices if s.other_minor is None):
            need = settled(need, release)
        found = verdict(need, _markers(torch), release, torch.build, tables=wheel.tables)
    return InputCompat(wheel.contents.path, slices, found)


def settled(need: TorchNeed, release: Version) -> TorchNeed:
    """The need with its version axis settled by this torch's own exports, which hold every
    import: what the tables could not say (imports newer than them, a build dated by an index
    that ends before this torch) this torch has answered."""
    if need.tables is None:
        return need
    minor = (release.major, release.minor)
    # this torch's exports hold every import, but the package's own check may still refuse it
    dated = need.releases_from == "exports" and minor not in need.lock_refused
    releases = need.releases | {minor} if dated else need.releases
    return replace(need, newer=(), tables=None, releases=releases)
