"""The machine as an interpreter's loader sees it, judged for each installed distribution:
the libraries outside torch its files need (``libsearch``: found as ``ld.so`` finds them,
with their symbol versions) and the NVIDIA driver its CUDA code needs (``driver``, judged by
NVIDIA's rules in ``torchabi.cuda_driver``).

What fails becomes a ``Part`` of the distribution that does not load here, with its axis
(``system library``, ``driver``) and whether the package's import needs it:

* a file the package imports as a module (it has a ``PyInit_`` hook) that cannot load stops
  the import: ``required``, the row does not load;
* builds of one library that differ by a number only (``libtorchcodec_core4.so`` ...
  ``core9.so``, one per FFmpeg major; ``custom_ops4`` ... beside them) are alternatives a
  loader tries in turn: they load where one number's every file loads, and where none does
  the package imports without them (torchcodec: ``load_core_libraries()`` fails, ``import
  torchcodec`` works): ``partly``;
* any other library (loaded by ``torch.ops.load_library`` or ``ctypes``, often lazily or
  optionally) that cannot load is ``partly`` too: the import may not reach it. A reading of
  the package's own loader (``required``, passed by the caller) decides where one exists;
* CUDA code the driver cannot run does not stop an import (``libcudart`` loads without a
  driver; only the first CUDA call fails): ``partly``, "its CUDA code will not run". No
  driver at all is no mismatch: CUDA code does not run on a CPU-only machine, and that is
  said once for the machine, not per distribution. A library that links ``libcuda.so.1``
  itself does not load without a driver: that is a library the loader does not find.

Libraries on macOS (dyld's ``@rpath``) and Windows (the DLL search order) are not judged:
``Machine.libraries_note`` says so and no part is claimed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Literal

from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.binary.gpucode import GpuCode
from torchwheel.doctor.driver import Driver
from torchwheel.doctor.libsearch import LoadOutcome, Process, Resolver
from torchwheel.frozen import frozen
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.accelerators import AcceleratorNeeds, classify_library
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.torchabi.cuda_archs import ptx_cuda, runs_on
from torchwheel.torchabi.cuda_driver import CudaNeed, cuda_text, driver_runs, under_minor_compatibility
from torchwheel.torchabi.need import release_matches

MachineAxis = Literal["system library", "driver"]


@frozen
class Part:
    """Files of a distribution that do not load on this machine, and why (``words``)."""

    files: tuple[str, ...]
    axis: MachineAxis
    words: str
    required: bool
    missing: tuple[str, ...] = ()  # library names the loader does not find
    versions: tuple[str, ...] = ()  # "GLIBCXX_3.4.32 (/lib/.../libstdc++.so.6)"
    fix: str = ""
    cuda: tuple[int, int] | None = None  # a driver part: the newest CUDA its code needs


@frozen
class Machine:
    """The machine for one interpreter: its ``driver``, and the ``process`` its libraries
    are resolved in (None: not judged, ``libraries_note`` says why)."""

    driver: Driver
    process: Process | None
    libraries_note: str = ""


# -- libraries ---------------------------------------------------------------------------------

# a build number at the end of a library's stem: ``libtorchcodec_core4.so`` -> (``libtorchcodec_core``, 4)
_NUMBERED = re.compile(r"^(?P<stem>.*\D)(?P<n>\d{1,3})(?P<rest>\.(?:so|dylib|dll|pyd)(?:\..*)?)$")
_GRAFTED = re.compile(r"(^|/)[^/]+\.libs/")
_LIB_BASE = re.compile(r"^(?P<base>.+?)\.so\.(?P<major>\d+)")
# FFmpeg's libraries by their base and how their major follows FFmpeg's (libavutil 56 = FFmpeg 4)
_FFMPEG_OFFSET = {"libavutil": 52}
_FFMPEG = frozenset(
    {
        "libavutil",
        "libavcodec",
        "libavformat",
        "libavdevice",
        "libavfilter",
        "libswscale",
        "libswresample",
        "libpostproc",
    }
)


def library_parts(
    w: WheelFacts,
    site: str,
    resolver: Resolver,
    torch_version: str | None = None,
    required: Callable[[str], bool] | None = None,
) -> tuple[tuple[Part, ...], str]:
    """The parts of a distribution (its facts ``w``, installed under ``site``) whose files
    the loader cannot load in ``resolver``'s process, and why a file could not be judged
    ("" when all were). ``required(member)``: does the package's import need that file
    (default: it is an extension module); ``torch_version``: the installed torch, whose
    per-release builds alone are loaded (``analysis.alternatives``)."""
    members = _loaded_members(w, torch_version)
    if not members:
        return (), ""
    outcomes = _load_all(resolver, [(m, os.path.join(site, m)) for m in members])
    unread = [f"{m}: {why}" for m, o in outcomes.items() for _, why in o.unread[:1]]
    # a library that fails for want of a sibling that fails fails too; the sibling's
    # reason is the one named (``custom_ops4`` needs ``core4``, which needs libavutil)
    own = {b.member.rpartition("/")[2] for b in w.binaries}
    outcomes = {m: _without(o, own) for m, o in outcomes.items()}
    failing = {m: o for m, o in outcomes.items() if _outside_torch(o) or o.siblings}
    needs = required or _is_module(w)
    parts: list[Part] = []
    families = _families(members)
    in_family = {m for alternatives in families for files in alternatives.values() for m in files}
    for alternatives in families:
        if any(all(m not in failing for m in files) for files in alternatives.values()):
            continue  # one number's every file loads: the loader takes it
        parts.append(_family_part(alternatives, failing, needs))
    for member in members:
        if member in failing and member not in in_family:
            parts.append(_file_part(member, failing[member], needs(member)))
    return tuple(parts), "; ".join(unread[:2])


def _loaded_members(w: WheelFacts, torch_version: str | None) -> list[str]:
    """The ELF files a package may load: not the copies a repair tool grafted into
    ``<dist>.libs/`` (they load as dependencies), nor builds for another torch release."""
    others: set[str] = set()
    release = torch_releases.release_of(torch_version) if torch_version is not None else None
    if release is not None:
        for group in w.alternatives:
            others.update(m for build, m in group.members if not release_matches(build, release))
    return [
        b.member
        for b in w.binaries
        if b.analysis.facts.format == "elf" and not _GRAFTED.search(b.member) and b.member not in others
    ]


def _load_all(resolver: Resolver, files: list[tuple[str, str]]) -> dict[str, LoadOutcome]:
    """Each file loaded as its package loads them: in passes, a file that loads lending its
    names to the next (``_torchaudio.so`` finds ``libtorchaudio.so``, opened first, by its
    SONAME), until a pass loads nothing new."""
    also: dict[str, str] = {}
    outcomes: dict[str, LoadOutcome] = {}
    pending = list(files)
    while pending:
        progress = False
        rest = []
        for member, path in pending:
            outcome = resolver.load(path, also)
            outcomes[member] = outcome
            if outcome.loads:
                also.update(outcome.brought)
                progress = True
            else:
                rest.append((member, path))
        if not progress:
            break
        pending = rest
    return outcomes


def _without(o: LoadOutcome, own: set[str]) -> LoadOutcome:
    """The outcome with the package's own files it lacks set apart (``siblings``)."""
    siblings = tuple(m.name for m in o.missing if m.name in own)
    if not siblings:
        return o
    return replace(o, missing=tuple(m for m in o.missing if m.name not in own), siblings=siblings)


