"""RECORD: the wheel's list of its own files with their hashes and sizes, and how the files
compare with it.

One spelling of a RECORD hash (``sha256=`` + urlsafe base64 without padding) for every
writer and reader here (the streaming scan, the wheel writer, the read-back check, the
installer), and a comparison that is a pure function of what was listed and what was read.
"""

from __future__ import annotations

import base64
import csv
import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from torchwheel import limits
from torchwheel.errors import InputError, clipped, quoted
from torchwheel.frozen import frozen


def digest_text(digest: bytes, algorithm: str = "sha256") -> str:
    """A finished digest as RECORD spells it: ``sha256=<urlsafe base64, no padding>``."""
    return f"{algorithm}=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def record_hash(data: bytes) -> str:
    return digest_text(hashlib.sha256(data).digest())


def hash_chunks(chunks: Iterable[bytes]) -> tuple[str, int]:
    """RECORD hash and size of a stream: a 500 MB member never sits in memory."""
    digest = hashlib.sha256()
    size = 0
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
    return digest_text(digest.digest()), size


@dataclass(frozen=True, slots=True)  # slots: a RECORD may have 400,000 rows
class RecordEntry:
    path: str
    hash: str | None
    size: int | None


@frozen
class RecordProblem:
    path: str
    problem: str  # "missing-from-record" | "hash-mismatch" | "size-mismatch" | "missing-file" | ...
    detail: str


@dataclass
class RecordProblems:
    """The problems found, up to ``max-listed`` of each kind in full, and how many more of each
    kind there were: 200,000 RECORD rows naming absent files (a 504 KB wheel) are counted, not
    held as 200,000 objects and findings."""

    kept: list[RecordProblem] = field(default_factory=list)
    omitted: Counter[str] = field(default_factory=Counter)
    _per_kind: Counter[str] = field(default_factory=Counter, repr=False)

    def add(self, problem: RecordProblem) -> None:
        if self._per_kind[problem.problem] < max(1, limits.current().max_listed.value):  # one of each named
            self._per_kind[problem.problem] += 1
            self.kept.append(problem)
        else:
            self.omitted[problem.problem] += 1


def parse_record(text: str) -> dict[str, RecordEntry]:
    """installer's CSV reading (``installer.records.parse_record_file``: three fields,
    Windows separators made ``/``), spelled here because importing installer costs 15 ms at
    start-up; the hash stays a string because an unknown algorithm is a finding (TW403), not
    unreadable input."""
    # counted before anything per row is built; a bound on rows, as a quoted field may span lines
    lines = text.count("\n") + text.count("\r") - text.count("\r\n") + 1
    limits.current().max_record_rows.check("RECORD's line count", lines)
    entries: dict[str, RecordEntry] = {}
    nonblank = [line for line in text.splitlines() if line.strip()]
    rows: Iterable[list[str]]
    if '"' not in text and max(map(len, nonblank), default=0) <= csv.field_size_limit():
        # no quote and no field over csv's limit: csv would split each line at its commas,
        # and this takes a third less time (52,000 rows of 300 distributions: 0.11 s, not 0.16)
        rows = (line.split(",") for line in nonblank)
    else:
        rows = csv.reader(nonblank, delimiter=",", quotechar='"', lineterminator="\n")
    try:
        for elements in rows:
            if len(elements) != 3:
                raise InputError(
                    f"RECORD row {clipped(str(elements), 200)} does not have 3 fields",
                    reference="wheel-invalid",
                )
            path = elements[0].replace("\\", "/")
            entries[path] = _record_entry(path, elements[1], elements[2])
    except csv.Error as exc:  # a field over csv's 128 KiB limit, a stray quote or NUL
        raise InputError(
            f"RECORD is not readable CSV (row {len(entries) + 1}: {exc})", reference="wheel-invalid"
        ) from exc
    return entries


def _record_entry(path: str, digest: str, size: str) -> RecordEntry:
    try:
        return RecordEntry(path, digest or None, int(size) if size else None)
    except ValueError as exc:
        raise InputError(
            f"RECORD size {quoted(size, 40)} for {quoted(path, 200)} is not a number",
            reference="wheel-invalid",
        ) from exc


def verify_record(
    record: dict[str, RecordEntry] | None,
    dist_info: str,
    members: list[str],
    listing_problems: list[RecordProblem],
    hashes: dict[str, tuple[str | None, int]],
    installed: bool,
) -> RecordProblems:
    """Compare RECORD with the members' real hashes and sizes.

    ``hashes``: member -> (sha256 RECORD hash, or None when the caller chose not to hash
    it, and size). Unhashed members are still checked for presence and size.
    ``listing_problems``: what listing the members found already (entries not read).

    An installed distribution follows the installed-project spec instead of the wheel's:
    any entry may leave hash and size empty (pip does so for the ``.pyc`` it compiles and
    for RECORD), any hashlib algorithm is allowed, and a cached ``.pyc`` that is gone is
    no loss. A hash that is given must still match.
    """
    found = RecordProblems()
    if record is None:
        found.add(RecordProblem(f"{dist_info}/RECORD", "missing-record", "the wheel has no RECORD"))
        return found
    for p in listing_problems:
        found.add(p)
    record_name = f"{dist_info}/RECORD"
    unsigned = {record_name, f"{record_name}.jws", f"{record_name}.p7s"}
    for member in members:
        if member in unsigned:
            continue
        entry = record.get(member)
        if entry is None:
            found.add(RecordProblem(member, "missing-from-record", "not listed in RECORD"))
            continue
        actual_hash, actual_size = hashes[member]
        algorithm = entry.hash.split("=", 1)[0] if entry.hash else None
        if entry.hash is None:
            if not installed:
                found.add(RecordProblem(member, "no-hash", "RECORD lists it without a hash"))
        elif algorithm not in ("sha256", "sha384", "sha512") and not installed:
            found.add(RecordProblem(member, "weak-hash", f"RECORD uses {algorithm}"))
        elif algorithm == "sha256" and actual_hash is not None and entry.hash != actual_hash:
            found.add(RecordProblem(member, "hash-mismatch", f"RECORD {entry.hash}, actual {actual_hash}"))
        if entry.size is not None and entry.size != actual_size:
            found.add(RecordProblem(member, "size-mismatch", f"RECORD {entry.size}, actual {actual_size}"))
    present = set(members) | {p.path for p in listing_problems}
    where = "on disk" if installed else "in the wheel"
    for path in record:
        if path in present or path in unsigned or (installed and path.endswith(".pyc")):
            continue
        found.add(RecordProblem(path, "missing-file", f"listed in RECORD but not {where}"))
    return found
