"""``tables.headergates``: the build needs a declaration's conditionals name (issue 48: the
stable c10d shims exist on a torch built with distributed)."""

from __future__ import annotations

from torchwheel.tables.headergates import scan_header_declarations, scan_header_text
from torchwheel.tables.shimorigin import Origin
from torchwheel.tables.symtable import SymbolTable
from torchwheel.version import FeatureVersion

V2_16 = FeatureVersion(2, 16, 0)
HEADER = """
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_16_0
AOTI_TORCH_EXPORT bool torch_is_warn_always_enabled();
#ifdef USE_DISTRIBUTED
AOTI_TORCH_EXPORT AOTITorchError torch_process_group_rank(void* group, int64_t* ret);
#else
AOTI_TORCH_EXPORT AOTITorchError torch_without_distributed(void);
#endif
#if defined(USE_DISTRIBUTED) && defined(USE_C10D_NCCL)
AOTI_TORCH_EXPORT AOTITorchError torch_nccl_only(void);
#endif
#ifndef USE_DISTRIBUTED
AOTI_TORCH_EXPORT AOTITorchError torch_not_distributed(void);
#endif
#endif
"""


def test_a_declaration_under_use_distributed_needs_a_distributed_build() -> None:
    found = scan_header_declarations(HEADER)
    assert found["torch_process_group_rank"] == (V2_16, frozenset({"distributed"}))
    assert found["torch_nccl_only"] == (V2_16, frozenset({"distributed"}))
    for name in ("torch_is_warn_always_enabled", "torch_without_distributed", "torch_not_distributed"):
        assert found[name] == (V2_16, frozenset()), name
    assert scan_header_text(HEADER) == {
        n: gate for n, (gate, _) in found.items()
    }  # the gates alone, as before


def test_needs_survive_the_table_file_and_a_merge() -> None:
    table = SymbolTable(
        {"torch_process_group_rank": V2_16, "torch_is_warn_always_enabled": V2_16},
        ("2.16.0",),
        {"torch_process_group_rank": Origin(needs=("distributed",))},
    )
    back = SymbolTable.from_json(table.to_json())
    assert back == table and back.origin("torch_process_group_rank").needs == ("distributed",)
    python = SymbolTable(
        {"torch_process_group_rank": V2_16},
        ("2.16.0",),
        {"torch_process_group_rank": Origin(needs=("python",))},
    )
    assert table.merge(python).origin("torch_process_group_rank").needs == ("distributed", "python")
    old = (
        table.to_json()
        .replace('"schema_version": 4', '"schema_version": 3')
        .replace(', "needs": ["distributed"]', "")
    )
    assert (
        SymbolTable.from_json(old).origin("torch_process_group_rank").needs == ()
    )  # schema 3 reads as before
