"""Libraries found as glibc's ``ld.so`` finds them, for one interpreter's process: which file
each ``DT_NEEDED`` name opens, which it cannot, and which symbol versions the file found lacks.

The process (``Process``) is what ``import torch`` leaves behind, read, never run: the
interpreter's executable and what it links, torch's ``_C`` module and ``libtorch_global_deps``
with everything they pull in through their RPATHs, and the CUDA libraries torch's
``__init__`` preloads from the ``nvidia-*`` wheels (its ``_preload_cuda_deps`` list, read with
``ast``). A library the process holds satisfies a need by the name it was asked for or its
SONAME, wherever the asker would have looked (glibc's ``_dl_map_object``).

Otherwise a name is searched (ld.so(8), glibc's ``elf/dl-load.c``): a name with a slash is a
path; else DT_RPATH of the asker and of each object up its chain of loaders (unless the asker
has DT_RUNPATH; an object with DT_RUNPATH lends no RPATH), then the executable's DT_RPATH,
``LD_LIBRARY_PATH``, the asker's own DT_RUNPATH, the ldconfig cache (``ldcache``) and the
default folders (both skipped for an asker with DF_1_NODEFLIB). ``$ORIGIN`` is the folder of
the path the object was opened by, links not followed (what glibc does: a library opened
through a symbolic link finds its neighbours beside the link). A file of another ELF class or
machine is passed over, as the loader passes it over. The loader's default folders are asked
of the loader itself (``ld.so --help``, glibc 2.33 and newer: the machine's own loader, not
the environment's code), else the usual ones. Not modelled: glibc-hwcaps and legacy hwcap
subfolders (the cache lists the system's own), ``LD_PRELOAD``, ``dlmopen`` namespaces;
musl's loader is not judged (``Process.problem``).

A load (``Resolver.load``) walks the dependency tree breadth first, as ``_dl_map_object_deps``
does, within ``_MAX_OBJECTS``, then checks every new object's DT_VERNEED against the
DT_VERDEF of the object that satisfied it (``version `GLIBCXX_3.4.32' not found``; a weak
need, or a library without version definitions, only draws a warning from the loader).
Each file's dynamic tables are read once per run (``binary.elfdynamic``, bounded).
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import field, replace
from pathlib import Path

from torchwheel.binary.elfdynamic import DynamicFacts, dynamic_facts
from torchwheel.binary.facts import BinaryError
from torchwheel.doctor.ldcache import CacheProblem, LdCache, read_cache
from torchwheel.frozen import frozen
from torchwheel.safeopen import read_regular

_MAX_OBJECTS = 1024  # objects one load may bring in (torch's CUDA build: about 60)
_MAX_FOLDERS = 256  # of one search path (RPATH, RUNPATH, LD_LIBRARY_PATH): real ones have a few
_MAX_LOOKS = 100_000  # candidate files one load may look at: a hostile RPATH cannot make it endless
_TORCH_INIT_BYTES = 1 << 20
# the folders glibc searches last, per ELF machine, when its loader cannot be asked
_DEFAULT_DIRS = {
    62: ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
    183: ("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
}
_SYSTEM_DIR = re.compile(r"^\s+(/\S*) \(system search path\)$", re.MULTILINE)


@frozen
class Missing:
    """A needed name no folder the loader searches holds (``cannot open shared object file``)."""

    name: str
    needed_by: str  # the path of the object that needs it


@frozen
class VersionGap:
    """A symbol version an object needs that the library found does not define."""

    version: str
    library: str  # the path of the library found
    needed_by: str


@frozen
class LoadOutcome:
    """What loading one file would do: ``missing`` and ``gaps`` make it fail; ``unread``:
    files met on the way whose tables could not be read (path, why): the answer is then not
    known. ``brought``: the names the load adds to the process (name -> path)."""

    path: str
    missing: tuple[Missing, ...] = ()
    gaps: tuple[VersionGap, ...] = ()
    unread: tuple[tuple[str, str], ...] = ()
    brought: Mapping[str, str] = field(default_factory=dict)
    siblings: tuple[str, ...] = ()  # the package's own files it needs that do not load (``machine``)

    @property
    def loads(self) -> bool:
        return not self.missing and not self.gaps and not self.unread and not self.siblings


@frozen
class Process:
    """An interpreter's process after ``import torch``, as the loader sees it (module docstring).

    ``loaded``: names (asked-for names, SONAMEs, paths) -> path of the object that has them;
    ``holder``: path -> who brought it in (``the interpreter``, ``torch``, ``torch's CUDA
    preload``). ``problem``: why libraries cannot be judged for it at all (not ELF, musl)."""

    machine: int
    elf_class: int
    executable: str
    executable_rpath: tuple[str, ...]
    ld_library_path: tuple[str, ...]
    cache: LdCache | CacheProblem
    system_dirs: tuple[str, ...]
    loaded: Mapping[str, str]
    holder: Mapping[str, str]
    problem: str = ""
    torch_missing: tuple[Missing, ...] = ()  # what torch's own load lacks (it would not import)


def rpath_folders(spec: str, origin: str) -> tuple[str, ...]:
    """A DT_RPATH/DT_RUNPATH string as folders: ``$ORIGIN``/``${ORIGIN}`` replaced by
    ``origin``; an empty element, or one with a token we do not expand (``$LIB``,
    ``$PLATFORM``), is dropped: glibc drops what it cannot expand."""
    out: list[str] = []
    for part in spec.split(":", _MAX_FOLDERS)[:_MAX_FOLDERS]:
        part = part.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        if part and "$" not in part:
            out.append(part)
    return tuple(out)


def library_path(value: str | None, cwd: str) -> tuple[str, ...]:
    """``LD_LIBRARY_PATH`` as folders (``:`` or ``;`` separate them; an empty element is the
    current folder, as glibc reads it)."""
    if not value:
        return ()
    return tuple(p or cwd for p in re.split(r"[:;]", value, maxsplit=_MAX_FOLDERS)[:_MAX_FOLDERS])


def system_dirs(interpreter: str, machine: int) -> tuple[tuple[str, ...], str]:
    """The loader's default folders, asked of the loader (``PT_INTERP --help``), with how they
    were learned; the usual folders of the machine when it cannot be asked."""
    fallback = _DEFAULT_DIRS.get(machine, ("/lib64", "/usr/lib64", "/lib", "/usr/lib"))
    if not interpreter or not os.path.isabs(interpreter):
        return fallback, "the usual folders (no loader named)"
    try:
        proc = subprocess.run(
            [interpreter, "--help"], capture_output=True, text=True, timeout=30, env={"LC_ALL": "C"}
        )
    except (OSError, subprocess.SubprocessError):
        return fallback, f"the usual folders ({interpreter} --help did not run)"
    found = tuple(_SYSTEM_DIR.findall(proc.stdout[: 1 << 16]))
    if proc.returncode != 0 or not found:
        return fallback, f"the usual folders ({interpreter} --help named none)"
    return found, f"{interpreter} --help"


class Resolver:
    """Loads simulated in one ``Process`` (module docstring); file facts are kept per path."""

    def __init__(self, process: Process, memo: dict[str, DynamicFacts | str] | None = None) -> None:
        self.process = process
        self._facts: dict[str, DynamicFacts | str] = {} if memo is None else memo
        self.looks = _MAX_LOOKS

    def facts(self, path: str) -> DynamicFacts | str:
        """The loader's facts of a file, or why they could not be read."""
        found = self._facts.get(path)
        if found is None:
            try:
                found = dynamic_facts(Path(path))
            except (BinaryError, OSError) as exc:
                found = str(exc.strerror if isinstance(exc, OSError) and exc.strerror else exc)
            self._facts[path] = found
        return found

    def _fits(self, path: str) -> bool:
        """Would the loader take this file: a regular file of the process's class and machine?"""
        self.looks -= 1
        if self.looks < 0 or not os.path.isfile(path):
            return False
        facts = self.facts(path)
        p = self.process
        return (
            isinstance(facts, DynamicFacts) and facts.machine == p.machine and facts.elf_class == p.elf_class
        )

    def _in(self, folders: Iterable[str], name: str) -> str | None:
        for folder in folders:
            candidate = os.path.join(folder, name)
            if self._fits(candidate):
                return candidate
        return None

    def search(self, name: str, chain: list[tuple[str, DynamicFacts]]) -> str | None:
        """The file ``name`` opens for the first object of ``chain`` (the asker, then who loaded
        it, up to the package's first library), or None (module docstring)."""
        p = self.process
        if "/" in name:
            return name if self._fits(name) else None
        asker_path, asker = chain[0]
        if not asker.runpath:
            for path, facts in chain:
                if facts.rpath and not facts.runpath:
                    found = self._in(rpath_folders(facts.rpath, os.path.dirname(path)), name)
                    if found:
                        return found
            found = self._in(p.executable_rpath, name)
            if found:
                return found
        found = self._in(p.ld_library_path, name)
        if found:
            return found
        if asker.runpath:
            found = self._in(rpath_folders(asker.runpath, os.path.dirname(asker_path)), name)
            if found:
                return found
        if asker.nodeflib:
            return None
        if isinstance(p.cache, LdCache):
            for candidate in p.cache.lookup(name):
                if self._fits(candidate):
                    return candidate
        return self._in(p.system_dirs, name)

    def load(self, path: str, also: Mapping[str, str] | None = None) -> LoadOutcome:
        """``dlopen(path)`` in the process, which also holds ``also`` (names -> paths: the
        package's libraries loaded before this one). A load that looks at more than
        ``_MAX_LOOKS`` candidate files is not known (``unread``), never a guess."""
        self.looks = _MAX_LOOKS
        outcome = self._load(path, also)
        if self.looks < 0:  # what was not found may lie past the budget: not known
            return LoadOutcome(
                path, unread=((path, f"finding its libraries took more than {_MAX_LOOKS:,} looks"),)
            )
        return outcome

    def _load(self, path: str, also: Mapping[str, str] | None) -> LoadOutcome:
        loaded = dict(self.process.loaded)
        loaded.update(also or {})
        if path in loaded:
            return LoadOutcome(path)
        first = self.facts(path)
        if isinstance(first, str):
            return LoadOutcome(path, unread=((path, first),))
        new: dict[str, DynamicFacts] = {path: first}
        parents: dict[str, list[tuple[str, DynamicFacts]]] = {path: [(path, first)]}
        brought: dict[str, str] = {path: path}
        if first.soname:
            brought[first.soname] = path
        missing: list[Missing] = []
        unread: list[tuple[str, str]] = []
        failed: set[str] = set()  # names searched in vain: the loader stops at the first, we name each once
        held = set(loaded.values())
        queue = [path]
        while queue and len(new) < _MAX_OBJECTS:
            current = queue.pop(0)
            chain = parents[current]
            for name in new[current].needed:
                if name in loaded or name in brought or name in failed:
                    continue
                found = self.search(name, chain)
                if found is None:
                    missing.append(Missing(name, current))
                    failed.add(name)
                    continue
                facts = self.facts(found)
                if isinstance(facts, str):
                    unread.append((found, facts))
                    failed.add(name)
                    continue
                brought[name] = found
                if facts.soname:
                    brought.setdefault(facts.soname, found)
                if found in new or found in held:
                    continue
                new[found] = facts
                parents[found] = [(found, facts), *chain]
                queue.append(found)
        if queue:
            unread.append(
                (path, f"it brings in more than {_MAX_OBJECTS} libraries; the rest were not followed")
            )
        gaps = self._gaps(new, {**loaded, **brought})
        return LoadOutcome(path, tuple(missing), gaps, tuple(unread), brought)

    def _gaps(self, new: Mapping[str, DynamicFacts], names: Mapping[str, str]) -> tuple[VersionGap, ...]:
        gaps: list[VersionGap] = []
        for path, facts in new.items():
            for need in facts.version_needs:
                lib = names.get(need.library)
                if not lib:
                    continue
                defined = self.facts(lib)
                if isinstance(defined, str) or defined.versions_defined is None:
                    continue
                gaps += [VersionGap(v, lib, path) for v in need.versions if v not in defined.versions_defined]
        return tuple(gaps)


