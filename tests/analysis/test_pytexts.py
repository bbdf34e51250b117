"""``analysis.pytexts``: which texts spell ``name(``, answered from each text's calls read
once, is what a search of the texts says (``bytesearch.holders``), and a text is read again
when asked, not held."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import torchwheel
from torchwheel.analysis.pytexts import Texts, called
from torchwheel.binary.bytesearch import holders

SOURCES = Path(torchwheel.__file__).parent / "analysis"


def _texts(files: dict[str, bytes]) -> tuple[Texts, list[list[bytes]]]:
    reads: list[str] = []

    def read(member: str) -> bytes:
        reads.append(member)
        return files[member]

    texts = Texts(read)
    batches = list(texts.take(files.items()))
    assert not reads  # the first reading is the sources', not the reader's
    return texts, batches


def test_the_callers_of_a_name_are_the_texts_that_hold_its_call() -> None:
    """Every function and class name of torchwheel's analysis sources, and names that are the
    tail of a longer one (``read`` in ``_read(``, ``self.read(``): the same texts, in the
    same order, the first ``most`` of them, as a search of the texts for ``name(``."""
    files = {str(p.relative_to(SOURCES)): p.read_bytes() for p in sorted(SOURCES.rglob("*.py"))}
    files["odd.py"] = "def f\u00e9e(): pass\nx = f\u00e9e (1) + caf\u00e9e(2)\n# read(\n".encode()
    texts, _ = _texts(files)
    names = {"read", "find", "f\u00e9e", "e", "_", "nowhere_at_all"}
    for data in files.values():
        tree = ast.parse(data)
        names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    members = list(files)
    for most in (None, 3):
        found = texts.callers(sorted(names), most)
        held = holders(list(files.values()), [n.encode() + b"(" for n in sorted(names)])
        for name in names:
            assert found[name] == [members[i] for i in held[name.encode() + b"("]][:most], name
    assert texts.callers(["f\u00e9e"])["f\u00e9e"] == ["odd.py"]


def test_a_name_that_is_no_identifier_is_refused() -> None:
    texts, _ = _texts({"a.py": b"x = a.b(1)\n"})
    with pytest.raises(ValueError):
        texts.callers(["a.b"])


def test_the_runs_before_a_paren() -> None:
    assert called(b"f(g (h)(x.y(1), [z](2))\n'q(' #w(\n") == {b"f", b"y", b"q", b"w"}
    assert called(b"ab_1(f\xc3\xa9(") == {b"ab_1", b"f\xc3\xa9"}


def test_texts_are_read_again_when_asked_and_batched_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("torchwheel.analysis.pytexts.BATCH", 10)
    files = {"a.py": b"x" * 6, "b.py": b"y" * 6, "c.py": b"z"}
    texts, batches = _texts(files)
    assert batches == [[b"x" * 6, b"y" * 6], [b"z"]]  # at least BATCH bytes each, the last less
    assert list(texts) == ["a.py", "b.py", "c.py"] and len(texts) == 3 and "c.py" in texts
    assert texts["b.py"] == b"y" * 6
    with pytest.raises(KeyError):
        texts["d.py"]
