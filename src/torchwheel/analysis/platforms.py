"""What a wheel's platform tag promises about its binaries: a format and architectures.

``packaging.utils.parse_wheel_filename`` and ``packaging.tags.parse_tag`` give one ``Tag`` per
platform (a compressed ``manylinux_2_17_x86_64.manylinux2014_x86_64`` becomes two), but
packaging has no public parser for the platform string itself. So this module is a small
hand-written table: one pattern per platform family in use (PEP 513/571/599/600/656 Linux,
macOS, Windows, PEP 738 Android, PEP 730 iOS), and the architecture names of those tags
spelled the way torchwheel's readers spell machine types (ELF: ``_MACHINES`` in
``binary/elf.py``; Mach-O and PE: ``binary/macho.py``, ``binary/pe.py``), so that a rule compares the two
directly. A platform this table does not know yields None: no promise, nothing to check.

A .NET IL-only assembly promises no machine at all (``SliceFacts.runs_in``): ``managed_mismatch``
says whether the process a platform tag implies can load it.
"""

from __future__ import annotations

import re

from torchwheel.binary.facts import Format
from torchwheel.frozen import frozen

# Linux (manylinux*, musllinux, linux) tag arch -> ELF reader arch. The ELF header's e_machine
# cannot tell ARM versions apart (that is in .ARM.attributes), and the reader names every
# EM_ARM "armv7l"; i386/i586 are older spellings of the same EM_386 as i686.
_ELF_ARCHS = {
    "x86_64": "x86_64",
    "i686": "i686",
    "i586": "i686",
    "i386": "i686",
    "aarch64": "aarch64",
    "armv7l": "armv7l",
    "armv6l": "armv7l",
    "ppc64le": "ppc64le",
    "ppc64": "ppc64",
    "s390x": "s390x",
    "riscv64": "riscv64",
    "loongarch64": "loongarch64",
}

# macOS tag arch -> the Mach-O slices a binary must carry. The multi-arch names are the exact
# sets of CPython's ``_osx_support.get_platform_osx`` (universal2, intel, fat, fat3, fat64,
# universal), which are the archs ``packaging.tags.mac_platforms`` installs each name on;
# tests/analysis/test_platforms.py checks every pair against it.
_MACHO_ARCHS: dict[str, frozenset[str]] = {
    "x86_64": frozenset({"x86_64"}),
    "arm64": frozenset({"arm64"}),
    "i386": frozenset({"i386"}),
    "ppc": frozenset({"ppc"}),
    "ppc64": frozenset({"ppc64"}),
    "universal2": frozenset({"x86_64", "arm64"}),
    "intel": frozenset({"x86_64", "i386"}),
    "fat": frozenset({"i386", "ppc"}),
    "fat3": frozenset({"x86_64", "i386", "ppc"}),
    "fat64": frozenset({"x86_64", "ppc64"}),
    "universal": frozenset({"x86_64", "i386", "ppc", "ppc64"}),
}

_WINDOWS = {"win32": "x86", "win_amd64": "x86_64", "win_arm64": "arm64"}
_ANDROID = {"arm64_v8a": "aarch64", "armeabi_v7a": "armv7l", "x86_64": "x86_64", "x86": "i686"}
_IOS = {"arm64": "arm64", "x86_64": "x86_64"}

_LINUX = re.compile(r"^(?:manylinux(?:1|2010|2014)|manylinux_\d+_\d+|musllinux_\d+_\d+|linux)_(?P<arch>.+)$")
_MACOS = re.compile(r"^macosx_\d+_\d+_(?P<arch>.+)$")
_ANDROID_TAG = re.compile(r"^android_\d+_(?P<arch>.+)$")
_IOS_TAG = re.compile(r"^ios_\d+_\d+_(?P<arch>arm64|x86_64)_(?:iphoneos|iphonesimulator)$")


@frozen
class Expected:
    """The binary format a platform needs, and every architecture a binary must carry
    (a fat Mach-O has one slice per arch; a tag like universal2 needs all of them)."""

    format: Format
    archs: frozenset[str]


def expected(platform: str) -> Expected | None:
    """What ``platform`` (one platform of a Tag) promises; None when this table does not know it."""
    if m := _LINUX.match(platform):
        arch = _ELF_ARCHS.get(m["arch"])
        return Expected("elf", frozenset({arch})) if arch else None
    if m := _ANDROID_TAG.match(platform):
        arch = _ANDROID.get(m["arch"])
        return Expected("elf", frozenset({arch})) if arch else None
    if m := _MACOS.match(platform):
        archs = _MACHO_ARCHS.get(m["arch"])
        return Expected("macho", archs) if archs else None
    if m := _IOS_TAG.match(platform):
        return Expected("macho", frozenset({_IOS[m["arch"]]}))
    if platform in _WINDOWS:
        return Expected("pe", frozenset({_WINDOWS[platform]}))
    return None


# Process architectures of 32 bits, in every reader's spelling: where a 32BITREQUIRED assembly loads.
_BITS32 = frozenset({"x86", "i686", "i386", "armv7l", "arm", "ppc"})
# PE's machine names beside the ELF and Mach-O names of the same processor.
_SAME_CPU = {"x86": "i686", "arm64": "aarch64", "arm": "armv7l"}


def _cpu(arch: str) -> str:
    return _SAME_CPU.get(arch, arch)


def managed_mismatch(runs_in: str, promise: Expected) -> str | None:
    """Why a managed assembly that loads in ``runs_in`` processes fails the platform's promise,
    or None. The format never matters: a CLR (.NET, Mono) reads PE assemblies on every OS."""
    if runs_in == "any":
        return None
    if runs_in == "32-bit":
        wide = sorted(promise.archs - _BITS32)
        return (
            f"runs only in a 32-bit process (CLR flag 32BITREQUIRED), not {', '.join(wide)}" if wide else None
        )
    others = sorted(a for a in promise.archs if _cpu(a) != _cpu(runs_in))
    return f"runs only in a {runs_in} process, not {', '.join(others)}" if others else None
