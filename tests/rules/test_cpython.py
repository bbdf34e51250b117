"""rules/cpython.py: the TW3xx rules (wheel tags vs module file names vs init hooks vs CPython
symbols), called directly on the facts of real fixture wheels.

These tests exist so that each rule is held to ``docs/reference/rules.md`` on its own: the CPython 3.12
extensions of ``fixtures/build.py`` (``elf_cpython_abi3``: limited API, floor 3.12;
``elf_cpython_cp312``: PyUnicode_New and PyDict_SetDefault outside it) and the torch
libraries (hook ``PyInit_<scenario>``, or none for the op library) in wheels tagged to trigger
each rule and in near misses. Expected symbols, hooks and versions are the fixtures' documented
facts, never values computed by the code under test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torchwheel.rules import cpython
from torchwheel.rules.registry import REGISTRY

from .direct import custom_wheel, hits


def test_each_rule_is_registered_under_its_code() -> None:
    assert REGISTRY["TW301"].check is cpython.abi3_not_limited
    assert REGISTRY["TW302"].check is cpython.suffix_tag_mismatch
    assert REGISTRY["TW303"].check is cpython.limited_api_above_floor
    assert REGISTRY["TW304"].check is cpython.module_hook_missing
    assert REGISTRY["TW305"].check is cpython.abi3t_needs_modexport
    assert REGISTRY["TW306"].check is cpython.pure_tag_with_binaries


# -- TW301 abi3-not-limited -------------------------------------------------------------------


def test_tw301_version_specific_module_in_an_abi3_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.abi3_not_limited, fixture_wheels["tw301"]) == [
        (
            "w301/foo.abi3.so",
            "[x86_64] is version-specific (PyDict_SetDefault, PyUnicode_New) but the wheel is tagged abi3: "
            "build it with Py_LIMITED_API, or tag the wheel cpXY-cpXY",
        )
    ]


def test_tw301_names_four_symbols_and_counts_the_rest(fixture_wheels: dict[str, Path]) -> None:
    """Six functions outside the limited API: four named, "and 2 more"."""
    ((member, message),) = hits(cpython.abi3_not_limited, fixture_wheels["tw301_many"])
    assert member == "w301m/foo.abi3.so"
    named = message.split("version-specific (", 1)[1].split(")", 1)[0]
    assert named.endswith(" and 2 more")
    assert len(named.removesuffix(" and 2 more").split(", ")) == 4


@pytest.mark.parametrize(
    "scenario",
    [
        "tw303",  # limited API only (floor too high: TW303's, not TW301's)
        "tw302_near",  # version-specific but tagged cp312-cp312
        "clean",  # not a CPython-API module at all
    ],
)
def test_tw301_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.abi3_not_limited, fixture_wheels[scenario]) == []


# -- TW302 suffix-tag-mismatch ----------------------------------------------------------------


def test_tw302_cpython_312_module_in_a_cp311_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.suffix_tag_mismatch, fixture_wheels["tw302"]) == [
        (
            "w302/foo.cpython-312-x86_64-linux-gnu.so",
            "loads only on CPython 3.12 but the wheel is tagged cp311-cp311-manylinux_2_28_x86_64: tag it "
            "cp312-cp312, or build it as .abi3",
        )
    ]


def test_tw302_cpython_312_module_in_an_abi3_wheel(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """An abi3 wheel installs on 3.13, where a .cpython-312 file is invisible to import."""
    path = custom_wheel(
        tmp_path, built_fixtures, "cp312-abi3-manylinux_2_28_x86_64", "foo.cpython-312-x86_64-linux-gnu.so",
        "elf_cpython_cp312",
    )  # fmt: skip
    ((member, message),) = hits(cpython.suffix_tag_mismatch, path)
    assert member == "xcustom/foo.cpython-312-x86_64-linux-gnu.so"
    assert message == (
        "loads only on CPython 3.12 but the wheel is tagged cp312-abi3-manylinux_2_28_x86_64: tag it "
        "cp312-cp312, or build it as .abi3"
    )


@pytest.mark.parametrize(
    "scenario",
    [
        "tw302_near",  # .cpython-312 in a cp312-cp312 wheel
        "op_library_cp310",  # .cpython-310 op library loaded by path, never imported
        "clean",  # .abi3.so
    ],
)
def test_tw302_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.suffix_tag_mismatch, fixture_wheels[scenario]) == []


# -- TW303 limited-api-above-floor ------------------------------------------------------------


def test_tw303_312_symbol_in_a_cp39_abi3_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.limited_api_above_floor, fixture_wheels["tw303"]) == [
        (
            "w303/foo.abi3.so",
            "[x86_64] uses PyErr_GetRaisedException (CPython 3.12+) but the wheel is tagged cp39-abi3: raise "
            "the tag to cp312-abi3 (`torchwheel tag` raises it)",
        )
    ]


def test_tw303_requires_python_below_the_floor_does_not_help(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """``Requires-Python: >=3.11`` keeps the wheel off 3.9 and 3.10, not off 3.11."""
    path = custom_wheel(
        tmp_path,
        built_fixtures,
        "cp39-abi3-manylinux_2_28_x86_64",
        "foo.abi3.so",
        "elf_cpython_abi3",
        ">=3.11",
    )
    ((member, message),) = hits(cpython.limited_api_above_floor, path)
    assert member == "xcustom/foo.abi3.so"
    assert "(CPython 3.12+) but the wheel is tagged cp39-abi3: raise the tag to cp312-abi3" in message


@pytest.mark.parametrize(
    "scenario",
    [
        "tw303_near",  # tagged cp312-abi3: the floor is the module's
        "tw303_requires_python",  # cp39-abi3, but Requires-Python >=3.12
        "tw301",  # version-specific: TW301's, not a limited-API floor
        "tw302_near",  # not abi3-tagged
    ],
)
def test_tw303_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.limited_api_above_floor, fixture_wheels[scenario]) == []


# -- TW304 module-hook-missing ----------------------------------------------------------------


def test_tw304_module_renamed_away_from_its_hook(fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.module_hook_missing, fixture_wheels["tw304"]) == [
        (
            "w304/renamed.abi3.so",
            "[x86_64] named as module 'renamed' but exports no PyInit_renamed (hooks: PyInit_elf_marker_2_10): "
            "import would fail; rename the file or the module",
        )
    ]


def test_tw304_op_library_imported_by_name(fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.module_hook_missing, fixture_wheels["tw304_op_library_imported"]) == [
        (
            "w304o/_C_ops.abi3.so",
            "is imported as 'w304o._C_ops' by the wheel's Python code but is a torch op library without "
            "PyInit__C_ops: import would fail; load it with torch.ops.load_library(path) instead, or build it "
            "as a module",
        )
    ]


def test_tw304_op_library_imported_from_another_package(fixture_wheels: dict[str, Path]) -> None:
    """The import sits in a package with no compiled file, which ``reach`` does not read:
    the wheel's import statements (``py_imports``) decide, and are parsed for it."""
    assert hits(cpython.module_hook_missing, fixture_wheels["tw304_op_library_imported_elsewhere"]) == [
        (
            "w304e/_C_ops.abi3.so",
            "is imported as 'w304e._C_ops' by the wheel's Python code but is a torch op library without "
            "PyInit__C_ops: import would fail; load it with torch.ops.load_library(path) instead, or build it "
            "as a module",
        )
    ]


