"""The streaming path (hash + scan while inflating, keep only some ranges, fall back for
the rest) returns exactly what reading the whole file returns: on every fixture, with the
fast path forced and starved so that every fallback runs, and on torch's own libraries
streamed out of the real torch wheel (libtorch_cpu.so: 430 MB, .dynstr moved to the end)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchwheel.binary import BinaryError, memberscan, read_binary, read_path
from torchwheel.wheel.archive import WheelArchive

from ..lib.helpers import fixture_build


def chunked(data: bytes, size: int) -> memberscan.Stream:
    def stream(stop: int | None) -> Iterator[bytes]:
        end = len(data) if stop is None else min(len(data), stop)
        for at in range(0, end, size):
            yield data[at : min(at + size, end)]

    return stream


def _sha(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@pytest.mark.parametrize("name", sorted(fixture_build().SCENARIOS))
@pytest.mark.parametrize(
    ("head", "tail", "chunk"), [(64, 64, 7), (4096, 0, 1000), (1 << 20, 1 << 20, 1 << 16)]
)
def test_stream_equals_whole(
    name: str, head: int, tail: int, chunk: int, built_fixtures: dict[str, Path]
) -> None:
    data = built_fixtures[name].read_bytes()
    hashed, got = memberscan.scan(name, len(data), chunked(data, chunk), big=0, head=head, tail=tail)
    assert hashed == (_sha(data), len(data))
    try:
        want = read_binary(data, name)
    except BinaryError as exc:
        assert isinstance(got, BinaryError) and str(got) == str(exc)
        return
    assert not isinstance(got, BinaryError), got
    assert got == want


def test_torch_libraries_streamed_from_the_wheel(torch_wheel: Path) -> None:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    site = Path(spec.origin).parent.parent
    with WheelArchive(torch_wheel) as archive, zipfile.ZipFile(torch_wheel) as zf:
        libs = [n for n in archive.infos if n.startswith("torch/lib/") and ".so" in n]
        assert "torch/lib/libtorch_cpu.so" in libs
        for member in libs:
            size = zf.getinfo(member).file_size
            hashed, got = memberscan.scan(member, size, lambda stop, m=member: archive.stream(m, stop), big=0)
            want = read_path(site / member, label=member)
            assert got == want, member
            assert hashed[1] == size


def test_patchelf_layout_needs_no_second_pass(
    built_fixtures: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """.dynsym/.dynstr/.dynamic behind the section table (patchelf, torch's libraries): the
    stream learns their place from the section table as it passes and keeps them, so one
    pass suffices even with a head that holds only the ELF and program headers."""
    data = built_fixtures["elf_patchelf"].read_bytes()
    passes: list[int | None] = []

    def stream(stop: int | None) -> Iterator[bytes]:
        passes.append(stop)
        yield from chunked(data, 512)(stop)

    _, got = memberscan.scan("elf_patchelf", len(data), stream, big=0, head=1024, tail=0)
    assert got == read_binary(data, "elf_patchelf")
    assert passes == [None]


def test_sparse_buffer_pieces() -> None:
    from torchwheel.binary.sparse import MissingRange, SparseBuffer

    data = bytes(range(256)) * 4
    buf = SparseBuffer.from_ranges(
        len(data),
        {0: data[0:100], 100: data[100:300], 150: data[150:160], 500: data[500:600], 1000: data[1000:]},
    )
    assert buf[0:300] == data[0:300]  # across two touching pieces
    assert buf[155:158] == data[155:158]  # inside a piece that a contained one shadows
    assert buf[1000:2000] == data[1000:1024]  # clipped to the size, like bytes
    for start, stop in ((290, 310), (300, 301), (450, 520), (590, 610)):
        with pytest.raises(MissingRange):
            buf[start:stop]
