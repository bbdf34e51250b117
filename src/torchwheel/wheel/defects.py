"""The archive's own defects: what installers refuse in a wheel, or where it contradicts
itself, judged from its central directory, RECORD and metadata files alone.

These are facts of the wheel, not of any rule set: ``check`` reports them as the TW4xx
errors (``rules.integrity`` registers each check below under its code), and ``index``,
``select``, ``install`` and ``matrix`` refuse a wheel that has one (``archive_defects``),
without loading the rules. One wording, one place: the two cannot drift apart. The compiled
members' facts (TW405, TW406) need the binaries read, so they stay ``check``'s.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel import limits
from torchwheel.errors import clipped, quoted
from torchwheel.frozen import frozen
from torchwheel.wheel.contents import WheelContents
from torchwheel.wheel.metadata import (
    TORCH_ABI_FIELD,
    MetadataFacts,
    check_torch_abi_lines,
    overlong,
    parse_metadata,
    wheel_problems,
)
from torchwheel.wheel.record import RecordProblem, verify_record

Hit = tuple[str, str]  # (member, message), as a rule yields it

# which code each RECORD problem is reported under
RECORD_KINDS = {
    "missing-record": "TW401",
    "hash-mismatch": "TW402",
    "size-mismatch": "TW402",
    "missing-from-record": "TW403",
    "missing-file": "TW403",
    "no-hash": "TW403",
    "weak-hash": "TW403",
    "outside-environment": "TW403",  # an installed RECORD entry that leaves the environment
    "not-regular": "TW403",  # a link out of an unpacked wheel, a FIFO or device: not read
}
_NAME_MAX = 255  # bytes in one path component on ext4, XFS, APFS (NTFS: 255 UTF-16 units)


class Archive(Protocol):
    """What the checks read: ``analysis.WheelFacts`` has it, and so has ``_Read`` below."""

    @property
    def contents(self) -> WheelContents: ...
    @property
    def metadata(self) -> MetadataFacts: ...
    @property
    def record_problems(self) -> Sequence[RecordProblem]: ...
    @property
    def is_wheel_file(self) -> bool: ...


@frozen
class Defect:
    code: str  # the TWnnn code ``check`` reports it under
    member: str  # "" for the wheel as a whole
    message: str


def comparable_version(text: str) -> Version | str:
    """A version as packaging reads it, or the text as written when it does not parse (TW407
    says so) or is past ``max-version-length`` (TW416), so that two spellings can still be
    compared."""
    if len(text) > limits.current().max_version_length.value:
        return text
    try:
        return Version(text)
    except InvalidVersion:
        return text


def record_missing(w: Archive) -> Iterator[Hit]:
    for p in w.record_problems:
        if p.problem == "missing-record":
            yield (
                p.path,
                "the wheel has no RECORD: installers refuse it; rebuild, or run `torchwheel tag` to write one",
            )


def record_mismatch(w: Archive) -> Iterator[Hit]:
    for p in w.record_problems:
        if RECORD_KINDS.get(p.problem) == "TW402":
            yield (
                p.path,
                f"{p.problem} ({p.detail}): the file changed after RECORD was written; "
                + ("reinstall the distribution" if w.contents.installed else "regenerate RECORD"),
            )


def record_incomplete(w: Archive) -> Iterator[Hit]:
    for p in w.record_problems:
        if RECORD_KINDS.get(p.problem) == "TW403":
            fix = (
                "reinstall the distribution"
                if w.contents.installed
                else "regenerate RECORD from the archive's contents"
            )
            yield p.path, f"{p.detail}: {fix}"


def metadata_invalid(w: Archive) -> Iterator[Hit]:
    c = w.contents
    for problem in w.metadata.problems:
        yield f"{c.dist_info}/METADATA", f"{problem}: fix the build backend's output"
    for problem in wheel_problems(c.wheel_text):
        yield f"{c.dist_info}/WHEEL", problem


def dist_info_mismatch(w: Archive) -> Iterator[Hit]:
    c = w.contents
    if w.is_wheel_file and c.dist_info and not c.dist_info_matches:
        yield (
            c.dist_info,
            (
                f"names another project than the file name ({c.filename_name!r}): pip and installer refuse "
                "the wheel; rebuild it so that both name the same project"
            ),
        )


def metadata_mismatch(w: Archive) -> Iterator[Hit]:
    """pip compares the METADATA it reads with the file it asked for and refuses a wheel whose
    Name or Version differ ("inconsistent name/version"); a rewrite would have to pick one."""
    c, meta = w.contents, w.metadata
    where = f"{c.dist_info}/METADATA"
    if meta.name and c.filename_name and canonicalize_name(meta.name) != canonicalize_name(c.filename_name):
        yield (
            where,
            (
                f"Name {quoted(meta.name, 60)} is not the project of the file name ({c.filename_name!r}): "
                "pip refuses the wheel; rebuild it so that both name one project"
            ),
        )
    if (
        meta.version
        and c.filename_version
        and comparable_version(meta.version) != comparable_version(c.filename_version)
    ):
        yield (
            where,
            (
                f"Version {quoted(meta.version, 60)} is not the file name's version ({c.filename_version!r}): "
                "pip refuses the wheel; rebuild it so that both carry one version"
            ),
        )


def torch_abi_invalid(w: Archive) -> Iterator[Hit]:
    c = w.contents
    try:
        check_torch_abi_lines(c.wheel_fields.get(TORCH_ABI_FIELD, []))
    except ValueError as exc:
        yield (
            f"{c.dist_info}/WHEEL",
            (
                f"{TORCH_ABI_FIELD}: {exc}: index, select and matrix refuse the wheel; `torchwheel tag` "
                f"replaces every {TORCH_ABI_FIELD} line with the one the binaries support"
            ),
        )


def member_name_uninstallable(w: Archive) -> Iterator[Hit]:
    """Names the archive holds but no installer can write as named: ``.`` (installer finds a
    directory there and refuses), empty or ``.`` components (written under another path
    than RECORD lists, or over another member), and components no file system takes."""
    if not w.is_wheel_file:
        return  # a directory's names came from a file system already
    for member in w.contents.members:
        parts = member.split("/")
        if "" in parts or "." in parts:
            yield (
                member,
                (
                    "has an empty or '.' path component: installers write it elsewhere than RECORD "
                    "lists, or over another member; rename it"
                ),
            )
            continue
        longest = max(len(p.encode()) for p in parts)
        if longest > _NAME_MAX:
            yield (
                member,
                (
                    f"has a path component of {longest:,} bytes; file systems take {_NAME_MAX}, so "
                    "installing fails (File name too long); shorten it"
                ),
            )


def filename_invalid(w: Archive) -> Iterator[Hit]:
    """pip reads such a name with its own looser pattern and downloads it, so the wheel reaches
    users; packaging, PyPI's upload check and torchwheel's selection refuse it. The rest of the
    wheel is judged all the same (its tags from WHEEL), so one finding does not hide the others."""
    c = w.contents
    if not w.is_wheel_file or c.name_problem is None:
        return
    fix = c.valid_name
    rename = (
        f"rename it to {fix} (METADATA's Name and Version, WHEEL's valid Tag lines), with any tag fix "
        "other findings ask for"
        if fix
        else "rename it to name-version-python-abi-platform.whl as the wheel spec says"
    )
    yield (
        "",
        f"the file name is not a valid wheel name ({clipped(c.name_problem, 80)}): PyPI and packaging-based tools refuse it; {rename}",
    )


def version_too_long(w: Archive) -> Iterator[Hit]:
    """A version (METADATA's, a requirement's) or build tag past ``max-version-length``:
    packaging converts each run of digits with ``int()``, which refuses 4,300 of them, so
    pip and every packaging-based tool fail on it; torchwheel reads the wheel without it."""
    c = w.contents
    fix = "shorten it in the build (real versions are under 100 characters)"
    for text in w.metadata.overlong:
        yield f"{c.dist_info}/METADATA", f"{text}: packaging-based tools cannot read it; {fix}"
    for build in c.wheel_fields.get("Build", []):
        found = overlong("Build", build)
        if found is not None:
            yield f"{c.dist_info}/WHEEL", f"{found}: packaging-based tools cannot read it; {fix}"


# every error the archive alone shows, in code order (tests/wheel/test_defects.py holds it
# to the error codes of TW4xx in ``rules.codes``, but the binaries' TW405 and TW406)
CHECKS: dict[str, Callable[[Archive], Iterator[Hit]]] = {
    "TW401": record_missing,
    "TW402": record_mismatch,
    "TW403": record_incomplete,
    "TW407": metadata_invalid,
    "TW408": dist_info_mismatch,
    "TW409": metadata_mismatch,
    "TW410": torch_abi_invalid,
    "TW411": member_name_uninstallable,
    "TW414": filename_invalid,
    "TW416": version_too_long,
}


@frozen
class _Read:
    contents: WheelContents
    metadata: MetadataFacts
    record_problems: Sequence[RecordProblem]
    is_wheel_file: bool = True


def archive_defects(
    contents: WheelContents,
    member_size: Callable[[str], int],
    hashes: dict[str, tuple[str | None, int]] | None = None,
) -> list[Defect]:
    """The defects of a wheel file, code by code, each code's first ``max-listed`` in the
    order ``check`` reports them: what ``index`` does not publish and ``select``, ``install``
    and ``matrix`` do not choose.

    Without ``hashes`` RECORD is compared by name and size only (no member inflated).
    ``hashes``: member -> (RECORD hash, size) of every member, for a caller that read them
    all (``index``)."""
    sizes = hashes or {m: (None, member_size(m)) for m in contents.members}
    record = verify_record(
        contents.record,
        contents.dist_info,
        contents.members,
        contents.record_problems,
        sizes,
        contents.installed,
    )
    read = _Read(contents, parse_metadata(contents.metadata_text), record.kept)
    keep = max(1, limits.current().max_listed.value)
    return [
        Defect(code, member, message)
        for code, check in CHECKS.items()
        for member, message in heapq.nsmallest(keep, check(read))
    ]
