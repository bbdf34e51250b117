"""Per-minor builds in one wheel: libraries that are the same library built for different
torch releases, of which the package's Python code loads the one matching the running torch.

Published wheels ship one unstable library per torch minor, the release in the file name
(``libtorch_c_dlpack_addon_torch24-cpu.so`` ... ``_torch29-cpu.so``, CPU and CUDA flavours),
in a directory per minor (``pkg/torch-2.6/lib/...``, ``pkg/pt27/_C.abi3.so``), or even per
patch release (``libdgl_sparse_pytorch_2.2.1.so``, ``_C_2_12_1.so`` beside ``_C_2_13_0.so``),
with a bare ``Requires-Dist: torch``, a range, or none at all: the
wheel loads where it has a build, and a pin would break it everywhere else. Such a set is
recognised by its names alone (the same path but for the torch release, at least two
releases), keeping the granularity the names have: a build named ``2.2.1`` says nothing
about 2.2.2. A path may name its release more than once (a folder and the file in it,
``glue_2_14_0/libpywrap_2_14_0_common.so``): each place is blanked, as long as they agree. ``compat`` confirms a claim against a real torch's exports where one is at hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from torchwheel.frozen import frozen
from torchwheel.torchabi.need import Release

# torch24, torch29, torch210, torch2_10, torch-2.9, torch_2_4, pytorch_2.2.1, pt27, pt2.12, or
# the bare release with its separators (_2_12, _2_12_1, -2.12): a word of its own, never a
# soname's version (libfoo.so.2.1)
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?<!\.so\.)(?:(?:(?:py)?torch|pt)[_.-]?(2)[_.-]?(\d{1,2})|(2)[_.](\d{1,2}))"
    r"(?:[_.-](\d{1,2}))?(?![0-9])",
    re.IGNORECASE,
)


def build_of(member: str) -> tuple[str, Release] | None:
    """(the path with its torch release as ``*``, the release it names) when the path names
    one release: in one place (a file ``_torch24``, a directory ``torch-2.6``), or the same
    release in several (``glue_2_14_0/libpywrap_2_14_0_common.so``). Two that differ, even by
    granularity (``torch2.13/_C_2_14.so``, ``2_12/_ops_2_12_1.so``), say no one release."""
    found = list(_TOKEN.finditer(member))
    if not found:
        return None
    builds = {tuple(int(g) for g in m.groups() if g is not None) for m in found}  # (2, 12) or (2, 12, 1)
    if len(builds) != 1:
        return None  # names two releases: not a per-release build by its name
    (build,) = builds
    key, end = [], 0
    for m in found:
        key += [member[end : m.start()], "*"]
        end = m.end()
    return "".join([*key, member[end:]]), build


@frozen
class Alternatives:
    """One library built for several torch releases: ``key`` is its path with the release as ``*``."""

    key: str
    members: tuple[tuple[Release, str], ...]  # (build, member), by build

    @property
    def builds(self) -> frozenset[Release]:
        return frozenset(build for build, _ in self.members)


def find_alternatives(members: Iterable[str]) -> list[Alternatives]:
    """The per-release sets among ``members``: at least two different releases for one path."""
    groups: dict[str, list[tuple[Release, str]]] = {}
    for member in members:
        found = build_of(member)
        if found is not None:
            groups.setdefault(found[0], []).append((found[1], member))
    return [
        Alternatives(key, tuple(sorted(group)))
        for key, group in sorted(groups.items())
        if len({build for build, _ in group}) > 1
    ]


# cpu, cuda, cu128, gpu, rocm, hip, xpu: a flavour word of its own in a path, with the
# toolkit release run on where a project names its builds so (bitsandbytes ships
# ``libbitsandbytes_cuda121.so`` ... ``_cuda130.so``, ``_rocm72.so``, ``_xpu2025.so`` and picks
# one by the torch it finds)
_FLAVOUR = re.compile(
    r"(?<![A-Za-z0-9])(cpu|cuda\d{0,3}|cu\d{2,3}|gpu|rocm\d{0,3}|hip\d{0,3}|xpu\d{0,4})(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def unit_key(member: str) -> str:
    """The library a member is a build of: its path with the torch release and the
    accelerator flavour blanked (``_torch24-cpu.so`` and ``_torch29-cuda.so`` are one library)."""
    found = build_of(member)
    key = found[0] if found is not None else member
    return _FLAVOUR.sub("~", key)


def flavoured(members: Iterable[str]) -> bool:
    """Do these builds of one library differ by accelerator flavour (``-cpu`` / ``-cuda``)?
    Then the package picks one at run time, by the torch it finds."""
    return len({m2.group(0).lower() for m in members for m2 in _FLAVOUR.finditer(m)}) > 1


def flavour_words(member: str) -> tuple[str, ...]:
    """The flavour words of a path, lower-cased (``_fps_cuda.so``: ``cuda``; ``_cu13``: ``cu13``)."""
    return tuple(m.group(0).lower() for m in _FLAVOUR.finditer(member))


# a flavour word with the separator before it: ``hook_cu12.abi3.so`` -> ``hook.abi3.so``
_FLAVOUR_WITH_SEPARATOR = re.compile(r"[_.-]?~")


def unflavoured_key(key: str) -> str:
    """A ``unit_key`` with its flavour blanks and their separators dropped: the name the
    set's default build has when a package ships one without a flavour word."""
    return _FLAVOUR_WITH_SEPARATOR.sub("", key)
