"""Which installed distributions load on a torch (``doctor``): the one verdict
(``torchabi.verdicts``) on each distribution with compiled torch code, the torch libraries'
own exports deciding where they were read, and the fix in a line.

Three torches are judged the same way (``JudgedTorch``): the environment's own (its version and
build from its distribution, its exports from its ``torch/lib``), a planned one (``--torch``,
``--torch-backend``: the verdict alone) and a torch wheel or folder (``--against``: its
exports too). Where exports were read, a torch import they lack makes the distribution "does
not load" whatever its need says, and an unstable build whose every torch import is there is
dated by that torch itself. A torch newer than this torchwheel's release list is said to be
so: an unstable build's verdict there is "unknown", never a guess (issue 38's
``Verdict.newer``, where present, says the same and is taken as it is).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from packaging.version import Version

from torchwheel.analysis.torchcompat import compare_slice
from torchwheel.analysis.wheelfacts import WheelFacts, files_need, torch_need_of
from torchwheel.doctor.environment import Distribution, Environment
from torchwheel.doctor.machine import Machine, Part, cuda_needs, driver_part, torch_driver_words
from torchwheel.errors import clipped
from torchwheel.frozen import frozen
from torchwheel.tables.tableset import Tables
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.backend import ANY_BUILD, TorchBuild, describe_builds
from torchwheel.torchabi.cuda_driver import cuda_text
from torchwheel.torchabi.cxxnames import demangle
from torchwheel.torchabi.need import TorchNeed, release_matches, show_release, show_releases
from torchwheel.torchabi.torch_releases import minor_of, show_minor
from torchwheel.torchabi.torchlibs import TorchLibraries
from torchwheel.torchabi.verdicts import Verdict, combine_parts, minor_verdict, verdict
from torchwheel.wheel.installed import NotRead


@frozen
class JudgedTorch:
    """The torch a diagnosis judges against. ``how``: ``installed`` (the environment's own),
    ``planned`` (``--torch``) or ``against`` (a torch wheel or folder). ``libraries``: its
    exports, where they were read; ``minor_only``: a plan that named a minor (every known
    release of it is judged, ``verdicts.minor_verdict``)."""

    version: Version | None
    build: TorchBuild | None
    gpu: int | None
    markers: Mapping[str, str]
    how: str = "installed"
    libraries: TorchLibraries | None = None
    minor_only: bool = False
    libraries_problem: str = ""  # why the exports of the installed torch were not read
    # newer than every release of the run's tables (``Releases.release_newer_than_tables``)
    newer_than_tables: bool = False

    @property
    def label(self) -> str:
        if self.version is None:
            return "no torch"
        shown = show_minor(minor_of(self.version)) if self.minor_only else self.version.public
        built = f", {self.build}" if self.build is not None else ", build not known"
        return f"torch {shown}{built}"


@frozen
class DiagnosisRow:
    """One distribution: its need, the verdict, the fix. ``missing``: torch symbols its
    libraries import that the judged torch's exports lack; ``before``: in a plan, the
    verdict on the environment's own torch (what the change breaks)."""

    name: str
    version: str
    where: str
    need: TorchNeed | None
    verdict: Verdict
    fix: str = ""
    missing: tuple[str, ...] = ()
    before: Verdict | None = None
    not_read: bool = False  # its files cannot be known (no RECORD, editable, a link out): not judged
    # what does not load on this machine (``doctor.machine``): a required part made the
    # verdict "no"; the others make a row that loads "partly"
    parts: tuple[Part, ...] = ()

    @property
    def state(self) -> str:
        """The word the summary counts by: ``loads``; ``partly`` (the import works, parts of
        it do not load: optional parts on this torch, ``verdict.partly``, or parts this
        machine stops, ``parts``; ``partly`` names both); ``no``; ``excluded`` (it loads, but
        its own ``Requires-Dist`` excludes this torch: ``pip check`` fails and pip may move
        torch); ``unknown``; ``not read``."""
        if self.not_read:
            return "not read"
        if self.verdict.loads:
            return "partly" if self.partly else "loads"
        if self.verdict.cell == "unknown":
            return "unknown"
        return "excluded" if self.verdict.excluded_only else "no"

    @property
    def partly(self) -> tuple[str, ...]:
        """What of a distribution that imports does not load, each in words: its optional
        parts on the judged torch, then what this machine stops (empty when none)."""
        return (*self.verdict.partly, *(p.words for p in self.parts if not p.required))

    @property
    def breaks(self) -> bool:
        """Loads on the environment's own torch, not on the one judged."""
        return self.before is not None and self.before.loads and not self.verdict.loads


@frozen
class Diagnosis:
    judged: JudgedTorch
    rows: tuple[DiagnosisRow, ...]
    without_torch: int
    installed: JudgedTorch | None = None  # in a plan or --against: the environment's own torch
    # the .pth import lines of the environment not run (``TorchTarget.not_run``): whatever
    # they add at startup was not read; listed and counted, the exit code does not change
    # (setuptools puts one in nearly every environment: distutils-precedence.pth)
    not_run: tuple[str, ...] = ()
    more_not_run: int = 0
    machine: Machine | None = None  # the driver and the libraries outside torch, where read

    @property
    def exit_code(self) -> int:
        """1 when a distribution with compiled torch code does not load, cannot be judged, or
        loads against its own requirement, else 0 (``cli/exits.py``): one that imports with
        optional parts that do not load is a warning (``partly``), one whose files cannot be
        known is listed, not judged."""
        return 1 if any(r.state in ("no", "unknown", "excluded") for r in self.rows) else 0


def diagnose(
    env: Environment,
    judged: JudgedTorch,
    tables: Tables,
    installed: JudgedTorch | None = None,
    machine: Machine | None = None,
    libraries: Mapping[str, tuple[Part, ...]] | None = None,
) -> Diagnosis:
    """Every distribution of ``env`` judged against ``judged`` (and, for a plan, against the
    environment's own torch too); those not read are rows of their own, ``unknown``.
    ``machine``: the driver its CUDA code is judged against; ``libraries``: the parts each
    distribution (by its dist-info path) cannot load on this machine (``machine.library_parts``)."""
    rows = []
    for d in env.with_torch:
        own = (libraries or {}).get(str(d.installed.dist_info), ())
        before = None
        if installed is not None:
            before = _machine_verdict(judge_distribution(d, installed, tables).verdict, own)
        row = judge_distribution(d, judged, tables, loads_now=before.loads if before is not None else None)
        rows.append(replace(with_machine(row, d, judged, machine, own), before=before))
    rows += [
        DiagnosisRow(u.name, u.version, u.where, None, Verdict("unknown", u.reason)) for u in env.unreadable
    ]
    rows += [not_read_row(n) for n in env.not_read]
    return Diagnosis(judged, tuple(rows), env.without_torch, installed, machine=machine)


def with_machine(
    row: DiagnosisRow,
    d: Distribution,
    judged: JudgedTorch,
    machine: Machine | None,
    libraries: tuple[Part, ...],
) -> DiagnosisRow:
    """The row with what this machine lets load of it (``doctor.machine``): a required part
    that fails makes it not load (axis ``system library`` or ``driver``), the others make
    it ``partly``; the driver is judged against the judged torch's build."""
    parts = list(libraries)
    if machine is not None and judged.version is not None:
        needs = cuda_needs(d.facts, judged.build, torch_words(judged), judged.gpu)
        driven = driver_part(needs, machine.driver)
        if driven is not None:
            parts.append(driven)
    if not parts:
        return row
    verdict = _machine_verdict(row.verdict, parts)
    fix = row.fix
    if verdict is not row.verdict or (row.verdict.loads and not fix):
        fix = (
            next((p.fix for p in parts if p.required), "") or fix or next((p.fix for p in parts if p.fix), "")
        )
    return replace(row, verdict=verdict, fix=fix, parts=tuple(parts))


def _machine_verdict(verdict: Verdict, parts: Iterable[Part]) -> Verdict:
    """A verdict with the required parts that fail here: "no" on their axis where it loaded."""
    required = [p for p in parts if p.required]
    if not required:
        return verdict
    words = "; ".join(p.words for p in required)
    if verdict.loads:
        return Verdict("no", words, required[0].axis)
    return replace(verdict, reason=f"{verdict.reason}; and {words}")


def not_read_row(item: NotRead) -> DiagnosisRow:
    return DiagnosisRow(
        item.name, item.version, item.where, None, Verdict("unknown", item.reason), not_read=True
    )


def judge_distribution(
    d: Distribution, judged: JudgedTorch, tables: Tables, loads_now: bool | None = None
) -> DiagnosisRow:
    """The verdict on one distribution (module docstring) and its fix; ``loads_now``: in a
    plan, whether it loads on the environment's own torch (then "keep torch" is a fix)."""
    w = d.facts
    name, version, where = d.name, d.version, str(d.installed.dist_info)
    if w.unreadable:
        bad = w.unreadable[0]
        why = f"its compiled file {bad.member} cannot be read ({clipped(bad.error, 160)})"
        return DiagnosisRow(
            name, version, where, None, Verdict("unknown", why), "`torchwheel show` on it says more"
        )
    if d.outside:
        first = d.outside[0]
        why = f"its RECORD names compiled files outside the environment ({first.path}: {first.detail})"
        return DiagnosisRow(name, version, where, None, Verdict("unknown", why), f"reinstall {name}")
    need = torch_need_of(w, "binaries")
    optional = {f for p in need.optional for f in p.files}
    missing = _missing(w, judged.libraries, tables, optional) if judged.libraries is not None else ()
    found = _verdict(replace(need, optional=()), judged, missing, tables)
    fix = fix_for(name, need, found, judged, loads_now)
    if found.loads:
        found, fix = _parts(w, need, found, judged, tables)
    return DiagnosisRow(name, version, where, need, found, fix, missing)


def judge_files(d: Distribution, members: Iterable[str], judged: JudgedTorch, tables: Tables) -> Verdict:
    """Whether these files of a distribution load on the judged torch, as if its import
    needed each of them (``--explain`` on one file): the one verdict on their own need,
    their imports against the torch's exports where they were read."""
    wanted = frozenset(members)
    need = files_need(d.facts, wanted)
    missing = (
        _missing(d.facts, judged.libraries, tables, frozenset(), wanted)
        if judged.libraries is not None
        else ()
    )
    return _verdict(need, judged, missing, tables)


def _parts(
    w: WheelFacts, need: TorchNeed, found: Verdict, judged: JudgedTorch, tables: Tables
) -> tuple[Verdict, str]:
    """A verdict that loads, with what its optional parts do on the judged torch (each by
    the same verdict, its exports where they were read: ``verdicts.combine_parts``), and
    the fix for those that do not load."""
    judged_parts = []
    for part in need.optional:
        missing = (
            _missing(w, judged.libraries, tables, frozenset(), frozenset(part.files))
            if judged.libraries is not None
            else ()
        )
        judged_parts.append((part, _verdict(part.need, judged, missing, tables)))
    if judged.version is None:
        return found, ""
    combined = combine_parts(found, judged_parts, judged.version)
    fix = ""
    failing = next(((p, on) for p, on in judged_parts if not on.loads and on.cell != "unknown"), None)
    if failing is not None and combined.partly:
        part, on = failing
        fix = f"its import works; to use its {part.when} parts, " + fix_for(
            w.metadata.name or "it", part.need, on, judged
        )
    elif failing is not None and not combined.loads:
        fix = fix_for(w.metadata.name or "it", failing[0].need, failing[1], judged)
    return combined, fix


def _verdict(need: TorchNeed, judged: JudgedTorch, missing: tuple[str, ...], tables: Tables) -> Verdict:
    """The one verdict, with the exports where they were read: an axis that refuses on its
    own (the build, the requirement) says so first, a missing export refuses what the need
    alone would let load, and an unstable build whose imports are all there is dated by
    this very torch."""
    torch = judged.version
    if torch is None or judged.libraries is None:
        return _past_tables(need, judged, _one_verdict(need, judged, tables), tables)
    if (
        not missing
        and need.kind == "unstable"
        and need.releases_from != "names"
        and minor_of(torch) not in need.lock_refused  # its own import refuses this torch
    ):
        need = replace(need, releases=frozenset({minor_of(torch)}), releases_from="exports")
    found = _one_verdict(need, judged, tables)
    if not missing:
        return found
    shown = ", ".join(clipped(demangle(m) or m, 100) for m in missing[:2])
    more = f" and {len(missing) - 2} more" if len(missing) > 2 else ""
    lacking = f"torch {torch.public} does not export {shown}{more}, which it imports"
    if found.cell == "no" and found.axis != "version":
        return replace(found, reason=f"{found.reason}; and {lacking}")
    return Verdict("no", f"{need}: {lacking}", "version")


def _one_verdict(need: TorchNeed, judged: JudgedTorch, tables: Tables) -> Verdict:
    if judged.minor_only and judged.version is not None:
        return minor_verdict(
            need, judged.markers, minor_of(judged.version), judged.build, judged.gpu, tables=tables
        )
    return verdict(need, judged.markers, judged.version, judged.build, judged.gpu, tables=tables)


def _past_tables(need: TorchNeed, judged: JudgedTorch, found: Verdict, tables: Tables) -> Verdict:
    """A torch newer than the release list: an unstable build dated by its imports cannot be
    judged there (the exports index ends before it), a stable build's "loads" rests on the
    stable ABI's promise; both said, never guessed. Per-release builds (by their file names)
    without one for that torch do not load there, whatever the tables say."""
    if not judged.newer_than_tables or getattr(found, "newer", False) or judged.version is None:
        return found
    note = (
        f"torch {show_minor(minor_of(judged.version))} is newer than this torchwheel's tables "
        f"(newest known: {tables.releases.newest()})"
    )
    dated = need.kind == "unstable" and need.releases_from == "exports"  # by an index that ends before it
    if dated and found.axis == "version":
        return Verdict("unknown", f"{need}: {note}: whether it loads there cannot be told", "version")
    if found.loads and need.kind == "stable":
        return replace(found, reason=f"{found.reason} ({note}: the stable ABI's promise, not the tables)")
    return found


def _missing(
    w: WheelFacts,
    torch: TorchLibraries,
    tables: Tables,
    skip: frozenset[str] | set[str] = frozenset(),
    only: frozenset[str] | None = None,
) -> tuple[str, ...]:
    """The torch symbols the libraries the package loads on this torch import (strongly)
    that the torch's exports lack, less what the distribution's own libraries export;
    ``skip``: files not judged here (its optional parts), ``only``: the files judged."""
    release = torch_releases.release_of(torch.version) if torch.version else None
    others: set[str] = set()
    if release is not None:
        for group in w.alternatives:
            others.update(m for build, m in group.members if not release_matches(build, release))
    own = {e for b in w.binaries for s in b.analysis.facts.slices for e in s.exports}
    lacking: set[str] = set()
    for b in w.binaries:
        if b.member in others or b.member in skip or (only is not None and b.member not in only):
            continue
        for s in b.analysis.slices:
            found = compare_slice(b.member, b.analysis.facts.format, s.facts, torch, tables.shims)
            lacking.update(found.missing)
    return tuple(sorted(lacking - own))


# -- the fix -------------------------------------------------------------------------------------


def keep_words(need: TorchNeed) -> str:
    """The torch releases a distribution loads on, as a constraint: ``torch>=2.10``,
    ``torch 2.13.*``, ``torch 2.4-2.9``; "" when nothing dates it."""
    if need.kind == "stable" and need.floor is not None:
        return f"torch>={need.floor.minor_release if need.floor.patch == 0 else need.floor.release}"
    if need.kind == "unstable" and need.releases:
        if len(need.releases) == 1:
            (only,) = need.releases
            return f"torch=={show_release(only)}" + (".*" if len(only) == 2 else "")
        return f"torch {show_releases(need.releases)}"
    return ""


def fix_for(
    name: str, need: TorchNeed, found: Verdict, judged: JudgedTorch, loads_now: bool | None = None
) -> str:
    """What to do, in a line: nothing for a distribution that loads. Keeping the torch one
    has is a fix only where the distribution loads on it (``loads_now``)."""
    if found.loads:
        return ""
    if found.cell == "unknown":
        return _to_decide(need, found)
    here = f"torch {show_minor(minor_of(judged.version))}" if judged.version is not None else "this torch"
    keep = keep_words(need)
    verb = "keep" if judged.how != "installed" and loads_now is not False else "install"
    if keep and need.builds is not None and need.builds != ANY_BUILD:
        keep += f" ({describe_builds(need.builds)})"
    keep_or = f", or {verb} {keep}" if keep and judged.version else ""
    if found.axis == "build":
        built = f"for torch's {judged.build}" if judged.build is not None else "for this torch's build"
        return f"reinstall {name} built {built}, or install the torch build it needs ({describe_builds(need.builds)})"
    if found.axis == "gpu":
        return f"reinstall {name} with GPU code for sm_{judged.gpu}"
    if found.axis == "requirement":
        pins = ", ".join(str(r) for r in need.requirements)
        return f"install a {name} release whose requirement admits {here}, or {verb} {pins}"
    text = f"reinstall {name} built for {here}{keep_or}"
    if need.kind == "unstable" and not need.requirements and keep:
        text += f" ({name} declares no torch requirement, so pip does not keep torch at {keep})"
    return text


def _to_decide(need: TorchNeed, found: Verdict) -> str:
    if found.axis == "build" and need.builds is not None:
        return "give --torch-backend (cpu, cu128, cu130, rocm7.1, xpu) to judge its build"
    if found.axis == "version" and need.kind == "unstable" and not need.releases:
        return "`torchwheel doctor --against TORCH_WHEEL` compares its imports with that torch's exports"
    return ""


def environment_summary(d: Diagnosis) -> str:
    """One line: what the torch judged means for the environment (a plan: what it breaks)."""
    named = {
        state: [r.name for r in d.rows if r.state == state]
        for state in ("no", "excluded", "partly", "unknown", "not read")
    }
    head = d.judged.label
    if d.installed is not None:
        broken = [r.name for r in d.rows if r.breaks]
        already = [r.name for r in d.rows if r.state == "no" and not r.breaks]
        verb = f"moving to {head}" if d.judged.how == "planned" else f"{head} ({d.judged.how})"
        parts = [f"{verb} breaks {_names(broken)}" if broken else f"{verb} breaks nothing that loads now"]
        if already:
            parts.append(f"does not load on it either: {_names(already)}")
    else:
        judged = [r for r in d.rows if r.state != "not read"]
        loads = sum(1 for r in judged if r.state in ("loads", "partly"))
        parts = [f"{head}: {loads} of {len(judged)} with compiled torch code load"]
        if named["no"]:
            parts.append(f"does not load: {_names(named['no'])}")
    if named["partly"]:
        parts.append(f"loads partly (parts do not load): {_names(named['partly'])}")
    if named["excluded"]:
        parts.append(f"loads, but its own requirement excludes the torch: {_names(named['excluded'])}")
    if d.machine is not None and (driver := driver_summary(d)):
        parts.append(driver)
    if named["unknown"]:
        parts.append(f"unknown: {_names(named['unknown'])}")
    if named["not read"]:
        parts.append(f"not read: {_names(named['not read'])}")
    skipped = len(d.not_run) + d.more_not_run
    if skipped:
        parts.append(f"{skipped} .pth import line{'s' if skipped > 1 else ''} not run (listed above)")
    return "; ".join(parts) + f" ({d.without_torch} without compiled torch code, not listed)"


def driver_summary(d: Diagnosis) -> str:
    """The driver against the judged torch and the distributions whose CUDA code it cannot
    run, in a line: "This machine's driver supports CUDA 12.4: torch 2.14.1+cu130 and
    torchvision need CUDA 13"; "" when there is nothing to say."""
    machine = d.machine
    if machine is None or machine.driver.state != "found" or machine.driver.cuda is None:
        return ""
    judged = d.judged
    torch = torch_words(judged)
    words = torch_driver_words(judged.build, torch, machine.driver) if judged.version is not None else ""
    names = [torch] if words else []
    driven = [(r.name, p.cuda) for r in d.rows for p in r.parts if p.axis == "driver" and p.cuda is not None]
    names += [name for name, _ in driven]
    if not names:
        return ""
    cudas = [cuda for _, cuda in driven]
    if words and judged.build is not None and judged.build.major is not None:
        cudas.append((judged.build.major, judged.build.minor or 0))
    top = max(cudas)  # a new major is named alone (any minor of it needs that driver); PTX by its minor
    needed = f"CUDA {top[0]}" if top[0] > machine.driver.cuda[0] else f"CUDA {cuda_text(top)}"
    verb = "needs" if len(names) == 1 else "need"
    return (
        f"this machine's driver supports CUDA {cuda_text(machine.driver.cuda)}: {_and(names)} {verb} {needed}"
    )


def torch_words(judged: JudgedTorch) -> str:
    """``torch 2.14.1+cu130``: the judged torch by its version and, where the version has no
    local label, its build's backend name."""
    if judged.version is None:
        return "no torch"
    shown_version = judged.version.public
    if not judged.version.local and judged.build is not None:
        shown_version += f"+{judged.build.backend}"
    return f"torch {shown_version}"


def _and(names: list[str]) -> str:
    if len(names) > 8:
        return _names(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _names(names: Iterable[str]) -> str:
    found = list(names)
    return ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
