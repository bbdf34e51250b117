"""The shipped index of torch's unstable exports (``tables.exports``), held to real data.

torch 2.13.0's own export list (``tests/data``, read from its libraries by
``scripts/torch_exports.py``) must be in the index as exported by 2.13; the file's layout is
decoded here a second time, independently of the reader, so the header and the body are
checked against each other; and damaged files must end in ``InputError``. Where the corpus
wheels the index was made for are in ``.cache/corpus``, their imports are dated too.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import re
import subprocess
import sys
from array import array
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from torchwheel.errors import InputError
from torchwheel.tables.exports import MAGIC, Dating, ExportIndex, name_hash, shipped_index
from torchwheel.tables.tableset import shipped_tables
from torchwheel.torchabi.cxxnames import is_unstable

from ..lib.helpers import REPO

PLATFORM = "linux-x86_64"
PLATFORMS = ("linux-x86_64", "macos-arm64", "windows-x86_64")
TORCH_213 = REPO / "tests" / "data" / "torch-2.13.0-linux-x86_64-exports.txt.xz"
TORCH_213_WINDOWS = REPO / "tests" / "data" / "torch-2.13.0-win-amd64-exports.txt.xz"
RELEASES = REPO / "src" / "torchwheel" / "data" / "torch_releases.json"
CORPUS = REPO / ".cache" / "corpus"
FAKE = "_ZN3c1024no_torch_ever_exported_meEv"  # c10::no_torch_ever_exported_me(): unstable, unexported


def _raw(platform: str = PLATFORM) -> bytes:
    return (resources.files("torchwheel") / "data" / f"torch_exports_{platform}.bin").read_bytes()


def _exported(path: Path) -> list[str]:
    """Every name a torch's runtime libraries export, from a ``scripts/torch_exports.py`` list."""
    text = lzma.decompress(path.read_bytes()).decode()
    return sorted({line.split("\t", 1)[1] for line in text.splitlines()})


def _split(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and the compressed body, read without the module's reader."""
    size = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "little")
    start = len(MAGIC) + 4
    return json.loads(data[start : start + size]), data[start + size : -16]


def _seal(header: dict[str, Any], body: bytes) -> bytes:
    """A file with a valid checksum around whatever header and body: what the reader checks
    beyond the checksum."""
    text = json.dumps(header).encode()
    out = MAGIC + len(text).to_bytes(4, "little") + text + body
    return out + hashlib.blake2b(out, digest_size=16).digest()


@pytest.fixture(scope="module")
def index() -> ExportIndex:
    found = shipped_index(PLATFORM)
    assert found is not None, f"no shipped export index for {PLATFORM}"
    return found


@pytest.fixture(scope="module")
def torch_213() -> list[str]:
    """Every name torch 2.13.0's runtime libraries export (Linux x86_64, the CPU build)."""
    return _exported(TORCH_213)


# -- the shipped index against torch 2.13's real exports ------------------------------------


def test_every_unstable_export_of_torch_2_13_is_indexed_as_exported_by_2_13(
    index: ExportIndex, torch_213: list[str]
) -> None:
    unstable = [n for n in torch_213 if is_unstable(n)]
    assert len(unstable) > 30_000
    dating = index.dating(unstable)
    # minors is where every known name's releases meet: 2.13 in it means each name has 2.13
    assert (dating.known, dating.unknown_count, dating.unknown) == (len(unstable), 0, ())
    assert dating.decides and dating.minors == {(2, 13)}


def test_windows_index_holds_exactly_the_unstable_exports_of_torch_2_13_for_2_13() -> None:
    """The list was read from the very win_amd64 wheel the index read for 2.13 (PyPI's CPU
    build, MSVC names): every unstable name is in it for 2.13, and the header counts no more."""
    index = shipped_index("windows-x86_64")
    assert index is not None
    unstable = [n for n in _exported(TORCH_213_WINDOWS) if is_unstable(n)]
    dating = index.dating(unstable)
    assert (dating.known, dating.unknown_count) == (len(unstable), 0) and dating.minors == {(2, 13)}
    header, _ = _split(_raw("windows-x86_64"))
    (entry,) = [r for r in header["releases"] if r["version"] == "2.13.0"]
    assert entry["names"] == len(unstable) > 50_000


def test_each_platform_knows_its_own_spelling() -> None:
    """libc++ (macOS) spells std::string ``NSt3__112basic_string``, libstdc++ (Linux)
    ``NSt7__cxx1112basic_string``: the same c10 constructor is two names, each known on its
    own platform only, which is why an index is per platform."""
    macos, linux = shipped_index("macos-arm64"), shipped_index("linux-x86_64")
    assert macos is not None and linux is not None
    mac_name = "_ZN3c1010IndexErrorC1ENS_14SourceLocationENSt3__112basic_stringIcNS2_11char_traitsIcEENS2_9allocatorIcEEEE"
    linux_name = (
        "_ZN3c1010IndexErrorC1ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
    )
    assert macos.dating([mac_name]).decides and linux.dating([linux_name]).decides
    assert macos.dating([linux_name]).known == linux.dating([mac_name]).known == 0


