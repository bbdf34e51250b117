"""``doctor --explain`` for the errors the machine causes, not torch: a symbol version the
library found lacks (``version `GLIBCXX_3.4.32' not found (required by ...)``), a driver too
old for a CUDA runtime (``CUDA driver version is insufficient for CUDA runtime version``,
torch's "The NVIDIA driver on your system is too old"), and GPU code for another GPU (``no
kernel image is available for execution on the device``). Each is answered from this machine
as ``doctor.machine`` reads it: the library the loader finds and the versions it defines, the
driver's CUDA version against what each distribution needs, the GPU against each library's
cubins and PTX; with the distributions concerned, the axis and the fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from torchwheel.binary.elfdynamic import DynamicFacts
from torchwheel.doctor.diagnosis import Diagnosis, torch_words
from torchwheel.doctor.environment import Environment
from torchwheel.doctor.libsearch import Resolver
from torchwheel.doctor.machine import Machine, torch_driver_words
from torchwheel.frozen import frozen
from torchwheel.torchabi.cuda_archs import code_names, runs_on
from torchwheel.torchabi.cuda_driver import cuda_text

# what a version's prefix says of the library that defines it (glibc, GCC's runtime libraries)
_VERSION_LIBRARY = {"GLIBCXX_": "libstdc++.so.6", "CXXABI_": "libstdc++.so.6", "GLIBC_": "libc.so.6",
                    "GCC_": "libgcc_s.so.1"}  # fmt: skip
# libstdc++'s versions by the GCC release that added them (libstdc++ manual, "ABI Policy")
_GCC = {"GLIBCXX_3.4.29": "GCC 11.1", "GLIBCXX_3.4.30": "GCC 12.1", "GLIBCXX_3.4.31": "GCC 13.1",
        "GLIBCXX_3.4.32": "GCC 13.2", "GLIBCXX_3.4.33": "GCC 14.1"}  # fmt: skip
_NUMBERS = re.compile(r"\d+")


@frozen
class MachineAnswer:
    """What this machine says of the error: ``lines`` (what was found, in words), the
    distributions concerned, the ``axis`` and the ``fix``; ``fits``: the machine as read here
    runs it after all (the error came from another process, another ``LD_LIBRARY_PATH``)."""

    axis: str
    lines: tuple[str, ...]
    fix: str
    needing: tuple[str, ...] = ()
    fits: bool = False


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in _NUMBERS.findall(version))


def _newest(defined: Iterable[str], like: str) -> str | None:
    prefix = like.rstrip("0123456789.")
    same = [v for v in defined if v.startswith(prefix)]
    return max(same, key=_key) if same else None


def _gcc(version: str) -> str:
    return f" ({_GCC[version]})" if version in _GCC else ""


def explain_version(
    version: str,
    library: str | None,
    required_by: str | None,
    machine: Machine,
    env: Environment,
) -> MachineAnswer:
    """``version `V' not found``: the library the loader finds for the name (the one the
    error names, else the one the version's prefix belongs to), the versions it defines, and
    the distributions whose files need ``V``."""
    name = (
        os.path.basename(library)
        if library
        else next((lib for prefix, lib in _VERSION_LIBRARY.items() if version.startswith(prefix)), None)
    )
    if machine.process is None:
        return MachineAnswer(
            "system library", (f"libraries are not judged here: {machine.libraries_note}",), ""
        )
    resolver = Resolver(machine.process)
    needing = tuple(_needing(env, resolver, version))
    found = None
    if name is not None:
        asker = resolver.facts(required_by) if required_by else None
        chain = [(required_by, asker)] if required_by and isinstance(asker, DynamicFacts) else []
        found = machine.process.loaded.get(name) or (resolver.search(name, chain) if chain else None)
        if found is None and not chain:
            found = resolver.search(name, [("", _NO_PATHS)])
    if found is None:
        what = name or "the library that defines it"
        return MachineAnswer(
            "system library",
            (f"{version}: the loader finds no {what} here",),
            f"install {what}",
            needing,
        )
    facts = resolver.facts(found)
    defined = facts.versions_defined if isinstance(facts, DynamicFacts) else None
    if defined is None:
        return MachineAnswer(
            "system library", (f"{found}: its version definitions could not be read",), "", needing
        )
    newest = _newest(defined, version)
    has = version in defined
    lines = [
        f"the loader finds {found} for {name}",
        f"it defines {version}"
        if has
        else f"it lacks {version}{_gcc(version)}; the newest it has is {newest}{_gcc(newest or '')}",
    ]
    if needing:
        lines.append(f"needed by: {', '.join(needing)}")
    if has:
        lines.append(
            "this machine's loader finds a library that has it: the error came from another library path"
        )
        return MachineAnswer("system library", tuple(lines), "", needing, fits=True)
    who = needing[0] if needing else "the extension"
    if version.startswith(("GLIBCXX_", "CXXABI_")):
        fix = (
            f"a libstdc++ with {version}{_gcc(version)} where the loader finds it first (a newer system "
            f"GCC runtime, or conda's libstdcxx-ng), or a build of {who} made with an older GCC"
        )
    elif version.startswith("GLIBC_"):
        fix = f"a system with glibc {version.removeprefix('GLIBC_')} or newer, or a build of {who} for an older manylinux"
    else:
        fix = f"a {name} that defines {version}, or a build of {who} made for this system"
    return MachineAnswer("system library", tuple(lines), fix, needing)


_NO_PATHS = DynamicFacts(0, 0, "", (), "", "", False, (), None)


def _needing(env: Environment, resolver: Resolver, version: str) -> Iterable[str]:
    """The distributions one of whose files needs ``version`` (its DT_VERNEED)."""
    for d in env.with_torch:
        for b in d.facts.binaries:
            if b.analysis.facts.format != "elf":
                continue
            facts = resolver.facts(os.path.join(str(d.installed.site), b.member))
            if isinstance(facts, DynamicFacts) and any(version in n.versions for n in facts.version_needs):
                yield d.name
                break


def explain_driver(machine: Machine, diagnosis: Diagnosis) -> MachineAnswer:
    """``CUDA driver version is insufficient for CUDA runtime version``: the driver here,
    against the judged torch's build and each distribution's CUDA code."""
    driver = machine.driver
    if driver.state == "none":
        return MachineAnswer(
            "driver",
            (
                f"there is no NVIDIA driver here ({driver.note}): the CUDA runtime reads version 0 and "
                "calls any driver insufficient",
            ),
            "install the NVIDIA driver (a machine with an NVIDIA GPU), or use torch's CPU build",
        )
    if driver.state != "found" or driver.cuda is None:
        return MachineAnswer("driver", (f"the driver could not be read: {driver.note}",), "")
    lines = [f"this machine's driver supports CUDA {cuda_text(driver.cuda)} ({driver.source})"]
    judged = diagnosis.judged
    torch = (
        torch_driver_words(judged.build, torch_words(judged), driver) if judged.version is not None else ""
    )
    if torch:
        lines.append(torch)
    needing = []
    for r in diagnosis.rows:
        for p in r.parts:
            if p.axis == "driver" and not p.files:
                lines.append(f"{r.name} {r.version}: {p.words}")
                needing.append(r.name)
    if not torch and not needing:
        lines.append(
            "it runs the CUDA of torch and of every distribution here: the error came from another process"
        )
        return MachineAnswer("driver", tuple(lines), "", fits=True)
    majors = [judged.build.major] if torch and judged.build is not None and judged.build.major else []
    target = f"CUDA {max(majors)}" if majors else "the CUDA they need"
    fix = (
        f"update the NVIDIA driver to one that supports {target}, or install builds for CUDA "
        f"{driver.cuda[0]} (torch's cu{driver.cuda[0]}x backend and extensions built for it)"
    )
    return MachineAnswer("driver", tuple(lines), fix, tuple(needing))


def explain_kernel(gpu: int | None, env: Environment) -> MachineAnswer:
    """``no kernel image is available for execution on the device``: the GPU against each
    distribution's CUDA code (cubins run on their major's later minors, PTX on newer GPUs)."""
    with_code = [(d, code_names(d.facts.accelerator_needs.gpu)) for d in env.with_torch]
    with_code = [(d, code) for d, code in with_code if code]
    if gpu is None:
        lines = ["the GPU is not known here (no nvidia-smi answered): give --gpu sm_XY to judge it"]
        lines += [f"{d.name} {d.version}: {', '.join(code)}" for d, code in with_code]
        return MachineAnswer("gpu", tuple(lines), "give --gpu sm_XY (nvidia-smi --query-gpu=compute_cap)")
    failing = [(d, code) for d, code in with_code if not runs_on(code, gpu)]
    lines = [f"the GPU is sm_{gpu}"]
    lines += [f"{d.name} {d.version}: {', '.join(code)}: none runs on sm_{gpu}" for d, code in failing]
    if not failing:
        lines.append("every distribution here has code that runs on it (torch's own kernels are not read)")
        return MachineAnswer("gpu", tuple(lines), "", fits=True)
    names = tuple(d.name for d, _ in failing)
    return MachineAnswer(
        "gpu",
        tuple(lines),
        f"install a build of {', '.join(names)} with code for sm_{gpu} (or PTX for an older GPU), or a release that has it",
        names,
    )
