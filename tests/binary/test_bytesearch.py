"""``bytesearch.find``: glibc's memmem without the GIL, held to ``bytes.find`` on every
buffer kind the readers hand it."""

from __future__ import annotations

import mmap
import random
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from torchwheel.binary import bytesearch
from torchwheel.binary.marker_record import MAGIC, Hits, collect_hits, encode
from torchwheel.version import FeatureVersion

from ..lib.helpers import REPO

SIZE = 3 * bytesearch.MIN_SPAN + 123
DEMO = REPO / "fixtures" / "demo" / "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"


def _planted(seed: int) -> bytes:
    rng = random.Random(seed)
    data = bytearray(rng.randbytes(SIZE))
    # at the edges of the span and of the short-span threshold, and a partial needle
    for at in (0, 7, bytesearch.MIN_SPAN - 3, 2 * bytesearch.MIN_SPAN, SIZE - len(MAGIC)):
        data[at : at + len(MAGIC)] = MAGIC
    data[100 : 100 + 7] = MAGIC[:7]
    return bytes(data)


def _spans(size: int) -> list[tuple[int, int | None]]:
    rng = random.Random(size)
    spans: list[tuple[int, int | None]] = [(0, None), (1, None), (8, size - 1), (0, 10), (size, None)]
    spans += [(-5, None), (0, size + 100)]
    for _ in range(60):
        a = rng.randrange(size)
        spans.append((a, rng.choice([None, rng.randrange(a, size + 1)])))
    return spans


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "map", "read-only map"])
def test_find_agrees_with_the_buffers_own(kind: str, tmp_path: Path) -> None:
    data = _planted(1)
    if kind == "bytes":
        buf: bytesearch.Buffer = data
    elif kind == "bytearray":
        buf = bytearray(data)
    elif kind == "map":
        buf = mmap.mmap(-1, len(data))
        buf[:] = data
    else:
        (tmp_path / "f").write_bytes(data)
        with (tmp_path / "f").open("rb") as fh:
            buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    for needle in (MAGIC, MAGIC[:7], b"\x00", b"not in there at all"):
        for start, end in _spans(len(data)):
            want = buf.find(needle, max(0, start), len(data) if end is None else end)
            assert bytesearch.find(buf, needle, start, end) == want, (needle, start, end)
    if isinstance(buf, mmap.mmap):
        buf.close()  # no buffer left exported by a search: the map closes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's memmem: Linux")
def test_long_spans_are_searched_by_memmem_without_the_gil() -> None:
    """On Linux the C library's memmem is found, and while it searches 64 MB another
    thread runs Python: the search let the GIL go."""
    assert bytesearch._load() is not None
    data = bytes(64 << 20)
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    previous = sys.getswitchinterval()
    sys.setswitchinterval(0.25)  # a thread holding the GIL keeps it longer than the search takes
    counter = threading.Thread(target=count)
    try:
        counter.start()
        time.sleep(0.01)
        before = ticks
        assert bytesearch.find(data, MAGIC) == -1
        during = ticks - before
    finally:
        done.set()
        counter.join()
        sys.setswitchinterval(previous)
    assert during > 0


def test_marker_scan_finds_records_at_block_and_span_edges() -> None:
    """collect_hits skips the record-free blocks by one search: records right at a block's
    start, end and straddling it are found, as many as there are."""
    record = encode(FeatureVersion.parse("2.10"))
    size = 5 * (1 << 16) + 50
    data = bytearray(size)
    places = [0, (1 << 16) - 5, (1 << 16) + 20, 3 * (1 << 16) + 1, size - len(record)]
    for at in places:
        data[at : at + len(record)] = record
    for buf in (bytes(data), bytearray(data)):
        hits = Hits()
        collect_hits(buf, hits)
        assert [h.offset for h in hits.ordered()] == places
        partial = Hits()
        collect_hits(buf, partial, 1, size - 1, base=1000)
        assert [h.offset for h in partial.ordered()] == [1000 + p for p in places[1:-1]]


def _texts() -> list[bytes]:
    """This package's own Python (real texts of every size), and edge cases around the NUL
    that joins them: a needle split across two texts, empty texts, a text beyond a group."""
    own = [p.read_bytes() for p in sorted(Path(bytesearch.__file__).parents[1].rglob("*.py"))]
    edges = [
        b"",
        b"def load_lib",
        b"rary(path):",
        b"",
        b"\x00load_library(\x00",
        b"x" * (bytesearch.GROUP + 7),
    ]
    big = b"y" * bytesearch.GROUP + b"load_library(" + b"z" * 5
    with zipfile.ZipFile(DEMO) as wheel:  # a real extension (fixtures/), NULs and its marker in it
        so = wheel.read("demo_stable/elf_marker_2_10.abi3.so")
    return [*own[:40], *edges, so, big, *own[40:], so, b"load_library("]


def test_holders_agree_with_in_on_every_text() -> None:
    """Across the join of two texts, at a group's edges, in a text bigger than a group, and
    for needles holding the joining NUL (looked for text by text), empty, given twice, or
    holding another."""
    texts = _texts()
    needles = [
        b"load_library(", b"def ", b"import ", b"holders(", b"library(path", b"\x00load", b"\x00", b"",
        b"never spelled anywhere", b"def ", b"y" * 10, b"zzzzz", MAGIC, b"\x7fELF", b"ELF\x02\x01",
        b"load_library", b"_library(", b"never spelled anywhere, ever", b"\x7fEL",
    ]  # fmt: skip
    got = bytesearch.holders(texts, needles)
    assert list(got) == list(dict.fromkeys(needles))
    so = [i for i, t in enumerate(texts) if t.startswith(b"\x7fELF")]
    assert len(so) == 2 and set(so) <= set(got[MAGIC]) and got[b"\x7fELF"] == so  # the extension
    for needle in needles:
        assert got[needle] == [i for i, t in enumerate(texts) if needle in t], needle
    assert 41 not in got[b"library(path"] and 42 not in got[b"library(path"]  # split by the join
    assert bytesearch.holders([], [b"x"]) == {b"x": []}
    assert bytesearch.holders(texts, []) == {}