def test_only_unstable_names_are_indexed(index: ExportIndex, torch_213: list[str]) -> None:
    """std::, bundled libraries (fbgemm::, google::protobuf) and C names are left out: the
    index holds exactly what ``cxxnames`` calls unstable, like the reading of a wheel."""
    others = [n for n in torch_213 if not is_unstable(n)]
    assert len(others) > 30_000 and any(n.startswith("_ZNSt") for n in others)
    dating = index.dating(others)
    assert dating.known == 0 and not dating.decides and dating.minors == frozenset()
    assert dating.unknown_count == len(others) and len(dating.unknown) == 10


def test_a_name_no_torch_exports_leaves_the_answer_unknown(index: ExportIndex, torch_213: list[str]) -> None:
    assert index.dating([FAKE]) == Dating(frozenset(), 0, (FAKE,), 1)
    real = [n for n in torch_213 if is_unstable(n)][:50]
    mixed = index.dating([*real, FAKE])
    assert (mixed.known, mixed.unknown, mixed.unknown_count) == (50, (FAKE,), 1)
    assert not mixed.decides and (2, 13) in mixed.minors  # where the known names meet: no verdict


def test_names_differ_between_releases(index: ExportIndex, torch_213: list[str]) -> None:
    """The index dates: some of 2.13's names are missing from its oldest release, and every
    such name's minors still include 2.13 and exclude that release."""
    oldest = (index.releases[0].major, index.releases[0].minor)
    late = [n for n in torch_213 if is_unstable(n) and oldest not in index.dating([n]).minors]
    assert len(late) > 1000
    dating = index.dating(late[:100])
    assert dating.decides and (2, 13) in dating.minors and oldest not in dating.minors


def test_each_name_counts_once_in_any_order(index: ExportIndex, torch_213: list[str]) -> None:
    names = [*[n for n in torch_213 if is_unstable(n)][:200], FAKE, FAKE + "x"]
    once = index.dating(names)
    assert index.dating(reversed(names * 3)) == once
    assert once.known == 200 and once.unknown == (FAKE, FAKE + "x") and once.unknown_count == 2


def test_the_index_is_cached_per_process_and_only_for_shipped_platforms() -> None:
    assert shipped_index(PLATFORM) is shipped_index(PLATFORM)
    for platform in ("plan9-mips", "../data/shim_versions", "linux-x86_64/../x", ""):
        assert shipped_index(platform) is None


def test_the_hash_is_the_documented_one() -> None:
    """BLAKE2b with a 6-byte digest of the UTF-8 name: a changed hash must change the schema."""
    assert name_hash("_ZN3c104impl26raw_local_dispatch_key_setE") == int.from_bytes(
        hashlib.blake2b(b"_ZN3c104impl26raw_local_dispatch_key_setE", digest_size=6).digest(), "big"
    )
    assert name_hash("\udcff") >= 0  # a lone surrogate hashes, never raises


# -- the header and the body, decoded independently -----------------------------------------


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_release_list_is_the_headers_and_each_release_has_its_names(platform: str) -> None:
    index = shipped_index(platform)
    assert index is not None, f"no shipped export index for {platform}"
    header, packed = _split(_raw(platform))
    assert header["platform"] == platform == index.platform
    assert tuple(Version(r["version"]) for r in header["releases"]) == index.releases
    assert tuple(tuple(r["builds"]) for r in header["releases"]) == index.builds
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", header["generated"])
    body = lzma.decompress(packed)
    count, width = header["count"], header["mask_bytes"]
    assert len(body) == header["body_size"] == 4 * (2**16 + 1) + (4 + width) * count
    masks = array({1: "B", 2: "H", 4: "I", 8: "Q"}[width])
    masks.frombytes(body[4 * (2**16 + 1) + 4 * count :])
    for bit, release in enumerate(header["releases"]):
        exported = sum(1 for m in masks if m >> bit & 1)
        assert exported == release["names"] > 30_000, release["version"]
        assert all(len(w["sha256"]) == 64 and w["file"].startswith("torch-") for w in release["wheels"])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_one_release_per_minor_the_last_patch_from_2_4_to_the_newest(platform: str) -> None:
    """Stale when torch_releases.json gained a release: regenerate with scripts/gen_torch_exports.py."""
    index = shipped_index(platform)
    assert index is not None
    newest: dict[tuple[int, int], Version] = {}
    for text in json.loads(RELEASES.read_text(encoding="utf-8"))["releases"]:
        v = Version(text)
        if (v.major, v.minor) >= (2, 4):
            newest[(v.major, v.minor)] = max(v, newest.get((v.major, v.minor), v))
    assert index.releases == tuple(newest[k] for k in sorted(newest))