def read_process(
    executable: str,
    environ: Mapping[str, str],
    torch_dir: Path | None,
    search_path: Iterable[str],
    cache_path: Path | None = None,
) -> Process:
    """The process of the interpreter ``executable`` after ``import torch`` (module
    docstring): ``environ`` its environment (``LD_LIBRARY_PATH``), ``torch_dir`` the
    installed ``torch`` package (None: no torch), ``search_path`` its ``sys.path`` (where
    torch's CUDA preload looks)."""
    exe = os.path.abspath(executable)
    real_exe = os.path.realpath(exe)
    try:
        facts = dynamic_facts(Path(real_exe))
    except (BinaryError, OSError) as exc:
        return _unjudged(exe, f"the interpreter {exe} is not an ELF executable the loader reads ({exc})")
    if "musl" in facts.interpreter:
        return _unjudged(exe, f"musl's loader ({facts.interpreter}) is not modelled")
    # the executable's own loader (PT_INTERP), which the kernel runs whenever the interpreter
    # runs (as the probe runs it): asking it --help runs nothing the probe did not
    dirs, _ = system_dirs(facts.interpreter, facts.machine)
    origin = os.path.dirname(real_exe)  # the kernel hands ld.so the executable's real path
    process = Process(
        machine=facts.machine,
        elf_class=facts.elf_class,
        executable=real_exe,
        executable_rpath=rpath_folders(facts.rpath, origin) if not facts.runpath else (),
        ld_library_path=library_path(environ.get("LD_LIBRARY_PATH"), os.getcwd()),
        cache=read_cache(cache_path or Path("/etc/ld.so.cache"), facts.machine),
        system_dirs=dirs,
        loaded={},
        holder={},
    )
    memo: dict[str, DynamicFacts | str] = {}  # each file's facts read once while the process is built
    resolver = Resolver(process, memo)
    loaded: dict[str, str] = {}
    holder: dict[str, str] = {}
    _hold(resolver, real_exe, loaded, holder, "the interpreter")
    torch_missing: list[Missing] = []
    if torch_dir is not None:
        # torch/__init__ opens libtorch_global_deps first, then imports torch._C
        entries = [
            str(torch_dir / "lib" / "libtorch_global_deps.so"),
            *sorted(map(str, torch_dir.glob("_C.*so"))),
        ]
        for entry in entries:
            if os.path.isfile(entry):
                torch_missing += _hold(Resolver(_with(process, loaded), memo), entry, loaded, holder, "torch")
        if any("libcudart" in name for name in loaded):
            for path in preloaded_cuda(torch_dir, search_path):
                _hold(Resolver(_with(process, loaded), memo), path, loaded, holder, "torch's CUDA preload")
    return _with(process, loaded, holder, tuple(torch_missing))


