"""rules/integrity.py: the TW4xx rules (RECORD, tags, platform, metadata files, member names),
called directly on the facts of real fixture wheels (``fixtures/wheels.py``).

These tests exist so that each rule registered by this module is held to ``docs/reference/rules.md`` on
its own: where the finding lands (the member, the ``.dist-info`` file, or the wheel) and what
it says, for a wheel built to trigger it and for near misses. The archive rules (TW401-TW403,
TW407-TW411, TW414) share their words with ``wheel.defects``; they are reached through
``REGISTRY`` as the runner reaches them. Expected values are hand-written from how each fixture
wheel is made (RECORD rows dropped or corrupted, fields dropped, tags), or hashed here with
hashlib, never computed by the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from torchwheel.rules import integrity
from torchwheel.rules.registry import REGISTRY, Hit, Omitted, Policy

from ..lib.helpers import fixture_wheels_module
from .direct import facts

LINUX_ABI3 = "cp39-abi3-manylinux_2_28_x86_64"
CLEAN_MEMBER = "demo_stable/elf_marker_2_10.abi3.so"
OWN_CODES = {"TW401", "TW402", "TW403", "TW404", "TW405", "TW406", "TW407", "TW408", "TW409", "TW410",
             "TW411", "TW412", "TW413", "TW414", "TW415", "TW416", "TW417"}  # fmt: skip


def found(code: str, path: Path) -> list[Hit | Omitted]:
    """What the rule registered under ``code`` yields, ``Omitted`` counts included."""
    return list(REGISTRY[code].check(facts(path), Policy()))


def hits(code: str, path: Path) -> list[Hit]:
    """The findings the rule names (none of these wheels has problems past max-listed)."""
    named = found(code, path)
    assert not any(isinstance(h, Omitted) for h in named), named
    return [h for h in named if not isinstance(h, Omitted)]


def custom_wheel(tmp_path: Path, built: dict[str, Path], **spec: object) -> Path:
    wheels = fixture_wheels_module()
    made = wheels.WheelSpec("custom", "xcustom", **spec)
    path: Path = wheels.write_wheel(tmp_path / made.filename, made, built)
    return path


def sha256(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_every_tw4xx_code_is_registered_by_this_module() -> None:
    assert {c for c in REGISTRY if c.startswith("TW4")} == OWN_CODES
    assert {REGISTRY[c].check.__module__ for c in OWN_CODES} == {integrity.__name__}


@pytest.mark.parametrize("code", sorted(OWN_CODES))
def test_clean_wheel_is_silent(code: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(code, fixture_wheels["clean"]) == []


# -- RECORD: TW401, TW402, TW403 --------------------------------------------------------------


def test_tw401_no_record(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW401", fixture_wheels["tw401"]) == [
        (
            "w401-1.0.0.dist-info/RECORD",
            "the wheel has no RECORD: installers refuse it; rebuild, or run `torchwheel tag` to write one",
        )
    ]


def test_tw401_silent_where_record_is_incomplete(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW401", fixture_wheels["tw403"]) == []


def test_tw402_hash_differs(fixture_wheels: dict[str, Path], built_fixtures: dict[str, Path]) -> None:
    """The fixture writes the hash of b'something else' for the library's row."""
    recorded = sha256(b"something else")
    actual = sha256(built_fixtures["elf_marker_2_10"].read_bytes())
    assert hits("TW402", fixture_wheels["tw402"]) == [
        (
            CLEAN_MEMBER,
            f"hash-mismatch (RECORD {recorded}, actual {actual}): the file changed after RECORD was written; "
            "regenerate RECORD",
        )
    ]


@pytest.mark.parametrize("scenario", ["tw401", "tw403"])
def test_tw402_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """No RECORD at all, or a row missing: nothing to compare hashes with."""
    assert hits("TW402", fixture_wheels[scenario]) == []


def test_tw403_member_not_in_record(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW403", fixture_wheels["tw403"]) == [
        (CLEAN_MEMBER, "not listed in RECORD: regenerate RECORD from the archive's contents")
    ]


@pytest.mark.parametrize("scenario", ["tw401", "tw402"])
def test_tw403_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW403", fixture_wheels[scenario]) == []


@pytest.fixture
def max_listed_one(set_limits: Callable[..., None]) -> None:
    set_limits(MAX_LISTED="1")


