"""One wheel as ``torchwheel scan`` records it: the source named exactly, its bytes read, and
the line that ``api.scan_one`` returns (``docs/scan.md``).

The line is the unit of work: the scan's process pool and a Dask cluster map the same
function over sources, so everything a line needs travels in its source (a path or a URL,
the sha256 and size the index gave) and nothing in a worker's memory is shared. A source
that cannot be fetched or read gives a line whose ``error`` says why, with a ``code`` the
report counts and the resume tells apart (``TRANSIENT``: the network, worth asking again),
never an exception that would stop a scan of 10,000 wheels at the first broken one.

How the bytes were read is a step of its own (``Reader``): today every wheel is read whole
(a local file where it lies, a hosted one downloaded and checked against its index's
digest), and the line says so (``"read": "whole"``) beside which hashes were verified. The
partial read of HTTP ranges (``scan.partial``, ``scan --partial``) builds its line from
``empty_line`` too, and says ``"partial"`` with unverified hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from torchwheel.errors import InputError, Reference
from torchwheel.frozen import frozen
from torchwheel.net import fetch
from torchwheel.safeopen import open_regular

SCHEMA_VERSION = 1
WHOLE = "whole"
# error codes whose cause is the network, not the wheel: a resume asks again
TRANSIENT = frozenset(("network", "http", "budget"))


@frozen
class WheelSource:
    """A wheel as a scan names it. ``location``: a path or an http(s) URL (without
    credentials); ``sha256``/``size``: what the index says, where it says it;
    ``mtime_ns``: a local file's, so a resume knows it unchanged without reading it;
    ``origin``: the folder, page or list it was found through; ``name``: the file name where
    the page states one the URL does not end with (PEP 691 ``filename``)."""

    location: str
    sha256: str | None = None
    size: int | None = None
    mtime_ns: int | None = None
    origin: str | None = None
    name: str | None = None

    @property
    def hosted(self) -> bool:
        return fetch.is_remote(self.location)

    @property
    def filename(self) -> str:
        if self.name:
            return self.name
        if self.hosted:
            return unquote(urlsplit(self.location).path.rstrip("/").rsplit("/", 1)[-1])
        return Path(self.location).name

    def to_json(self) -> dict[str, Any]:
        return {
            "url" if self.hosted else "path": self.location,
            "filename": self.filename,
            "sha256": self.sha256,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "origin": self.origin,
        }


def as_source(value: object) -> WheelSource:
    """What ``scan_one`` accepts: a ``WheelSource``, a path or URL, or the ``source`` object
    of a line (``{"url"|"path": ..., "sha256": ..., "size": ...}``)."""
    if isinstance(value, WheelSource):
        return value
    if isinstance(value, str | os.PathLike):
        return WheelSource(os.fspath(value))
    if isinstance(value, Mapping):
        where = value.get("url") or value.get("path")
        if isinstance(where, str) and where:
            size, mtime = value.get("size"), value.get("mtime_ns")
            return WheelSource(
                where,
                value.get("sha256") or None,
                size if isinstance(size, int) else None,
                mtime if isinstance(mtime, int) else None,
                value.get("origin") or None,
                value.get("filename") or None,
            )
    raise InputError(
        f"a scan source is a path, a URL or a mapping with url or path, not {value!r:.80}",
        reference="bad-option-value",
    )


@frozen
class Read:
    """A wheel's bytes as a reader got them: ``path`` holds them; ``how`` is ``whole``;
    ``fetched`` bytes came over the network; ``file_verified``: the bytes were checked
    against the index's sha256 (None: no digest was given)."""

    path: Path
    how: str
    fetched: int
    sha256: str
    file_verified: bool | None


