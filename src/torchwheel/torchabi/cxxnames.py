"""Which C++ scope a mangled symbol belongs to, and so whether it is libtorch's unstable API.

The question is asked of every C++ import of every binary, and must be answered from the
*entity's* qualified name: ``c10::operator<(c10::SymInt const&, double)`` is c10's, while
``std::vector<at::Tensor>::~vector()`` is std's and ``foo(at::Tensor)`` is nobody's, however
often ``at::`` appears in their argument lists. Reading that off demangled *text* is a C++
declaration parser in disguise (``operator<``, ``operator()``, conversion operators, return
types of template functions, local statics all defeat one), so this module asks a demangler
for structure instead.

The demangler is ``demangle`` (PyPI, pure Python), the one library found that hands back
the parse tree of an Itanium name (``core.ast``: ``Qualified`` parts, ``Special`` labels for
vtables/typeinfo/guards/thunks, ``Function`` for the enclosing function of a local entity)
and reads MSVC names too (as a declaration whose qualified name it spells itself). The
others tried: ``pydemumble``, ``pycxxfilt`` and ``cpp-demangle`` give text only;
``llvm-demangle-fxti``'s ``ItaniumPartialDemangler`` has a declaration context for functions
only (none for data, vtables or thunks) and nothing for MSVC; ``multi-demangle``'s
"structured" view re-splits its own text and files ``typeinfo for c10::Error`` under the
namespace ``typeinfo for c10``; ``itanium-demangler`` is Itanium-only and slower.

Being pure Python, ``demangle`` costs 120-370 us a name; torch's own wheels import tens of
thousands of libtorch symbols across their libraries, and ``pydemumble`` (LLVM's demangler,
kept for the *display* text) costs 7 us. So the regular shapes, which are nearly all real
names, are read straight off the mangled prefix by ``_itanium_prefix``/``_msvc_prefix``:
hand-written, but only the first production of the grammar (the outermost scope is the
first source name after ``N``; an MSVC name lists its scopes innermost first up to ``@@``),
and every shape they do not know goes to the library. ``tests/torchabi/test_cxxnames.py`` checks that
every C++ symbol torch 2.13 exports (Linux and Windows) classifies as documented, and that
the two paths agree on every fifth of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

# deferred: demangle costs 7 ms and pydemumble 1.5 ms at start-up, and only a name that is
# shown (demangle) or that the prefix readers do not know (_library_key) needs either
if TYPE_CHECKING:
    from demangle.core.ast import Node

# libtorch's own C++ namespaces. c10d is the distributed package (ProcessGroup, Store, ...);
# c10_complex_math holds c10::complex's out-of-line math (libc10 exports it on macOS); ao is
# ATen's sparse quantized kernels (ao::sparse); onnx_torch is torch's private copy of ONNX's
# protobuf classes, renamed so that only libtorch defines it: importing it ties a binary to
# that build as much as at:: does. Third-party code libtorch bundles under its own names
# (fbgemm, gloo, tensorpipe, fmt, google::protobuf, pybind11, ...) does not count: on ELF an
# import does not say who must define it, and the same names come from those projects' own
# builds, which an extension may link. tests/torchabi/test_cxxnames.py lists them.
UNSTABLE_SCOPES = frozenset({"at", "c10", "c10d", "c10_complex_math", "caffe2", "torch", "onnx_torch", "ao"})
# Header-only: compiled into the extension, never imported from libtorch.
STABLE_SCOPES = frozenset({"torch::stable", "torch::headeronly"})
# torch/csrc's Python-binding API lives at global scope (THPVariable_Wrap, THPPointer<T>),
# as does libshm's allocator; these prefixes are torch's own and as unstable as torch::.
_TORCH_GLOBAL_PREFIXES = ("THP", "THManagedMapAllocator")

_DIGITS = re.compile(r"\d+")
_CALL_OFFSET = re.compile(r"h n?\d+_ | v n?\d+_ n?\d+_".replace(" ", ""))
_STD_ABBREVIATIONS = ("St", "Sa", "Sb", "Ss", "Si", "So", "Sd")
_ANONYMOUS = "_GLOBAL__N_"
# ?name@scope@...@@ or ??<operator code>scope@...@@ with plain identifiers only.
_MSVC_PLAIN = re.compile(r"\?(?:\?(?:__?)?[0-9A-Z]|([A-Za-z_$][\w$]*)@)((?:[A-Za-z_][\w]*@)*)@")
# ?name@?<n>?<encoding of the enclosing function>: a local static or its guard.
_MSVC_LOCAL = re.compile(r"\?\$?[A-Za-z_][\w$]*@\?\d+\?(\?.+)")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
# Longer names are classified by their prefix only and shown mangled: no compiler writes one
# (torch_python.dll's longest is 5,059 characters), and demangling three 16 MB names took
# 670 MB. Names past _CACHED are demangled each time they are asked: the cache holds texts.
_DEMANGLED_MAX = 64 << 10
_CACHED = 1024


def demangle(name: str) -> str | None:
    """The demangled spelling, or None for a name that is not C++-mangled (or too long to be).

    Asked only for names that are shown: pydemumble 0.1 never frees the buffer LLVM's
    demangler returns (``pydemumble.cpp`` copies it into a string and drops the pointer), about
    1 KB a name, so demangling each of 750,000 imports cost 900 MB. GNU's ``__cxa_demangle``
    frees cleanly but spells a fifth of torch's names differently (return types of template
    functions, guard variables), so the text would change under every user.
    """
    if not name.startswith(("_Z", "?", "__Z")) or len(name) > _DEMANGLED_MAX:
        return None
    return _demangle(name) if len(name) <= _CACHED else _demangle.__wrapped__(name)


SHORT = 60  # the widest C++ name a message spells out: the name of the entity, not its declaration


def short_name(name: str, width: int = SHORT) -> str:
    """A symbol as a one-line message names it: demangled, and past ``width`` characters cut
    down to its entity: the return type and MSVC's access and calling convention dropped,
    the parameter list cut to ``(...)`` and what follows it (``const``) dropped, template
    arguments cut to ``<...>``, then the rest cut: ``torch::autograd::_wrap_outputs(...)``,
    not 300 characters of mangled or demangled declaration. The whole name is in the JSON
    documents and under ``check -v``."""
    text = demangle(name) or name
    if len(text) <= width:
        return text
    for cut in (_entity, _outer_parameters, _template_arguments):
        text = cut(text)
        if len(text) <= width:
            return text
    return re.sub(r"[<(]\.*$", "", text[: width - 3]) + "..."  # never half a cut mark


def _entity(text: str) -> str:
    """The declaration from its qualified name on: what stands before it at the outer level
    (a template function's return type, ``public: signed char __cdecl``) dropped."""
    named = _operator_names(text)
    angle = 0
    start = 0
    for i, ch in enumerate(text):
        if i in named:
            continue
        if ch == "<":
            angle += 1
        elif ch == ">" and angle:
            angle -= 1
        elif ch == "(" and angle == 0:
            break
        elif ch == " " and angle == 0:
            start = i + 1
    return text[start:]


def names_text(names: Iterable[str], count: int | None = None, shown: int = 3, sep: str = ", ") -> str:
    """Symbols as a message lists them: the first ``shown`` by ``short_name``, then how many
    more (``count``: how many there are, when ``names`` holds only the first few)."""
    names = list(names)
    total = len(names) if count is None else max(count, len(names))
    text = sep.join(short_name(n) for n in names[:shown])
    return text + (f" and {total - min(shown, len(names)):,} more" if total > shown else "")


# an operator's name, whose brackets open no parameter or template list: ``operator()``,
# ``operator<<``, ``operator->``, ``operator new[]``, a conversion ``operator bool``
_OPERATOR = re.compile(r"\boperator(?:\(\)|\[\]|->\*?|[<>=!+\-*/%^&|~,]+| (?:new|delete)(?:\[\])?| [\w:]+)")


def _operator_names(text: str) -> set[int]:
    """The positions of the characters that spell an operator's name: no parameter list or
    template bracket begins there, and its space is no separator."""
    return {i for m in _OPERATOR.finditer(text) for i in range(m.start(), m.end())}


def _outer_parameters(text: str) -> str:
    """The entity's own parameter list as ``(...)``: the first ``(`` outside template
    arguments that is no operator's name, to its matching ``)``."""
    named = _operator_names(text)
    angle = 0
    for i, ch in enumerate(text):
        if i in named:
            continue
        if ch == "<":
            angle += 1
        elif ch == ">" and angle:
            angle -= 1
        elif ch == "(" and angle == 0:
            depth = 0
            for j in range(i, len(text)):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    return f"{text[:i]}({'...' if j > i + 1 else ''})"  # a const or && after it goes too
            return f"{text[:i]}(...)"
    return text


def _template_arguments(text: str) -> str:
    """Every outermost template argument list as ``<...>``."""
    named = _operator_names(text)
    out: list[str] = []
    depth = 0
    for i, ch in enumerate(text):
        if i in named or ch not in "<>":
            if depth == 0:
                out.append(ch)
        elif ch == "<":
            depth += 1
            if depth == 1:
                out.append("<...")
        elif depth:
            depth -= 1
            if depth == 0:
                out.append(">")
    return "".join(out)


@lru_cache(maxsize=65536)
def _demangle(name: str) -> str | None:
    import pydemumble

    text = pydemumble.demangle(name)
    return text if text and text != name else None


def _key(outer: str, inner: str | None) -> str:
    """``inner`` None: ``outer`` is a global-scope entity, not a scope."""
    if inner is None:
        return "::" + ("" if outer == "*" else outer)
    if outer == "torch" and f"torch::{inner}" in STABLE_SCOPES:
        return f"torch::{inner}"
    return outer


def _source_name(s: str, i: int) -> tuple[str, int] | None:
    m = _DIGITS.match(s, i)
    if m is None or m.end() - i > 9:  # no name that long fits (and int() refuses 4,301 digits)
        return None
    end = m.end() + int(m.group())
    if end > len(s):
        return None
    ident = s[m.end() : end]
    return ("(anonymous namespace)" if ident.startswith(_ANONYMOUS) else ident), end


def _itanium_prefix(s: str, i: int) -> str | None:
    """The scope key of the Itanium <encoding> at ``s[i:]``, or None for a shape left to the library."""
    local = False
    while True:
        two = s[i : i + 2]
        if two in ("TV", "TT", "TI", "TS", "GV", "GR", "TH", "TW"):
            i += 2  # vtable, VTT, typeinfo, its name, guard, temporary, TLS init/wrapper
        elif two in ("Th", "Tv"):
            m = _CALL_OFFSET.match(s, i + 1)  # a thunk: its call offset, then the target
            if m is None:
                return None
            i = m.end()
        elif two == "Tc":
            i += 2  # a covariant thunk: two call offsets
            for _ in range(2):
                m = _CALL_OFFSET.match(s, i)
                if m is None:
                    return None
                i = m.end()
        elif s.startswith("Z", i):
            i += 1  # a local entity lives in its enclosing function's scope
            local = True
        else:
            break
    nested = s.startswith("N", i)
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVKRO":
            i += 1
    elif s.startswith("L", i):
        i += 1
    if s.startswith(_STD_ABBREVIATIONS, i):
        return "std"
    first = _source_name(s, i)
    if first is None:
        return None
    if not nested:
        return _key(first[0], "*" if local else None)
    second = _source_name(s, first[1])
    return _key(first[0], second[0] if second else "")


def _msvc_prefix(s: str) -> str | None:
    """The scope key of a plain MSVC name, or None for a shape left to the library."""
    m = _MSVC_PLAIN.match(s)
    if m is None:
        return None
    scopes = m.group(2).split("@")[:-1]  # innermost first
    if not scopes:
        return _key(m.group(1), None) if m.group(1) else "::"
    # An operator, constructor or table has no name fragment: its first scope is its class.
    parts = [*reversed(scopes), m.group(1) or "*"]
    return _key(parts[0], parts[1])


def _spelled(node: Node) -> list[str]:
    """A name component as the identifiers it spells; "*" for an operator, lambda, ....

    The library keeps a substitution it expanded (``std::allocator``) as one leaf, so a
    leaf may stand for several components.
    """
    from demangle.core.ast import Name, Qualified, Raw, Template

    if isinstance(node, Template):
        return _spelled(node.base)
    if isinstance(node, Qualified):
        return _components(node)
    text = node.text if isinstance(node, (Name, Raw)) else ""
    if text == "(anonymous namespace)":
        return [text]
    words = [
        m.group() if m and m.group() != "operator" else "*" for m in map(_IDENT.fullmatch, text.split("::"))
    ]
    return words if "::" in text and "*" not in words[:-1] else [words[-1]]


def _components(node: Node) -> list[str]:
    """The entity's qualified name, outermost first, from the library's Itanium tree."""
    from demangle.core.ast import Decorated, Function, Qualified, Special, Template

    while True:
        if isinstance(node, (Decorated, Special)):
            node = node.inner
        elif isinstance(node, Function) and node.name is not None:
            node = node.name
        elif isinstance(node, Template):
            node = node.base
        else:
            break
    if isinstance(node, Function):
        return []  # a function type (the typeinfo of one): no name at all
    if not isinstance(node, Qualified):
        return _spelled(node)
    head, *rest = node.parts
    # A local entity's first part is its enclosing function, which is its scope.
    return [*_components(head), *(w for part in rest for w in _spelled(part))]


def _library_key(s: str) -> str | None:
    import demangle as _demangler
    from demangle.core.ast import Name

    try:
        if s.startswith("?"):
            # The library flattens MSVC declarations to text: its tree holds no parts. Its
            # qualified name is its own spelling of the entity without type or parameters
            # (the declarator, when it is a plain name: half the cost of a signature), of
            # which we read the identifiers before and after the first "::".
            decl = getattr(_demangler.parse(s, language="msvc"), "declarator", None)
            qualified = decl.text if isinstance(decl, Name) else _demangler.signature(s).qualified_name
        else:
            tree = _demangler.parse(s, language="itanium")
    except _demangler.DemanglingError:
        return None
    if s.startswith("?"):
        head, sep, tail = qualified.partition("::")
        first = _IDENT.match(head)
        if not sep or first is None or first.group() != head:
            return _key(first.group() if first else "", None)
        inner = _IDENT.match(tail)
        return _key(head, inner.group() if inner else "*")
    parts = _components(tree)
    if len(parts) < 2:
        return _key(parts[0] if parts else "", None)
    return _key(parts[0], parts[1])


@lru_cache(maxsize=65536)
def scope_key(symbol: str) -> str | None:
    """Where the entity a mangled symbol names lives: ``"c10"``, ``"std"``, ``"torch::stable"``.

    A global-scope entity is ``"::name"`` (``"::"`` for an unnamed type, such as the
    typeinfo of a function type); None means not a readable C++ name.
    """
    name = symbol[1:] if symbol.startswith("__Z") else symbol  # Mach-O's extra underscore
    if name.startswith("_Z"):
        key = _itanium_prefix(name, 2)
    elif name.startswith("?"):
        local = _MSVC_LOCAL.match(name)
        if local:  # a local static lives in its enclosing function's scope
            inner = local.group(1)
            cut = inner.rfind("Z@4")  # the function's encoding ends in Z; @4 starts the static's type
            outer = scope_key(inner[: cut + 1] if cut > 0 else inner)
            return outer[2:] if outer and outer.startswith("::") and len(outer) > 2 else outer
        key = _msvc_prefix(name)
    else:
        return None
    if key is None and len(name) <= _DEMANGLED_MAX:
        key = _library_key(name)  # pure Python, costs grow with the name: only for real lengths
    return key


def is_unstable_key(key: str) -> bool:
    if key in STABLE_SCOPES:
        return False
    return key in UNSTABLE_SCOPES or key.lstrip(":").startswith(_TORCH_GLOBAL_PREFIXES)


# The shape of nearly every libtorch import, matched in C: a nested Itanium name (CV-qualifiers
# allowed) whose first component is one of libtorch's namespaces, torch:: outside its
# header-only parts. The length prefix makes each alternative exact ("2at" is "at", never
# "atx"); every other shape goes the general way. compat asks this of each import three times,
# and the general way costs 3 us a name: 750,000 unstable imports took 47 s.
_UNSTABLE_NESTED = re.compile(
    r"_?_ZN[rVKRO]*(?:"
    + "|".join(f"{len(s)}{re.escape(s)}" for s in sorted(UNSTABLE_SCOPES - {"torch"}))
    + "|5torch(?!"
    + "|".join(f"{len(s) - 7}{s[7:]}" for s in sorted(STABLE_SCOPES))
    + "))"
)


def is_unstable(symbol: str) -> bool:
    """Whether ``symbol`` is unstable libtorch C++, from its scope alone: no text is made, so
    this is what a question about every import asks (see ``demangle`` on the text's cost)."""
    if _UNSTABLE_NESTED.match(symbol):
        return True
    key = scope_key(symbol)
    return key is not None and is_unstable_key(key)
