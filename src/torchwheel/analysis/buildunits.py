"""The torch builds a wheel's libraries load on: its compiled members grouped into
libraries (per torch release, per flavour: the package loads one of each), what each
needs, and who brings the toolkit runtimes (docs/accelerators.md).

Pure functions of the members' facts; ``WheelFacts`` computes each of them once, when it
is first asked, and the rules and reports read that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from packaging.requirements import Requirement
from packaging.tags import Tag

from torchwheel.analysis.alternatives import flavour_words, flavoured, unflavoured_key, unit_key
from torchwheel.analysis.member import MemberBinary
from torchwheel.errors import clipped
from torchwheel.frozen import frozen
from torchwheel.torchabi import accelerators
from torchwheel.torchabi.accelerators import AcceleratorNeeds, LinkedLibrary
from torchwheel.torchabi.backend import (
    ANY_BUILD,
    NO_BUILD,
    BuildSet,
    TorchBuild,
    builds_text,
    describe_builds,
    normalized,
)
from torchwheel.torchabi.grafting import bundled

# component -> toolkit major (None: a major it does not name) -> what brings it
Brought = Mapping[str, Mapping[int | None, str]]


def brought_runtimes(
    requirements: Iterable[Requirement], tags: Iterable[Tag], members: Iterable[str]
) -> Brought:
    """The accelerator runtimes the wheel brings itself: the ``nvidia-*`` distributions its
    requirements install (``accelerators.required_runtimes``) and the copies it bundles."""
    found: dict[str, dict[int | None, str]] = {}
    for component, major, req in accelerators.required_runtimes(requirements, wheel_platform(tags)):
        found.setdefault(component, {}).setdefault(major, f"the requirement {req}")
    for member in members:
        lib = bundled(member)
        if lib is not None and lib.role == "runtime":
            found.setdefault(lib.component, {}).setdefault(lib.toolkit_major, f"the bundled {member}")
    return found


def wheel_platform(tags: Iterable[Tag]) -> str | None:
    """``linux``, ``win32`` or ``darwin`` from the wheel's platform tags, for requirement markers."""
    platforms = {t.platform for t in tags}
    for word, value in (("win", "win32"), ("macosx", "darwin"), ("linux", "linux")):
        if platforms and all(word in p for p in platforms):
            return value
    return None


def own_runtimes(needs: AcceleratorNeeds, brought: Brought) -> tuple[tuple[LinkedLibrary, str], ...]:
    """(runtime, what brings it) for the toolkit runtimes (``libcudart.so.12``,
    ``cublas64_12.dll``) a library needs that the wheel brings itself."""
    out = []
    for lib in needs.libraries:
        by = brought.get(lib.component, {}) if lib.role == "runtime" else {}
        source = by.get(lib.toolkit_major) or by.get(None)
        if source:
            out.append((lib, source))
    return tuple(out)


def brings_own_runtime(needs: AcceleratorNeeds, brought: Brought) -> bool:
    """Does this library load whatever build torch is, because it links no torch and the
    wheel brings every toolkit runtime it needs? A library that links torch, or needs a
    runtime the wheel does not bring, relies on the one torch's build loads: that ties it
    to the build (docs/accelerators.md, "Who brings the runtime")."""
    if needs.links_torch:
        return False
    runtimes = [
        lib for lib in needs.libraries if lib.role == "runtime" and lib.accelerator in ("cuda", "rocm")
    ]
    return bool(runtimes) and len(own_runtimes(needs, brought)) == len(runtimes)


def binds_no_build(needs: AcceleratorNeeds) -> bool:
    """Does the loader bind nothing of a torch build for this library? It links no torch and
    no accelerator library but the driver's (``libcuda.so.1``, which the machine brings, or
    none: nvcc's static runtime opens it at run time). Its GPU code then runs through the
    driver beside any build of torch: reported (``gpu_code``, TW710), never a build need."""
    if needs.links_torch or not needs.accelerators:
        return False
    return all(lib.role == "driver" for lib in needs.libraries if lib.accelerator is not None)


def _library_builds(needs: AcceleratorNeeds, brought: Brought) -> BuildSet:
    """The torch builds one library loads on, from what the loader binds: every build when
    it needs no accelerator, when it binds nothing a torch build brings (``binds_no_build``:
    a statically linked CUDA runtime), or when it links no torch and the wheel brings every
    toolkit runtime it needs (its own requirements or bundled copies: ``brings_own_runtime``);
    none when it needs two accelerators or two CUDA majors at once."""
    if not needs.accelerators or binds_no_build(needs) or brings_own_runtime(needs, brought):
        return ANY_BUILD
    if len(needs.accelerators) > 1:
        return NO_BUILD
    acc = needs.accelerators[0]
    majors = needs.cuda_majors if acc == "cuda" else needs.rocm_majors if acc == "rocm" else ()
    if len(majors) > 1:
        return NO_BUILD
    return frozenset({TorchBuild(acc, majors[0] if majors else None)})