def test_tw403_problems_past_max_listed_are_counted(max_listed_one: None, tmp_path: Path) -> None:
    """Three members missing from RECORD, max-listed 1: one named, two counted (``Omitted``)."""
    d = "xomit-1.0.dist-info"
    files = {
        "xomit/a.py": b"a = 1\n",
        "xomit/b.py": b"b = 2\n",
        "xomit/c.py": b"c = 3\n",
        f"{d}/METADATA": b"Metadata-Version: 2.1\nName: xomit\nVersion: 1.0\n",
        f"{d}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rows = [f"{n},{sha256(files[n])},{len(files[n])}" for n in (f"{d}/METADATA", f"{d}/WHEEL")]
    files[f"{d}/RECORD"] = ("\n".join([*rows, f"{d}/RECORD,,"]) + "\n").encode()
    path = tmp_path / "xomit-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    yielded = found("TW403", path)
    assert Omitted(2) in yielded
    named = [h for h in yielded if not isinstance(h, Omitted)]
    assert len(named) == 1
    member, message = named[0]
    assert member in {"xomit/a.py", "xomit/b.py", "xomit/c.py"}
    assert message == "not listed in RECORD: regenerate RECORD from the archive's contents"


# -- TW404 tags-disagree ----------------------------------------------------------------------


def test_tw404_wheel_tag_lines_differ_from_the_file_name(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW404", fixture_wheels["tw404"]) == [
        (
            "w404-1.0.0.dist-info/WHEEL",
            "file name tags cp39-abi3-manylinux_2_28_x86_64 differ from WHEEL Tag lines cp39-abi3-linux_x86_64: "
            "make them agree (`torchwheel tag` rewrites WHEEL from the file name)",
        )
    ]


def test_tw404_silent_for_an_invalid_file_name(fixture_wheels: dict[str, Path]) -> None:
    """tw414's name has no tags to compare (its WHEEL says cp39-abi3): TW414 says so instead."""
    assert hits("TW404", fixture_wheels["tw414"]) == []


# -- TW405 platform-mismatch ------------------------------------------------------------------


def test_tw405_macho_in_a_manylinux_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW405", fixture_wheels["tw405"]) == [
        (
            "w405/macho_x86_64_marker_2_10.abi3.so",
            "is MACHO but the wheel is tagged manylinux_2_28_x86_64: retag or rebuild",
        )
    ]


def test_tw405_universal2_without_an_arm64_slice(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW405", fixture_wheels["tw405_universal"]) == [
        (
            "w405u/macho_x86_64_marker_2_10.abi3.so",
            "has x86_64 but the wheel is tagged macosx_11_0_universal2 (arm64, x86_64): retag or rebuild",
        )
    ]


def test_tw405_compiled_files_in_an_any_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW405", fixture_wheels["tw306"]) == [
        ("", "the wheel is tagged for any platform but ships compiled files: tag it for their platform")
    ]