def _outside_torch(o: LoadOutcome) -> bool:
    """Does the load fail for a library outside torch (or a symbol version)? Torch's own
    libraries and toolkit runtimes missing are the torch build's axis, judged elsewhere."""
    return bool(o.gaps) or any(not _torch_axis(m.name) for m in o.missing)


def _torch_axis(name: str) -> bool:
    lib = classify_library(name)
    return lib is not None and lib.role in ("torch", "torch-python", "runtime")


def _is_module(w: WheelFacts) -> Callable[[str], bool]:
    modules = {b.member for b in w.binaries if any(s.facts.hooks for s in b.analysis.slices)}
    return lambda member: member in modules


def _families(members: Iterable[str]) -> list[dict[int, tuple[str, ...]]]:
    """Alternatives by number (module docstring): per folder, the stems with two numbers or
    more; stems of one folder with the same numbers are one set (number -> its files)."""
    stems: dict[tuple[str, str], dict[int, str]] = {}
    for member in members:
        folder, _, name = member.rpartition("/")
        m = _NUMBERED.match(name)
        if m is not None:
            stems.setdefault((folder, m.group("stem") + "#" + m.group("rest")), {})[int(m.group("n"))] = (
                member
            )
    sets: dict[tuple[str, frozenset[int]], dict[int, list[str]]] = {}
    for (folder, _), by_number in sorted(stems.items()):
        if len(by_number) < 2:
            continue
        group = sets.setdefault((folder, frozenset(by_number)), {})
        for n, member in by_number.items():
            group.setdefault(n, []).append(member)
    return [{n: tuple(files) for n, files in sorted(g.items())} for g in sets.values()]


