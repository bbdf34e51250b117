"""The ELF reader and the marker scan hold the budget on hostile bytes (issue 11, findings
1, 2, 7, 8): memory proportional to the symbols present, time linear in the bytes present,
every count read from a header checked before anything is allocated or looped over.

The files are built with ``struct`` (``elf_hostile``); memory is measured with
``tracemalloc`` (what Python allocates, which is what each finding blew up), time with a
generous wall-clock bound that the old code missed by an order of magnitude."""

from __future__ import annotations

import struct
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from torchwheel import limits
from torchwheel.binary import BinaryError, BinaryFacts, memberscan, read_binary
from torchwheel.version import FeatureVersion

from .lib import elf_hostile as H
from .lib.helpers import marker_hits

T = TypeVar("T")
BASIC = H.symbols([(b"PyInit__C", True), (b"malloc", False)])


def peak(fn: Callable[[], T]) -> tuple[T, int]:
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def stream_of(data: bytes, chunk: int = 1 << 16) -> memberscan.Stream:
    def stream(stop: int | None) -> Iterator[bytes]:
        end = len(data) if stop is None else min(len(data), stop)
        for at in range(0, end, chunk):
            yield data[at : min(at + chunk, end)]

    return stream


def streamed(data: bytes, **kw: int) -> BinaryFacts | BinaryError:
    return memberscan.scan("_C.so", len(data), stream_of(data), big=0, **kw)[1]


@pytest.fixture(autouse=True)
def fresh_limits(set_limits: Callable[..., None]) -> None:
    set_limits()  # the defaults: whatever an earlier test in this process set is gone


def test_the_builder_makes_a_library_both_routes_read() -> None:
    for sections in (True, False):
        facts = read_binary(H.elf(*BASIC, sections=sections), "_C.so")
        (s,) = facts.slices
        assert s.exports == ("PyInit__C",) and [i.name for i in s.imports] == ["malloc"]


# -- finding 1: a .dynstr of NULs -----------------------------------------------------------


def test_a_string_table_of_nuls_costs_nothing() -> None:
    sym, strings = BASIC
    data = H.elf(sym, strings + bytes(4 << 20))
    facts, used = peak(lambda: read_binary(data, "_C.so"))
    assert facts.slices[0].exports == ("PyInit__C",)
    assert used < 8 << 20, used  # was a dict entry per offset: 380 MB for these 4 MB


def test_a_name_without_nul_or_past_the_table_is_malformed() -> None:
    sym, strings = BASIC
    with pytest.raises(BinaryError, match="no terminating NUL"):
        read_binary(H.elf(sym, strings.rstrip(b"\0") + b"x" * 100), "_C.so")
    bad = bytearray(sym)
    struct.pack_into("<I", bad, H.SYM.size, 1 << 20)  # first real symbol's st_name
    with pytest.raises(BinaryError, match=r"outside .dynstr"):
        read_binary(H.elf(bytes(bad), strings, sections=False), "_C.so")


# -- finding 2: repeated marker records ------------------------------------------------------


def test_repeated_records_are_counted_not_kept() -> None:
    keep = limits.current().max_marker_hits.value
    n = 200_000
    data = H.elf(*BASIC, blob=H.record(10) * n + H.record(11))
    start = time.monotonic()
    facts, used = peak(lambda: read_binary(data, "_C.so"))
    elapsed = time.monotonic() - start
    (s,) = facts.slices
    assert len(s.raw_markers) == keep + 1  # the first ones, then the one that differs
    assert {h.record.version for h in s.raw_markers} == {FeatureVersion(2, 10), FeatureVersion(2, 11)}
    assert s.raw_markers_omitted == n - keep
    assert used < 16 << 20, used
    assert elapsed < 5, elapsed
    assert streamed(data) == facts  # the streaming scan counts the same, seams included


def test_streamed_counts_survive_chunks_smaller_than_a_record() -> None:
    data = H.elf(*BASIC, blob=b"xx".join([H.record(10)] * 200) + H.record(12))
    want = read_binary(data, "_C.so")
    for chunk in (5, 17, 64, 4096):
        got = memberscan.scan("_C.so", len(data), stream_of(data, chunk), big=0)[1]
        assert got == want, chunk
    assert want.slices[0].raw_markers_omitted == 200 - limits.current().max_marker_hits.value


def test_the_limit_is_the_one_in_limits(set_limits: Callable[..., None]) -> None:
    set_limits(MAX_MARKER_HITS="3")
    (s,) = read_binary(H.elf(*BASIC, blob=H.record(10) * 10), "_C.so").slices
    assert len(s.raw_markers) == 3 and s.raw_markers_omitted == 7
    assert marker_hits(H.record(10) * 10) == marker_hits(H.record(10) * 3)


