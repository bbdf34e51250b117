"""Writing an export index (``exports``): the generator's encoder, and the two edits a tables
file needs, a release added (``torchwheel symbols update``) and the releases past a minor
dropped (the tables "as they were" before it, which ``benchmarks/stale_tables.py`` judges
with).

One encoder for ``scripts/gen_torch_exports.py`` and ``symbols update``, so an index a user
extends is byte for byte the layout the shipped ones have, and the reader checks both alike.
An index holds hashes, not names: an edit re-encodes the (hash, release mask) pairs, so a
release is added without the wheels the others were read from.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from packaging.version import Version

from torchwheel.tables.exports import BUCKET_BITS, HASH_BITS, MAGIC, SCHEMA_VERSION, ExportIndex, name_hash

__all__ = ["add_release", "encode_exports", "masks_of", "restrict"]

_CHECKSUM = 16
_MAX_RELEASES = 64  # a bit each in an 8-byte mask


def masks_of(names: Sequence[Iterable[str]]) -> dict[int, int]:
    """hash -> release mask for the names of each release (bit *i*: ``names[i]``); a
    ValueError for two names of one hash (widen the hash before shipping such an index)."""
    masks: dict[int, int] = {}
    owner: dict[int, str] = {}
    for bit, release_names in enumerate(names):
        for name in release_names:
            h = name_hash(name)
            if owner.setdefault(h, name) != name:
                raise ValueError(f"{HASH_BITS}-bit hash collision: {name!r} and {owner[h]!r}")
            masks[h] = masks.get(h, 0) | 1 << bit
    return masks


def encode_exports(
    platform: str,
    releases: Sequence[Mapping[str, Any]],
    masks: Mapping[int, int],
    generated: str,
    generator: str,
    compression: str = "xz",
) -> bytes:
    """The bytes ``ExportIndex.from_bytes`` reads (the layout is described in ``exports``).
    ``releases``: the header's entries (``version``, ``builds``, ``wheels``, ``names``), oldest
    first; ``masks``: hash -> a bit per release."""
    width = next(w for w in (1, 2, 4, 8) if 8 * w >= len(releases))
    ordered = sorted(h for h, m in masks.items() if m)
    low_bits = HASH_BITS - BUCKET_BITS
    counts = Counter(h >> low_bits for h in ordered)
    starts = array("I", [0])
    for bucket in range(1 << BUCKET_BITS):
        starts.append(starts[-1] + counts.get(bucket, 0))
    lows = array("I", (h & ((1 << low_bits) - 1) for h in ordered))
    column = array({1: "B", 2: "H", 4: "I", 8: "Q"}[width], (masks[h] for h in ordered))
    if sys.byteorder != "little":
        for part in (starts, lows, column):
            part.byteswap()
    body = starts.tobytes() + lows.tobytes() + column.tobytes()
    if compression == "xz":
        # preset 9e with a dictionary no larger than the body needs: 9e's own 64 MiB dictionary
        # costs ~50 MB more of memory for the same bytes (a body is a few MB)
        dict_size = min(64 << 20, max(1 << 20, 1 << (len(body) - 1).bit_length()))
        chain = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "dict_size": dict_size}]
        packed = lzma.compress(body, format=lzma.FORMAT_XZ, filters=chain)
    else:
        packed = zlib.compress(body, 9)
    header = {
        "schema_version": SCHEMA_VERSION,
        "platform": platform,
        "generated": generated,
        "generator": generator,
        "hash": f"blake2b-{HASH_BITS}",
        "bucket_bits": BUCKET_BITS,
        "mask_bytes": width,
        "count": len(ordered),
        "compression": compression,
        "body_size": len(body),
        "releases": [dict(r) for r in releases],
    }
    text = json.dumps(header, indent=1, sort_keys=True).encode()
    out = MAGIC + len(text).to_bytes(4, "little") + text + packed
    return out + hashlib.blake2b(out, digest_size=_CHECKSUM).digest()


def _entries(index: ExportIndex) -> list[dict[str, Any]]:
    return [dict(r) for r in index.header.get("releases", [])]


def _counted(entries: list[dict[str, Any]], masks: Mapping[int, int]) -> list[dict[str, Any]]:
    """Each release's ``names``: how many hashes carry its bit (counted per distinct mask, of
    which there are few: a loop per hash and bit took 10 s for 800,000 hashes)."""
    counts = [0] * len(entries)
    for mask, n in Counter(masks.values()).items():
        for bit in range(len(entries)):
            counts[bit] += n * (mask >> bit & 1)
    return [{**e, "names": n} for e, n in zip(entries, counts, strict=True)]


def restrict(
    index: ExportIndex,
    newest: tuple[int, int],
    generated: str,
    generator: str,
    compression: str | None = None,
) -> bytes:
    """The index as a generator run over its releases up to minor ``newest`` would have
    written it: each name's mask is the OR of its releases' bits, so dropping the later bits
    (and the names left with none) is that run, without its wheels."""
    keep = [i for i, r in enumerate(index.releases) if (r.major, r.minor) <= newest]
    if not keep:
        raise ValueError(f"no release of the {index.platform} index is as old as {newest[0]}.{newest[1]}")
    wanted = (1 << (keep[-1] + 1)) - 1  # releases are ascending: a prefix of the bits
    masks = {h: m & wanted for h, m in index.entries() if m & wanted}
    entries = [e for i, e in enumerate(_entries(index)) if i in keep]
    packed = compression or str(index.header.get("compression", "xz"))
    return encode_exports(index.platform, entries, masks, generated, generator, packed)


def add_release(
    index: ExportIndex | None,
    platform: str,
    release: Mapping[str, Any],
    names: Iterable[str],
    generated: str,
    generator: str,
    hashes: AbstractSet[int] | None = None,
) -> tuple[bytes, str]:
    """The index with one more torch read (``release``: its header entry, ``version``,
    ``builds``, ``wheels``) and what changed, in words. The index keeps one release per minor,
    its newest patch: a newer patch replaces an older one, another build of the same release
    joins it (a name counts when any build exports it), an older patch is not taken. ``names``
    may be given as their ``name_hash`` already (``symbols update`` hashes a torch's names and
    lets the names go before the index is rebuilt: 700,000 of them were 180 MB)."""
    version = Version(release["version"])
    entries = _entries(index) if index is not None else []
    masks = dict(index.entries()) if index is not None else {}
    releases = [Version(e["version"]) for e in entries]
    same = [i for i, v in enumerate(releases) if (v.major, v.minor) == (version.major, version.minor)]
    new = hashes if hashes is not None else {name_hash(n) for n in names}
    if same and releases[same[0]] > version:
        return b"", f"{platform}: kept torch {releases[same[0]]}, newer than {version} (one patch per minor)"
    if same and releases[same[0]] == version:
        at = same[0]
        entry = entries[at]
        builds = sorted({*entry["builds"], *release["builds"]})
        wheels = [*entry["wheels"], *(w for w in release["wheels"] if w not in entry["wheels"])]
        entries[at] = {**entry, "builds": builds, "wheels": wheels}
        for h in new:
            masks[h] = masks.get(h, 0) | 1 << at
        what = f"{platform}: torch {version} read again ({', '.join(release['builds'])})"
    else:
        if same:  # an older patch of the minor: its bit is dropped, the new release takes its place
            masks = _without_bit(masks, same[0])
            del entries[same[0]]
            releases = [Version(e["version"]) for e in entries]
        at = sum(1 for v in releases if v < version)
        if len(entries) + 1 > _MAX_RELEASES:
            raise ValueError(f"an export index holds at most {_MAX_RELEASES} releases")
        masks = _with_bit_at(masks, at)
        for h in new:
            masks[h] = masks.get(h, 0) | 1 << at
        entries.insert(
            at,
            {"version": str(version), "builds": list(release["builds"]), "wheels": list(release["wheels"])},
        )
        what = f"{platform}: torch {version} added ({len(new):,} unstable names)"
    compression = str(index.header.get("compression", "xz")) if index is not None else "xz"
    return encode_exports(platform, _counted(entries, masks), masks, generated, generator, compression), what


def _without_bit(masks: Mapping[int, int], bit: int) -> dict[int, int]:
    low = (1 << bit) - 1
    out = {h: (m & low) | (m >> (bit + 1)) << bit for h, m in masks.items()}
    return {h: m for h, m in out.items() if m}


def _with_bit_at(masks: dict[int, int], bit: int) -> dict[int, int]:
    """Room for a release at ``bit``: the later releases' bits move up by one (in place)."""
    low = (1 << bit) - 1
    for h, m in masks.items():
        masks[h] = (m & low) | (m >> bit) << (bit + 1)
    return masks