def test_tw405_every_platform_of_a_compressed_tag(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """An x86_64 ELF in a wheel for x86_64 and aarch64: the aarch64 platform is not met."""
    path = custom_wheel(
        tmp_path, built_fixtures, tag="cp39-abi3-manylinux_2_28_x86_64.manylinux_2_28_aarch64",
        members=(("xcustom/elf_marker_2_10.abi3.so", "elf_marker_2_10"),),
    )  # fmt: skip
    assert hits("TW405", path) == [
        (
            "xcustom/elf_marker_2_10.abi3.so",
            "has x86_64 but the wheel is tagged manylinux_2_28_aarch64 (aarch64): retag or rebuild",
        )
    ]


@pytest.mark.parametrize(
    "scenario",
    [
        "tw405_compound",  # manylinux_2_17_x86_64.manylinux2014_x86_64: both x86_64
        "recipe_macos",  # x86_64 Mach-O, macosx_11_0_x86_64
        "recipe_windows",  # x86_64 PE, win_amd64
        "tw415_armv7l",  # 32-bit ARM ELF, linux_armv7l
    ],
)
def test_tw405_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW405", fixture_wheels[scenario]) == []


KERNEL = "vendors/op_impl/cpu/aicpu_kernel/impl/libcust_aicpu_kernels.so"


@pytest.mark.parametrize(
    ("scenario", "why"),
    [
        ("device_kernels_loaded", "the package's Python opens it with ctypes.CDLL on the host"),
        ("device_kernels_no_manifest", "no kernel manifest names it"),
    ],
)
def test_tw405_stays_for_aarch64_code_without_both_kinds_of_evidence(
    scenario: str, why: str, fixture_wheels: dict[str, Path]
) -> None:
    dist = {"device_kernels_loaded": "wdevload", "device_kernels_no_manifest": "wdevnoman"}[scenario]
    assert hits("TW405", fixture_wheels[scenario]) == [
        (
            f"{dist}/{KERNEL}",
            "has aarch64 but the wheel is tagged manylinux_2_28_x86_64 (x86_64): retag or rebuild",
        )
    ], why
    assert hits("TW417", fixture_wheels[scenario]) == []


# -- TW417 device-side-code -------------------------------------------------------------------


def test_tw417_device_kernels_named_by_the_manifest_and_loaded_by_no_host_code(
    fixture_wheels: dict[str, Path],
) -> None:
    """Issue 48, item 4: an AArch64 AI CPU kernel library (zig, ``aarch64-linux-gnu``) in an
    x86_64 wheel, named by CANN's operator information library, loaded by no host code."""
    wheel = fixture_wheels["device_kernels"]
    assert hits("TW405", wheel) == []
    assert hits("TW417", wheel) == [
        (
            f"wdevice/{KERNEL}",
            "is aarch64 code for an accelerator's own cores, not for the host: "
            "wdevice/vendors/op_impl/cpu/config/cust_aicpu_kernel.json names it as a kernel and no Python file "
            "or library of the package loads it, so it is not judged against manylinux_2_28_x86_64 (TW405); "
            "the device runtime loads it",
        )
    ]


# -- TW406 binary-unreadable ------------------------------------------------------------------


def test_tw406_text_named_like_a_library(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW406", fixture_wheels["tw406"]) == [
        (
            "demo_stable/broken.so",
            "cannot be read (not an ELF, Mach-O or PE file): rebuild it, or drop it from the wheel",
        )
    ]


# -- METADATA and WHEEL: TW407, TW408, TW409, TW410 --------------------------------------------


def test_tw407_metadata_without_version(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW407", fixture_wheels["tw407"]) == [
        ("w407-1.0.0.dist-info/METADATA", "METADATA has no Version: fix the build backend's output")
    ]


def test_tw407_name_twice(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW407", fixture_wheels["tw407_duplicate_name"]) == [
        (
            "w407d-1.0.0.dist-info/METADATA",
            "METADATA has 2 Name fields: a field that may appear once: fix the build backend's output",
        )
    ]


def test_tw407_folded_wheel_version(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW407", fixture_wheels["tw407_folded"]) == [
        (
            "w407f-1.0.0.dist-info/WHEEL",
            "WHEEL field 'Wheel-Version' is folded over several lines: installer refuses it",
        )
    ]


def test_tw408_dist_info_of_another_project(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW408", fixture_wheels["tw408"]) == [
        (
            "other-1.0.0.dist-info",
            "names another project than the file name ('w408'): pip and installer refuse the wheel; rebuild "
            "it so that both name the same project",
        )
    ]


def test_tw409_metadata_name_differs(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW409", fixture_wheels["tw409"]) == [
        (
            "w409-1.0.0.dist-info/METADATA",
            "Name 'other-project' is not the project of the file name ('w409'): pip refuses the wheel; rebuild "
            "it so that both name one project",
        )
    ]


def test_tw409_metadata_version_differs(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW409", fixture_wheels["tw409_version"]) == [
        (
            "w409v-1.0.0.dist-info/METADATA",
            "Version '2.0' is not the file name's version ('1.0.0'): pip refuses the wheel; rebuild it so that "
            "both carry one version",
        )
    ]


@pytest.mark.parametrize("scenario", ["tw408", "tw407"])
def test_tw409_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """The .dist-info names another project (TW408's), or METADATA has no Version (TW407's)."""
    assert hits("TW409", fixture_wheels[scenario]) == []


def test_tw410_value_tag_never_writes(fixture_wheels: dict[str, Path]) -> None:
    ((member, message),) = hits("TW410", fixture_wheels["tw410"])
    assert member == "w410-1.0.0.dist-info/WHEEL"
    assert message.startswith(
        "Torch-ABI: '-1' is neither a version (X.Y or X.Y.Z), 'unstable', 'any' nor 'none'"
    )


def test_tw410_two_lines_that_disagree(fixture_wheels: dict[str, Path]) -> None:
    """``Torch-ABI: 2.10`` and ``torch-abi: 2.12``: header names ignore case."""
    ((member, message),) = hits("TW410", fixture_wheels["tw410_conflict"])
    assert member == "w410c-1.0.0.dist-info/WHEEL"
    assert message.startswith("Torch-ABI: WHEEL has 2 Torch-ABI lines that disagree ('2.10', '2.12')")


def test_tw410_silent_for_a_value_tag_writes(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    path = custom_wheel(
        tmp_path, built_fixtures, tag=LINUX_ABI3, members=(("xcustom/elf_marker_2_10.abi3.so", "elf_marker_2_10"),),
        wheel_extra="Torch-ABI: 2.10\n",
    )  # fmt: skip
    assert hits("TW410", path) == []


# -- TW411 member-name-uninstallable ----------------------------------------------------------


def test_tw411_member_named_dot(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW411", fixture_wheels["tw411"]) == [
        (
            "w411/.",
            "has an empty or '.' path component: installers write it elsewhere than RECORD lists, or over "
            "another member; rename it",
        )
    ]


def test_tw411_component_over_255_bytes(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW411", fixture_wheels["tw411_long"]) == [
        (
            "w411l/" + "a" * 300 + ".py",
            "has a path component of 303 bytes; file systems take 255, so installing fails (File name too "
            "long); shorten it",
        )
    ]


# -- TW412 facts-file-invalid -----------------------------------------------------------------


def test_tw412_facts_file_of_the_wrong_shape(fixture_wheels: dict[str, Path]) -> None:
    ((member, message),) = hits("TW412", fixture_wheels["tw412"])
    assert member == "w412-1.0.0.dist-info/torchwheel.json"
    assert '"torch_abi" is missing' in message
    assert message.endswith(": `torchwheel tag` rewrites it")


def _side_file_wheel(tmp_path: Path, built: dict[str, Path], side_abi: str) -> Path:
    side = f'{{"schema_version": 1, "torch_abi": "{side_abi}", "libraries": []}}'.encode()
    return custom_wheel(
        tmp_path, built, tag=LINUX_ABI3, members=(("xcustom/elf_marker_2_10.abi3.so", "elf_marker_2_10"),),
        wheel_extra="Torch-ABI: 2.10\n", extra=(("xcustom-1.0.0.dist-info/torchwheel.json", side),),
    )  # fmt: skip


def test_tw412_facts_file_contradicts_wheel(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    path = _side_file_wheel(tmp_path, built_fixtures, "2.12")
    assert hits("TW412", path) == [
        (
            "xcustom-1.0.0.dist-info/torchwheel.json",
            "says torch_abi '2.12', WHEEL Torch-ABI says '2.10': `torchwheel tag` rewrites both",
        )
    ]


def test_tw412_silent_when_facts_file_agrees(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    assert hits("TW412", _side_file_wheel(tmp_path, built_fixtures, "2.10")) == []


# -- TW413 local-version ----------------------------------------------------------------------


def test_tw413_local_label(fixture_wheels: dict[str, Path]) -> None:
    assert hits("TW413", fixture_wheels["tw413"]) == [
        (
            "",
            "version 1.0.0+torch2.12 has a local label (+torch2.12): PyPI refuses local versions at upload; "
            "serve it from your own index (`torchwheel index`), or give PyPI the one build it gets without "
            "the label (`torchwheel unlabel -w DIR WHEEL` writes it)",
        )
    ]


# -- TW414 filename-invalid -------------------------------------------------------------------


def test_tw414_name_packaging_refuses(fixture_wheels: dict[str, Path]) -> None:
    ((member, message),) = hits("TW414", fixture_wheels["tw414"])
    assert member == ""
    assert "not a valid wheel name" in message
    assert "'cp39.9-abi3-manylinux_2_28_x86_64'" in message
    assert "rename it to w414-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl" in message


# -- TW415 platform-refused-by-pypi -----------------------------------------------------------


def test_tw415_plain_linux_tag(fixture_wheels: dict[str, Path]) -> None:
    ((member, message),) = hits("TW415", fixture_wheels["tw415"])
    assert member == ""
    assert message.startswith(
        "platform tag linux_x86_64 (what a plain `pip wheel` writes) is refused by PyPI at upload: "
    )
    assert "auditwheel repair" in message


@pytest.mark.parametrize("scenario", ["tw415_armv7l", "recipe_macos", "recipe_windows"])
def test_tw415_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """linux_armv7l (piwheels), macosx_11_0_x86_64 and win_amd64: PyPI takes them."""
    assert hits("TW415", fixture_wheels[scenario]) == []
