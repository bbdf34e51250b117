"""ROCm clang offload bundles as they stream by: at each 4096-byte boundary (where clang
places them in ``.hip_fatbin``), a bundle's table of targets; a compressed bundle (``CCOB``,
LLVM's ``CompressedOffloadBundle``, versions 1-3, zstd or zlib) is decompressed only until
that table is whole.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from torchwheel import limits
from torchwheel.binary.gpuscan import Cursor, Scan
from torchwheel.binary.marker_record import Buffer

if TYPE_CHECKING:
    if sys.version_info >= (3, 14):
        from compression.zstd import ZstdDecompressor
    else:
        from backports.zstd import ZstdDecompressor

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
_BUNDLE_ALIGN = 4096


class BundleCursor(Cursor):
    """Looks at every 4096-byte boundary in the zones for an offload bundle and reads its
    table of targets (decompressing only the start of a compressed one)."""

    def __init__(self, scan: Scan, zones: Sequence[tuple[int, int]]) -> None:
        super().__init__()
        self.scan = scan
        self.zones = zones
        self.at = 0
        self.skip_to = 0  # past the bundle just read
        self.inflating: _Inflate | None = None
        self.max_targets = limits.current().max_offload_targets.value

    def process(self, data: Buffer, base: int, stop: int) -> int | None:
        end = base + len(data)
        if self.inflating is not None:
            if not self.inflating.feed(data, base, end):
                self.at = max(self.at, min(stop, end))
                return None
            self._finish_compressed()
        for zlo, zhi in self.zones:
            first = max(self.at, self.skip_to, zlo, base)
            k = -(-first // _BUNDLE_ALIGN) * _BUNDLE_ALIGN
            while k < min(stop, zhi):
                inside = self.scan.cuda_end(k)
                if inside > k:  # a CUDA fatbin holds no offload bundle: jump past it
                    k = -(-inside // _BUNDLE_ALIGN) * _BUNDLE_ALIGN
                    continue
                if k + len(BUNDLE_MAGIC) > end:
                    self.at = k
                    return k
                lead = bytes(data[k - base : k - base + len(BUNDLE_MAGIC)])
                if lead == BUNDLE_MAGIC:
                    got = _bundle_table(data, k - base, len(data))
                    if got is None:
                        self.at = k
                        return k
                    self._record(k, *got)
                elif lead.startswith(CCOB_MAGIC):
                    keep = self._compressed(data, base, k, end)
                    if keep is not None or self.inflating is not None:
                        self.at = k + _BUNDLE_ALIGN
                        return keep
                k += _BUNDLE_ALIGN
        self.at = max(self.at, stop)
        return None

    def _record(self, at: int, targets: list[str], extent: int | str) -> None:
        if isinstance(extent, str):
            self.scan.problem(at, f"offload bundle at {at:#x}: {extent}")
            return
        run = self.scan.run_at(at)
        if run is None:
            return
        run.hi, run.bundles = max(run.hi, at + extent), run.bundles + 1
        for t in targets[: self.max_targets]:
            run.targets[t] = None
        self.skip_to = at + extent

    def _compressed(self, data: Buffer, base: int, at: int, end: int) -> int | None:
        if at + 32 > end:
            return at
        head = bytes(data[at - base : at - base + 32])
        version, method = struct.unpack_from("<HH", head, 4)
        header = {1: 20, 2: 24, 3: 32}.get(version)
        if header is None or method not in (0, 1):
            self.scan.problem(
                at, f"compressed offload bundle at {at:#x}: version {version}, method {method} unknown"
            )
            return None
        total = struct.unpack_from("<I" if version == 2 else "<Q", head, 8)[0] if version >= 2 else 0
        inflater = _Inflate(at, at + header, method, at + total if total else 0)
        self.inflating = inflater
        if inflater.feed(data, base, end):
            self._finish_compressed()
        return None

    def _finish_compressed(self) -> None:
        inflating, self.inflating = self.inflating, None
        assert inflating is not None
        got = _bundle_table(inflating.out, 0, len(inflating.out))
        if got is None or isinstance(got[1], str) or inflating.error:
            why = inflating.error or (
                got[1] if got is not None and isinstance(got[1], str) else "table not found"
            )
            self.scan.problem(inflating.at, f"compressed offload bundle at {inflating.at:#x}: {why}")
            return
        run = self.scan.run_at(inflating.at)
        if run is None:
            return
        run.bundles += 1
        run.hi = max(run.hi, inflating.end or inflating.at + _BUNDLE_ALIGN)
        for t in got[0][: self.max_targets]:
            run.targets[t] = None
        self.skip_to = max(self.skip_to, inflating.end)


class _Inflate:
    """The start of a compressed bundle's stream, decompressed until its table is whole."""

    def __init__(self, at: int, data_at: int, method: int, end: int) -> None:
        self.at, self.pos, self.end = at, data_at, end
        self.out = b""
        self.error = ""
        self.cap = limits.current().max_offload_table_bytes.value
        self.z: ZstdDecompressor | None = None
        self.errors: tuple[type[Exception], ...] = (zlib.error, EOFError)
        if method == 1:
            # deferred: zstd costs 2 ms at start-up, only a zstd-compressed ROCm bundle needs it
            try:  # the standard library's from Python 3.14 on, the backport before
                from compression.zstd import (  # type: ignore[import-not-found, unused-ignore]
                    ZstdDecompressor,
                    ZstdError,
                )
            except ImportError:  # pragma: no cover - depends on the Python version
                from backports.zstd import ZstdDecompressor, ZstdError  # type: ignore[no-redef, unused-ignore]
            self.z = ZstdDecompressor()
            self.errors = (ZstdError, *self.errors)
        self.zl = zlib.decompressobj() if method == 0 else None

    def feed(self, data: Buffer, base: int, end: int) -> bool:
        """True when done (the table is whole, the output cap or the bundle's end reached)."""
        stop = min(end, self.end) if self.end else end
        while self.pos < stop:
            piece = bytes(data[self.pos - base : min(stop, self.pos + (1 << 16)) - base])
            self.pos += len(piece)
            try:
                if self.z is not None:
                    self.out += self.z.decompress(piece, self.cap - len(self.out))
                elif self.zl is not None:
                    self.out += self.zl.decompress(piece, self.cap - len(self.out))
            except self.errors as exc:
                self.error = f"does not decompress ({exc})"
                return True
            if _bundle_table(self.out, 0, len(self.out)) is not None or len(self.out) >= self.cap:
                return True
        return bool(self.end) and self.pos >= self.end


def _bundle_table(data: Buffer, off: int, end: int) -> tuple[list[str], int | str] | None:
    """(targets, extent of the bundle) of a bundle at ``off``; ``extent`` is a problem text
    when the table contradicts itself; None when ``data`` ends before the table does."""
    if off + 32 > end:
        return None
    (count,) = struct.unpack_from("<Q", bytes(data[off + 24 : off + 32]))
    most = limits.current().max_offload_targets
    if count > most.value:
        return [], f"claims {count:,} entries ({most.name})"
    at, extent, targets = off + 32, 0, []
    for _ in range(count):
        if at + 24 > end:
            return None
        entry_off, size, tlen = struct.unpack_from("<QQQ", bytes(data[at : at + 24]))
        if tlen > 4096:
            return [], f"an entry names a {tlen:,}-byte target"
        if at + 24 + tlen > end:
            return None
        triple = bytes(data[at + 24 : at + 24 + tlen]).decode("ascii", "backslashreplace")
        at += 24 + tlen
        extent = max(extent, entry_off + size)
        if not triple.startswith("host-"):
            targets.append(triple)
    return targets, max(extent, at - off)
