"""Device-side code: a library in the wheel built for an accelerator's own cores, not for the
host the platform tag names, recognised only on evidence.

Ascend NPUs run their "AI CPU" operators on AArch64 cores of the device: a package for an
x86_64 host ships such kernels as AArch64 ELF files, and the device runtime, not the host's
``dlopen``, loads them, found through the package's operator information library, a JSON
manifest (``{"MyOp": {"opInfo": {"opKernelLib": "AICPUKernel", "kernelSo":
"libcust_aicpu_kernels.so", "functionName": "..."}}}``). Such a file is no host binary of
the wrong architecture, and TW405 must not call it one. Both kinds of evidence are required,
and anything short of them leaves the architecture error standing:

- a kernel manifest the package ships: a JSON file (outside ``.dist-info``) in which a key
  that names a kernel (``kernelSo``, ``kernel_lib``) has the file's name as its value;
- no host loader: no ``.py`` file of the wheel names the file, its stem or its folder (a
  ``ctypes.CDLL``, ``torch.ops.load_library`` or a glob over the folder would), the folder
  holds no Python (a package's own folder is where its loader globs), and no other compiled
  file links it.

Only a file that would be TW405's by its architecture alone (the format the tag promises,
another processor) and that is no Python module and uses no torch is considered; read with
the wheel's bounded readers, never run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from posixpath import basename, dirname, splitext

from torchwheel.analysis.member import MemberBinary
from torchwheel.analysis.platforms import Expected
from torchwheel.analysis.pyimports import python_sources
from torchwheel.errors import InputError

# a manifest is small: the JSON files read are bounded in size, count and total
_MAX_MANIFEST_BYTES = 1 << 20
_MAX_MANIFESTS = 256
_MAX_MANIFEST_TOTAL = 16 << 20
_KERNEL_KEY = re.compile(r"kernel", re.IGNORECASE)


def _candidates(binaries: Sequence[MemberBinary], promises: Iterable[Expected]) -> list[MemberBinary]:
    """Files TW405 would name for their processor alone: the promised format, no promised
    architecture, no Python module, no torch."""
    promises = list(promises)
    out = []
    for b in binaries:
        archs = {s.facts.arch for s in b.analysis.slices}
        if (
            promises
            and b.analysis.kind == "shared-library"
            and all(s.torch.usage == "none" for s in b.analysis.slices)
            and all(b.analysis.facts.format == p.format and not p.archs <= archs for p in promises)
        ):
            out.append(b)
    return out


def _named_kernels(doc: object, under_kernel_key: bool = False) -> Iterator[str]:
    """The string values a manifest gives under a key that names a kernel, at any depth."""
    stack: list[tuple[object, bool]] = [(doc, under_kernel_key)]
    while stack:
        node, kernel = stack.pop()
        if isinstance(node, dict):
            stack += [(v, kernel or bool(_KERNEL_KEY.search(str(k)))) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, kernel) for v in node]
        elif isinstance(node, str) and kernel:
            yield node


def _manifests(
    members: Iterable[str], size: Callable[[str], int], read: Callable[[str], bytes]
) -> dict[str, str]:
    """File name -> the manifest that names it as a kernel (its first, in member order)."""
    found: dict[str, str] = {}
    budget, count = _MAX_MANIFEST_TOTAL, 0
    for member in members:
        if not member.endswith(".json") or ".dist-info/" in member:
            continue
        n = size(member)
        if n > _MAX_MANIFEST_BYTES or n > budget or count >= _MAX_MANIFESTS:
            continue
        budget, count = budget - n, count + 1
        from torchwheel import safejson  # only a wheel that ships a .json file: check stays lean

        try:
            doc = safejson.load(read(member), member, safejson.ANY, reference="wheel-invalid")
        except InputError:
            continue  # not a manifest torchwheel can read: no evidence
        for value in _named_kernels(doc):
            found.setdefault(basename(value.replace("\\", "/")), member)
    return found


def _words(member: str) -> list[str]:
    """What a host loader of ``member`` would have to name: the file, its stem (``libfoo``
    of ``libfoo.so``), and its folder."""
    name = basename(member)
    folder = basename(dirname(member))
    return [w for w in (name, splitext(name)[0].split(".")[0], folder) if w]


def device_side(
    binaries: Sequence[MemberBinary],
    promises: Iterable[Expected],
    members: Sequence[str],
    size: Callable[[str], int],
    read: Callable[[str], bytes],
) -> Mapping[str, str]:
    """Member -> the manifest that names it, for each file that is device-side code on the
    evidence above. Nothing is read unless some file's processor differs from the tag's."""
    candidates = _candidates(binaries, promises)
    if not candidates:
        return {}
    manifests = _manifests(members, size, read)
    named = {b.member: manifests[basename(b.member)] for b in candidates if basename(b.member) in manifests}
    if not named:
        return {}
    folders_with_python = {dirname(m) for m in members if m.endswith(".py")}
    linked = {basename(n) for b in binaries for s in b.analysis.slices for n in s.facts.needed}
    patterns = {
        m: re.compile(
            rb"(?<![\w.-])(?:" + b"|".join(re.escape(w.encode()) for w in _words(m)) + rb")(?![\w-])"
        )
        for m in named
    }
    loaded = {m for m in named if dirname(m) in folders_with_python or basename(m) in linked}
    for _, source in python_sources(members, size, read):
        loaded |= {m for m, pattern in patterns.items() if m not in loaded and pattern.search(source)}
        if len(loaded) == len(named):
            break
    return {m: manifest for m, manifest in named.items() if m not in loaded}