def test_tw304_each_slice_of_a_universal_binary(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """Both slices export PyInit_macho_universal_differ, neither PyInit_u: one finding each."""
    path = custom_wheel(
        tmp_path, built_fixtures, "cp39-abi3-macosx_11_0_universal2", "u.abi3.so", "macho_universal_differ"
    )
    found = hits(cpython.module_hook_missing, path)
    assert sorted(m.split("]", 1)[0] for _, m in found) == ["[arm64", "[x86_64"]
    assert {member for member, _ in found} == {"xcustom/u.abi3.so"}
    assert all("exports no PyInit_u (hooks: PyInit_macho_universal_differ)" in m for _, m in found)


@pytest.mark.parametrize(
    "scenario",
    [
        "clean",  # elf_marker_2_10.abi3.so exports PyInit_elf_marker_2_10
        "op_library",  # no hook, loaded by torch.ops.load_library
        "tw303",  # foo.abi3.so exports PyInit_foo
    ],
)
def test_tw304_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.module_hook_missing, fixture_wheels[scenario]) == []


# -- TW305 abi3t-needs-modexport --------------------------------------------------------------


def test_tw305_pyinit_only_in_an_abi3t_wheel(fixture_wheels: dict[str, Path]) -> None:
    """cp315-abi3.abi3t: an abi3 tag remains when abi3t is dropped, so tag can drop it."""
    assert hits(cpython.abi3t_needs_modexport, fixture_wheels["tw305"]) == [
        (
            "demo_stable/elf_marker_2_10.abi3.so",
            "[x86_64] exports only PyInit_ hooks, which free-threaded abi3t cannot use: port to PyModExport_ "
            "(PEP 793) or drop the abi3t tag (`torchwheel tag` drops it)",
        )
    ]


def test_tw305_abi3t_the_only_abi_is_not_dropped(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    path = custom_wheel(
        tmp_path,
        built_fixtures,
        "cp315-abi3t-manylinux_2_28_x86_64",
        "elf_marker_2_10.abi3.so",
        "elf_marker_2_10",
    )
    assert hits(cpython.abi3t_needs_modexport, path) == [
        (
            "xcustom/elf_marker_2_10.abi3.so",
            "[x86_64] exports only PyInit_ hooks, which free-threaded abi3t cannot use: port to PyModExport_ "
            "(PEP 793) or drop the abi3t tag",
        )
    ]


@pytest.mark.parametrize("scenario", ["clean", "tw303"])
def test_tw305_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    """abi3 without abi3t."""
    assert hits(cpython.abi3t_needs_modexport, fixture_wheels[scenario]) == []


# -- TW306 pure-tag-with-binaries -------------------------------------------------------------


def test_tw306_extension_module_in_a_py3_none_wheel(fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.pure_tag_with_binaries, fixture_wheels["tw306"]) == [
        (
            "",
            "ships Python extension modules but its tags say abi 'none': tag it with the modules' ABI "
            "(abi3 or cpXY)",
        )
    ]


@pytest.mark.parametrize(
    "scenario",
    [
        "clean",  # abi3
        "tw415_armv7l",  # abi3, a library with no hook
    ],
)
def test_tw306_silent(scenario: str, fixture_wheels: dict[str, Path]) -> None:
    assert hits(cpython.pure_tag_with_binaries, fixture_wheels[scenario]) == []


def test_tw306_silent_for_a_hookless_library_in_a_pure_wheel(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """abi 'none' and a plain C library with no module hook: no extension module (TW405 judges
    the platform)."""
    path = custom_wheel(tmp_path, built_fixtures, "py3-none-any", "libplain.so", "elf_no_torch")
    assert hits(cpython.pure_tag_with_binaries, path) == []
