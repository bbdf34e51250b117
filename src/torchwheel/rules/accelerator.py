"""TW7xx: the accelerator a wheel needs is one a torch build has, is the one its name says,
comes from torch rather than from a grafted copy, and has GPU code for the GPUs it is for.

The build classes are ``analysis.wheelfacts``' (``build_units``: the libraries of a wheel,
with the ``-cpu``/``-cuda`` flavours and per-minor builds of one library grouped as the
alternatives the package picks from at run time); the names of torch's libraries and of
the runtimes are ``torchabi.grafting``'s; the GPU code is ``binary.gpucode``'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel.analysis.buildunits import (
    BuildUnit,
    binds_no_build,
    brings_own_runtime,
    own_runtimes,
    wheel_platform,
)
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.binary.gpucode import CudaImage
from torchwheel.rules.codes import BY_CODE
from torchwheel.rules.registry import Check, Hit, Policy, hit, rule
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.accelerators import (
    CUDA_TOOLKIT,
    AcceleratorNeeds,
    LinkedLibrary,
    Role,
    applies,
    platform_markers,
    runtime_requirement,
)
from torchwheel.torchabi.backend import (
    ANY_BUILD,
    TorchBuild,
    builds_fit,
    describe_builds,
    from_cuda_digits,
    from_local_label,
)
from torchwheel.torchabi.cuda_archs import KNOWN_GPUS, code_names, runs_on
from torchwheel.torchabi.grafting import EXCLUDE_FLAG, Tool, bundled

# -- TW701, TW702: which build of torch -----------------------------------------------------


_LISTED = 3  # libraries a message names; ``check -v`` gives the rest (``Finding.detail``)


def _names(needs: AcceleratorNeeds, whole: bool = False) -> str:
    """The needed names that say which build: ``libc10_cuda.so, libcudart.so.13``, the first
    three and how many more unless ``whole``."""
    names = [lib.name for lib in needs.libraries if lib.accelerator is not None and lib.role != "driver"]
    if names:
        cut = len(names) > _LISTED and not whole
        return ", ".join(names[:_LISTED] if cut else names) + (
            f" and {len(names) - _LISTED} more" if cut else ""
        )
    if needs.gpu.cuda:
        return "its CUDA kernels"
    return needs.label if needs.accelerators else "needs no accelerator"


def _evidence(unit: BuildUnit, whole: bool = False) -> str:
    """``w/_ops.so (and 3 other builds): libcudart.so.13, libtorch_cuda.so``."""
    member, needs = next(((m, n) for m, n in unit.members if n.accelerators), unit.members[0])
    more = f" (and {len(unit.members) - 1} other builds)" if len(unit.members) > 1 else ""
    return f"{member}{more}: {_names(needs, whole)}"


def _detail(short: str, whole: str) -> str:
    """A finding's ``detail``: the whole lists, when the message cut them."""
    return whole if whole != short else ""