Reader = Callable[[WheelSource, Path], Read]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    fd = open_regular(path)  # a FIFO or a device named as a wheel is refused, never read
    with open(fd, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_whole(source: WheelSource, scratch: Path) -> Read:
    """The whole wheel: a local file where it lies, a hosted one downloaded into ``scratch``
    (streamed, bounded by ``max-download-bytes``, checked against the index's digest)."""
    given = {"sha256": source.sha256} if source.sha256 else {}
    if not source.hosted:
        path = Path(source.location)
        try:
            digest = file_sha256(path)
        except FileNotFoundError as exc:  # listed, then gone: what a 404 is to a hosted wheel
            raise Gone(f"{path}: no such file (gone since it was listed)") from exc
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}", reference="file-system-error") from exc
        if source.sha256 and digest != source.sha256:
            raise fetch.DigestMismatch(f"{path}: sha256 differs from the one its index gives")
        return Read(path, WHOLE, 0, digest, True if given else None)
    dest = scratch / (source.filename or "wheel.whl")
    fetch.Session().download(source.location, dest, given, source.size)
    digest = source.sha256 or file_sha256(dest)
    return Read(dest, WHOLE, dest.stat().st_size, digest, True if given else None)


class Gone(InputError):
    """A local wheel that a folder, page or list named is not there when it is read."""

    fixed_reference = "not-found"


# a line's error code (docs/scan.md), by the error's reference (``errors.REFERENCES``): the
# codes a scan file holds stay as they were documented, coarser than the references
SCAN_CODES: dict[Reference, str] = {
    "not-found": "not-found",
    "http-error": "http",
    "network-budget-spent": "budget",
    "network-error": "network",
    "digest-mismatch": "digest",
    "limit-exceeded": "limit",
    "bad-wheel-name": "name",
}


def error_code(exc: InputError) -> str:
    """The stable name of what stopped a wheel, for the report and the resume: from the
    error's reference, never its text."""
    return SCAN_CODES.get(exc.reference, "unreadable")


def error_json(exc: InputError) -> dict[str, Any]:
    return {"code": error_code(exc), "message": str(exc)}


class _Checked(Protocol):
    """``api.CheckResult``, as far as a line needs it."""

    @property
    def facts(self) -> Any: ...

    def to_json(self) -> dict[str, Any]: ...


class _Documented(Protocol):
    def to_json(self) -> dict[str, Any]: ...


def _renamed(doc: dict[str, Any], old: Path, new: str) -> dict[str, Any]:
    """``doc`` with a downloaded file's temporary path replaced by its URL, in every path
    and message: a line must say where the wheel lives, not where it was read."""
    was, now = json.dumps(str(old))[1:-1], json.dumps(new)[1:-1]
    text = json.dumps(doc)
    return doc if was not in text else dict(json.loads(text.replace(was, now)))


def empty_line(source: WheelSource | None = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every key a line has, in its order; what was not reached is None."""
    line: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "source": None,
        "read": None,
        "fetched_bytes": 0,
    }
    line |= {"sha256": None, "hashes_verified": {"file": None, "record": False}}
    line |= {"show": None, "check": None, "need": None, "error": error}
    if source is not None:
        line["source"] = source.to_json()
    return line


def scan_line(
    value: object,
    check: Callable[..., _Checked],
    need: Callable[..., _Documented],
    symbols: object = None,
    reader: Reader = read_whole,
) -> dict[str, Any]:
    """The JSON line of one source: ``show`` and ``check`` (the documents of those commands,
    from ``api.check``) and ``need`` (``api.need``'s, or its ``error`` for a wheel it
    refuses), or the line's ``error`` when the wheel could not be fetched or read. ``check``
    and ``need`` are the API's own, passed in: this layer lies below it."""
    line = empty_line()
    try:
        source = as_source(value)
        line["source"] = source.to_json()
        with tempfile.TemporaryDirectory(prefix="torchwheel-scan-") as scratch:
            got = reader(source, Path(scratch))
            line |= {"read": got.how, "fetched_bytes": got.fetched, "sha256": got.sha256}
            line["hashes_verified"]["file"] = got.file_verified
            result = check(got.path, symbols=symbols)
            line |= {"show": result.facts.to_json(), "check": result.to_json()}
            line["hashes_verified"]["record"] = got.how == WHOLE  # check hashed every member
            try:
                line["need"] = need(got.path, symbols=symbols, checked=result).to_json()
            except InputError as exc:
                line["need"] = {"schema_version": SCHEMA_VERSION, "error": error_json(exc)}
            if source.hosted:
                line = _renamed(line, got.path, fetch.shown(source.location))
    except InputError as exc:
        line["error"] = error_json(exc)
    return line