# -- damaged files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda d: b"", id="empty"),
        pytest.param(lambda d: d[:10], id="magic only"),
        pytest.param(lambda d: d[: len(d) // 2], id="half"),
        pytest.param(lambda d: d[:-1], id="last byte cut"),
        pytest.param(lambda d: b"X" + d[1:], id="wrong magic"),
        pytest.param(lambda d: d[:40] + bytes([d[40] ^ 1]) + d[41:], id="header bit flipped"),
        pytest.param(lambda d: d[:-5000] + bytes([d[-5000] ^ 0x80]) + d[-4999:], id="body bit flipped"),
        pytest.param(lambda d: d + b"\0", id="byte appended"),
    ],
)
def test_a_damaged_file_is_an_input_error(damage: Any) -> None:
    with pytest.raises(InputError):
        ExportIndex.from_bytes(damage(_raw()), "damaged")


def _resealed(**changes: Any) -> bytes:
    header, body = _split(_raw())
    header.update(changes)
    return _seal(header, body)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(lambda: _resealed(count=_split(_raw())[0]["count"] + 1), "cannot hold", id="count"),
        pytest.param(lambda: _resealed(body_size=10), "cannot hold", id="body size"),
        pytest.param(lambda: _resealed(count=2**30), "outside", id="huge count"),
        pytest.param(lambda: _resealed(schema_version=2), "schema 2", id="schema"),
        pytest.param(lambda: _resealed(compression="zlib"), "damaged", id="compression"),
        pytest.param(lambda: _resealed(mask_bytes=1), "do not fit", id="mask width"),
        pytest.param(
            lambda: _resealed(releases=_split(_raw())[0]["releases"][::-1]), "ascending", id="order"
        ),
        pytest.param(lambda: _resealed(releases=[]), "at least 1", id="no releases"),
        pytest.param(lambda: _seal(_split(_raw())[0], _split(_raw())[1][:-100]), "inflate", id="short body"),
        pytest.param(lambda: _seal({"schema_version": 1}, b""), "missing", id="header fields"),
        pytest.param(lambda: MAGIC + (2**31).to_bytes(4, "little") + b"x" * 40, "checksum", id="header size"),
    ],
)
def test_counts_and_sizes_are_checked_behind_a_valid_checksum(data: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        ExportIndex.from_bytes(data(), "resealed")


def test_an_honest_header_size_past_the_file_is_refused() -> None:
    raw = _raw()
    out = MAGIC + (len(raw)).to_bytes(4, "little") + raw[len(MAGIC) + 4 : -16]
    with pytest.raises(InputError, match="does not fit"):
        ExportIndex.from_bytes(out + hashlib.blake2b(out, digest_size=16).digest(), "resealed")


# -- real unpinned wheels (when the corpus cache has them) ---------------------------------------

FBGEMM_CPU_18 = "fbgemm_gpu_cpu-1.8.0-cp311-cp311-manylinux_2_28_x86_64.whl"
FBGEMM_CPU_19 = "fbgemm_gpu_cpu-1.9.0-cp311-cp311-manylinux_2_28_x86_64.whl"


def _strong_unstable_imports(filename: str) -> set[str]:
    """A corpus wheel's strong unstable imports; it must have no ``torch`` requirement. Weak
    imports are left out as ``compat`` leaves them out: the loader does not need them (GCC
    references TLS init functions, ``_ZTH...``, weakly, and no torch defines them)."""
    from torchwheel.analysis.load import load_facts

    path = CORPUS / filename
    if not path.is_file():  # a few MB each: fetched like the corpus's CI subset, never skipped
        name, version = filename.split("-")[:2]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
             "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
             f"{name}=={version}", "-d", str(CORPUS)],
            check=True,
        )  # fmt: skip
    (wheel,) = load_facts((path,), (), shipped_tables(), verify_hashes=False)
    assert not wheel.metadata.torch_requirements
    return {
        imp.name
        for b in wheel.binaries
        for s in b.analysis.slices
        for imp in s.facts.imports
        if not imp.weak and is_unstable(imp.name)
    }


@pytest.mark.parametrize(
    ("filename", "minor"),
    [
        (FBGEMM_CPU_18, (2, 13)),
        (FBGEMM_CPU_19, (2, 14)),
        # fbgemm-gpu 1.9.0 (CUDA, 500 MB) dates to 2.14 too: benchmarks/loadtruth.py runs it
        ("torchao-0.15.0-cp310-abi3-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl", (2, 9)),
    ],
)
def test_unpinned_unstable_wheels_date_to_one_minor(
    index: ExportIndex, filename: str, minor: tuple[int, int]
) -> None:
    dating = index.dating(_strong_unstable_imports(filename))
    assert dating.decides and dating.minors == {minor}, dating


def test_imports_of_two_releases_decide_that_no_indexed_torch_loads_them(index: ExportIndex) -> None:
    names = _strong_unstable_imports(FBGEMM_CPU_18) | _strong_unstable_imports(FBGEMM_CPU_19)
    dating = index.dating(names)
    assert dating.decides and dating.minors == frozenset()
