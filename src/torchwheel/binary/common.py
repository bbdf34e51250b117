"""Format-independent steps every reader shares: marker bytes, raw scan, companions, ranges."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise

from torchwheel.binary import marker_record
from torchwheel.binary.facts import BinaryError, ClrHeader, ExportedMarker, Import, SliceFacts
from torchwheel.binary.gpucode import NO_GPU_CODE, GpuCode
from torchwheel.binary.marker_record import Buffer, MarkerError
from torchwheel.binary.sparse import SparseBuffer
from torchwheel.limits import Limit, LimitExceeded
from torchwheel.version import FeatureVersion

__all__ = ["Buffer", "coalesce", "companions_of", "exported_marker", "slice_facts", "within"]

# Companion symbols of stable_abi_marker_check.h: one per distinct TORCH_FEATURE_VERSION
# among the translation units, the value carried by C++ name mangling.
_FV_ITANIUM = re.compile(r"^_?_ZN21__torch_stable_abi_fvILy(\d{1,20})EE3tag")  # 2**64 has 20 digits
_FV_MSVC = re.compile(r"^\?tag@\?\$__torch_stable_abi_fv@\$0([A-P]+@|\d)@@")


def within(limit: Limit, what: str, value: int) -> None:
    """A limit checked inside a binary: a ``BinaryError`` with the limit's own text (name,
    value, how to raise it), not a ``LimitExceeded``. One hostile member is then reported
    unreadable (TW406, an error) while the run goes on to judge every other member, which
    is what a CI log of a wheel audit needs; the whole run still fails."""
    try:
        limit.check(what, value)
    except LimitExceeded as exc:
        raise BinaryError(str(exc)) from None


def _msvc_uint(enc: str) -> int:
    """MSVC template-argument number: '0'..'9' mean 1..10, else hex digits A..P then '@'."""
    if enc.isdigit():
        return int(enc) + 1
    return int("".join("0123456789ABCDEF"[ord(c) - 65] for c in enc.rstrip("@")), 16)


def companions_of(exports: Iterable[str]) -> tuple[FeatureVersion, ...]:
    found: set[FeatureVersion] = set()
    for name in exports:
        if "__torch_stable_abi_fv" not in name:
            continue
        itanium = _FV_ITANIUM.match(name)
        msvc = None if itanium else _FV_MSVC.match(name)
        value = int(itanium.group(1)) if itanium else _msvc_uint(msvc.group(1)) if msvc else None
        if value is not None and value < 1 << 64:
            found.add(FeatureVersion.from_int(value))
    return tuple(sorted(found))


def exported_marker(buf: Buffer | SparseBuffer, offset: int | None) -> ExportedMarker:
    """Decode the record at the exported symbol's file offset."""
    if offset is None:
        return ExportedMarker(None, None, "the marker symbol points at no bytes in the file")
    raw = bytes(buf[offset : offset + marker_record.MAX_RECORD])
    try:
        return ExportedMarker(marker_record.decode(raw), offset)
    except MarkerError as exc:
        return ExportedMarker(None, offset, str(exc))


def _distinct(imports: Iterable[Import]) -> tuple[Import, ...]:
    """Each import once, in name order: sorted by name (a list of references, 8 bytes an
    import) and compared with its neighbours, rather than a hash table over every import (for
    a million imports that table was 60 MB of the reader's peak). Versioned pairs (two
    ``memcpy`` of different versions) are the usual duplicates."""
    ordered = sorted(imports, key=lambda imp: imp.name)
    if not any(a.name == b.name for a, b in pairwise(ordered)):
        return tuple(ordered)
    return tuple(dict.fromkeys(ordered))  # equal names sit side by side: the order stays by name


def slice_facts(
    buf: Buffer | SparseBuffer,
    *,
    arch: str,
    exports: Iterable[str],
    imports: Iterable[Import],
    needed: Iterable[str],
    exported: ExportedMarker | None,
    companions: tuple[FeatureVersion, ...],
    file_range: tuple[int, int],
    raw_hits: list[marker_record.RawHit] | None = None,
    gpu: GpuCode = NO_GPU_CODE,
    clr: ClrHeader | None = None,
) -> SliceFacts:
    """Assemble a slice, scanning its own byte range so universal slices stay apart.

    A streaming reader passes the ``raw_hits`` it found while inflating; scanning ``buf``
    again would need bytes it deliberately did not keep."""
    lo, hi = file_range
    omitted = 0
    if raw_hits is None:
        if isinstance(buf, SparseBuffer):
            raise ValueError("a sparse buffer needs the raw hits of its stream")
        hits = marker_record.Hits()
        marker_record.collect_hits(buf, hits, lo, hi)
        raw_hits, omitted = hits.found, hits.omitted
    return SliceFacts(
        arch=arch,
        exports=tuple(dict.fromkeys(exports)),
        imports=_distinct(imports),
        needed=tuple(needed),
        marker=exported,
        raw_markers=tuple(raw_hits),
        companions=companions,
        file_range=file_range,
        raw_markers_omitted=omitted,  # a stream's count is set by memberscan
        gpu=gpu,
        clr=clr,
    )


def coalesce(ranges: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """Sorted, clipped, overlapping or touching ranges joined: thousands of names in one
    table become one range, and the stream checks every chunk against each range."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted((lo, min(hi, size)) for lo, hi in ranges if 0 <= lo < min(hi, size)):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out