_PROBE_BUILDS = (
    TorchBuild("cpu"),
    *(TorchBuild("cuda", m, 0) for m in (11, 12, 13)),
    *(TorchBuild("rocm", m, 0) for m in (6, 7)),
    TorchBuild("xpu"),
)


@frozen
class BuildUnit:
    """One library of the wheel and its builds (per torch release, per flavour: the
    package loads one of them), with what each build needs and the torch builds the
    package then loads on (``builds``; empty: no build of torch loads it).

    ``preferred``: the flavour the package's loader takes whenever its file exists (the PyG
    pattern, ``analysis.loaders``), which then alone decides; "" when the package picks by
    the torch it finds (``_fits``), or there is one build. ``fallback``: the loader tries
    the builds and goes on without them where none loads (``loaders.fallback_units``): the
    set loads where any member does."""

    key: str  # ``analysis.alternatives.unit_key``
    members: tuple[tuple[str, AcceleratorNeeds], ...]  # (member, needs)
    builds: BuildSet
    preferred: str = ""
    fallback: bool = False
    each: tuple[tuple[str, BuildSet], ...] = ()  # a set with a fallback: (member, its builds)

    @property
    def flavours(self) -> tuple[str, ...]:
        """The flavour words of the builds, as the names spell them (``cpu``, ``cuda``)."""
        return tuple(dict.fromkeys(f for m, _ in self.members for f in flavour_words(m.rpartition("/")[2])))


def _fits(options: list[BuildSet], target: TorchBuild) -> bool:
    """Does a package that picks among these builds of one library by the torch it finds
    load one on ``target``? It takes a build for the target's accelerator where it has one
    (on a CUDA 12 torch, its CUDA flavour, whichever major that is built for), and falls back
    to a build that needs no accelerator only where it has none for that accelerator."""
    own = [o for o in options if o != ANY_BUILD and any(b.kind == target.kind for b in o)]
    if own:
        return any(b.admits(target) for o in own for b in o)
    return any(b.admits(target) for o in options for b in o)


def _summary(fits: Iterable[TorchBuild]) -> BuildSet:
    """The probe builds that fit, as a build set: a kind whose every probed major fits is the
    kind (``cuda``), else its majors (``cuda-12``, ``cuda-13``); every probe: ``ANY_BUILD``."""
    found = set(fits)
    if found == set(_PROBE_BUILDS):
        return ANY_BUILD
    out = set()
    for t in found:
        every_major = all(p in found for p in _PROBE_BUILDS if p.kind == t.kind)
        out.add(TorchBuild(t.kind, None if every_major else t.major))
    return normalized(out)


def _grouped(binaries: Sequence[MemberBinary]) -> dict[str, list[tuple[str, AcceleratorNeeds]]]:
    """Members by library (``unit_key``). A member without a flavour word whose name is a
    flavoured set's name with the flavour dropped (``hook.abi3.so`` beside ``hook_cu12.abi3.so``
    and ``hook_cu13.abi3.so``) is that set's default build and joins it."""
    units: dict[str, list[tuple[str, AcceleratorNeeds]]] = {}
    for b in binaries:
        units.setdefault(unit_key(b.member), []).append((b.member, b.analysis.needs))
    defaults = {unflavoured_key(k): k for k, ms in units.items() if flavoured(m for m, _ in ms)}
    for key in list(units):
        target = defaults.get(key)
        if target is not None and target != key:
            units[target].extend(units.pop(key))
    return units


def build_units(
    binaries: Sequence[MemberBinary],
    brought: Brought,
    loader_prefers: Mapping[str, str],
    fallbacks: frozenset[str] = frozenset(),
) -> tuple[BuildUnit, ...]:
    """The wheel's compiled members grouped into libraries, as ``builds_loaded_on`` and the
    accelerator rules (TW701) judge them; ``fallbacks``: the flavour sets whose loader goes
    on without them where none loads (``loaders.fallback_units``)."""
    out = []
    for key, members in _grouped(binaries).items():
        preferred = ""
        chosen = members
        if flavoured(m for m, _ in members):
            wanted = loader_prefers.get(members[0][0].rpartition("/")[0], "")
            picked = [(m, n) for m, n in members if wanted and wanted in flavour_words(m)]
            if picked:
                preferred, chosen = wanted, picked
        options = [_library_builds(n, brought) for _, n in chosen]
        fallback = not preferred and key in fallbacks
        if flavoured(m for m, _ in chosen) and not fallback:
            builds = _summary(t for t in _PROBE_BUILDS if _fits(options, t))
        else:  # one build, per-release builds of one flavour, the flavour the loader prefers,
            # or a set with a fallback: it loads where any member does
            builds = normalized(b for o in options for b in o)
        each = tuple((m, o) for (m, _), o in zip(chosen, options, strict=True)) if fallback else ()
        out.append(BuildUnit(key, tuple(members), builds, preferred, fallback, each))
    return tuple(out)


