"""Which C++ symbols are libtorch's unstable API, proved on the export tables of a real torch.

``tests/data/torch-2.13.0-*-exports.txt.xz`` are what ``scripts/torch_exports.py`` reads out of
torch 2.13.0's runtime libraries: the installed Linux x86_64 build and the win_amd64 wheel
(MSVC names). Every C++ name they export must classify as unstable libtorch API unless its
scope is in one of the exception sets below, each with the reason it does not count.
"""

from __future__ import annotations

import lzma
import re
from collections import Counter

import pytest

from torchwheel.analysis.usage import is_shim_name
from torchwheel.tables.symtable import load_shipped
from torchwheel.torchabi import cxxnames
from torchwheel.torchabi.cxxnames import demangle, is_unstable, is_unstable_key, scope_key
from torchwheel.torchabi.torchlibs import INSTALLED, read_torch

from ..lib.helpers import REPO

DATA = REPO / "tests" / "data"
EXPORTS = {
    "linux": DATA / "torch-2.13.0-linux-x86_64-exports.txt.xz",
    "windows": DATA / "torch-2.13.0-win-amd64-exports.txt.xz",
}

# libstdc++/MSVC STL: template instantiations (std::vector<at::Tensor>::~vector) that every
# translation unit using them emits itself, weak/COMDAT; libtorch exports its copies only
# because it exports everything. An extension that imports one has its own contract with the
# C++ runtime, not with libtorch, and its at:: arguments come with at:: imports of their own.
RUNTIME = {"std", "__gnu_cxx", "__gnu_debug"}
# Libraries libtorch bundles and exports under their own namespaces. On ELF an import does
# not say which library must define it, and the same names come from those projects' own
# builds (libprotobuf, libfmt, pybind11 headers), which an extension may link itself. Counting
# them would call such an extension torch-bound; they are those projects' ABI.
# (pybind11::detail::type_caster<at::Tensor> is torch's specialisation, but an extension
# calling it also imports the at:: API the caster works on.)
BUNDLED = {
    "fbgemm",
    "tensorpipe",
    "gloo",
    "libkineto",
    "google",
    "fmt",
    "pybind11",
    "qnnpack",
    "ideep",
    "nlohmann",
}
# Classes and functions libtorch declares at global scope (quantized packed weights, generated
# protobuf tables, the local statics of register_conv_params<N>()): nothing in their names
# says torch, and no extension API exposes them.
GLOBAL_SCOPES = {
    "register_conv_params",
    "PackedConvWeight",
    "PackedLinearWeight",
    "PackedLinearWeightFp16",
    "PackedEmbeddingBagWeight",
    "TableStruct_onnx_2fonnx_5fonnx_5ftorch_2dml_2eproto",
    "TableStruct_onnx_2fonnx_2ddata_5fonnx_5ftorch_2eproto",
}
# torch::headeronly's typeinfo (for its Tag enum): header-only by design, stable.
STABLE = {"torch::headeronly"}


def _exports(platform: str) -> list[tuple[str, str]]:
    text = lzma.decompress(EXPORTS[platform].read_bytes()).decode()
    return [(lib, name) for lib, name in (line.split("\t") for line in text.splitlines())]


def _cxx(platform: str) -> list[str]:
    return [name for _, name in _exports(platform) if name.startswith(("_Z", "?"))]


def _unreadable_ok(name: str) -> bool:
    """Names no classification applies to."""
    # x86 vector-function ABI names (SLEEF's _ZGVcN4v_Sleef_acos_u10): C functions, not C++.
    if name.startswith(("_ZGVb", "_ZGVc", "_ZGVd", "_ZGVe")):
        return True
    # A local static (or its guard) in a member of a class *template* (MSVC): the enclosing
    # function's back-references point into the outer name, so the library cannot read it
    # alone, and the prefix reader does not skip template arguments. Four such names, all
    # torch::profiler::impl::GlobalStateManager<T>::singleton()'s.
    return re.match(r"\?\$?\w+@\?\d+\?\?\w+@\?\$GlobalStateManager@", name) is not None


@pytest.mark.parametrize("platform", ["linux", "windows"])
def test_every_exported_cxx_symbol_is_unstable_or_a_documented_exception(platform: str) -> None:
    names = _cxx(platform)
    counted = 0
    surprises: Counter[str] = Counter()
    for name in names:
        key = scope_key(name)
        if key is None:
            assert _unreadable_ok(name), name
        elif is_unstable_key(key):
            counted += 1
            assert is_unstable(name)
        elif key.startswith("::"):
            continue  # a global-scope entity: its name says nothing about who defines it
        elif key not in RUNTIME | BUNDLED | GLOBAL_SCOPES | STABLE:
            surprises[key] += 1
    assert not surprises, surprises
    assert counted > 0.6 * len(names), (counted, len(names))  # 70% on Linux, 97% on Windows


