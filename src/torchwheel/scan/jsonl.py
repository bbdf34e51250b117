"""The scan's output: JSON Lines, appended, one line per wheel, and what a resume trusts.

A scan of 10,000 wheels runs for hours and may be killed at any byte. So the file is never
rewritten: each line is one ``write`` of its whole text, newline included, to a file opened
for appending, and a line is trusted only once its newline is there and it parses as a scan
line. A kill mid-write leaves at most a tail without its newline; the next run cuts it off
before it appends, so no half line is ever followed by a whole one.

Resume keys (``keys_of``): the sha256 of the bytes read and the one the index gave, a local
file's path with its size and mtime (skipped without reading a byte), a hosted file's URL
when its page gives no digest. A line whose error is the network's (``TRANSIENT``) is not
trusted: the wheel is asked again, and the report counts the newest line of each source.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwheel.errors import InputError
from torchwheel.install.scanline import SCHEMA_VERSION, TRANSIENT, WheelSource, as_source


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
    source = line.get("source")
    if not isinstance(source, dict):
        return set()
    error = line.get("error")
    if isinstance(error, dict) and error.get("code") == "unlisted":
        return {f"unlisted:{identity(line)}"}
    try:
        named = as_source(source)
    except InputError:
        return set()
    keys = keys_of(named) | ({f"url:{named.location}"} if named.hosted else set())
    if isinstance(line.get("sha256"), str):
        keys.add(f"sha256:{line['sha256']}")
    return keys


def is_line(value: object) -> bool:
    return (
        isinstance(value, dict)
        and value.get("schema_version") == SCHEMA_VERSION
        and isinstance(value.get("source"), dict)
    )


def identity(line: dict[str, Any]) -> str:
    """The source a line is about: the newest line of each counts in a report."""
    source = line.get("source") or {}
    return str(source.get("url") or source.get("path") or "")


@dataclass
class Done:
    """What a file already holds: the keys of trusted lines, how many lines, and the byte
    where its last whole line ends."""

    keys: set[str] = field(default_factory=set)
    lines: int = 0
    end: int = 0


def whole_lines(path: Path) -> Iterator[dict[str, Any] | None]:
    """Every whole line of ``path`` (a tail without its newline is not one): the scan line, or
    None for a line that does not parse as one."""
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                return
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):  # RecursionError: a line nested past the C decoder's depth
                yield None
                continue
            yield value if is_line(value) else None


def lines(path: Path) -> Iterator[dict[str, Any]]:
    """The whole scan lines of ``path``."""
    return (line for line in whole_lines(path) if line is not None)


def done(path: Path) -> Done:
    found = Done()
    if not path.exists():
        return found
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                found.end += len(raw)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc
    for line in lines(path):
        found.lines += 1
        error = line.get("error")
        if isinstance(error, dict) and error.get("code") in TRANSIENT:
            continue
        found.keys |= _line_keys(line)
    return found


class Appender:
    """The output file, opened for appending after its last whole line."""

    def __init__(self, path: Path, end: int) -> None:
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.truncate(self._fd, end)  # a half line a kill left: cut before anything follows it
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from exc
        self.path = path

    def write(self, line: dict[str, Any]) -> None:
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:  # one write on a regular file; a short one (a full disk) is finished or raises
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)
