"""Regenerate src/torchwheel/data/torch_exports_<platform>.bin: which torch release exports each
unstable C++ name (``torchwheel.tables.exports`` reads it, and says there why it exists).

For each torch minor from 2.4 to the newest in ``data/torch_releases.json``, the *last patch*
is read (2.9.1 speaks for 2.9): a wheel built against 2.9.0 is installed today next to 2.9.1,
and ``--patches`` reports where the patches of a minor export different names. The wheels
are PyPI's (``pip download --no-deps``, Python 3.11, the platform's tags), into an ignored
cache, by the pip that runs this script. pip's configured constraint and find-links are
replaced for that call (by an empty file and an empty directory): a constraint capping torch
would hide the newest releases, and a local ``+cpu`` wheel would replace PyPI's build, which
anyone regenerating must get alike.

From each wheel, the defined dynamic exports of torch's own runtime libraries
(``torchlibs.read_torch``: ``torch/lib/libtorch*``, ``libc10*``, ``libshm*``, ...; not the test
fixtures torch/lib also ships) are cached per wheel sha256 under
``.cache/torch-exports/names/``; all of them, so that a change to ``cxxnames`` is applied by
regenerating, not by downloading again. Only names ``cxxnames.is_unstable`` calls unstable are
indexed: the classifier that reads a wheel's imports decides what the index holds.

Usage: python scripts/gen_torch_exports.py [--platform linux-x86_64 ...] [--torch 2.9.1 ...]
       [--wheel-dir DIR] [--offline] [--delete-wheels] [--patches] [--output-dir DIR]
       [--compression xz|zlib]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, BinaryIO

from packaging.utils import parse_wheel_filename
from packaging.version import Version

from torchwheel.tables.exports import HASH_BITS, ExportIndex
from torchwheel.tables.exports_update import encode_exports as encode_index
from torchwheel.tables.exports_update import masks_of
from torchwheel.torchabi.cxxnames import demangle, is_unstable
from torchwheel.torchabi.torchlibs import read_torch
from torchwheel.wheel.temps import replace_atomically

ROOT = Path(__file__).resolve().parents[1]
RELEASES_JSON = ROOT / "src/torchwheel/data/torch_releases.json"
DATA = ROOT / "src/torchwheel/data"
CACHE = ROOT / ".cache/torch-exports"
OLDEST_MINOR = (2, 4)
#: platform label (the shim table's) -> pip --platform tags, newest first: torch moved from
#: manylinux1 to manylinux_2_28 in 2.7, and macOS wheels from 11.0 to 14.0 in 2.12.
PLATFORMS = {
    "linux-x86_64": ("manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"),
    "macos-arm64": ("macosx_14_0_arm64", "macosx_11_0_arm64"),
    "windows-x86_64": ("win_amd64",),
}
_OS = {"elf": "linux", "macho": "macos", "pe": "windows"}
_CACHE_SCHEMA = 1
_CHECKSUM = 16


# -- which releases, which wheels -------------------------------------------------------------


def final_releases() -> list[Version]:
    doc = json.loads(RELEASES_JSON.read_text(encoding="utf-8"))
    return sorted(Version(v) for v in doc["releases"])


def last_patches(releases: Iterable[Version]) -> list[Version]:
    """The newest patch of every minor from ``OLDEST_MINOR`` on."""
    newest: dict[tuple[int, int], Version] = {}
    for v in releases:
        key = (v.major, v.minor)
        if key >= OLDEST_MINOR and (key not in newest or v > newest[key]):
            newest[key] = v
    return [newest[k] for k in sorted(newest)]


def find_wheel(directory: Path, release: Version, platform: str) -> Path | None:
    """PyPI's wheel of ``release`` for ``platform`` in ``directory``; of several build tags
    (torch 2.10.0 was re-uploaded as build 3), the highest, which is what pip installs."""
    found = []
    for path in directory.glob("torch-*.whl"):
        _, version, build, tags = parse_wheel_filename(path.name)
        if version == release and not version.local and {t.platform for t in tags} & set(PLATFORMS[platform]):
            found.append((build, path))
    return max(found)[1] if found else None


def download(release: Version, platform: str, directory: Path) -> Path | None:
    command = [sys.executable, "-m", "pip", "download", f"torch=={release}", "--no-deps", "-q"]
    command += ["--only-binary=:all:", "--python-version", "3.11", "--dest", str(directory)]
    for tag in PLATFORMS[platform]:
        command += ["--platform", tag]
    # pip skips configuration values that are empty, so each is replaced by one that is not:
    # an empty constraints file, an empty find-links directory (the rest of the
    # configuration, the index and its certificates, stays).
    with tempfile.TemporaryDirectory() as nowhere:
        env = dict(os.environ, PIP_CONSTRAINT=os.devnull, PIP_FIND_LINKS=nowhere)
        if subprocess.run(command, check=False, env=env).returncode != 0:
            return None
    return find_wheel(directory, release, platform)


# -- one wheel's exports, cached -----------------------------------------------------------


@dataclass(frozen=True)
class WheelRead:
    """Every export of one torch wheel's runtime libraries, and where they came from."""

    file: str
    sha256: str
    version: Version
    platform: str
    build: str
    exports: Mapping[str, frozenset[str]]  # library -> names

    def unstable(self, verdicts: dict[str, bool]) -> frozenset[str]:
        """The names the index keeps (``verdicts`` memoizes the classifier across releases)."""
        out = set()
        for names in self.exports.values():
            for name in names:
                keep = verdicts.get(name)
                if keep is None:
                    keep = verdicts[name] = is_unstable(name)
                if keep:
                    out.add(name)
        return frozenset(out)


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def read_wheel(path: Path, cache: Path) -> WheelRead:
    """A wheel's exports, from the cache when this exact file (sha256) was read before: a
    CUDA wheel takes 10-20 s to stream, and the cache outlives a deleted wheel."""
    sha256 = file_sha256(path)
    cached = cache / f"{path.name}.{sha256[:16]}.json.xz"
    if cached.is_file():
        doc = json.loads(lzma.decompress(cached.read_bytes()))
        if doc.get("cache_schema") == _CACHE_SCHEMA and doc.get("sha256") == sha256:
            return _from_doc(doc)
    torch = read_torch(str(path))
    platforms = sorted(f"{_OS[fmt]}-{arch}" for fmt, arch in torch.platforms)
    if len(platforms) != 1 or torch.version is None:
        raise SystemExit(f"{path}: torch libraries for {platforms or 'no platform'}, version {torch.version}")
    build = torch.build.backend if torch.build is not None else "unknown"
    version = Version(torch.version).public
    doc = {
        "cache_schema": _CACHE_SCHEMA,
        "file": path.name,
        "sha256": sha256,
        "version": version,
        "platform": platforms[0],
        "build": build,
        "exports": {lib: sorted(names) for lib, names in sorted(torch.exports.items())},
    }
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(lzma.compress(json.dumps(doc).encode(), preset=6))
    return _from_doc(doc)