@rule("TW701")
def accelerators_mixed(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    if w.torch_builds != frozenset():  # some build loads it, or it could not be read
        return
    units = w.build_units
    for unit in units:
        if not unit.builds:  # one library that needs two accelerators or CUDA majors at once
            for member, needs in unit.members:
                if not _library_loads(needs):
                    yield hit(
                        member,
                        f"needs {needs.label} at once ({_names(needs)}): no build of torch has both; "
                        "build it against one toolkit",
                        _detail(_names(needs), _names(needs, whole=True)),
                    )
    if any(not u.builds for u in units):
        return
    named = [u for u in units if u.builds != ANY_BUILD]
    short = "; ".join(f"{describe_builds(u.builds)} for {_evidence(u)}" for u in named[:2])
    short += f"; and {len(named) - 2} more" if len(named) > 2 else ""
    whole = "; ".join(f"{describe_builds(u.builds)} for {_evidence(u, whole=True)}" for u in named)
    yield hit(
        "",
        f"no build of torch loads every library: {short}. Build them against one toolkit, or ship flavours "
        "the package picks from at run time (`_C_cpu.so`/`_C_cuda.so`, `_C_cu12.so`/`_C_cu13.so`)",
        _detail(short, whole),
    )


def _library_loads(needs: AcceleratorNeeds) -> bool:
    majors = needs.cuda_majors if needs.accelerator == "cuda" else needs.rocm_majors
    return len(needs.accelerators) <= 1 and len(majors) <= 1


_NAME_CLAIM = re.compile(r"^(?:cu(\d{2,3})|cuda(\d{2})x?|(cpu)|(rocm)\d*|(xpu))$")
_NVIDIA_REQ = re.compile(r"^nvidia-.+-cu(\d{2,3})$")


def claims(w: WheelFacts) -> Iterator[tuple[str, TorchBuild]]:
    """What the wheel says of its accelerator outside its binaries: (what says it, the build)."""
    last = canonicalize_name(w.contents.filename_name).rsplit("-", 1)
    if len(last) == 2 and (m := _NAME_CLAIM.match(last[1])):
        cu, cuda, cpu, rocm, _ = m.groups()
        build = (
            from_cuda_digits(cu or cuda)
            if cu or cuda
            else TorchBuild("cpu" if cpu else "rocm" if rocm else "xpu")
        )
        yield f"the project name's suffix -{last[1]}", build
    try:
        local = Version(w.contents.filename_version).local
    except InvalidVersion:
        local = None
    if (labelled := from_local_label(local)) is not None:
        yield f"the local version label +{local}", labelled
    for req in w.metadata.requirements:
        name = canonicalize_name(req.name)
        if name == "torch" and req.marker is None:  # an exact pin's label: torch==2.8.0+cu128
            for label in torch_releases.local_labels(req.specifier):
                if (pinned := from_local_label(label)) is not None:
                    yield f"the requirement {req}", pinned
        elif m := _NVIDIA_REQ.match(name):
            yield f"the requirement {req.name}", from_cuda_digits(m.group(1))
        elif (
            name == CUDA_TOOLKIT
            and (toolkit := runtime_requirement(req))
            and toolkit.major is not None
            and applies(req, platform_markers(wheel_platform(w.contents.wheel_tags)))
        ):
            # cuda-toolkit[cudart,...]==13.0.3: the toolkit's own major, as torch's METADATA names it
            yield f"the requirement {req}", TorchBuild("cuda", toolkit.major)
        elif name.startswith("nvidia-"):
            for extra in sorted(req.extras):
                if m := re.fullmatch(r"cu(\d{2,3})", extra.lower()):
                    yield f"the requirement {req.name}[{extra}]", from_cuda_digits(m.group(1))


@rule("TW702")
def accelerator_claim_mismatch(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    builds = w.torch_builds
    if not builds or builds == ANY_BUILD:
        return  # needs no accelerator, a contradiction (TW701 says so), or could not be read
    seen = set()
    for said, build in claims(w):
        if builds_fit(builds, build)[0] or said in seen:
            continue
        seen.add(said)
        unit = next((u for u in w.build_units if not builds_fit(u.builds, build)[0]), None)
        which = f" ({_evidence(unit)})" if unit is not None else ""
        yield hit(
            "",
            f"{said} says {build.words}, but the binaries need {describe_builds(builds)}{which}: "
            "an installer that trusts the name puts it where it cannot load; build it for what the "
            "name says, or rename it",
            _detail(which, f" ({_evidence(unit, whole=True)})" if unit is not None else "").strip(" ()"),
        )


# -- TW703, TW704, TW707: copies of what torch or the machine brings ------------------------------------------------

_TOOL_OF_SUFFIX: dict[str, Tool] = {".dylib": "delocate", ".dll": "delvewheel"}


def _exclude_hint(lib: LinkedLibrary) -> str:
    """The flag of the repair tool of the library's platform that leaves it out."""
    name = lib.name.rsplit("/", 1)[-1]
    default: Tool = "auditwheel"
    tool = next((t for s, t in _TOOL_OF_SUFFIX.items() if name.lower().endswith(s)), default)
    value = (
        f"lib{lib.component}.so*" if tool == "auditwheel" else name.lower() if tool == "delvewheel" else name
    )
    repair = "delocate-wheel" if tool == "delocate" else f"{tool} repair"
    flag = EXCLUDE_FLAG[tool]
    return (
        f"repair with `{repair} {flag} '{value}'` (or `torchwheel repair --repair-with '{repair} ...'`, "
        "which adds every such exclude itself) and remove the copy"
    )


def _torch_copy(lib: LinkedLibrary) -> str:
    return (
        f"is a copy of torch's own {lib.name.rsplit('/', 1)[-1]}: the torch the user installs "
        "loads its own, and two copies of libtorch in one process register every operator twice and crash"
    )


def _runtime_copy(lib: LinkedLibrary) -> str:
    return (
        f"is a copy of {lib.name} (a {TorchBuild(lib.accelerator or 'cuda').words} library that "
        "torch's build brings itself): a second runtime beside torch's, of whatever toolkit release the "
        "build machine had, in one process"
    )


def _driver_copy(lib: LinkedLibrary) -> str:
    return (
        f"is a copy of {lib.name}, the GPU driver's own library: it must be the one installed "
        "with the machine's kernel driver, and a copy fails to initialise the GPU"
    )


# each copy rule: the roles of the libraries it judges a copy of (torch's own, a runtime
# torch's build brings, the driver's) and what such a copy breaks
_COPY_RULES: dict[str, tuple[frozenset[Role], Callable[[LinkedLibrary], str]]] = {
    "TW703": (frozenset({"torch", "torch-python"}), _torch_copy),
    "TW704": (frozenset({"runtime", "library"}), _runtime_copy),
    "TW707": (frozenset({"driver"}), _driver_copy),
}


def _copy_rule(code: str, roles: frozenset[Role], why: Callable[[LinkedLibrary], str]) -> Check:
    """A finding for each member that is a copy of a library of ``roles``: ``why`` says what
    the copy breaks, and each ends with the repair tool's flag that leaves it out."""

    def run(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
        for member in w.contents.members:
            lib = bundled(member)
            if lib is not None and lib.role in roles:
                yield member, f"{why(lib)}; {_exclude_hint(lib)}"

    run.__name__ = run.__qualname__ = BY_CODE[code].name.replace("-", "_")  # a rule is named for its code
    return run


for _code, (_roles, _why) in _COPY_RULES.items():
    rule(_code)(_copy_rule(_code, _roles, _why))


@rule("TW708")
def own_accelerator_runtime(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A warning, not an error: the library loads beside any torch build (it links no torch,
    and the wheel installs or bundles the runtime it needs), so its need does not tie the
    wheel to one build (docs/accelerators.md, "Who brings the runtime"). Beside a torch built
    for another CUDA major, though, two runtimes share one process."""
    brought = w.brought_runtimes
    for b in w.binaries:
        needs = b.analysis.needs
        if not brings_own_runtime(needs, brought):
            continue
        libs = own_runtimes(needs, brought)
        sources = ", ".join(dict.fromkeys(source.removeprefix("the requirement ") for _, source in libs))
        yield (
            b.member,
            f"links no torch and brings its own {needs.label} runtime ({', '.join(lib.name for lib, _ in libs)} "
            f"from {sources}): it loads beside any torch build, but beside a torch built for another "
            f"{needs.label.split()[0]} major two runtimes share the process; link torch's runtime (require "
            "what torch's build requires) if it shares memory or streams with torch",
        )


@rule("TW710")
def gpu_code_any_build(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """Info: the loader binds nothing of a torch build for this library (no torch, its CUDA
    runtime linked in, at most the driver), so its GPU code is not a build requirement;
    said where the wheel loads on any build, so that the GPU code is not taken for one."""
    if w.torch_builds != ANY_BUILD:
        return
    for b in w.binaries:
        needs = b.analysis.needs
        if binds_no_build(needs) and (code := ", ".join(code_names(needs.gpu))):
            yield (
                b.member,
                f"carries GPU code ({code}) but links no torch and no runtime a torch build brings "
                f"({_names(needs) if needs.libraries else 'its CUDA runtime linked in'}): it loads beside any "
                "torch build and runs its kernels where the machine's driver does; nothing to fix unless it "
                "should share torch's runtime",
            )


_ACCELERATED_CLAIM = ("cuda", "rocm", "xpu")


@rule("TW709")
def accelerator_name_without_code(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """Info: a CUDA-named build that compiled no CUDA (no ``CUDA_HOME`` on the build
    machine, ``FORCE_CUDA`` unset) is a CPU build under a CUDA name; it still loads."""
    if w.unreadable or not w.binaries or w.accelerator_needs.accelerators:
        return
    for said, build in claims(w):
        if build.kind in _ACCELERATED_CLAIM and said.startswith("the project name"):
            yield (
                "",
                f"{said} says {build.words}, but no binary needs an accelerator or carries GPU code: a "
                "CPU build under that name; if the accelerated build was meant, the build compiled no "
                "GPU code (CUDA_HOME, FORCE_CUDA); else drop the suffix",
            )
            return


# -- TW705, TW706: GPU code ---------------------------------------------------------------------


def _cuda_libraries(w: WheelFacts) -> Iterator[tuple[str, AcceleratorNeeds]]:
    for b in w.binaries:
        needs = b.analysis.needs
        if needs.gpu.cuda:
            yield b.member, needs


def _shown(images: list[CudaImage]) -> str:
    """``sm_80, sm_90, PTX compute_90``: distinct architectures, oldest first."""
    ordered = sorted(images, key=lambda i: (i.kind != "cubin", i.arch, i.variant))
    names = [i.name if i.kind == "cubin" else f"PTX {i.name}" for i in ordered]
    return ", ".join(dict.fromkeys(names)) or "none"


@rule("TW705")
def gpu_code_without_ptx(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """Info, not a warning: most published CUDA wheels ship cubins only on purpose (smaller
    wheels, no JIT on first launch); the fact is worth knowing, not worth a failed build.
    Silent when the project declares its architectures (``gpu-archs``, TW706)."""
    if policy.gpu_archs:
        return
    for member, needs in _cuda_libraries(w):
        images = [i for i, _ in needs.gpu.cuda]
        generic = [i for i in images if i.kind == "cubin" and i.variant != "a"]
        if not generic or any(i.kind == "ptx" and i.variant == "" for i in images):
            continue  # arch-specific code only (sm_90a) is for that GPU alone by design
        newest = max(i.arch for i in images if i.kind == "cubin")
        names = [i.name for i in images]
        lacking = [g for g in KNOWN_GPUS if g > min(i.arch for i in generic) and not runs_on(names, g)]
        family = f"a GPU of a family newer than {newest // 10}.x"
        who = (
            f"a GPU of compute capability {', '.join(f'{g // 10}.{g % 10}' for g in lacking)}, or {family},"
            if lacking
            else family
        )
        yield (
            member,
            f"kernels {_shown(images)} and no PTX: {who} gets 'no kernel "
            "image is available for execution on the device'; add PTX of the newest "
            f"architecture (-gencode arch=compute_{newest},code=compute_{newest}; TORCH_CUDA_ARCH_LIST "
            f"'{newest // 10}.{newest % 10}+PTX') if it should run there",
        )


_DECLARED = re.compile(r"(sm|compute)_(\d{2,3})([af]?)")


def covers(images: list[CudaImage], declared: str) -> bool:
    """Does a library with these images have what ``declared`` names: ``sm_86`` native code
    for a GPU of compute capability 8.6 (a cubin ``sm_80``..``sm_86``, or the 8.6-only
    ``sm_86a``), ``sm_90a``/``sm_100f`` exactly that cubin, ``compute_90`` PTX (not
    arch-specific) that the driver can JIT for a 9.0 GPU: PTX of 9.0 or older."""
    m = _DECLARED.fullmatch(declared)
    if m is None:
        return False
    kind, arch, variant = m.group(1), int(m.group(2)), m.group(3)
    if variant:
        return any(i.kind == "cubin" and i.name == declared for i in images)
    if kind == "compute":
        return runs_on([i.name for i in images if i.kind == "ptx" and i.variant == ""], arch)
    return runs_on([i.name for i in images if i.kind == "cubin"], arch)


@rule("TW706")
def gpu_arch_missing(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A warning, not an error: the wheel loads everywhere it did; only a kernel launch on
    that GPU fails. The project said it builds for it, so the build lost an architecture."""
    for member, needs in _cuda_libraries(w):
        images = [i for i, _ in needs.gpu.cuda]
        missing = [a for a in policy.gpu_archs if not covers(images, a)]
        if missing:
            yield (
                member,
                f"has no code for {', '.join(missing)} (declared in [tool.torchwheel] gpu-archs), only "
                f"{_shown(images)}: a kernel launch there fails with 'no kernel image is available for "
                "execution on the device'; add them to the build's -gencode list / TORCH_CUDA_ARCH_LIST",
            )
