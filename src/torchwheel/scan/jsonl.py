"""The scan's output: JSON Lines, appended, one line per wheel, and what a resume trusts.

A scan of 10,000 wheels runs for hours and may be killed at any byte. So the file is never
rewritten: each line is one ``write`` of its whole text, newline included, to a file opened
for appending, and a line is trusted only once its newline is there and it is a scan line
(``LINE``: every field of its documented shape, read through ``safejson`` like every other
document from outside). A kill mid-write leaves at most a tail without its newline that
begins as every line ``scan`` writes begins (``OPENING``); the next run cuts that tail off
before it appends, so no half line is ever followed by a whole one.

``-o FILE`` names a file the scan owns, so ``check_output`` takes it only when it is one: a
missing or empty file starts a scan; a regular file whose every whole line is a scan line
and whose tail (if any) is provably the start of one is resumed; anything else (another
file, a FIFO, a device, a ``/proc`` entry, a symbolic link) is refused with nothing changed.
A link is refused rather than followed: the scan would append to a file elsewhere that the
command line never named. Lines are read in bounded memory: one longer than
``max-scan-line-bytes`` is skipped in steps, never held.

Resume keys (``keys_of``): the sha256 of the bytes read and the one the index gave, a local
file's path with its size and mtime (skipped without reading a byte), a hosted file's URL
when its page gives no digest. A line whose error is the network's (``TRANSIENT``) is not
trusted: the wheel is asked again, and the report counts the newest line of each source.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from torchwheel import limits, safejson
from torchwheel.errors import InputError
from torchwheel.safejson import ANY, Bool, Either, Int, List, Null, Object, Str
from torchwheel.safeopen import kind
from torchwheel.scan.scanline import SCHEMA_VERSION, TRANSIENT, WheelSource, as_source

# how every line ``Appender`` writes begins (``scanline.empty_line``'s first keys, compact)
OPENING = b'{"schema_version":%d,"source":' % SCHEMA_VERSION
_SKIP_STEP = 1 << 16

_HEX64 = "[0-9a-fA-F]{64}"
_OPT_STR = Either((Null(), Str()))
_SOURCE_FIELDS = {
    "filename": _OPT_STR,
    "sha256": Either((Null(), Str(_HEX64))),
    "size": Either((Null(), Int(minimum=0))),
    "mtime_ns": Either((Null(), Int())),
    "origin": _OPT_STR,
}
_NEED = Object({"kind": ANY, "floor": ANY, "torch_build": Either((Str(), List(Str()), Null()))}, other=ANY)
_OPT_NEED = Either((Null(), _NEED))
# A scan line (docs/scan.md): every key ``scanline.empty_line`` writes, each of its shape; the
# documents inside (show, check, need) as far as the report reads them.
LINE = Object(
    {
        "schema_version": Int(SCHEMA_VERSION, SCHEMA_VERSION),
        "source": Either(
            (
                Object({"path": Str(), **_SOURCE_FIELDS}, required=("path",)),
                Object({"url": Str(), **_SOURCE_FIELDS}, required=("url",)),
            )
        ),
        "read": Either((Null(), Str(choices=("whole", "partial")))),
        "fetched_bytes": Int(minimum=0),
        "sha256": Either((Null(), Str(_HEX64))),
        "hashes_verified": Either(
            (
                Bool(),
                Object({"file": Either((Null(), Bool())), "record": Bool()}, required=("file", "record")),
            )
        ),
        "show": Either((Null(), Object({"wheels": List(Object({"need": _OPT_NEED}, other=ANY))}, other=ANY))),
        "check": Either(
            (
                Null(),
                Object({"findings": List(Object({"code": Str(), "severity": Str()}, other=ANY))}, other=ANY),
            )
        ),
        "need": Either((Null(), Object({"need": _OPT_NEED}, other=ANY))),
        "error": Either((Null(), Object({"code": Str(), "message": Str()}, required=("code", "message")))),
        # a --partial line: each axis decided or "not read" (an older line: the axes decided)
        "partial": Object(
            {
                "axes": Either((Object(other=Str()), List(Str()))),
                "wheel_bytes": Either((Null(), Int(minimum=0))),
                "requests": Either((Null(), Int(minimum=0))),
            },
            other=ANY,
        ),
    },
    required=(
        "schema_version",
        "source",
        "read",
        "fetched_bytes",
        "sha256",
        "hashes_verified",
        "show",
        "check",
        "need",
        "error",
    ),
)


def fingerprint(source: WheelSource) -> str | None:
    """A local file as it was: path, size, mtime (None when one is unknown)."""
    if source.hosted or source.size is None or source.mtime_ns is None:
        return None
    return f"path:{os.path.abspath(source.location)}:{source.size}:{source.mtime_ns}"


def keys_of(source: WheelSource) -> set[str]:
    """What names this work item for the resume, before anything is read."""
    keys = {f"sha256:{source.sha256}"} if source.sha256 else set()
    if (printed := fingerprint(source)) is not None:
        keys.add(printed)
    if source.hosted and not source.sha256:
        keys.add(f"url:{source.location}")
    return keys


def _line_keys(line: dict[str, Any]) -> set[str]:
    error = line["error"]
    if error is not None and error["code"] == "unlisted":
        return {f"unlisted:{identity(line)}"}
    named = as_source(line["source"])
    keys = keys_of(named) | ({f"url:{named.location}"} if named.hosted else set())
    if line["sha256"] is not None:
        keys.add(f"sha256:{line['sha256']}")
    return keys


def identity(line: dict[str, Any]) -> str:
    """The source a line is about: the newest line of each counts in a report."""
    source = line["source"]
    return str(source.get("url") or source.get("path"))


def problem(raw: bytes, where: str) -> tuple[dict[str, Any] | None, str]:
    """A whole line (without its newline) as a scan line, or None and why it is none."""
    try:
        return safejson.load(raw, where, LINE, reference="not-a-wheel"), ""
    except InputError as exc:
        return None, str(exc).removeprefix(f"{where}: ")


@dataclass
class RawLine:
    """A line as read: its bytes (None past ``max-scan-line-bytes``: skipped, never held), its
    length and whether its newline is there."""

    data: bytes | None
    size: int
    whole: bool


def raw_lines(fh: BinaryIO) -> Iterator[RawLine]:
    """Every line of ``fh`` in memory bounded by ``max-scan-line-bytes``; the last may lack
    its newline (a tail)."""
    limit = limits.current().max_scan_line_bytes.value
    while raw := fh.readline(limit + 1):
        if raw.endswith(b"\n"):
            yield RawLine(raw[:-1], len(raw), True)
            continue
        if len(raw) <= limit:  # the end of the file, without a newline
            yield RawLine(raw, len(raw), False)
            return
        size, whole = len(raw), False
        while step := fh.readline(_SKIP_STEP):
            size += len(step)
            if step.endswith(b"\n"):
                whole = True
                break
        yield RawLine(None, size, whole)


def _too_long(size: int) -> str:
    limit = limits.current().max_scan_line_bytes
    return f"longer than {limit.name} = {limit.value:,} bytes ({size:,}; raise it with {limit.env})"


def whole_lines(fh: BinaryIO, where: str) -> Iterator[tuple[dict[str, Any] | None, str]]:
    """Every whole line of ``fh`` (a tail without its newline is not one): the scan line, or
    None and why it is none."""
    for n, raw in enumerate(raw_lines(fh), 1):
        if not raw.whole:
            return
        if raw.data is None:
            yield None, _too_long(raw.size)
            continue
        yield problem(raw.data, f"{where} line {n}")


def _starts_a_line(tail: bytes) -> bool:
    """A tail a kill can have left: the first bytes of a line ``Appender`` wrote (JSON's
    whitespace aside, as the Dask recipe's ``json.dumps`` spaces them)."""
    head = re.sub(rb"[ \t\r]", b"", tail[: 4 * len(OPENING)])
    return head.startswith(OPENING) or OPENING.startswith(head)


@dataclass
class Done:
    """What a scan file already holds: the keys of trusted lines, how many lines, the byte
    where its last whole line ends, and what it was when checked (``None``: no file yet)."""

    keys: set[str] = field(default_factory=set)
    lines: int = 0
    end: int = 0
    checked: tuple[int, int, int] | None = None  # device, inode, size

    def add(self, line: dict[str, Any]) -> None:
        self.lines += 1
        error = line["error"]
        if error is None or error["code"] not in TRANSIENT:
            self.keys |= _line_keys(line)


def _refuse(path: Path, why: str) -> InputError:
    return InputError(
        f"{path}: {why}: not a scan file; left as it is (scan into a new file)",
        reference="not-a-wheel",
        path=path,
    )


def _read_existing(path: Path, fd: int, st: os.stat_result) -> Done:
    found = Done(checked=(st.st_dev, st.st_ino, st.st_size))
    total = 0
    with open(fd, "rb", closefd=False) as fh:
        for n, raw in enumerate(raw_lines(fh), 1):
            total += raw.size
            if raw.data is None:
                raise _refuse(path, f"line {n} is {_too_long(raw.size)}")
            if not raw.whole:
                if not _starts_a_line(raw.data):
                    raise _refuse(
                        path, f"it ends in {raw.size:,} bytes that are not the start of a scan line"
                    )
                break
            line, why = problem(raw.data, "line")
            if line is None:
                raise _refuse(path, f"line {n} is no scan line ({why})")
            found.add(line)
            found.end = total
    if total != st.st_size or os.fstatvfs(fd).f_blocks == 0:
        raise _refuse(path, "a file whose size is not what it holds (a /proc or /sys entry?)")
    return found


def check_output(path: Path) -> Done:
    """What the scan file ``path`` holds, once it is one ``scan`` may append to (module
    docstring); ``InputError`` with nothing changed otherwise. Nothing is created here."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not os.path.isdir(path.parent):  # said now, before a single request
            raise InputError(
                f"{path}: no such folder to write the scan file in", reference="not-found"
            ) from None
        return Done()
    except OSError as exc:
        raise InputError(
            f"{path}: {exc.strerror or exc} (checking the scan file)", reference="file-system-error"
        ) from exc
    if stat.S_ISLNK(st.st_mode):
        raise InputError(
            f"{path}: a symbolic link: scan appends only to the file it is given, never through a "
            "link; left as it is (give the file it points to, or a new name)",
            reference="output-refused",
        )
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"{kind(st.st_mode)}, not a regular file")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(
            f"{path}: {exc.strerror or exc} (reading the scan file)", reference="file-system-error"
        ) from exc
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise _refuse(path, "replaced while it was opened")
        return _read_existing(path, fd, now)
    except OSError as exc:
        raise InputError(
            f"{path}: {exc.strerror or exc} (reading the scan file)", reference="file-system-error"
        ) from exc
    finally:
        os.close(fd)


class Appender:
    """The scan file ``check_output`` took, opened for appending after its last whole line:
    created when it was missing, else only while it is still the file that was checked."""

    def __init__(self, path: Path, done: Done) -> None:
        self.path, self.end, self.lines = path, done.end, done.lines
        self._failed = False
        flags = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_NOFOLLOW", 0)
        if done.checked is None:
            flags |= os.O_CREAT | os.O_EXCL
        try:
            self._fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise InputError(
                f"{path}: {exc.strerror or exc} (opening the scan file to append)",
                reference="file-system-error",
            ) from exc
        st = os.fstat(self._fd)
        if done.checked is not None and (st.st_dev, st.st_ino, st.st_size) != done.checked:
            os.close(self._fd)
            raise InputError(
                f"{path}: changed since it was checked: left as it is (is another scan writing it?)",
                reference="input-changed",
            )
        try:
            if st.st_size != self.end:
                os.ftruncate(
                    self._fd, self.end
                )  # the start of a line a kill left: cut before anything follows
        except OSError as exc:
            os.close(self._fd)
            raise InputError(
                f"{path}: {exc.strerror or exc} (cutting the half line a kill left)",
                reference="file-system-error",
            ) from exc

    def write(self, line: dict[str, Any]) -> None:
        data = _bounded(line)
        view = memoryview(data)
        try:
            while view:  # one write on a regular file; a short one (a full disk) is finished or raises
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self._failed = True
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self.end)  # no half line left behind
            raise InputError(
                f"{self.path}: {exc.strerror or exc} (appending scan line {self.lines + 1:,}); "
                f"the {self.lines:,} whole lines before it are kept, and the same command resumes",
                reference="file-system-error",
            ) from exc
        self.end += len(data)
        self.lines += 1

    def close(self) -> None:
        try:
            if not self._failed:
                os.fsync(self._fd)
        except OSError as exc:
            raise InputError(
                f"{self.path}: {exc.strerror or exc} (syncing the scan file)", reference="file-system-error"
            ) from exc
        finally:
            os.close(self._fd)


def _bounded(line: dict[str, Any]) -> bytes:
    """The line's bytes; past ``max-scan-line-bytes`` its documents are left out (an ``error``
    says so), so that every line ``scan`` writes, it reads back."""
    data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    limit = limits.current().max_scan_line_bytes
    if len(data) - 1 <= limit.value:
        return data
    message = (
        f"its scan line ({len(data) - 1:,} bytes) exceeds the limit {limit.name} = {limit.value:,}: "
        f"the show, check and need documents are left out; raise it with {limit.env}"
    )
    short = line | {"show": None, "check": None, "need": None, "error": {"code": "limit", "message": message}}
    return (json.dumps(short, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