def _unjudged(exe: str, problem: str) -> Process:
    return Process(0, 0, exe, (), (), CacheProblem("", problem), (), {}, {}, problem)


def _with(
    process: Process,
    loaded: Mapping[str, str],
    holder: Mapping[str, str] | None = None,
    missing: tuple[Missing, ...] = (),
) -> Process:
    return replace(
        process,
        loaded=dict(loaded),
        holder=dict(holder or process.holder),
        torch_missing=missing or process.torch_missing,
    )


def _hold(
    resolver: Resolver, path: str, loaded: dict[str, str], holder: dict[str, str], who: str
) -> list[Missing]:
    """Load ``path`` into the process being built (names and holders added); what it lacks."""
    outcome = resolver.load(path)
    for name, found in outcome.brought.items():
        loaded.setdefault(name, found)
        holder.setdefault(found, who)
    loaded.setdefault(path, path)
    holder.setdefault(path, who)
    return list(outcome.missing)


def preloaded_cuda(torch_dir: Path, search_path: Iterable[str]) -> list[str]:
    """The libraries torch's ``_load_global_deps`` preloads from the ``nvidia-*`` wheels once
    its CUDA runtime is loaded: its ``_preload_cuda_deps`` list (folder, file pattern), each
    the first match along ``sys.path`` (``nvidia/FOLDER/lib``, ``nvidia/cuMAJOR/lib``,
    ``FOLDER/lib``), read from ``torch/__init__.py`` with ``ast``. None where that torch
    preloads only when its own load failed (before torch 2.9)."""
    try:
        source = read_regular(torch_dir / "__init__.py", _TORCH_INIT_BYTES)
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    wanted = _preload_list(tree)
    if not wanted or not _preloads_always(tree):
        return []
    cuda = _cuda_major(torch_dir)
    found: list[str] = []
    for folder, pattern in wanted:
        for entry in search_path:
            candidates = [Path(entry, "nvidia", folder, "lib")]
            if cuda is not None:
                candidates.append(Path(entry, "nvidia", f"cu{cuda}", "lib"))
            candidates.append(Path(entry, folder, "lib"))
            hits = [str(d / n) for d in candidates for n in _names(d) if fnmatch.fnmatchcase(n, pattern)]
            if hits:
                found.append(hits[0])
                break
    return found


