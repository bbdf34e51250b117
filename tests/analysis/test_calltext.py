"""``analysis.calltext``: the text reading that decides which files ``reach`` parses and
which statements it walks drops no load: each spelling of a call or an import that the
parser reads as one is kept, however it is written."""

from __future__ import annotations

from torchwheel.analysis.calltext import narrow, spelling
from torchwheel.analysis.reach import Compiled, Reach, read_reach


def _reach(files: dict[str, bytes], compiled: list[Compiled]) -> dict[str, Reach]:
    members = [*files, *(c.member for c in compiled)]
    found = read_reach(members, lambda m: len(files.get(m, b"")), lambda m: files[m], compiled)
    return {c.member: found.of(c.member) for c in compiled}


def test_a_callee_in_parentheses_or_before_a_comment_is_a_call() -> None:
    """``(load_library)(p)`` and a comment between the name and its ``(``: still calls."""
    for call in (b"(torch.ops.load_library)(p)", b"(torch.ops.load_library  # the ops\n        (p))"):
        init = b'import torch\np = "_C.so"\ntry:\n    ' + call + b"\nexcept OSError:\n    pass\n"
        r = _reach({"pkg/__init__.py": init}, [Compiled("pkg/_C.so", None)])["pkg/_C.so"]
        assert (r.how, r.when) == ("library", "optional"), call


def test_a_letter_nfkc_makes_ascii_keeps_the_whole_file_read() -> None:
    """The parser reads a fullwidth ``l`` (U+FF4C) in an identifier as ``l``: the call is
    ``load_library`` though no byte spells it (the file is read for its ``dlopen``). A
    letter NFKC keeps out of ASCII, or a character no identifier holds, changes nothing."""
    call = "torch.ops.\uff4coad_library".encode()
    init = b"import torch\ntry:\n    " + call + b'("_C.so")\nexcept OSError:\n    dlopen = None\n'
    assert not narrow(init) and narrow("# caf\u00e9 \u2026 \u2014\n".encode())
    r = _reach({"pkg/__init__.py": init}, [Compiled("pkg/_C.so", None)])["pkg/_C.so"]
    assert (r.how, r.when) == ("library", "optional")


def test_an_import_of_its_own_package_when_a_compiled_module_has_its_name() -> None:
    """In ``pkg/ext/sub.py``, ``from . import x`` imports ``pkg.ext``: where a compiled
    module is named so, that import spells no part of its name."""
    sub = b"import ctypes\ntry:\n    from . import helpers\nexcept ImportError:\n    lib = ctypes.CDLL\n"
    r = _reach({"pkg/ext/sub.py": sub}, [Compiled("pkg/ext.abi3.so", "pkg.ext")])["pkg/ext.abi3.so"]
    assert (r.how, r.where) == ("module", "pkg/ext/sub.py")


def test_an_import_by_a_literal_name_and_over_lines() -> None:
    """``import_module("pkg._C")`` imports the compiled module (one of another module's
    name is no load), and so does ``from pkg import (\\n _C,\\n)``; a name in a string
    (``find_spec("pkg._k")``) imports nothing."""
    init = (
        b'import importlib\nimportlib.import_module("torch")\nif importlib.util.find_spec("pkg._k"):\n'
        b'    pass\ntry:\n    importlib.import_module("pkg._C")\nexcept ImportError:\n    pass\n'
    )
    got = _reach(
        {"pkg/__init__.py": init},
        [Compiled("pkg/_C.abi3.so", "pkg._C"), Compiled("pkg/_k.abi3.so", "pkg._k")],
    )
    assert (got["pkg/_C.abi3.so"].how, got["pkg/_C.abi3.so"].when) == ("module", "optional")
    assert got["pkg/_k.abi3.so"].how == "unreached"
    init = b"try:\n    from pkg import (\n        _C,\n    )\nexcept ImportError:\n    pass\n"
    r = _reach({"pkg/__init__.py": init}, [Compiled("pkg/_C.abi3.so", "pkg._C")])["pkg/_C.abi3.so"]
    assert (r.how, r.when) == ("module", "optional")


def test_a_name_before_lines_of_comments_is_read_at_once() -> None:
    """numpy's ``add_newdoc`` before a rule of 78 ``#``: a pattern that could split the
    comment anywhere tried 2**77 ways. A ``(`` inside a comment opens no call."""
    rule = b"#" * 100
    data = b"from x import load_library\n\n" + rule + b"\n#\n" + rule + b"\n\ny = 1  # load_library(p)\n"
    assert not spelling(data, [b"load_library"], [], frozenset()).calls
    data = b"load_library  # see f(x)\n" + rule + b"\n  (p)\n"
    assert spelling(data, [b"load_library"], [], frozenset()).calls
