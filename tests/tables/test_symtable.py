"""Tests of the shim symbol-version table: header scanning, merging, shipped data."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from torchwheel.errors import InputError
from torchwheel.tables.headergates import ConditionalTracker, condition_gates, scan_header_text
from torchwheel.tables.shim_headers import scan_headers
from torchwheel.tables.symtable import (
    BASELINE,
    SCHEMA_VERSION,
    SymbolTable,
    load_shipped,
    merge_all,
)
from torchwheel.tables.tableupdate import regenerate
from torchwheel.version import FeatureVersion

V = FeatureVersion.parse

# Functions torch 2.14's shim_mps.h gates at 2.10 although 2.13 declared them ungated;
# the shipped table follows the gate (see SymbolTable.merge).
RETRO_GATED_MPS = frozenset(
    {
        "aoti_torch_mps_create_shader_library",
        "aoti_torch_mps_delete_shader_library",
        "aoti_torch_mps_dispatch_array",
        "aoti_torch_mps_dispatch_array_with_group_size",
        "aoti_torch_mps_dispatch_single",
        "aoti_torch_mps_dispatch_single_with_group_size",
        "aoti_torch_mps_get_kernel_function",
        "aoti_torch_mps_run_command_block",
        "aoti_torch_mps_shared_callback",
        "aoti_torch_mps_start_encoding",
    }
)


def _gate(n: int) -> str:
    return f"#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_{n}_0"


# --------------------------------------------------------------------------------------
# The conditional tracker
# --------------------------------------------------------------------------------------


def test_ungated_declaration_is_baseline() -> None:
    assert scan_header_text("AOTI_TORCH_EXPORT int32_t aoti_torch_a();\n") == {"aoti_torch_a": None}


def test_nested_gates_take_the_highest_enclosing_gate() -> None:
    text = f"""
{_gate(10)}
AOTI_TORCH_EXPORT AOTITorchError outer_before(int x);
{_gate(12)}
AOTI_TORCH_EXPORT AOTITorchError inner(int x);
#endif // TORCH_FEATURE_VERSION >= TORCH_VERSION_2_12_0
AOTI_TORCH_EXPORT AOTITorchError outer_after(int x);
#endif
AOTI_TORCH_EXPORT AOTITorchError after_all(int x);
"""
    assert scan_header_text(text) == {
        "outer_before": V("2.10"),
        "inner": V("2.12"),
        "outer_after": V("2.10"),
        "after_all": None,
    }


def test_an_inner_lower_gate_does_not_loosen_the_outer_one() -> None:
    text = f"{_gate(12)}\n{_gate(10)}\nAOTI_TORCH_EXPORT int f();\n#endif\n#endif\n"
    assert scan_header_text(text) == {"f": V("2.12")}


def test_else_of_a_version_gate_means_older_and_adds_no_gate() -> None:
    text = f"""
{_gate(10)}
{_gate(12)}
AOTI_TORCH_EXPORT int new_api(int64_t x);
#else
AOTI_TORCH_EXPORT int old_api(int32_t x);
#endif
#endif
"""
    assert scan_header_text(text) == {"new_api": V("2.12"), "old_api": V("2.10")}


def test_less_than_gates_the_else_branch() -> None:
    text = """
#if TORCH_FEATURE_VERSION < TORCH_VERSION_2_11_0
AOTI_TORCH_EXPORT int legacy();
#else
AOTI_TORCH_EXPORT int modern();
#endif
"""
    assert scan_header_text(text) == {"legacy": None, "modern": V("2.11")}


def test_elif_chain() -> None:
    text = f"""
{_gate(13)}
AOTI_TORCH_EXPORT int a();
#elif TORCH_FEATURE_VERSION >= TORCH_VERSION_2_11_0
AOTI_TORCH_EXPORT int b();
#elif defined(SOMETHING)
AOTI_TORCH_EXPORT int c();
#else
AOTI_TORCH_EXPORT int d();
#endif
"""
    assert scan_header_text(text) == {"a": V("2.13"), "b": V("2.11"), "c": None, "d": None}


def test_multi_line_declarations() -> None:
    text = """
AOTI_TORCH_EXPORT AOTITorchError
torch_split_return_type(StableListHandle list_handle, size_t* size);