def _from_doc(doc: dict[str, Any]) -> WheelRead:
    exports = {lib: frozenset(names) for lib, names in doc["exports"].items()}
    return WheelRead(
        doc["file"], doc["sha256"], Version(doc["version"]), doc["platform"], doc["build"], exports
    )


def cached_read(release: Version, platform: str) -> WheelRead | None:
    """With ``--offline``, the read of a wheel deleted since (``--delete-wheels``): the cache
    keeps every export, so the index can be rebuilt without the 900 MB file."""
    found = []
    for entry in (CACHE / "names").glob("torch-*.json.xz"):
        wheel_name = entry.name.rsplit(".", 3)[0]  # drop .<sha16>.json.xz
        _, version, build, tags = parse_wheel_filename(wheel_name)
        if version == release and {t.platform for t in tags} & set(PLATFORMS[platform]):
            found.append((build, entry))
    if not found:
        return None
    doc = json.loads(lzma.decompress(max(found)[1].read_bytes()))
    return _from_doc(doc) if doc.get("cache_schema") == _CACHE_SCHEMA else None


def wheels_for(
    releases: Sequence[Version], platform: str, directory: Path, offline: bool, delete: bool
) -> tuple[list[WheelRead], list[str]]:
    """Each release's wheel read (downloaded when missing); and the releases not to be had."""
    directory.mkdir(parents=True, exist_ok=True)
    read: list[WheelRead] = []
    missing: list[str] = []
    for release in releases:
        path = find_wheel(directory, release, platform)
        if path is None and offline:
            cached = cached_read(release, platform)
            if cached is not None:
                print(f"  {cached.file}: its cached read (the wheel is gone)", file=sys.stderr)
                read.append(cached)
                continue
        if path is None and not offline:
            started = time.monotonic()
            path = download(release, platform, directory)
            if path is not None:
                print(f"  downloaded {path.name} in {time.monotonic() - started:.0f} s", file=sys.stderr)
        if path is None:
            missing.append(str(release))
            continue
        started = time.monotonic()
        wheel = read_wheel(path, CACHE / "names")
        if wheel.platform != platform or wheel.version != release:
            raise SystemExit(f"{path}: torch {wheel.version} for {wheel.platform}, not {release} {platform}")
        print(f"  read {path.name} ({wheel.build}) in {time.monotonic() - started:.0f} s", file=sys.stderr)
        read.append(wheel)
        if delete:
            path.unlink()
    return read, missing


# -- the index file ------------------------------------------------------------------------


def encode(
    platform: str,
    wheels: Sequence[WheelRead],
    names: Sequence[frozenset[str]],
    compression: str,
    generated: str,
) -> bytes:
    """The bytes ``ExportIndex.from_bytes`` reads, by the encoder ``symbols update`` uses too
    (``torchabi.exports_update``); a hash collision among the names stops the run."""
    try:
        masks = masks_of(names)
    except ValueError as exc:
        raise SystemExit(f"{exc}; widen the hash") from exc
    releases = [
        {
            "version": str(w.version),
            "builds": [w.build],
            "wheels": [{"file": w.file, "sha256": w.sha256}],
            "names": len(n),
        }
        for w, n in zip(wheels, names, strict=True)
    ]
    return encode_index(platform, releases, masks, generated, "scripts/gen_torch_exports.py", compression)