@pytest.mark.parametrize("platform", ["linux", "windows"])
def test_every_exported_shim_is_stable(platform: str) -> None:
    table = load_shipped()
    shims = [n for _, n in _exports(platform) if is_shim_name(n) or n in table.symbols]
    assert len(shims) > 300
    for name in shims:
        assert scope_key(name) is None and not is_unstable(name), name
    assert {n for _, n in _exports(platform)} >= {"aoti_torch_get_data_ptr", "torch_call_dispatcher"}


@pytest.mark.parametrize("platform", ["linux", "windows"])
def test_fast_reader_agrees_with_the_demangler(platform: str) -> None:
    """The hand-written prefix readers against the ``demangle`` library's parse tree.

    Every 5th exported name (the whole list takes a minute of pure-Python parsing).
    """
    checked = 0
    for name in _cxx(platform)[::5]:
        fast = cxxnames._itanium_prefix(name, 2) if name.startswith("_Z") else cxxnames._msvc_prefix(name)
        if fast is None:
            continue
        checked += 1
        assert fast == cxxnames._library_key(name), name
    assert checked > 8000


def test_linux_list_is_the_installed_torch() -> None:
    """The committed Linux list is what scripts/torch_exports.py reads from this venv's torch."""
    torch = read_torch(INSTALLED)
    assert torch.version == "2.13.0+cpu"
    assert {(lib, n) for lib, names in torch.exports.items() for n in names} == set(_exports("linux"))


UNSTABLE = [
    ("_ZN3c10ltERKNS_6SymIntEd", "c10::operator<(c10::SymInt const&, double)"),
    ("_ZN3c10leERKNS_6SymIntEd", "c10::operator<=(c10::SymInt const&, double)"),
    ("_ZN3c10lsERSoRKNS_6DeviceE", "c10::operator<<(std::ostream&, c10::Device const&)"),
    ("_ZNK5torch3jit10tensorexpr10ExprHandleleERKS2_", None),  # member operator<=
    ("_ZNK3c104impl3FooclEv", "c10::impl::Foo::operator()() const"),
    ("_ZNK3c108ArrayRefIlEcvSt6vectorIlSaIlEEEv", None),  # operator std::vector<long>()
    ("_ZNK5torch8profiler4impl18ExperimentalConfigcvbEv", None),  # operator bool()
    ("_ZN4c10d10C10dLogger11registered_E", "c10d::C10dLogger::registered_"),
    ("_ZTVN3c105ErrorE", "vtable for c10::Error"),
    ("_ZTIN3c105ErrorE", "typeinfo for c10::Error"),
    ("_ZTSN3c105ErrorE", "typeinfo name for c10::Error"),
    ("_ZGVZN3c1010Dispatcher9singletonEvE9_instance", None),  # guard of a local static
    ("_ZZN3c104impl3fooEvE1x", "c10::impl::foo()::x"),
    ("_ZZN3c104impl3fooEvENKUlvE_clEv", None),  # a lambda's operator()
    ("_ZThn16_N3c105Error4whatEv", "non-virtual thunk to c10::Error::what()"),
    ("_ZTv0_n24_N3c105Error4whatEv", "virtual thunk to c10::Error::what()"),
    ("_ZN2at6native12_GLOBAL__N_13fooEv", None),
    ("_ZN10onnx_torch10GraphProto12InternalSwapEPS0_", None),
    ("_ZN16c10_complex_math7_detail4sqrtERKN3c107complexIdEE", None),  # libc10.dylib
    ("_Z16THPVariable_WrapRKN2at10TensorBaseE", "THPVariable_Wrap(at::TensorBase const&)"),
    ("__ZN3c10ltERKNS_6SymIntEd", None),  # Mach-O's extra underscore
    ("?foo@Tensor@at@@QEAAXXZ", "public: void __cdecl at::Tensor::foo(void)"),
    ("??6c10@@YAAEAV?$basic_ostream@DU?$char_traits@D@std@@@std@@AEAV12@AEBVDevice@0@@Z", None),
    ("??_7Error@c10@@6B@", None),  # vftable
    ("??_7?$ConstantSymNodeImpl@_J@c10@@6B@", None),  # a template's vftable: the library's path
    ("?$TSS0@?1??singleton@Dispatcher@c10@@SAAEAV23@XZ@4HA", None),  # local static guard
    ("?THPVariable_Wrap@@YAPEAU_object@@AEBVTensorBase@at@@@Z", None),
]