AOTI_TORCH_EXPORT AOTITorchError torch_many_params(
    void* data,
    int64_t ndim,
    void (*deleter)(void* data, void* ctx),
    AtenTensorHandle* ret // returns new reference
);
AOTI_TORCH_EXPORT const char*
    torch_pointer_return();
"""
    assert set(scan_header_text(text)) == {
        "torch_split_return_type",
        "torch_many_params",
        "torch_pointer_return",
    }


def test_comments_and_string_literals() -> None:
    text = f"""
// AOTI_TORCH_EXPORT int line_commented();
/* AOTI_TORCH_EXPORT int block_commented();
#endif  <- a directive inside a comment must not pop the stack
*/
{_gate(11)}
[[deprecated("use b() instead // not a comment")]]
AOTI_TORCH_EXPORT /* inline comment */ AOTITorchError
/* between */ gated_after_comments(int x); // trailing
#endif /* TORCH_FEATURE_VERSION >= TORCH_VERSION_2_11_0 */
"""
    assert scan_header_text(text) == {"gated_after_comments": V("2.11")}


def test_define_bodies_are_skipped() -> None:
    text = """
#ifdef _WIN32
#define AOTI_TORCH_EXPORT __declspec(dllexport)
#else
#define AOTI_TORCH_EXPORT __attribute__((__visibility__("default")))
#endif
#define DECLARE_GETTER(name) \\
  AOTI_TORCH_EXPORT int32_t aoti_torch_dtype_##name(); \\
  AOTI_TORCH_EXPORT int32_t from_macro_body();
AOTI_TORCH_EXPORT int32_t real_function();
"""
    assert scan_header_text(text) == {"real_function": None}


def test_use_cuda_nested_inside_a_gate_is_neutral() -> None:
    text = f"""