def _family_part(
    alternatives: Mapping[int, tuple[str, ...]],
    failing: Mapping[str, LoadOutcome],
    needs: Callable[[str], bool],
) -> Part:
    files = tuple(m for files in alternatives.values() for m in files)
    outcomes = [o for m in files if (o := failing.get(m)) is not None]
    missing = _outside(outcomes)
    versions = _gaps(outcomes)
    shown_files = _numbered_names(alternatives)
    lacking = _condensed(_first_missing(outcomes)) or ", ".join(versions[:2])
    words = f"its builds tried in turn ({shown_files}) need {lacking}; none on this machine"
    required = all(needs(m) for m in files)
    return Part(files, "system library", words, required, missing, versions, _library_fix(missing, versions))


def _file_part(member: str, outcome: LoadOutcome, required: bool) -> Part:
    missing = _outside([outcome])
    versions = _gaps([outcome])
    name = member.rpartition("/")[2]
    bits = []
    if missing:
        first = next(m for m in outcome.missing if m.name == missing[0])
        through = "" if first.needed_by == outcome.path else f" (through {os.path.basename(first.needed_by)})"
        bits.append(f"needs {_condensed(_first_missing([outcome]))}{through}, which the loader does not find")
    if versions:
        bits.append(f"needs {', '.join(versions[:2])}")
    words = f"{name} " + " and ".join(bits)
    axis: MachineAxis = "driver" if any(_is_driver(n) for n in missing) else "system library"
    return Part((member,), axis, words, required, missing, versions, _library_fix(missing, versions))


def _is_driver(name: str) -> bool:
    lib = classify_library(name)
    return lib is not None and lib.role == "driver"


def _outside(outcomes: Iterable[LoadOutcome]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m.name for o in outcomes for m in o.missing if not _torch_axis(m.name)))


def _first_missing(outcomes: Iterable[LoadOutcome]) -> tuple[str, ...]:
    """The library each load stops at first outside torch: the one the loader's error names."""
    firsts = (next((m.name for m in o.missing if not _torch_axis(m.name)), None) for o in outcomes)
    return tuple(dict.fromkeys(name for name in firsts if name))


def _gaps(outcomes: Iterable[LoadOutcome]) -> tuple[str, ...]:
    return tuple(
        dict.fromkeys(
            f"version {g.version} of {g.library} (needed by {os.path.basename(g.needed_by)})"
            for o in outcomes
            for g in o.gaps
        )
    )


def _numbered_names(alternatives: Mapping[int, tuple[str, ...]]) -> str:
    """``libtorchcodec_core4-9.so, libtorchcodec_custom_ops4-9.so``."""
    numbers = _span(sorted(alternatives))
    names: dict[str, None] = {}
    for files in alternatives.values():
        for member in files:
            m = _NUMBERED.match(member.rpartition("/")[2])
            if m is not None:
                names[f"{m.group('stem')}{numbers}{m.group('rest')}"] = None
    return ", ".join(names)


def _span(numbers: list[int]) -> str:
    if len(numbers) > 1 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ",".join(map(str, numbers))