NOT_UNSTABLE = [
    "_ZNSt6vectorIN2at6TensorESaIS1_EED2Ev",  # std::vector<at::Tensor>::~vector()
    "_Z3fooRKN2at6TensorE",  # another library's foo(at::Tensor const&)
    "_ZlsRSoRKN3c106DeviceE",  # a global operator<< taking a c10 type
    "_ZN5torch6stable6detail3fooEv",
    "_ZN5torch10headeronly3fooEv",
    "_ZTIN5torch10headeronly3TagE",
    "_ZTIFvRKN2at6TensorEE",  # typeinfo for void (at::Tensor const&)
    "_ZN6google8protobuf5Arena18CreateMaybeMessageIN10onnx_torch10GraphProtoEJEEEPT_PS1_DpOT0_",
    "??1?$vector@VTensor@at@@V?$allocator@VTensor@at@@@std@@@std@@QEAA@XZ",
    "?foo@@YAXAEBVTensor@at@@@Z",
    "?bar@stable@torch@@YAXXZ",
    "aoti_torch_get_data_ptr",
    "torch_call_dispatcher",
]


@pytest.mark.parametrize(("symbol", "spelled"), UNSTABLE)
def test_unstable(symbol: str, spelled: str | None) -> None:
    assert is_unstable(symbol)
    text = demangle(symbol) or symbol  # what the reports show
    if spelled is not None:
        assert text == spelled


@pytest.mark.parametrize("symbol", NOT_UNSTABLE)
def test_not_unstable(symbol: str) -> None:
    assert not is_unstable(symbol)


@pytest.mark.parametrize("symbol", [s for s, _ in UNSTABLE] + NOT_UNSTABLE)
def test_fast_reader_agrees_on_targeted_cases(symbol: str) -> None:
    name = symbol[1:] if symbol.startswith("__Z") else symbol
    if not name.startswith(("_Z", "?")):
        return
    fast = cxxnames._itanium_prefix(name, 2) if name.startswith("_Z") else cxxnames._msvc_prefix(name)
    if fast is not None:
        assert fast == cxxnames._library_key(name)


WRAP_OUTPUTS = (
    "_ZN5torch8autograd13_wrap_outputsERKSt6vectorIN2at6TensorESaIS3_EERKSt13unordered_setIPN3c1010"
    "TensorImplESt4hashIS9_ESt8equal_toIS9_ESaIS9_EESH_N3c108ArrayRefISt8optionalIS3_EEERKSt10shared_ptr"
    "INS0_4NodeEESt8functionIFSt6vectorISt8optionalIS3_ESaISS_EESV_SV_EEb"
)


def test_a_message_names_a_cxx_symbol_by_its_entity() -> None:
    """The name fbgemm-gpu and torchrl import from torch 2.13, 300 characters mangled and
    more demangled, is the function's qualified name with its parameters cut."""
    assert len(WRAP_OUTPUTS) > 250 and len(demangle(WRAP_OUTPUTS) or "") > 300
    assert cxxnames.short_name(WRAP_OUTPUTS) == "torch::autograd::_wrap_outputs(...)"
    assert (
        cxxnames.short_name("_ZNK3c1010TensorImpl4sizeEl") == "c10::TensorImpl::size(long) const"
    )  # fits: whole
    assert cxxnames.short_name("torch_from_blob") == "torch_from_blob"  # C: as it is
    assert cxxnames.names_text([WRAP_OUTPUTS, "torch_from_blob", "a", "b"]) == (
        "torch::autograd::_wrap_outputs(...), torch_from_blob, a and 1 more"
    )


@pytest.mark.parametrize("platform", ["linux", "windows"])
def test_every_exported_cxx_name_is_short_and_keeps_its_entity(platform: str) -> None:
    """Every seventh C++ name torch 2.13 exports, cut for a message: at most SHORT
    characters, the whole demangled text when it fits, else pieces of it in their order
    between the cut marks (``(...)``, ``<...>``, a final ``...``), the entity's own name
    among them."""
    for name in _cxx(platform)[::7]:
        short = cxxnames.short_name(name)
        whole = demangle(name) or name
        assert len(short) <= cxxnames.SHORT, (name, short)
        if len(whole) <= cxxnames.SHORT:
            assert short == whole
            continue
        at = 0
        for piece in re.split(r"\(\.\.\.\)|<\.\.\.>|\.\.\.$", short):
            found = whole.find(piece, at)
            assert found >= 0, (name, short, piece)
            at = found + len(piece)