# -- finding 7: an endless GNU-hash chain ----------------------------------------------------


def gnu_hash(chain: bytes, symoffset: int = 1) -> bytes:
    """One bucket pointing at the first hashed symbol, then ``chain``."""
    return struct.pack("<IIII", 1, symoffset, 1, 0) + bytes(8) + struct.pack("<I", symoffset) + chain


def test_a_gnu_hash_chain_sizes_the_symbol_table() -> None:
    data = H.elf(*BASIC, gnu_hash=gnu_hash(struct.pack("<II", 2, 3)), sections=False)
    (s,) = read_binary(data, "_C.so").slices
    assert s.exports == ("PyInit__C",) and [i.name for i in s.imports] == ["malloc"]


def test_an_endless_gnu_hash_chain_ends_fast() -> None:
    data = H.elf(*BASIC, gnu_hash=gnu_hash(b"\2\0\0\0" * (16 << 20)), sections=False)
    start = time.monotonic()
    with pytest.raises(BinaryError, match=r"chain .* does not end within the file"):
        read_binary(data, "_C.so")
    assert time.monotonic() - start < 3  # was 1.6 s per 16 MB, four bytes at a time
    got = streamed(data, head=4096, tail=0)
    assert isinstance(got, BinaryError) and "does not end" in str(got)


def test_gnu_hash_buckets_past_the_file_are_refused() -> None:
    table = struct.pack("<IIII", 0x3FFFFFFF, 1, 1, 0) + bytes(8)
    with pytest.raises(BinaryError, match=r"buckets .* lie outside the file"):
        read_binary(H.elf(*BASIC, gnu_hash=table, sections=False), "_C.so")


# -- finding 8: many symbols -----------------------------------------------------------------


def test_many_symbols_cost_what_their_names_cost() -> None:
    names = [(b"sym_%07d_a_longer_suffix" % i, i % 2 == 0) for i in range(100_000)]
    data = H.elf(*H.symbols(names))
    facts, used = peak(lambda: read_binary(data, "_C.so"))
    (s,) = facts.slices
    assert len(s.exports) == 50_000 and len(s.imports) == 50_000
    assert used < 28 << 20, used  # was 37 MB: a tuple per symbol, a dict entry per string


def test_the_symbol_limit_makes_the_member_unreadable(set_limits: Callable[..., None]) -> None:
    set_limits(MAX_SYMBOLS="100")
    data = H.elf(*H.symbols([(b"s%d" % i, True) for i in range(200)]))
    with pytest.raises(BinaryError, match="max-symbols = 100: raise it with TORCHWHEEL_MAX_SYMBOLS"):
        read_binary(data, "_C.so")


# -- counts from headers ---------------------------------------------------------------------


def test_a_symbol_count_beyond_the_bytes_is_refused_before_reading() -> None:
    sym, strings = BASIC
    data = bytearray(H.elf(sym, strings, sections=False))
    at = data.find(struct.pack("<II", 1, 3))  # the DT_HASH table: nbucket, nchain
    struct.pack_into("<II", data, at, 1, 0x7FFFFFFF)
    with pytest.raises(BinaryError, match=r"dynamic symbol table .* lies outside the file"):
        read_binary(bytes(data), "_C.so")


def test_dt_needed_entries_are_limited(set_limits: Callable[..., None]) -> None:
    set_limits(MAX_NEEDED="0")
    with pytest.raises(BinaryError, match=r"DT_NEEDED entries .* max-needed"):
        read_binary(H.elf(*BASIC), "_C.so")


def test_a_table_behind_the_stream_costs_at_most_one_more_pass() -> None:
    """The tables the PT_DYNAMIC route reads, 8 MB apart and the symbol count last: the
    stream learns the string and hash tables as it goes, and only .dynsym (behind the hash
    table that sizes it) needs one short fallback pass. It used to take three, each up to
    the table it found missing: 3.3 times the member inflated."""
    sym, strings = BASIC
    data = H.elf(sym, strings, sections=False, gap=8 << 20)
    inflated = 0

    def stream(stop: int | None) -> Iterator[bytes]:
        nonlocal inflated
        for chunk in stream_of(data)(stop):
            inflated += len(chunk)
            yield chunk

    got = memberscan.scan("_C.so", len(data), stream, big=0, head=256, tail=0)[1]
    assert got == read_binary(data, "_C.so")
    assert inflated <= 2 * len(data)