def _condensed(names: Iterable[str]) -> str:
    """Missing names in words: the versions of one library joined (``libavutil.so.56-61``),
    FFmpeg's named (``libavutil (FFmpeg 4-9: libavutil.so.56-61)``); the first library a
    load stops at comes first, three at most."""
    by_base: dict[str, list[int]] = {}
    plain: list[str] = []
    for name in names:
        m = _LIB_BASE.match(name)
        if m is None:
            plain.append(name)
        else:
            by_base.setdefault(m.group("base"), []).append(int(m.group("major")))
    out: list[str] = []
    for base, majors in by_base.items():
        majors = sorted(set(majors))
        sonames = f"{base}.so.{_span(majors)}"
        if base in _FFMPEG_OFFSET:
            ffmpeg = _span([m - _FFMPEG_OFFSET[base] for m in majors])
            out.append(f"{base} (FFmpeg {ffmpeg}: {sonames})")
        elif base in _FFMPEG:
            out.append(f"{base} (FFmpeg's: {sonames})")
        else:
            out.append(sonames)
    out += plain
    return ", ".join(out[:3]) + (f" and {len(out) - 3} more" if len(out) > 3 else "")


def _library_fix(missing: tuple[str, ...], versions: tuple[str, ...]) -> str:
    if any(_is_driver(n) for n in missing):
        return "install the NVIDIA driver (it brings libcuda.so.1), or use a build without CUDA"
    bases = {m.group("base") for n in missing if (m := _LIB_BASE.match(n))}
    if bases & _FFMPEG:
        return "install FFmpeg's shared libraries (a supported major) where the loader finds them (ldconfig, LD_LIBRARY_PATH)"
    if missing:
        return f"install the library that provides {missing[0]}, or put its folder on LD_LIBRARY_PATH"
    if versions:
        return (
            f"install a newer library than the one found ({versions[0]}), or a build made for this system's"
        )
    return ""


# -- the driver --------------------------------------------------------------------------------


def cuda_needs(w: WheelFacts, build: TorchBuild | None, torch: str, gpu: int | None) -> tuple[CudaNeed, ...]:
    """What a distribution's CUDA code needs of the driver: the CUDA runtime each library
    links (``libcudart.so.13``: CUDA 13), torch's own where a library links its CUDA
    libraries (``torch`` names it), the toolkit of a runtime nvcc linked in statically (by
    its PTX ISA), and PTX the driver must compile: code that is PTX only, or whose cubins
    do not run on ``gpu`` (when known)."""
    out: dict[CudaNeed, None] = {}
    for b in w.binaries:
        needs: AcceleratorNeeds = b.analysis.needs
        for lib in needs.libraries:
            if lib.accelerator == "cuda" and lib.role == "runtime" and lib.toolkit_major is not None:
                out[CudaNeed("runtime", (lib.toolkit_major, 0), lib.name)] = None
        if needs.torch_accelerator == "cuda" and build is not None and build.kind == "cuda" and build.major:
            out[CudaNeed("runtime", (build.major, build.minor or 0), torch)] = None
        ptx = _ptx_need(needs.gpu, gpu)
        if ptx is not None:
            out[ptx] = None
        if needs.static_cudart and (isa := _newest_ptx(needs.gpu)) is not None:
            out[CudaNeed("runtime", (isa[0], 0), "its static CUDA runtime")] = None
    return tuple(out)


def _newest_ptx(gpu: GpuCode) -> tuple[int, int] | None:
    found = [c for image, _ in gpu.cuda if image.ptx_isa and (c := ptx_cuda(image.ptx_isa))]
    return max(found) if found else None


def _ptx_need(gpu: GpuCode, cc: int | None) -> CudaNeed | None:
    cubins = [i.name for i, _ in gpu.cuda if i.kind == "cubin"]
    ptx = [i for i, _ in gpu.cuda if i.kind == "ptx" and i.ptx_isa]
    if not ptx or (cubins and (cc is None or runs_on(cubins, cc))):
        return None  # cubins run (or may: the GPU is not known), so no PTX is compiled
    usable = [i for i in ptx if cc is None or runs_on([i.name], cc)]
    versions = [(c, i) for i in usable if i.ptx_isa and (c := ptx_cuda(i.ptx_isa)) is not None]
    if not versions:
        return None
    cuda, image = min(versions, key=lambda v: v[0])  # the driver compiles the oldest ISA it can
    isa = ".".join(map(str, image.ptx_isa or ()))
    return CudaNeed("ptx", cuda, f"{image.name} PTX, ISA {isa}")


