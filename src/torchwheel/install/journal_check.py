"""An install journal checked whole before a replay touches anything (``install.recovery``):
read within ``max-journal-line-bytes`` and ``max-journal-entries``, each line a record of its
schema (through ``safejson``: no nesting, no duplicate keys, no NaN), the records in the order
a run writes them, every path a string without NUL inside the environment, no folder on the
way to it (from the scheme folder it lies in) a symbolic link, and none inside another
project's ``.dist-info`` (an install writes only its own; an upgrade moves aside only the
version it replaces, of the same project). What a replay needs is kept as a ``ReplayPlan``: strings
and small records, not the parsed lines, so a journal at its limits stays within the memory
budget.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from torchwheel import limits, safejson
from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.install.journal import FORMAT, TEMP_PREFIX, RepairFailed
from torchwheel.safejson import ANY, Either, Int, List, Null, Object, Str
from torchwheel.safeopen import kind

_LEFT = "not repairing; left as it is"
_TEMP = re.escape(TEMP_PREFIX) + r"\d+-\d+"
_B64_SHA256 = "[A-Za-z0-9_-]{43}"
_U64 = (1 << 64) - 1
_OPS = ("begin", "aside", "write", "wrote", "commit", "undone")
_HAS_OP = Object({"op": Str(choices=_OPS)}, required=("op",), other=ANY)
_SCHEMAS = {
    "begin": Object(
        {"op": Str(), "format": Int(), "project": Str(), "wheel": Str(), "replaces": Either((Null(), Str())),
         "keep": List(Str())},
        required=("op", "format", "project", "wheel", "replaces", "keep"),
    ),
    "aside": Object({"op": Str(), "moves": List(List(Str(), min_items=2), min_items=1)}, required=("op", "moves")),
    "write": Object(
        {"op": Str(), "path": Str(), "temp": Str(_TEMP), "dirs": List(Str())}, required=("op", "path", "temp", "dirs")
    ),
    "wrote": Object(
        {"op": Str(), "path": Str(), "sha256": Str(_B64_SHA256), "size": Int(minimum=0),
         "dev": Int(minimum=0, maximum=_U64), "ino": Int(minimum=0, maximum=_U64),
         "mtime_ns": Int(minimum=-_U64, maximum=_U64)},
        required=("op", "path", "sha256", "size", "dev", "ino", "mtime_ns"),
    ),
    "commit": Object({"op": Str()}, required=("op",)),
    "undone": Object({"op": Str()}, required=("op",)),
}  # fmt: skip


@frozen
class Move:
    original: str  # absolute, normalized (strings: a journal at its limit holds 500,000)
    held: str  # its name in aside/


@frozen
class Identity:
    """The file a ``wrote`` record names: its bytes (sha256, RECORD's base64, and size) and
    which file holds them (device, inode, modification time)."""

    sha256: str
    size: int
    dev: int
    ino: int
    mtime_ns: int


@frozen
class Write:
    path: str
    temp: str
    dirs: tuple[str, ...]
    wrote: Identity | None = None  # its ``wrote`` record; None: the write a kill cut short


@dataclass
class ReplayPlan:
    """A checked journal: what a replay acts on."""

    home: Path
    root: Path
    wheel: str = ""
    project: str = ""  # canonical
    replaces: str | None = None
    keep: frozenset[Path] = frozenset()
    moves: list[Move] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    committed: bool = False
    undone: bool = False
    empty: bool = False
    aside_exists: bool = False
    journal_end: int = 0  # the byte after the last whole line

    @property
    def aside(self) -> Path:
        return self.home / "aside"


def _refused(home: Path, why: str) -> RepairFailed:
    return RepairFailed(f"{home}/journal {why}: {_LEFT}")


def same_file(path: str, wrote: Identity) -> bool:
    """``path`` is still the file the install wrote: a regular file (not a link), the same
    device, inode, modification time and size, and the same sha256. The same bytes in another
    file (another installer's copy of the same wheel) are not enough, nor the same inode
    number in a file made later."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)

    def same(st: os.stat_result) -> bool:
        return stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size) == (
            wrote.dev,
            wrote.ino,
            wrote.mtime_ns,
            wrote.size,
        )

    try:
        if not same(os.lstat(path)):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | nofollow)
    except OSError:
        return False
    h = hashlib.sha256()
    try:
        if not same(os.fstat(fd)):  # replaced between the two looks
            return False
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    finally:
        os.close(fd)
    return base64.urlsafe_b64encode(h.digest()).decode().rstrip("=") == wrote.sha256


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class _Paths:
    """Journal paths made absolute and held inside the environment, every folder on the way
    (below the scheme folder it lies in) checked with ``lstat`` once. Strings, not
    ``pathlib``: a journal at its limit names a million paths."""

    def __init__(self, home: Path, root: Path, allowed: tuple[Path, ...]) -> None:
        self.home, self.root = home, str(root)
        self.project = ""  # canonical; set from the begin record
        self._home = str(home)
        self.allowed = sorted({os.path.normpath(a) for a in allowed}, key=len, reverse=True)
        self._real: set[str] = set()

    def path(self, rel: str, last_may_be_link: bool = True) -> str:
        if not rel or "\x00" in rel:
            raise _refused(self.home, f"names {'an empty path' if not rel else 'a path with a NUL byte'}")
        shown = rel if len(rel) <= 200 else rel[:200] + "..."
        if os.path.isabs(rel):
            raise _refused(self.home, f"names the absolute path {shown!r}, outside the environment")
        path = os.path.normpath(os.path.join(self.root, rel))
        base = next((a for a in self.allowed if _under(path, a)), None)
        if base is None or path == self.root or _under(path, self._home):
            raise _refused(self.home, f"names {shown}, outside the environment")
        self._walk(base, path, shown, last_may_be_link)
        self._own_dist_info(path[len(base) :], shown)
        return path

    def _own_dist_info(self, below: str, shown: str) -> None:
        """No path inside another project's ``.dist-info``: an install writes its own, an
        upgrade sets aside the one of the version it replaces; another distribution's
        ``INSTALLER`` or ``RECORD`` in a journal is a forgery."""
        for part in below.split(os.sep):
            if part.endswith(".dist-info"):
                owner = canonicalize_name(part.removesuffix(".dist-info").split("-", 1)[0])
                if owner != self.project:
                    raise _refused(self.home, f"names {shown}, a file of another distribution ({part})")

    def _walk(self, base: str, path: str, shown: str, last_may_be_link: bool) -> None:
        here = base
        for part in path[len(base) :].strip(os.sep).split(os.sep) if path != base else ():
            here = os.path.join(here, part)
            if here in self._real:
                continue
            try:
                st = os.lstat(here)
            except FileNotFoundError:
                return  # nothing below it exists either
            except OSError as exc:
                raise _refused(
                    self.home, f"names {shown}, which cannot be looked at ({exc.strerror})"
                ) from exc
            if stat.S_ISLNK(st.st_mode):
                if here == path and last_may_be_link:
                    return
                raise _refused(self.home, f"names {shown}, through the symbolic link {here}")
            if here == path:
                return
            if not stat.S_ISDIR(st.st_mode):
                raise _refused(self.home, f"names {shown}, below {here}, which is {kind(st.st_mode)}")
            self._real.add(here)


