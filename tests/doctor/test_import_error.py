"""``analysis.import_error``: an import error taken apart, its symbol dated, its library named."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchwheel.doctor.import_error import date_symbol, library_words, module_file, parse_import_error
from torchwheel.errors import InputError
from torchwheel.tables.tableset import shipped_tables

TORCHRL = "_ZN5torch8autograd24fire_node_creation_hooksERKN3c1013intrusive_ptrINS0_4NodeENS1_6detail34intrusive_target_default_null_typeIS3_EEEE"


def test_parse_the_three_questions() -> None:
    assert parse_import_error("xformers._C").module == "xformers._C"
    q = parse_import_error(
        "ImportError: /v/site-packages/x/_C.so: undefined symbol: _ZN3c104cuda9device_countEv"
    )
    assert (q.path, q.symbol) == ("/v/site-packages/x/_C.so", "_ZN3c104cuda9device_countEv")
    q = parse_import_error(
        "ImportError: libc10_cuda.so: cannot open shared object file: No such file or directory"
    )
    assert q.library == "libc10_cuda.so"
    with pytest.raises(InputError, match="neither a module name"):
        parse_import_error("ModuleNotFoundError: No module named 'tensordict'")


def test_symbols_are_dated() -> None:
    table = shipped_tables()
    assert date_symbol("torch_has_storage", table, "linux-x86_64").shim_since == "2.14"
    dated = date_symbol(TORCHRL, table, "linux-x86_64")
    assert dated.minors == ("2.14", "2.15"), dated  # torchrl 0.14.1 imports it: torch 2.14 added it
    assert date_symbol("_ZN3c1099no_such_thingEv", table, "linux-x86_64").words.startswith(
        "unstable C++ that no indexed torch"
    )
    assert date_symbol("memcpy", table, "linux-x86_64").words.startswith("not a torch symbol")


def test_libraries_say_which_build() -> None:
    assert "only by its CUDA builds" in library_words("libc10_cuda.so")
    assert "CUDA 12 cudart library, which a CUDA 12 build of torch brings" in library_words("libcudart.so.12")
    assert "driver" in library_words("libcuda.so.1")
    assert "another project's" in library_words("libavutil.so.58")


def test_a_module_is_found_on_the_search_path(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    (second / "pkg").mkdir(parents=True)
    (second / "pkg" / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    first.mkdir()
    assert (
        module_file("pkg._C", [str(first), str(second)])
        == second / "pkg" / "_C.cpython-311-x86_64-linux-gnu.so"
    )
    assert module_file("pkg", [str(second)]) == second / "pkg"
    assert module_file("nothere._C", [str(first), str(second)]) is None


def test_the_machines_errors_are_taken_apart() -> None:
    """What ld.so, the CUDA runtime and torch print when the machine, not torch, is the cause."""
    from torchwheel.doctor.import_error import parse_import_error

    q = parse_import_error(
        "ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found "
        "(required by /env/site-packages/pkg/_C.so)"
    )
    assert (q.version, q.version_library, q.path) == (
        "GLIBCXX_3.4.32",
        "/lib/x86_64-linux-gnu/libstdc++.so.6",
        "/env/site-packages/pkg/_C.so",
    )
    bare = parse_import_error("version 'GLIBCXX_3.4.32' not found")
    assert bare.version == "GLIBCXX_3.4.32" and bare.path is None and bare.version_library is None
    for words in (
        "RuntimeError: CUDA driver version is insufficient for CUDA runtime version",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12040).",
    ):
        assert parse_import_error(words).machine == "driver"
    assert (
        parse_import_error(
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device"
        ).machine
        == "kernel"
    )