def driver_part(needs: tuple[CudaNeed, ...], driver: Driver) -> Part | None:
    """The part a driver too old for the distribution's CUDA code makes (module docstring);
    None where the driver runs it, or there is no driver (no mismatch), or it is not known."""
    if driver.state != "found" or driver.cuda is None:
        return None
    failing = [n for n in needs if not driver_runs(driver.cuda, n)]
    if not failing:
        return None
    words = f"its CUDA code will not run: it needs {needs_words(failing)}; this machine's driver supports CUDA {cuda_text(driver.cuda)}"
    majors = sorted({n.cuda[0] for n in failing})
    fix = f"update the NVIDIA driver to one that supports CUDA {cuda_text(max(n.cuda for n in failing))}"
    if driver.cuda[0] < majors[-1]:
        fix += f", or install builds of torch and its extensions for CUDA {driver.cuda[0]}"
    return Part((), "driver", words, False, fix=fix, cuda=max(n.cuda for n in failing))


def needs_words(needs: Iterable[CudaNeed]) -> str:
    """``CUDA 13 (libcudart.so.13, torch 2.14.1+cu130)``, ``CUDA 13.2 (for its compute_90 PTX, ISA 9.2)``."""
    runtimes: dict[int, list[str]] = {}
    out: list[str] = []
    for n in needs:
        if n.kind == "runtime":
            runtimes.setdefault(n.cuda[0], []).append(n.what)
        else:
            out.append(n.words)
    out = [
        f"CUDA {major} ({', '.join(dict.fromkeys(whats))})" for major, whats in sorted(runtimes.items())
    ] + out
    return ", ".join(out)


def minor_compatibility_words(build: TorchBuild | None, torch: str, driver: Driver) -> str:
    """A torch whose CUDA minor is newer than the driver's, within one major: it runs, by
    NVIDIA's minor-version compatibility (said, since features needing the newer driver do not)."""
    if build is None or build.kind != "cuda" or build.major is None or driver.cuda is None:
        return ""
    need = CudaNeed("runtime", (build.major, build.minor or 0), torch)
    if not under_minor_compatibility(driver.cuda, need):
        return ""
    return f"{torch} (CUDA {cuda_text(need.cuda)}) runs on it by minor-version compatibility"


def torch_driver_words(build: TorchBuild | None, torch: str, driver: Driver) -> str:
    """What the driver means for torch's own CUDA build, in a line ("" when nothing to say)."""
    if build is None or build.kind != "cuda" or build.major is None:
        return ""
    if driver.state == "none":
        return f"no NVIDIA driver: {torch}'s CUDA does not run here (CPU only)"
    if driver.state != "found" or driver.cuda is None:
        return ""
    need = CudaNeed("runtime", (build.major, build.minor or 0), torch)
    if driver_runs(driver.cuda, need):
        return ""
    return f"{torch} needs CUDA {build.major}; this machine's driver supports CUDA {cuda_text(driver.cuda)}"


# -- reading the machine (the edge: a probe process, files read) -------------------------------


def read_machine(
    python: str | None, sys_platform: str, torch_dir: str | None, search_path: Iterable[str]
) -> Machine:
    """The machine for the interpreter ``python`` (None: a plan, nothing to ask): its driver
    (``driver.read_driver``) and, on Linux, the process its libraries load in
    (``libsearch.read_process``, with this process's ``LD_LIBRARY_PATH``, which the
    interpreter inherits)."""
    from pathlib import Path

    from torchwheel.doctor.driver import read_driver
    from torchwheel.doctor.libsearch import read_process

    if python is None:
        return Machine(
            Driver("unknown", note="a plan: no machine to read"), None, "a plan: no machine to read"
        )
    driver = read_driver(python)
    if sys_platform == "darwin":
        return Machine(
            driver,
            None,
            "dyld's search (@rpath, @loader_path, LC_RPATH) is not modelled: libraries outside torch not judged",
        )
    if sys_platform == "win32":
        return Machine(
            driver, None, "the DLL search order is not modelled: libraries outside torch not judged"
        )
    process = read_process(python, os.environ, Path(torch_dir) if torch_dir else None, search_path)
    if process.problem:
        return Machine(driver, None, f"{process.problem}: libraries outside torch not judged")
    return Machine(driver, process)