def _lines(home: Path, fd: int) -> Iterator[tuple[int, bytes]]:
    """The whole lines (number, bytes) within the limits; the byte count of each included."""
    lim = limits.current()
    line_limit, entries = lim.max_journal_line_bytes, lim.max_journal_entries
    with open(fd, "rb", closefd=False) as fh:
        n = 0
        while raw := fh.readline(line_limit.value + 2):
            n += 1
            if not raw.endswith(b"\n"):
                if len(raw) > line_limit.value + 1:
                    line_limit.check(f"{home}/journal line {n}'s length in bytes", len(raw))
                return  # a last line never made durable whole: its act never began
            entries.check(f"{home}/journal's entries (records, moves and writes)", n)
            yield n, raw


def _home_entries(home: Path) -> tuple[bool, bool]:
    """(has a journal, has aside/): both real, and nothing else in the folder."""
    try:
        st = os.lstat(home)
    except OSError as exc:
        raise RepairFailed(f"{home}: {exc.strerror or exc}: {_LEFT}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise RepairFailed(
            f"{home}: {kind(st.st_mode)}, not a journal folder torchwheel made: {_LEFT} (remove it by hand "
            "if no install of yours was killed)"
        )
    found = {}
    for name in sorted(os.listdir(home)):
        if name not in ("journal", "aside"):
            raise RepairFailed(f"{home} holds {name!r}, which no install puts there: {_LEFT}")
        found[name] = os.lstat(home / name).st_mode
    if "journal" in found and not stat.S_ISREG(found["journal"]):
        raise _refused(home, f"is {kind(found['journal'])}, not a journal torchwheel wrote")
    if "aside" in found and not stat.S_ISDIR(found["aside"]):
        raise RepairFailed(
            f"{home}/aside is {kind(found['aside'])}, not the folder an install sets files aside in: {_LEFT}"
        )
    return "journal" in found, "aside" in found