def flavour_sets(binaries: Sequence[MemberBinary]) -> dict[str, str]:
    """``unit_key`` -> the library's name stem (``libbitsandbytes``, ``_C``) of every set of
    flavours of one library: where a package's loader may fall back (``loaders.fallback_units``)."""
    out = {}
    for key, members in _grouped(binaries).items():
        if flavoured(m for m, _ in members):
            base = key.rpartition("/")[2]
            stem = base.split("~", 1)[0].strip("_.-") or base.split("~", 1)[-1].split(".", 1)[0].strip("_.-")
            if stem:
                out[key] = stem
    return out


def flavour_pair_dirs(binaries: Sequence[MemberBinary]) -> set[str]:
    """The directories where a CPU and an accelerated flavour of one library sit side by
    side: where a package's loader decides which one loads (``analysis.loaders``)."""
    out = set()
    for members in _grouped(binaries).values():
        words = {f.lower() for m, _ in members for f in flavour_words(m)}
        if "cpu" in words and len(words) > 1:
            out.add(members[0][0].rpartition("/")[0])
    return out


def build_choices(units: Iterable[BuildUnit]) -> list[str]:
    """One sentence per way the package picks among flavours of its libraries, for ``show``:
    which build each flavour is for, and who decides (its loader, read by
    ``analysis.loaders``, or the torch it finds)."""
    out: dict[str, list[str]] = {}
    for unit in units:
        if len(unit.flavours) < 2 or all(not n.accelerators for _, n in unit.members):
            continue  # one build, or flavours that need no accelerator either way
        if unit.fallback:
            where = unit.members[0][0].rpartition("/")[0] or "the top level"
            named = [f"{m.rpartition('/')[2]} ({builds_text(b)})" for m, b in unit.each]
            each = ", ".join(named[:6]) + (f" and {len(named) - 6} more" if len(named) > 6 else "")
            how = (
                f"its loader ({where}/*.py) tries them and goes on without them where none loads, so the "
                f"package loads where any does ({describe_builds(unit.builds)}): {each}"
            )
        elif unit.preferred:
            where = unit.members[0][0].rpartition("/")[0] or "the top level"
            how = (
                f"its loader ({where}/*.py) takes `_{unit.preferred}` whenever the file exists, so these "
                f"load on {describe_builds(unit.builds)} only"
            )
        else:
            how = "the package picks one by the torch it finds; which build loads depends on its loader"
        out.setdefault(how, []).append(
            unit.key.rsplit("/", 1)[-1].replace("~", "{" + ",".join(unit.flavours) + "}")
        )
    return [
        f"{', '.join(keys[:2])}{f' and {len(keys) - 2} more' if len(keys) > 2 else ''}: {how}"
        for how, keys in out.items()
    ]


def own_runtime_notes(binaries: Iterable[MemberBinary], brought: Brought) -> list[str]:
    """For each library that links no torch and brings its own toolkit runtime: what it
    brings, for ``show`` and TW708."""
    notes = []
    for b in binaries:
        needs = b.analysis.needs
        if brings_own_runtime(needs, brought):
            libs = own_runtimes(needs, brought)
            sources = ", ".join(dict.fromkeys(source for _, source in libs))
            notes.append(
                f"{b.member} links no torch and brings its own {needs.label} runtime "
                f"({', '.join(lib.name for lib, _ in libs)}: {sources})"
            )
    return notes


def builds_loaded_on(units: Iterable[BuildUnit]) -> BuildSet:
    """The torch builds every library loads on (``ANY_BUILD``; ``{cpu, cuda-13}``).

    Every library must load, and of the builds of one library (per torch release, per
    flavour: ``_torch24-cpu.so``, ``_torch24-cuda.so``) the one the package picks must
    (``BuildUnit``). Judged by trying each kind of build rather than by algebra on the sets."""
    units = tuple(units)
    return _summary(t for t in _PROBE_BUILDS if all(any(b.admits(t) for b in u.builds) for u in units))


def build_evidence(units: Iterable[BuildUnit]) -> str:
    """The libraries that tie the wheel to a build, with the names that say so, for the
    reason a verdict gives (``xformers/_C.so: libc10_cuda.so, libcudart.so.12``)."""
    shown = []
    for unit in units:
        if unit.builds == ANY_BUILD:
            continue
        member, needs = next(((m, n) for m, n in unit.members if n.accelerators), unit.members[0])
        names = [lib.name for lib in needs.libraries if lib.accelerator is not None and lib.role != "driver"]
        more = f" (one of {len(unit.members)} builds)" if len(unit.members) > 1 else ""
        shown.append(f"{member}{more}: {', '.join(names[:4]) or needs.label}")
    text = "; ".join(shown[:2]) + (f"; and {len(shown) - 2} more" if len(shown) > 2 else "")
    return clipped(text, 300)