#ifndef STABLE_TORCH_SHIM
#define STABLE_TORCH_SHIM
#ifdef __cplusplus
extern "C" {{
#endif
{_gate(10)}
AOTI_TORCH_EXPORT AOTITorchError torch_before_cuda();
#ifdef USE_CUDA
AOTI_TORCH_EXPORT AOTITorchError torch_cuda_only(void* stream);
#if defined(USE_ROCM)
AOTI_TORCH_EXPORT AOTITorchError torch_rocm_only();
#endif
#endif // USE_CUDA
AOTI_TORCH_EXPORT AOTITorchError torch_after_cuda();
#endif
#ifdef USE_CUDA
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cuda_baseline();
#endif
#ifdef __cplusplus
}} // extern "C"
#endif
#endif // STABLE_TORCH_SHIM
"""
    assert scan_header_text(text) == {
        "torch_before_cuda": V("2.10"),
        "torch_cuda_only": V("2.10"),
        "torch_rocm_only": V("2.10"),
        "torch_after_cuda": V("2.10"),
        "aoti_torch_cuda_baseline": None,
    }


def test_if_zero_is_dead_code() -> None:
    text = "#if 0\nAOTI_TORCH_EXPORT int dead();\n#else\nAOTI_TORCH_EXPORT int alive();\n#endif\n"
    assert scan_header_text(text) == {"alive": None}


def test_newest_gate_macro_and_hex_literal() -> None:
    text = """
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_14_0
AOTI_TORCH_EXPORT AOTITorchError torch_has_storage(AtenTensorHandle t, bool* ret);
#endif
#if TORCH_FEATURE_VERSION >= 0x020F000000000000
AOTI_TORCH_EXPORT AOTITorchError torch_hex_gated();
#endif
"""
    assert scan_header_text(text) == {
        "torch_has_storage": V("2.14"),
        "torch_hex_gated": V("2.15"),
    }


def test_duplicate_declarations_keep_the_most_permissive() -> None:
    text = f"{_gate(12)}\nAOTI_TORCH_EXPORT int f();\n#endif\nAOTI_TORCH_EXPORT int f();\n"
    assert scan_header_text(text) == {"f": None}


def test_condition_gates_boolean_combinations() -> None:
    ge10 = "TORCH_FEATURE_VERSION >= TORCH_VERSION_2_10_0"
    ge12 = "TORCH_FEATURE_VERSION >= TORCH_VERSION_2_12_0"
    assert condition_gates(f"{ge10} && defined(USE_CUDA)") == (V("2.10"), None)
    assert condition_gates(f"{ge10} && {ge12}") == (V("2.12"), None)
    assert condition_gates(f"{ge10} || {ge12}") == (V("2.10"), None)
    assert condition_gates(f"{ge10} || defined(X)") == (None, None)
    assert condition_gates(f"!({ge12})") == (None, V("2.12"))
    assert condition_gates("defined(USE_CUDA)") == (None, None)


def test_tracker_rejects_unbalanced_directives() -> None:
    tracker = ConditionalTracker()
    with pytest.raises(ValueError, match="#endif"):
        tracker.directive("endif", "")
    with pytest.raises(ValueError):
        scan_header_text("#else\n")


# --------------------------------------------------------------------------------------
# Sources and the table
# --------------------------------------------------------------------------------------

_VERSION_H = """#pragma once
#define TORCH_VERSION_MAJOR {major}
#define TORCH_VERSION_MINOR {minor}
#define TORCH_VERSION_PATCH {patch}
#define TORCH_VERSION_ABI_TAG 0
"""


def _fake_include(root: Path, version: str, shim: str) -> Path:
    """A torch/include tree holding only what the scanner reads."""
    major, minor, patch = version.split(".")
    include = root / "torch" / "include"
    (include / "torch" / "headeronly").mkdir(parents=True)
    (include / "torch" / "headeronly" / "version.h").write_text(
        _VERSION_H.format(major=major, minor=minor, patch=patch)
    )
    (include / "torch" / "csrc" / "stable" / "c").mkdir(parents=True)
    (include / "torch" / "csrc" / "stable" / "c" / "shim.h").write_text(shim)
    # Not a shim header: its C++ helpers must not enter the table.
    (include / "torch" / "csrc" / "shim_exception_state.h").write_text(
        "AOTI_TORCH_EXPORT void set_torch_exception_what(const std::string& m);\n"
    )
    return include


def test_scan_headers_from_directory_forms_and_wheel(tmp_path: Path) -> None:
    shim = f"AOTI_TORCH_EXPORT int base();\n{_gate(12)}\nAOTI_TORCH_EXPORT int newer();\n#endif\n"
    include = _fake_include(tmp_path / "site", "2.12.1", shim)
    expected = SymbolTable({"base": None, "newer": V("2.12")}, sources=("2.12.1",))
    assert scan_headers(tmp_path / "site") == expected
    assert scan_headers(include) == expected
    assert scan_headers(str(include)) == expected

    wheel = tmp_path / "torch-2.12.1-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(include.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(tmp_path / "site").as_posix())
        # a wheel is read like every other (WheelArchive): it has its .dist-info
        archive.writestr(
            "torch-2.12.1.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n"
        )
        archive.writestr(
            "torch-2.12.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.12.1\n"
        )
    assert scan_headers(wheel) == expected


def test_scan_headers_rejects_non_torch(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        scan_headers(tmp_path)
    junk = tmp_path / "junk.whl"
    junk.write_bytes(b"not a zip")
    with pytest.raises(ValueError):
        scan_headers(junk)


def test_json_round_trip_and_determinism() -> None:
    table = SymbolTable({"b": V("2.12"), "a": None, "c": V("2.10.0")}, sources=("2.14.1", "2.13.0"))
    text = table.to_json()
    assert SymbolTable.from_json(text) == table
    assert list(json.loads(text)["symbols"]) == ["a", "b", "c"]
    assert json.loads(text)["sources"] == ["2.13.0", "2.14.1"]
    assert json.loads(text)["schema_version"] == SCHEMA_VERSION
    assert SymbolTable.from_json(text).to_json() == text


def test_from_json_refuses_unknown_schema() -> None:
    with pytest.raises(InputError, match="schema_version"):
        SymbolTable.from_json(json.dumps({"schema_version": 99, "symbols": {}}))
    with pytest.raises(InputError, match=r"\$\.symbols: expected an object, found a list"):
        SymbolTable.from_json(json.dumps({"schema_version": SCHEMA_VERSION, "symbols": []}))


def test_introduced_and_newest() -> None:
    table = SymbolTable({"a": None, "b": V("2.12")}, sources=("2.13.0",))
    assert table.introduced("a") is None
    assert table.introduced("b") == V("2.12")
    with pytest.raises(KeyError):
        table.introduced("missing")
    assert table.newest == V("2.13.0")
    assert SymbolTable({"x": V("2.15")}, sources=("2.13.0",)).newest == V("2.15")
    assert SymbolTable({}).newest == BASELINE


def test_merge_rules() -> None:
    old = SymbolTable(
        {"base": None, "gated": V("2.12"), "retro": None, "removed": None, "lower": V("2.13")},
        sources=("2.13.0",),
    )
    new = SymbolTable(
        {
            "base": None,
            "gated": V("2.12"),
            "retro": V("2.10"),  # a newer header adds the missing gate
            "lower": V("2.12"),  # ... or lowers one
            "arrived": None,  # ungated, absent from the older release
            "device_gate": V("2.11"),  # gated below the release that first declared it
            "fresh": V("2.14"),
        },
        sources=("2.14.1",),
    )
    merged = old.merge(new)
    assert merged == new.merge(old)
    assert merged.sources == ("2.13.0", "2.14.1")
    assert dict(merged.symbols) == {
        "base": None,
        "gated": V("2.12"),
        "retro": V("2.10"),
        "lower": V("2.12"),
        "removed": None,
        "arrived": V("2.14"),
        "device_gate": V("2.14"),
        "fresh": V("2.14"),
    }
    # Extending with an even older release dates the formerly baseline symbols.
    older = SymbolTable({"base": None}, sources=("2.12.0",))
    extended = merge_all([merged, older])
    assert extended.introduced("base") is None
    assert extended.introduced("removed") == V("2.13")


def test_merge_all_requires_tables() -> None:
    with pytest.raises(ValueError):
        merge_all([])


# --------------------------------------------------------------------------------------
# The shipped data
# --------------------------------------------------------------------------------------


def test_shipped_table_facts() -> None:
    table = load_shipped()
    assert table is load_shipped()  # cached
    assert table.sources == ("2.9.0", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0", "2.15.0")
    assert table.introduced("torch_from_blob") == V("2.11.0")
    assert table.introduced("torch_call_dispatcher") == V("2.10.0")
    assert table.introduced("torch_library_def_with_tags") == V("2.12.0")
    assert table.introduced("torch_exception_get_what") == V("2.13.0")
    assert table.introduced("aoti_torch_get_sizes") is None
    # Gated at TORCH_VERSION_2_14_0 in torch/csrc/stable/c/shim.h and first exported by 2.14.
    for name in (
        "torch_has_storage",
        "torch_mps_set_arg_bytes",
        "torch_tensor_from_pyobject",
        "torch_tensor_to_pyobject",
    ):
        assert table.introduced(name) == V("2.14.0")
    # No XPU wheel is read: header-derived. Ungated in 2.14's c_shim_xpu.h, absent from 2.13's.
    assert table.introduced("aoti_torch_xpu_cat") == V("2.14.0")
    # Gated at 2.13 by the generator but first generated for XPU in 2.14.
    assert table.introduced("aoti_torch_xpu_grid_sampler_3d") == V("2.14.0")
    for name in RETRO_GATED_MPS:
        assert table.introduced(name) == V("2.10.0")
    assert table.newest == V("2.15.0")
    assert "set_torch_exception_what" not in table.symbols


def test_shipped_file_is_what_to_json_writes() -> None:
    """Guards the determinism gen_symtable.py promises: a regeneration is a no-op diff."""
    path = Path(__file__).resolve().parents[2] / "src/torchwheel/data/shim_versions.json"
    assert load_shipped().to_json() == path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def installed_include() -> Path:
    import torch  # the test extras install torch 2.13.0; a missing torch must fail, not skip

    include = Path(torch.__file__).parent / "include"
    assert include.is_dir(), "installed torch ships no headers"
    return include


def test_installed_torch_agrees_with_shipped_table(installed_include: Path) -> None:
    scanned = scan_headers(installed_include)
    shipped = load_shipped()
    assert scanned.sources[0] == "2.13.0", f"the test extras pin torch 2.13.0, found {scanned.sources[0]}"
    assert scan_headers(installed_include.parent.parent) == scanned  # site-packages form
    assert "torch_from_blob" in scanned.symbols
    assert len(scanned.symbols) > 700
    disagreements = {
        name
        for name, gate in scanned.symbols.items()
        if shipped.introduced(name) != gate  # KeyError if shipped lacks a 2.13 symbol
    }
    # The shipped table is export-dated; the 2.13 headers are only a cross-check. Every
    # shim they declare exists by 2.13, but the dates differ where the gate is missing or
    # wrong (all listed in docs/reference/symbol-table.md) or the headers arrived after 2.9.
    assert all((shipped.introduced(n) or BASELINE) <= V("2.13.0") for n in scanned.symbols)
    exported = {n for n in disagreements if shipped.origin(n).source == "export"}
    assert RETRO_GATED_MPS | {"aoti_torch_int64_to_ivalue", "aoti_torch_str_to_ivalue"} <= exported
    assert all(shipped.introduced(n) == V("2.10.0") for n in RETRO_GATED_MPS)
    # Gated, but not when the export appeared: one gate too late, one too early.
    assert {n for n in exported if scanned.symbols[n] is not None} == {
        "aoti_torch_mps__scaled_dot_product_attention_math_for_mps_v2",  # gate 2.13, exported 2.12
        "aoti_torch_mps_nonzero_static",  # gate 2.11, exported 2.12
    }
    report = (Path(__file__).resolve().parents[2] / "docs/reference/symbol-table.md").read_text(
        encoding="utf-8"
    )
    for name in exported - RETRO_GATED_MPS:  # the retro-gates agree with 2.14's headers
        assert f"| `{name}` |" in report, name
    # The rest: never exported by a wheel read, declared ungated but only from 2.10 on.
    for name in disagreements - exported:
        assert shipped.origin(name).source == "header-gate" and scanned.symbols[name] is None
        assert shipped.introduced(name) == V("2.10.0"), name


# --------------------------------------------------------------------------------------
# regenerate()
# --------------------------------------------------------------------------------------


def test_regenerate_extends_shipped_table_from_directory(tmp_path: Path) -> None:
    shim = f"""
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_get_sizes(AtenTensorHandle t, int64_t** r);
AOTI_TORCH_EXPORT AOTITorchError torch_new_ungated_in_2_16();
{_gate(11)}
AOTI_TORCH_EXPORT AOTITorchError torch_from_blob(void* data);
#endif
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0
AOTI_TORCH_EXPORT AOTITorchError torch_brand_new(AtenTensorHandle t);
#endif
"""
    _fake_include(tmp_path / "torch216", "2.16.0", shim)
    output = tmp_path / "out" / "shim_versions.json"
    table = regenerate([tmp_path / "torch216"], output, extend=True)

    assert SymbolTable.from_json(output.read_text(encoding="utf-8")) == table
    assert [p.name for p in output.parent.iterdir()] == ["shim_versions.json"]  # no temp left
    assert output.stat().st_mode & 0o777 == 0o644  # not mkstemp's owner-only mode
    shipped = load_shipped()
    assert table.sources == (*shipped.sources, "2.16.0")
    assert table.introduced("torch_brand_new") == V("2.16.0")
    assert table.introduced("torch_new_ungated_in_2_16") == V("2.16.0")
    assert table.introduced("torch_from_blob") == V("2.11.0")
    assert table.introduced("aoti_torch_get_sizes") is None
    # Symbols the fake 2.16 does not declare keep their shipped versions.
    for name in ("torch_call_dispatcher", "torch_has_storage", "aoti_torch_xpu_cat"):
        assert table.introduced(name) == shipped.introduced(name)
    assert len(table.symbols) == len(shipped.symbols) + 2
    assert table.newest == V("2.16.0")
    # Export dates and their provenance survive: headers do not overrule the loader.
    assert table.origin("torch_from_blob") == shipped.origin("torch_from_blob")
    assert table.wheels == shipped.wheels


def test_regenerate_replace_and_return_only(tmp_path: Path) -> None:
    _fake_include(tmp_path / "t", "2.15.0", "AOTI_TORCH_EXPORT int only_one();\n")
    table = regenerate([tmp_path / "t"], None, extend=False)
    assert table == SymbolTable({"only_one": None}, sources=("2.15.0",))
    assert not (tmp_path / "shim_versions.json").exists()
    with pytest.raises(InputError):
        regenerate([], None, extend=True)
