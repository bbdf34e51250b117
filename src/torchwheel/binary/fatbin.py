"""CUDA fatbins as they stream by: find a container, then walk entry header to entry header
and on to the container right behind it, tallying each cubin and PTX image by its raw header
fields (``gpucode`` turns them into ``CudaImage``). The layout is described in ``gpucode``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from torchwheel.binary.gpuscan import MAX_HEADER, Cursor, Key, Run, Scan
from torchwheel.binary.marker_record import Buffer

FATBIN_MAGIC = struct.pack("<IHH", 0xBA55ED50, 1, 16)  # magic, version 1, header size 16
PTX, CUBIN, _CONCAT = 1, 2, 0x100
FLAG_COMPRESSED = 0x8000 | 0x2000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000
_FLAGS_KEPT = FLAG_COMPRESSED | FLAG_ARCH_SPECIFIC | FLAG_FAMILY
_ENTRY = 64
_ENTRY_HEAD = struct.Struct("<HHIQIIHHIIIQ")


class CudaCursor(Cursor):
    """Search (in the zones) for a container; walk its entries; at its end, continue with
    the container right behind it or go back to searching."""

    def __init__(self, scan: Scan, zones: Sequence[tuple[int, int]], size: int) -> None:
        super().__init__()
        self.scan = scan
        self.zones = zones
        self.size = size
        self.at = 0  # searching: from here; walking: the next entry header
        self.walking = False
        self.end = 0  # end of the container being walked
        self.run: Run | None = None
        self.done = False

    def process(self, data: Buffer, base: int, stop: int) -> int | None:
        end = base + len(data)
        while not self.done:
            if self.walking:
                if self.at >= self.end:
                    self.walking = False
                    continue  # the next container is looked for right here first
                if self.at >= stop:
                    return None
                keep = self._walk(data, base, stop, end)
                if keep is not None:
                    return keep
                continue
            got = self._find(data, base, stop, end)
            if got is None:
                return None
            is_start, found = got
            if not is_start:
                return found
            head = bytes(data[found - base : found - base + 16])
            if len(head) < 16:
                return found
            (size,) = struct.unpack_from("<Q", head, 8)
            self.at, self.end, self.walking = found + 16, found + 16 + size, True
            if self.end > self.size:
                self.scan.problem(
                    found, f"fatbin at {found:#x} claims {size:,} bytes, past the end of the file"
                )
                self.end = self.size
            self.run = self.scan.run_at(found)
            if self.run is None:
                self.done = True
                return None
            self.run.containers += 1
            self.run.hi = max(self.run.hi, self.end)
        return None

    def _find(self, data: Buffer, base: int, stop: int, end: int) -> tuple[bool, int] | None:
        """The next container start below ``stop``: right behind the last one, or by search
        within the zones. (True, offset): found; (False, offset): keep the bytes from there
        (a magic may straddle into the next chunk); None: none in this data."""
        n = len(FATBIN_MAGIC)
        if self.run is not None and self.at == self.run.hi:
            # behind the container just walked (after up to 8 bytes of padding)
            lo = self.at - base
            if self.at + 24 <= end:
                k = bytes(data[lo : lo + 24]).find(FATBIN_MAGIC)
                if 0 <= k <= 8:
                    return True, self.at + k
            elif self.at < stop:
                return False, self.at
        for zlo, zhi in self.zones:
            a, b = max(self.at, zlo, base), min(stop + n - 1, zhi, end)
            if a >= b:
                continue
            k = data.find(FATBIN_MAGIC, a - base, b - base)
            if k >= 0:
                return True, base + k
            if b == end and end < zhi and end < stop + n - 1:
                self.at = max(a, end - n + 1)
                return False, self.at
        self.at = max(self.at, stop)
        return None

    def _walk(self, data: Buffer, base: int, stop: int, end: int) -> int | None:
        """Entry after entry of the container, in one tight loop (a hostile fatbin of a
        million empty entries must not cost a second each): an image is tallied by its raw
        header fields, turned into a ``CudaImage`` once at the end. Returns the offset to
        keep from when an entry header runs past ``data``."""
        assert self.run is not None
        raw, cap, scan = self.run.raw, self.scan.cap.value, self.scan
        at, cend = self.at, self.end
        unpack = _ENTRY_HEAD.unpack_from
        try:
            while at < cend:
                if at >= stop:
                    return None
                if at + _ENTRY > end:
                    return at
                kind, _, hsize, psize, csize, _, minor, major, arch, _, _, flags = unpack(data, at - base)
                nxt = at + hsize + psize
                if hsize < _ENTRY or hsize > MAX_HEADER or nxt > cend:
                    scan.problem(
                        at,
                        f"fatbin entry at {at:#x} claims {hsize:,}+{psize:,} bytes, past its container: rest not read",
                    )
                    self.walking, at = False, at + 1
                    return None
                if kind in (PTX, CUBIN):
                    scan.images += 1
                    if scan.images > cap:
                        self._capped(at)
                        return None
                    key = (kind, arch, flags & _FLAGS_KEPT, major, minor, csize != 0)
                    raw[key] = raw.get(key, 0) + 1
                elif kind == _CONCAT:
                    if at + hsize > end:
                        return at
                    if not self._group(at, bytes(data[at - base : at - base + hsize])):
                        return None
                at = nxt
            return None
        finally:
            self.at = at

    def _capped(self, at: int) -> None:
        self.scan.problem(
            at, f"more than {self.scan.cap.value:,} GPU images ({self.scan.cap.name}); the rest were not read"
        )
        self.done = True

    def _group(self, at: int, group: bytes) -> bool:
        """A ``-Xfatbin -concat`` entry: one compressed payload, its images listed in the
        header's extension (count, size, then a 64-byte header per image, each followed by
        an extension when its offset field says so). A layout that does not add up to the
        header size is reported, not guessed at."""
        assert self.run is not None
        if len(group) < _ENTRY + 8:
            self.scan.problem(at, f"fatbin group at {at:#x} is too short to list its images")
            return True
        count, size = struct.unpack_from("<II", group, _ENTRY)
        off, stop = _ENTRY + 8, _ENTRY + size
        images: list[Key] = []
        compressed = bool(struct.unpack_from("<Q", group, 40)[0] & FLAG_COMPRESSED)
        seen = 0
        while off + _ENTRY <= min(stop, len(group)) and seen < count:
            kind, _, _, _, _, ext, minor, major, arch, _, _, flags = struct.unpack_from(
                "<HHIQIIHHIIIQ", group, off
            )
            seen += 1
            if kind in (PTX, CUBIN):
                images.append((kind, arch, flags & _FLAGS_KEPT, major, minor, compressed))
            off += _ENTRY
            if ext:
                if off + 8 > len(group):
                    break
                (elen,) = struct.unpack_from("<I", group, off + 4)
                off += (12 + elen + 7) & ~7
        if seen != count or off != stop or stop != len(group):
            self.scan.problem(
                at, f"fatbin group at {at:#x}: its list of {count} images does not add up; not read"
            )
            return True
        for key in images:
            self.scan.images += 1
            if self.scan.images > self.scan.cap.value:
                self._capped(at)
                return False
            self.run.raw[key] = self.run.raw.get(key, 0) + 1
        return True
