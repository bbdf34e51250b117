"""An environment's installed distributions as facts: which carry compiled torch code, read
whole; which do not, counted; which cannot be read, with why (``doctor``'s read edge).

Every distribution is read in place through its RECORD (``wheel.installed``: nothing outside
the environment's boundary is opened). Its compiled files are first read for their dynamic
section and string table (``binary.elfdynamic``: a few KB), which clears a library that
cannot name torch, then for their tables (``binary.tables``: a few hundred KB of a 500 MB
cuBLAS), which says whether it
touches torch: imports a torch symbol, links a torch library, carries the marker, or links a
toolkit runtime (``libcudart.so.13``) it does not bring itself and so relies on torch's build
for. Only those are then read whole (``collect``: GPU code, marker records), so the time is
linear in the compiled bytes of the distributions that matter and in the tables of the rest.
The torch distribution itself is the environment's torch, not one of its extensions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from torchwheel.analysis.buildunits import own_runtimes
from torchwheel.analysis.collect import collect
from torchwheel.analysis.member import MemberBinary, analyze_binary
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.binary import BinaryError
from torchwheel.binary.elfdynamic import dynamic_facts
from torchwheel.binary.tables import read_tables
from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.tables.tableset import Tables
from torchwheel.tables.torchcache import CleanFiles, file_key
from torchwheel.torchabi.accelerators import classify_library
from torchwheel.wheel.contents import WheelContents, is_compiled_name
from torchwheel.wheel.installed import Installed, NotRead, source_of
from torchwheel.wheel.metadata import MetadataFacts, parse_metadata
from torchwheel.wheel.record import RecordProblem
from torchwheel.wheel.sources import DirectorySource


@frozen
class Distribution:
    """One distribution with compiled torch code, read whole. ``outside``: compiled files its
    RECORD names outside the environment (never read)."""

    installed: Installed
    facts: WheelFacts
    outside: tuple[RecordProblem, ...] = ()

    @property
    def name(self) -> str:
        return self.facts.metadata.name or self.installed.name

    @property
    def version(self) -> str:
        return self.facts.metadata.version or self.installed.version


@frozen
class Environment:
    """What ``read_environment`` found: ``torch`` (the environment's own torch distribution),
    the distributions with compiled torch code, how many have none, and those not read."""

    torch: Installed | None
    with_torch: tuple[Distribution, ...]
    without_torch: int
    not_read: tuple[NotRead, ...]
    owner: Distribution | Installed | None = None  # of the file ``read_environment`` was asked about
    # files its RECORD lists that touch torch (or might) but cannot be read (mode 000, shrank)
    unreadable: tuple[NotRead, ...] = ()


def read_environment(
    items: Iterable[Installed | NotRead],
    tables: Tables,
    owner_of: str | None = None,
    early: Mapping[Installed, Read] | None = None,
    clean: CleanFiles | None = None,
) -> Environment:
    """Read every distribution (module docstring); ``owner_of``: a file's real path, whose
    distribution (the one whose RECORD lists it) is ``Environment.owner``. ``early``: the
    distributions read already (``read_distribution``, with ``whole`` as ``owner_of`` is
    given), by what they were read as: read while the probe ran (``doctor.early``). ``clean``:
    the compiled files known not to name torch (``torchcache.clean_files``), None for none."""
    torch: Installed | None = None
    with_torch: list[Distribution] = []
    not_read: list[NotRead] = []
    unreadable: list[NotRead] = []
    without = 0
    owner: Distribution | Installed | None = None
    for item in items:
        if isinstance(item, NotRead):
            not_read.append(item)
            continue
        if torch is None and item.key == "torch":
            torch = item
            continue
        found = early.get(item) if early is not None else None
        if found is None:
            found = read_distribution(item, tables, whole=owner_of is not None, clean=clean)
        if isinstance(found, _Unreadable):
            unreadable.append(found.item)
        elif isinstance(found, NotRead):
            not_read.append(found)
        elif isinstance(found, Distribution):
            with_torch.append(found)
        else:
            without += 1
        if owner_of is not None and owner is None and _lists(found, item, owner_of):
            owner = found if isinstance(found, Distribution) else item
    return Environment(torch, tuple(with_torch), without, tuple(not_read), owner, tuple(unreadable))


@frozen
class _Unreadable:
    item: NotRead


# what ``read_distribution`` makes of one distribution
Read = Distribution | NotRead | _Unreadable | WheelContents


def _lists(found: Read, item: Installed, path: str) -> bool:
    if isinstance(found, NotRead | _Unreadable):
        return False
    contents = found.facts.contents if isinstance(found, Distribution) else found
    inside = path.rstrip(os.sep) + os.sep  # a package directory: any file below it
    for m in contents.members:
        real = os.path.realpath(item.site / m)
        if real == path or real.startswith(inside):
            return True
    return False


def read_distribution(item: Installed, tables: Tables, whole: bool, clean: CleanFiles | None = None) -> Read:
    """The distribution read whole when it touches torch; else its contents (it has no
    torch code); a ``NotRead`` when it cannot be known. Its RECORD's compiled files are
    listed first, and only they (``DirectorySource``'s ``only``: a stat per entry was half of
    reading 300 distributions), unless ``whole``: the contents then list every file (which
    distribution owns a file ``--explain`` asks about)."""
    editable = item.editable_from()
    if editable is not None:
        return NotRead(
            item.name, item.version, str(item.dist_info),
            f"an editable install: its files are in its source tree ({editable}), which its RECORD does not list",
        )  # fmt: skip
    source = source_of(item, None if whole else is_compiled_name)
    if isinstance(source, NotRead):
        return source
    contents = source.contents
    special = [p for p in contents.record_problems if p.problem == "not-regular" and is_compiled_name(p.path)]
    if special:  # listed as its compiled code, and no file to read: never counted clean
        first = special[0]
        more = f" (and {len(special) - 1} more)" if len(special) > 1 else ""
        why = f"its compiled file {first.path} is {first.detail}{more}"
        return _Unreadable(NotRead(item.name, item.version, str(item.dist_info), why))
    outside = tuple(
        p for p in contents.record_problems if p.problem == "outside-environment" and is_compiled_name(p.path)
    )
    compiled = [m for m in contents.members if is_compiled_name(m)]
    if not compiled and not outside:
        return contents
    try:
        metadata = parse_metadata(contents.metadata_text)
    except InputError as exc:
        return NotRead(item.name, item.version, str(item.dist_info), f"METADATA cannot be read ({exc})")
    if not outside and not _touches(source, compiled, metadata, tables, clean):
        return contents
    every = source if whole else source_of(item)
    if isinstance(every, NotRead):  # changed since its first reading
        return every
    try:
        facts = collect(every, tables, verify_hashes=False)
    except InputError as exc:  # a file RECORD lists cannot be read: its need is unknown
        return _Unreadable(NotRead(item.name, item.version, str(item.dist_info), str(exc)))
    return Distribution(item, facts, outside)


def _touches(
    source: DirectorySource,
    compiled: list[str],
    metadata: MetadataFacts,
    tables: Tables,
    clean: CleanFiles | None,
) -> bool:
    """Does the distribution touch torch, by its compiled files' tables? True too when one of
    them cannot be read that way: only the whole read can tell (and says why)."""
    binaries = []
    seen: set[tuple[int, int]] = set()
    for member in compiled:
        key = source.identity(member)
        if key is not None and key in seen:  # another name of a file read already (a hard link)
            continue
        if key is not None:
            seen.add(key)
        if _kept_no_torch(source.root / member, clean):
            continue
        try:
            facts = read_tables(source.root / member, member, follow_symlinks=True)
        except (BinaryError, OSError):
            return True
        binaries.append(MemberBinary(member, analyze_binary(facts, tables.shims)))
    return touches_torch(
        WheelFacts(source.contents, metadata, binaries=tuple(binaries), kind="directory", tables=tables)
    )


# Every name an ELF file can import from torch holds one of these: the shims and the marker
# (``aoti_torch_``, ``torch_``: "torch"), the Python binding's global names
# (``THPVariable_Wrap``), and each of torch's C++ scopes (``cxxnames.UNSTABLE_SCOPES``) where a
# mangled name first spells it: a scope of the global namespace is always the first part of a
# nested name, right after its ``N`` and CV or reference qualifiers (``_ZN2at``, ``_ZNK3c10``,
# ``RKN2at6TensorE``); "2at" alone matched ``std::string::at`` (``E2atEm``) in every C++
# library. A false match only costs the tables' read.
_TORCH_NEEDLES = (
    b"torch",  # the shims, the marker, torch::, onnx_torch::, the libraries' names
    b"caffe2",
    b"THP",
    b"THManagedMapAllocator",
    *(
        q + scope
        for q in (b"N", b"r", b"V", b"K", b"R", b"O")
        for scope in (b"2at", b"2ao", b"3c10", b"4c10d", b"16c10_complex_math")
    ),
)
_TORCH_ROLES = ("torch", "torch-python", "runtime")


def _names_no_torch(path: Path) -> bool:
    """Can this file not touch torch, by its dynamic section and string table alone (a few KB
    of a 500 MB cuBLAS, not its symbol table)? The string table holds the name of every
    symbol it imports and every library it links: one that holds none of the needles and
    links no torch library or toolkit runtime is passed over (issue 49: 111 of an environment's
    114 compiled files, read only to learn this). Not ELF, or not readable so: the tables decide."""
    try:
        dynamic = dynamic_facts(path, _TORCH_NEEDLES)
    except (BinaryError, OSError):
        return False
    if dynamic.holds:
        return False
    linked = (classify_library(name) for name in dynamic.needed)
    return not any(lib is not None and lib.role in _TORCH_ROLES for lib in linked)


def _kept_no_torch(path: Path, clean: CleanFiles | None) -> bool:
    """``_names_no_torch``, answered by ``clean`` for a file it knows as it is now, and the
    answer learned for one that did not change while it was read."""
    key = file_key(path) if clean is not None else None
    if clean is None or key is None:
        return _names_no_torch(path)
    if key in clean.known:
        return True
    answer = _names_no_torch(path)
    if answer and file_key(path) == key:
        clean.learned.add(key)
    return answer


def touches_torch(w: WheelFacts) -> bool:
    """Does any compiled file import from torch, link a torch library, carry the marker, or
    link a toolkit runtime the distribution does not bring itself (then torch's build must)?
    A library that only carries GPU code of its own (cuBLAS, NCCL) does not."""
    if w.torch_need.kind != "none":
        return True
    brought = w.brought_runtimes
    for b in w.binaries:
        needs = b.analysis.needs
        runtimes = [lib for lib in needs.libraries if lib.role == "runtime"]
        if runtimes and len(own_runtimes(needs, brought)) < len(runtimes):
            return True
    return False