def verify(data: bytes, platform: str, wheels: Sequence[WheelRead], names: Sequence[frozenset[str]]) -> None:
    """Read the bytes back with the shipped reader and ask it about every indexed name: the
    file is not written unless the reader gives each its exact releases."""
    index = ExportIndex.from_bytes(data, "the new index")
    assert index.platform == platform and index.releases == tuple(w.version for w in wheels)
    expected: dict[str, int] = {}
    for bit, release_names in enumerate(names):
        for name in release_names:
            expected[name] = expected.get(name, 0) | 1 << bit
    wrong = [n for n, mask in expected.items() if index._mask(n) != mask]
    if wrong:
        raise SystemExit(f"the reader disagrees on {len(wrong)} names, e.g. {wrong[0]!r}")


def write(path: Path, data: bytes) -> None:
    def fill(out: BinaryIO) -> None:
        out.write(data)

    replace_atomically(path, fill, 0o644)


# -- reports -------------------------------------------------------------------------------


def _show(names: Iterable[str], keep: int = 3) -> str:
    listed = sorted(names)
    text = "; ".join((demangle(n) or n)[:120] for n in listed[:keep])
    return text + (f"; ... {len(listed) - keep} more" if len(listed) > keep else "")


def report(wheels: Sequence[WheelRead], names: Sequence[frozenset[str]]) -> None:
    previous: frozenset[str] = frozenset()
    for wheel, current in zip(wheels, names, strict=True):
        libs = Counter(lib for lib, ns in wheel.exports.items() for n in ns if n in current)
        added, removed = current - previous, previous - current
        print(f"  {wheel.version} {wheel.build:6} {len(current):6} unstable names ({wheel.file})")
        by_library = dict(sorted(libs.items()))
        print(f"      +{len(added)} -{len(removed)} vs the minor before; by library: {by_library}")
        previous = current


def compare_patches(
    platform: str, indexed: Sequence[WheelRead], verdicts: dict[str, bool], args: argparse.Namespace
) -> None:
    """Where the patches of one minor export different unstable names than the patch indexed."""
    by_minor = {(w.version.major, w.version.minor): w for w in indexed}
    others = [
        v
        for v in final_releases()
        if (v.major, v.minor) in by_minor and v not in {w.version for w in indexed}
    ]
    read, missing = wheels_for(others, platform, args.wheel_dir, args.offline, args.delete_wheels)
    print(f"patches of the same minor ({platform}){'; not read: ' + ', '.join(missing) if missing else ''}:")
    for other in read:
        last = by_minor[(other.version.major, other.version.minor)]
        a, b = other.unstable(verdicts), last.unstable(verdicts)
        print(
            f"  {other.version} ({other.build}) vs {last.version} ({last.build}): {len(a)} vs {len(b)} names"
        )
        if a - b:
            print(f"    only in {other.version}: {len(a - b)}: {_show(a - b)}")
        if b - a:
            print(f"    only in {last.version}: {len(b - a)}: {_show(b - a)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--platform", action="append", dest="platforms", choices=sorted(PLATFORMS))
    parser.add_argument("--torch", action="append", dest="releases", metavar="VERSION", type=Version)
    parser.add_argument("--wheel-dir", type=Path, default=CACHE / "wheels")
    parser.add_argument("--offline", action="store_true", help="read only wheels (or cached reads) at hand")
    parser.add_argument("--delete-wheels", action="store_true", help="delete each wheel once read")
    parser.add_argument("--patches", action="store_true", help="also compare every other patch of each minor")
    parser.add_argument("--output-dir", type=Path, default=DATA)
    parser.add_argument("--compression", choices=("xz", "zlib"), default="xz")
    args = parser.parse_args(argv)
    releases: list[Version] = sorted(args.releases or last_patches(final_releases()))
    platforms: list[str] = args.platforms or list(PLATFORMS)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    generated = (datetime.fromtimestamp(int(epoch), UTC).date() if epoch else date.today()).isoformat()
    verdicts: dict[str, bool] = {}
    for platform in platforms:
        started = time.monotonic()
        print(f"{platform}: torch {', '.join(map(str, releases))}", file=sys.stderr)
        wheels, missing = wheels_for(releases, platform, args.wheel_dir, args.offline, args.delete_wheels)
        if not wheels:
            print(f"{platform}: no wheels; nothing written", file=sys.stderr)
            continue
        names = [w.unstable(verdicts) for w in wheels]
        data = encode(platform, wheels, names, args.compression, generated)
        verify(data, platform, wheels, names)
        out = args.output_dir / f"torch_exports_{platform}.bin"
        write(out, data)
        total = len(frozenset().union(*names))
        print(f"wrote {out}: {len(data):,} bytes, {total:,} names over {len(wheels)} releases")
        print(f"  false-positive rate per unknown name looked up: {total / 2**HASH_BITS:.1e}")
        if missing:
            print(f"  not to be had: torch {', '.join(missing)}")
        report(wheels, names)
        if args.patches:
            compare_patches(platform, wheels, verdicts, args)
        print(f"  {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
