"""Which platform tags PyPI takes at upload (TW415), and what turns a refused one into one
it takes.

The rule is Warehouse's, ``_valid_platform_tag`` in ``warehouse/forklift/legacy.py`` (as of
2026-08-21): every platform of the file name's tags must be in it, or the upload fails with
"Binary wheel '...' has an unsupported platform tag '...'" (``twine check`` does not say
so). Linux takes manylinux/musllinux tags and, of the plain ``linux_*`` ones, only the
``linux_armv6l``/``linux_armv7l`` that piwheels-era Raspberry Pi builds carry. A new
macOS major is added there when it ships: one newer than this list is not judged.
"""

from __future__ import annotations

import re

from torchwheel.rules.codes import REPAIR_LINUX

_ALLOWED = frozenset(
    {
        "any",
        "win32",
        "win_arm64",
        "win_amd64",
        "win_ia64",
        "manylinux1_x86_64",
        "manylinux1_i686",
        "manylinux2010_x86_64",
        "manylinux2010_i686",
        "manylinux2014_x86_64",
        "manylinux2014_i686",
        "manylinux2014_aarch64",
        "manylinux2014_armv7l",
        "manylinux2014_ppc64",
        "manylinux2014_ppc64le",
        "manylinux2014_s390x",
        "linux_armv6l",
        "linux_armv7l",
    }
)
_MACOSX = re.compile(r"macosx_(?P<major>\d+)_(?P<minor>\d+)_(?P<arch>.*)")
_MACOSX_ARCHS = frozenset(
    {"ppc", "ppc64", "i386", "x86_64", "arm64", "intel", "fat", "fat3", "fat64", "universal", "universal2"}
)
_MACOSX_MAJORS = frozenset({"11", "12", "13", "14", "15", "26"})  # 10 is judged apart
_IOS = re.compile(r"ios_(\d+)_(\d+)_(?P<arch>.*)_(iphoneos|iphonesimulator)")
_IOS_ARCHS = frozenset({"arm64", "x86_64"})
_ANDROID = re.compile(r"android_(\d+)_(?P<arch>.*)")
_ANDROID_ARCHS = frozenset({"armeabi_v7a", "arm64_v8a", "x86", "x86_64"})
_LINUX = re.compile(r"(?P<libc>many|musl)linux_(\d+)_(\d+)_(?P<arch>.*)")
_MUSLLINUX_ARCHS = frozenset({"x86_64", "i686", "aarch64", "armv7l", "ppc64le", "s390x", "riscv64"})
_MANYLINUX_ARCHS = _MUSLLINUX_ARCHS | {"ppc64"}
_PYEMSCRIPTEN = re.compile(r"pyemscripten_(\d+)_(\d+)_wasm32")
_PLAIN_LINUX = re.compile(r"linux_(?P<arch>.+)")


def _accepted(platform: str) -> bool:
    """Warehouse's ``_valid_platform_tag``, match for match (``re.match``: a prefix)."""
    if platform in _ALLOWED:
        return True
    m = _MACOSX.match(platform)
    macos_versions = m and (m["major"] == "10" or (m["major"] in _MACOSX_MAJORS and m["minor"] == "0"))
    if m and macos_versions and m["arch"] in _MACOSX_ARCHS:
        return True
    m = _LINUX.match(platform)
    if m:
        return m["arch"] in (_MUSLLINUX_ARCHS if m["libc"] == "musl" else _MANYLINUX_ARCHS)
    m = _IOS.match(platform)
    if m and m["arch"] in _IOS_ARCHS:
        return True
    m = _ANDROID.match(platform)
    if m and m["arch"] in _ANDROID_ARCHS:
        return True
    return bool(_PYEMSCRIPTEN.match(platform))


def _newer_macos(platform: str) -> bool:
    """A macOS major newer than Warehouse's list above: PyPI adds each one as it ships."""
    m = _MACOSX.match(platform)
    return m is not None and int(m["major"]) > max(int(v) for v in _MACOSX_MAJORS)


def refused(platform: str) -> bool:
    """Whether PyPI refuses a wheel with this platform tag at upload."""
    return not _accepted(platform) and not _newer_macos(platform)


def remedy(platform: str) -> str:
    """What makes a refused platform one PyPI takes: for a plain ``linux_*`` tag of an
    architecture manylinux has, auditwheel's repair (which checks the libraries and grafts
    what the platform lacks, then names the manylinux tag), run through torchwheel's."""
    m = _PLAIN_LINUX.fullmatch(platform)
    if m and m["arch"] in _MANYLINUX_ARCHS:
        return f"repair it into a manylinux wheel: `{REPAIR_LINUX.commands[0]}`"
    m = _MACOSX.match(platform)
    if m and m["arch"] in _MACOSX_ARCHS and m["major"] in _MACOSX_MAJORS:
        return (
            f"PyPI (and pip) know macOS {m['major']} only as macosx_{m['major']}_0_{m['arch']}: build with "
            f"MACOSX_DEPLOYMENT_TARGET={m['major']}.0"
        )
    return "PyPI takes no wheel for this platform: publish it on your own index (`torchwheel index`)"
