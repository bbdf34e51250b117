"""binary/strtab.py: names out of a NUL-terminated string table, refused when an offset
lies outside it, a name runs off its end, or overlapping names decode to more than twice it."""

from __future__ import annotations

import pytest

from torchwheel.binary.facts import BinaryError
from torchwheel.binary.sparse import SparseBuffer
from torchwheel.binary.strtab import Names

_TABLE = b"\0aoti_torch_empty\0libc.so.6\0caf\xc3\xa9\0bad\xff\0"
_FILE = b"HEAD" + _TABLE + b"tail without NUL"


def test_names_at_offsets_including_shared_suffixes() -> None:
    names = Names(_FILE, 4, len(_TABLE))
    assert names(1) == "aoti_torch_empty"
    assert names(12) == "empty"  # a linker's shared suffix
    assert names(0) == ""
    assert names(18) == "libc.so.6"
    assert names(28) == "café"
    assert names(34) == "bad\\xff"  # never a decode error: backslash-escaped


def test_an_offset_outside_the_table() -> None:
    with pytest.raises(BinaryError, match=r"^string offset 0x27 lies outside \.dynstr$"):
        Names(_FILE, 4, len(_TABLE))(len(_TABLE))


def test_a_name_that_runs_off_the_tables_end() -> None:
    names = Names(b"abc\0def", 0, 7, what=".strtab")
    assert names(0) == "abc"
    with pytest.raises(BinaryError, match=r"^the string at \.strtab\+0x4 has no terminating NUL$"):
        names(4)


def test_overlapping_names_are_held_to_twice_the_table() -> None:
    table = b"a" * 1000 + b"\0"
    names = Names(table, 0, len(table))
    names.budget = 2 * len(table)  # the 1 MiB allowance aside, to reach the bound quickly
    names(0)
    names(0)
    with pytest.raises(
        BinaryError, match=r"^names overlapping in \.dynstr decode to more than twice its size$"
    ):
        names(0)


def test_names_from_a_sparse_buffer() -> None:
    view = SparseBuffer.from_ranges(10_000, {5000: _TABLE})
    assert Names(view, 5000, len(_TABLE))(18) == "libc.so.6"