def _names(folder: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(folder))[:4096]
    except OSError:
        return []


def _preload_list(tree: ast.Module) -> list[tuple[str, str]]:
    """The (folder, pattern) literals of ``_preload_cuda_deps``'s list, in order."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "_preload_cuda_deps":
            out = []
            for sub in ast.walk(node):
                if isinstance(sub, ast.Tuple) and len(sub.elts) == 2:
                    a, b = (e.value if isinstance(e, ast.Constant) else None for e in sub.elts)
                    if isinstance(a, str) and isinstance(b, str):
                        out.append((a, b))
            return out
    return []


def _preloads_always(tree: ast.Module) -> bool:
    """Does ``_load_global_deps`` preload after a successful load (``required=False``), not
    only when loading ``libtorch_global_deps`` failed?"""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "_load_global_deps":
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Name)
                    and sub.func.id == "_preload_cuda_deps"
                    and any(k.arg == "required" for k in sub.keywords)
                ):
                    return True
    return False


def _cuda_major(torch_dir: Path) -> str | None:
    try:
        text = read_regular(torch_dir / "version.py", 1 << 16).decode("utf-8", "replace")
    except OSError:
        return None
    m = re.search(r"^cuda\s*(?::\s*\S+\s*)?=\s*['\"](\d+)\.", text, re.MULTILINE)
    return m.group(1) if m else None