def _count_lines(home: Path, fd: int) -> None:
    """Its lines counted in C before one is parsed: 700,000 records are refused in a moment,
    not after each was read."""
    entries = limits.current().max_journal_entries
    lines = 0
    at = 0
    while chunk := os.pread(fd, 1 << 20, at):
        at += len(chunk)
        lines += chunk.count(b"\n")
        if lines > entries.value:
            entries.check(f"{home}/journal's entries (records, moves and writes)", lines)


def _records(home: Path) -> Iterator[tuple[int, dict[str, Any], int]]:
    """(line number, record, the byte after it) of every whole line, each of its schema."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(home / "journal", flags)
    except OSError as exc:
        raise _refused(home, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _refused(home, "is no longer a regular file")
        _count_lines(home, fd)
        end = 0
        for n, raw in _lines(home, fd):
            end += len(raw)
            where = f"{home}/journal line {n}"
            try:
                record = safejson.load(
                    raw, where, ANY, reference="journal-invalid"
                )  # bounded, no NaN, no key twice
            except InputError as exc:
                raise RepairFailed(f"{exc}: {_LEFT}") from None
            op = record.get("op") if isinstance(record, dict) else None
            if op not in _SCHEMAS:
                raise RepairFailed(f"{where}: {_HAS_OP.problem(record, '$')}: {_LEFT}")
            problem = _SCHEMAS[op].problem(record, "$")
            if problem is not None:
                raise RepairFailed(f"{where} is no {record['op']} record ({problem}): {_LEFT}")
            yield n, record, end
    except OSError as exc:
        raise _refused(home, f"cannot be read ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def check_journal(home: Path, root: Path, allowed: tuple[Path, ...]) -> ReplayPlan:
    """The journal in ``home`` as a ``ReplayPlan``, or ``RepairFailed`` with nothing touched."""
    has_journal, has_aside = _home_entries(home)
    plan = ReplayPlan(home, root, aside_exists=has_aside)
    records = _records(home) if has_journal else iter(())
    first = next(records, None)
    if first is None:
        if has_aside:
            raise _refused(home, "does not begin as a journal does")
        plan.empty = True
        return plan
    _begin(plan, first[1])
    plan.journal_end = first[2]
    paths = _Paths(home, root, allowed)
    paths.project = plan.project
    _Reader(plan, paths).read(records)
    return plan


def _begin(plan: ReplayPlan, record: dict[str, Any]) -> None:
    if record["op"] != "begin":
        raise _refused(plan.home, "does not begin as a journal does")
    if record["format"] != FORMAT:
        raise _refused(
            plan.home,
            f"is of another torchwheel (format {record['format']}; this one replays format {FORMAT}): "
            "replay it with the torchwheel that wrote it",
        )
    plan.wheel, plan.replaces = record["wheel"][:300], record["replaces"]
    plan.project = canonicalize_name(record["project"][:300])
    keep = {Path(os.path.normpath(plan.root / k)) for k in record["keep"] if k and "\x00" not in k}
    plan.keep = frozenset(keep | {plan.root})


class _Reader:
    """The records after ``begin`` in the order a run writes them: every ``aside`` before the
    first ``write``; each ``write`` followed by its ``wrote`` (only the last may lack it: the
    write a kill cut short); ``commit`` once, after them; ``undone`` once, last, never with a
    commit."""

    def __init__(self, plan: ReplayPlan, paths: _Paths) -> None:
        self.plan, self.paths = plan, paths
        self.open_write: Write | None = None
        self.entries = 0
        self.held: set[str] = set()
        self.originals: set[str] = set()
        self.written: set[str] = set()

    def _wrong(self, n: int, why: str) -> RepairFailed:
        return _refused(self.plan.home, f"line {n} {why}")

    def read(self, records: Iterator[tuple[int, dict[str, Any], int]]) -> None:
        """Each record's paths are checked first (a path outside or through a link is what the
        refusal names, whatever the order), then its place among the others."""
        acts = {"aside": self._aside, "write": self._write, "wrote": self._wrote, "commit": self._commit}
        acts |= {"undone": self._undone, "begin": lambda n, record: self._order(n, "begin")}
        for n, record, end in records:
            acts[record["op"]](n, record)
            self.plan.journal_end = end
        if self.open_write is not None:
            self.plan.writes.append(self.open_write)

    def _order(self, n: int, op: str) -> None:
        plan = self.plan
        if plan.undone or (plan.committed and op != "commit") or op == "begin":
            raise self._wrong(n, f"is a {op} record where none can follow")
        if op not in ("wrote", "undone") and self.open_write is not None:
            raise self._wrong(n, f"follows a write without its wrote record ({op})")

    def _count(self, n: int) -> None:
        self.entries += n
        limits.current().max_journal_entries.check(f"{self.plan.home}/journal's entries", self.entries)

    def _aside(self, n: int, record: dict[str, Any]) -> None:
        moves = record["moves"]
        if any(len(m) != 2 or not m[1].isdigit() for m in moves):
            raise self._wrong(n, "holds a move it cannot have made")
        originals = [self.paths.path(m[0], last_may_be_link=False) for m in moves]
        self._order(n, "aside")
        if self.plan.writes or self.open_write is not None:
            raise self._wrong(n, "moves files aside after the install began writing")
        self._count(len(moves))
        for original, (_, held) in zip(originals, moves, strict=True):
            if held in self.held or original in self.originals:
                raise self._wrong(n, "moves one file aside twice")
            self.held.add(held)
            self.originals.add(original)
            self.plan.moves.append(Move(original, held))

    def _write(self, n: int, record: dict[str, Any]) -> None:
        path = self.paths.path(record["path"], last_may_be_link=False)
        dirs = tuple(self.paths.path(d, last_may_be_link=False) for d in record["dirs"])
        self._order(n, "write")
        self._count(1)
        if path in self.written:
            raise self._wrong(n, "writes one file twice")
        if any(not _under(path, d) for d in dirs):
            raise self._wrong(n, "names a folder it would create that does not hold its file")
        self.written.add(path)
        self.open_write = Write(path, os.path.join(os.path.dirname(path), record["temp"]), dirs)

    def _wrote(self, n: int, record: dict[str, Any]) -> None:
        path = self.paths.path(record["path"], last_may_be_link=False)
        self._order(n, "wrote")
        w = self.open_write
        if w is None or path != w.path:
            raise self._wrong(n, "says a file was written that no write record names")
        wrote = Identity(record["sha256"], record["size"], record["dev"], record["ino"], record["mtime_ns"])
        self.plan.writes.append(Write(w.path, w.temp, w.dirs, wrote))
        self.open_write = None

    def _commit(self, n: int, record: dict[str, Any]) -> None:
        self._order(n, "commit")
        if self.plan.committed:
            raise self._wrong(n, "commits twice")
        self.plan.committed = True

    def _undone(self, n: int, record: dict[str, Any]) -> None:
        self._order(n, "undone")
        self.plan.undone = True
