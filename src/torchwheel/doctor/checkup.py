"""``torchwheel doctor``: read a target environment and judge every installed extension
against a torch: its own, a planned one (``--torch``) or a torch wheel (``--against``).

The edges of the command: the interpreter is probed in a subprocess (``target.probe``: run
with ``-I -S``, so nothing of the environment runs; its search path computed from its
``pyvenv.cfg`` and ``.pth`` path lines, its torch read from disk; ``.pth`` import lines are
not run, and listed), its distributions are read in place (``wheel.installed``, ``doctor.environment``),
its torch's exports read through the torch distribution's own RECORD (``doctor.owntorch``,
kept between runs in the user's data folder), and the judgement is
``doctor.diagnosis``, pure. ``--explain`` reads the same environment for the one file an
import error names (``doctor.import_error``).
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from torchwheel import limits
from torchwheel.analysis.pythonabi import parse_suffix
from torchwheel.analysis.torchcompat import torch_imports
from torchwheel.doctor.diagnosis import (
    Diagnosis,
    DiagnosisRow,
    JudgedTorch,
    diagnose,
    judge_distribution,
    judge_files,
)
from torchwheel.doctor.doctor_report import doctor_json
from torchwheel.doctor.early import probe_beside_reading, started
from torchwheel.doctor.environment import Distribution, Environment, read_environment
from torchwheel.doctor.import_error import (
    Explanation,
    Question,
    date_symbol,
    hook_stem,
    library_words,
    module_file,
    parse_import_error,
)
from torchwheel.doctor.libsearch import Resolver
from torchwheel.doctor.machine import Machine, Part, library_parts, read_machine
from torchwheel.doctor.machine_explain import MachineAnswer, explain_driver, explain_kernel, explain_version
from torchwheel.doctor.owntorch import installed_judged
from torchwheel.errors import InputError, clipped
from torchwheel.frozen import frozen
from torchwheel.selection import target as targets
from torchwheel.selection.target import TorchTarget
from torchwheel.tables.exports import platform_of
from torchwheel.tables.tablechoice import choose_tables
from torchwheel.tables.tableset import Tables
from torchwheel.tables.torchcache import cache_folder, clean_files, keep_clean
from torchwheel.torchabi.backend import parse_backend
from torchwheel.torchabi.torch_named import named_torch
from torchwheel.torchabi.torchlibs import TorchLibraries, read_torch
from torchwheel.wheel.installed import Installed, NotRead, installed


@frozen
class DoctorResult:
    """What ``torchwheel doctor`` says of an environment (``api.doctor``): the ``target``
    interpreter, the ``diagnosis`` (``rows``: one per distribution with compiled torch code,
    each ``name``, ``version``, ``need``, ``verdict``, ``fix``, ``state``, ``breaks``), the
    ``explanation`` of ``--explain``, ``exit_code`` and ``to_json()`` (the command's document)."""

    target: TorchTarget
    diagnosis: Diagnosis
    explanation: Explanation | None = None

    @property
    def rows(self) -> tuple[DiagnosisRow, ...]:
        return self.diagnosis.rows

    @property
    def exit_code(self) -> int:
        if self.explanation is not None:
            if self.explanation.machine is not None and self.explanation.row is None:
                return 0 if self.explanation.machine.fits else 1
            row = self.explanation.row
            return 0 if row is not None and row.verdict.loads else 1
        return self.diagnosis.exit_code

    def to_json(self) -> dict[str, Any]:
        """The ``doctor --format json`` document."""
        return doctor_json(self.target.description, self.diagnosis, self.explanation)


def doctor(
    *,
    python: str | os.PathLike[str] | None = None,
    torch: str | None = None,
    torch_backend: str | None = None,
    against: str | os.PathLike[str] | None = None,
    gpu: str | None = None,
    explain: str | None = None,
    symbols: str | os.PathLike[str] | Tables | None = None,
    cache: bool | str | os.PathLike[str] = True,
) -> DoctorResult:
    """``torchwheel.api.doctor`` (``docs/reference/api.md``): the installed distributions of the
    environment of ``python`` (default: this interpreter's; nothing of it is imported here)
    with compiled torch code, judged against its torch, a planned ``torch`` (``2.16``,
    ``2.16.1``; ``torch_backend`` its build, ``cu130``) or the torch wheel or folder
    ``against``, whose exports then decide. ``explain``: a module name or an ``ImportError``'s
    text. ``symbols``: a shim table file (``TORCHWHEEL_SYMBOLS`` when None). ``cache``: where
    the installed torch's exports and RECORD rows, and which compiled files do not name
    torch, are kept between runs (True: the user's data folder, ``torchcache.cache_folder``;
    False: read every time). An environment that cannot be read raises ``InputError``."""
    chosen = symbols if isinstance(symbols, Tables) else choose_tables(_path(symbols), None)
    folder = cache_folder() if cache is True else None if cache is False else Path(cache)
    return run_checkup(chosen, _text(python), torch, torch_backend, _text(against), gpu, explain, folder)


def _path(value: str | os.PathLike[str] | None) -> Path | None:
    return Path(value) if value is not None else None


def _text(value: str | os.PathLike[str] | None) -> str | None:
    return os.fspath(value) if value is not None else None


def run_checkup(
    tables: Tables,
    python: str | None = None,
    torch: str | None = None,
    torch_backend: str | None = None,
    against: str | None = None,
    gpu: str | None = None,
    explain: str | None = None,
    cache: Path | None = None,
) -> DoctorResult:
    """Probe, read, judge (module docstring); ``InputError`` for an environment that cannot
    be read or options that contradict each other. ``cache``: the folder the installed
    torch's answers are kept in (``doctor.owntorch``), None for none."""
    if torch is not None and against is not None:
        raise InputError(
            "--torch and --against exclude each other: judge a planned torch or a torch wheel",
            reference="misuse",
        )
    if torch_backend is not None and torch is None:
        raise InputError(
            "--torch-backend names the build of a planned torch: give --torch too", reference="misuse"
        )
    question = parse_import_error(explain) if explain is not None else None
    clean = clean_files(cache) if cache is not None else None
    target, early = probe_beside_reading(python, tables, whole=question is not None, clean=clean)
    if gpu is not None:
        target = targets.with_gpu(target, gpu)
    if not target.search_path:
        raise InputError(
            f"--python {target.python}: its search path names no directory to read",
            reference="interpreter-unusable",
        )
    asked = _asked_file(question, target) if question is not None else None
    items = list(installed(target.search_path, target.prefixes))
    machine_read = started(_read_machine, target, _torch_dir(items))
    env = read_environment(items, tables, asked, early, clean)
    if cache is not None and clean is not None:
        keep_clean(cache, clean)
    wanted = torch_imports((d.facts for d in env.with_torch), tables.shims)
    if question is not None and question.symbol:
        wanted |= {question.symbol}
    own = _past(installed_judged(target, env, wanted, cache), tables)
    judged = own
    if torch is not None:
        judged = _past(_planned(target, torch, torch_backend), tables)
    elif against is not None:
        libraries = read_torch(against, wanted)
        judged = _past(_against(target, libraries), tables)
    machine, parts = _machine(machine_read(), target, env)
    diagnosis = diagnose(env, judged, tables, own if judged is not own else None, machine, parts)
    diagnosis = replace(diagnosis, not_run=target.not_run, more_not_run=target.more_not_run)
    explanation = None
    if question is not None:
        explanation = _explain(question, asked, env, judged, tables)
        answer = _machine_answer(question, machine, diagnosis, env, target.gpu)
        if answer is not None:
            explanation = replace(explanation, machine=answer)
    return DoctorResult(target, diagnosis, explanation)


def _machine_answer(
    question: Question, machine: Machine, diagnosis: Diagnosis, env: Environment, gpu: int | None
) -> MachineAnswer | None:
    """The machine's answer to an error it causes (``doctor.machine_explain``), None for others."""
    if question.version is not None:
        return explain_version(question.version, question.version_library, question.path, machine, env)
    if question.machine == "driver":
        return explain_driver(machine, diagnosis)
    if question.machine == "kernel":
        return explain_kernel(gpu, env)
    return None


def _torch_dir(items: list[Installed | NotRead]) -> str | None:
    """The environment's torch package folder: of its first torch distribution, as
    ``read_environment`` takes it for the environment's own."""
    torch = next((i for i in items if isinstance(i, Installed) and i.key == "torch"), None)
    if torch is not None and (torch.site / "torch").is_dir():
        return str(torch.site / "torch")
    return None


def _read_machine(target: TorchTarget, torch_dir: str | None) -> Machine:
    """The machine the interpreter's loader sees (``doctor.machine``)."""
    platform_name = target.markers.get("sys_platform", sys.platform)
    return read_machine(target.python, platform_name, torch_dir, target.search_path)


def _machine(
    machine: Machine, target: TorchTarget, env: Environment
) -> tuple[Machine, dict[str, tuple[Part, ...]]]:
    """The machine, and what of each distribution it cannot load there."""
    if machine.process is None:
        return machine, {}
    resolver = Resolver(machine.process)
    torch = str(target.torch) if target.torch is not None else None
    libraries = {
        str(d.installed.dist_info): library_parts(d.facts, str(d.installed.site), resolver, torch)[0]
        for d in env.with_torch
    }
    return machine, libraries


def _past(judged: JudgedTorch, tables: Tables) -> JudgedTorch:
    """The judged torch, marked when it is newer than every release of ``tables``."""
    newer = judged.version is not None and tables.releases.release_newer_than_tables(judged.version)
    return replace(judged, newer_than_tables=newer)


def _planned(target: TorchTarget, torch: str, backend: str | None) -> JudgedTorch:
    version = named_torch(torch)
    if version.local or version.is_prerelease:
        raise InputError(
            f"--torch {clipped(torch, 40)!r}: give a torch release as X.Y or X.Y.Z",
            reference="bad-option-value",
        )
    build = parse_backend(backend) if backend is not None else None
    return JudgedTorch(
        version, build, target.gpu, target.markers, "planned", minor_only=len(version.release) == 2
    )


def _against(target: TorchTarget, libraries: TorchLibraries) -> JudgedTorch:
    try:
        version = (
            Version(limits.check_version(f"{libraries.origin}: torch's version", libraries.version))
            if libraries.version
            else None
        )
    except InvalidVersion:
        version = None
    if version is None:
        raise InputError(
            f"{libraries.origin}: the torch's version cannot be read (no torch/version.py, or one that "
            "is not a regular file or names no version)",
            reference="torch-unreadable",
        )
    return JudgedTorch(version, libraries.build, target.gpu, target.markers, "against", libraries)


def _asked_file(question: Question, target: TorchTarget) -> str:
    """The real path of the file an import error or module name points at ("" where it
    names none: a missing library alone, an op, a module hook, the machine's errors)."""
    if question.op is not None or question.hook is not None or question.machine is not None:
        return ""
    if question.library is not None and question.path is None:
        return ""
    if question.version is not None and question.path is None:
        return ""
    found = (
        module_file(question.module, target.search_path)
        if question.module is not None
        else Path(question.path or "")
    )
    if found is None or not found.exists():
        where = question.module or question.path
        raise InputError(
            f"--explain: {clipped(str(where), 120)}: not found on {target.python}'s search path",
            reference="not-found",
        )
    return os.path.realpath(found)


def _explain(
    question: Question, asked: str | None, env: Environment, judged: JudgedTorch, tables: Tables
) -> Explanation:
    if question.op is not None:
        return _explain_op(question, env, judged, tables)
    if question.hook is not None:
        return _explain_hook(question, env, judged, tables)
    owner = env.owner
    row = judge_distribution(owner, judged, tables) if isinstance(owner, Distribution) else None
    file = _file(owner, asked, judged, tables)
    if question.library is not None:
        wanted = question.library
        needing = tuple(
            d.name
            for d in env.with_torch
            if any(wanted in s.needed for b in d.facts.binaries for s in b.analysis.facts.slices)
        )
        return Explanation(
            question, asked or None, row, library=library_words(wanted), needing=needing, **file
        )
    dated = None
    exported = None
    if question.symbol is not None:
        dated = date_symbol(question.symbol, tables, _platform(asked, owner))
        if judged.libraries is not None:
            exported = question.symbol in judged.libraries.all_exports
    return Explanation(question, asked, row, dated, exported, **file)


def _file(
    owner: Distribution | Installed | None, asked: str | None, judged: JudgedTorch, tables: Tables
) -> dict[str, Any]:
    """The asked file as its distribution lists it: how its package reaches it, and the
    verdict on it alone."""
    if not isinstance(owner, Distribution) or not asked:
        return {}
    for b in owner.facts.binaries:
        if os.path.realpath(owner.installed.site / b.member) == asked:
            return {
                "member": b.member,
                "reach": owner.facts.reach.of(b.member).words,
                "verdict": judge_files(owner, [b.member], judged, tables),
            }
    return {}


def _namespace_key(name: str) -> str:
    return name.lower().replace("-", "_").strip("_").removesuffix("_ns")


def _explain_op(question: Question, env: Environment, judged: JudgedTorch, tables: Tables) -> Explanation:
    """``operator NS::OP does not exist``: the distribution whose package is named for the
    namespace (``torchvision``, ``_torchaudio``, ``torchcodec_ns``), its op libraries (the
    files its code loads by path), and why they do not load here."""
    ns = _namespace_key((question.op or "").split("::", 1)[0])
    for d in env.with_torch:
        tops = {_namespace_key(b.member.split("/", 1)[0]) for b in d.facts.binaries} | {
            _namespace_key(d.name)
        }
        if not any(t and (ns == t or ns.startswith(t) or t.startswith(ns)) for t in tops):
            continue
        libraries = tuple(b.member for b in d.facts.binaries if d.facts.reach.of(b.member).how == "library")
        files = libraries or tuple(b.member for b in d.facts.binaries)
        return Explanation(
            question, None, judge_distribution(d, judged, tables), candidates=files,
            verdict=judge_files(d, files, judged, tables),
            reach="; ".join(f"{m}: {d.facts.reach.of(m).words}" for m in files[:4]),
        )  # fmt: skip
    return Explanation(question, None, None)


def _explain_hook(question: Question, env: Environment, judged: JudgedTorch, tables: Tables) -> Explanation:
    """``dynamic module does not define module export function (PyInit__C)``: the files
    named as that module without the hook (a torch op library imported as a module: load
    it by path instead), with their distributions."""
    hook = question.hook or ""
    stem = hook_stem(hook)
    found = [
        (d, b.member)
        for d in env.with_torch
        for b in d.facts.binaries
        if parse_suffix(b.member).module == stem
        and not any(hook in s.python.hooks for s in b.analysis.slices)
    ]
    # the import system loads only what the package imports: a file it loads by path is not it
    order = {"module": 0, "unreached": 1, "dependency": 2, "library": 3}
    found.sort(key=lambda f: order[f[0].facts.reach.of(f[1]).how])
    if not found:
        return Explanation(question, None, None)
    d, member = found[0]
    return Explanation(
        question, str(d.installed.site / member), judge_distribution(d, judged, tables), member=member,
        reach=d.facts.reach.of(member).words, candidates=tuple(f"{o.name}: {m}" for o, m in found[:8]),
        verdict=judge_files(d, [member], judged, tables),
    )  # fmt: skip


def _platform(asked: str | None, owner: Distribution | Installed | None) -> str:
    """The exports index's key (``linux-x86_64``) of the file asked about, from its
    distribution's facts; this machine's for a file no distribution lists (never read)."""
    if isinstance(owner, Distribution) and asked:
        for b in owner.facts.binaries:
            if os.path.realpath(owner.installed.site / b.member) == asked and b.analysis.facts.slices:
                return platform_of(b.analysis.facts.format, b.analysis.facts.slices[0].arch)
    machine = platform.machine().lower().replace("amd64", "x86_64").replace("aarch64", "arm64")
    system = {"linux": "elf", "darwin": "macho", "win32": "pe"}.get(sys.platform, "elf")
    return platform_of(system, machine if system != "elf" else platform.machine().lower())
