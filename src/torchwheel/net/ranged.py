"""A hosted wheel read through HTTP ``Range`` requests: the zip's end and central directory,
the metadata files, and of each compiled member only the compressed prefix its reader needs.

Three pieces, each over ``fetch.Session`` (every request keeps to the command's budget, the
per-host caps and the retries of ``fairness``):

* ``RemoteFile``: the wheel's bytes by offset. The first request asks for its last
  ``_TAIL`` bytes (``bytes=-N``): the end record and, for most wheels, the whole central
  directory; its ``Content-Range`` gives the file's size. A server that ignores ``Range``
  answers 200: ``NoRanges``, and the caller downloads the wheel whole. Small reads (the
  directory, local headers, metadata) are served from the spans fetched so far, each miss
  fetching at least ``_READAHEAD`` bytes, twice as much as the one before while misses follow
  each other closely (a big central directory; each request counts against ``--max-rate``).
  Spans never overlap and a member's stream takes what they hold: no byte is fetched twice,
  so neither a partial read nor ``write_whole`` (the rest of a wheel read whole) costs more
  than a download.
* ``RangedWheel``: ``wheel.archive.WheelArchive`` reading through a ``RemoteFile``, so the
  index, the name, ``WHEEL``, ``METADATA`` and ``RECORD`` are read and refused exactly as for
  a downloaded wheel, and each member's local header when it is read (a placeholder file of
  the wheel's size, sparse on disk, stands in for the descriptor the archive asks the size of).
* ``Inflating``: one member's compressed bytes fetched in growing steps and inflated as they
  come, the decompressor's state kept, so a reader that asks for more extends the prefix
  without fetching or inflating a byte twice. Deflate is a stream: reaching offset X of a
  member costs its compressed bytes up to X, never less.
"""

from __future__ import annotations

import bisect
import hashlib
import http.client
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from torchwheel.errors import InputError, quoted
from torchwheel.limits import current
from torchwheel.net import fetch
from torchwheel.safeopen import open_regular
from torchwheel.wheel import inflate
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.zipdir import Member

_TAIL = 1 << 18  # the first request: end record and (most) central directories
_READAHEAD = 1 << 14  # a small read that misses fetches at least this much, doubled while
_MAX_AHEAD = 4 << 20  # misses follow each other closely (local headers side by side), to this
_NEAR = 1 << 20  # "closely": within this of the previous miss's end
_FIRST_STEP = 1 << 16  # a member's compressed bytes: first request, doubled each time ...
_MAX_STEP = 16 << 20  # ... up to this (what is fetched past the bytes needed stays below both)
_OUT_CHUNK = 1 << 18
_HOLD_WHOLE = 64 << 20  # member bytes held in memory (to be read again), at most this much
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


class _Hashing:
    """A file written from its first byte to its last, hashed as it is written: the spans
    never overlap, so ``write_whole`` writes each byte once and in the file's order."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh, self.at, self.in_order = fh, 0, True
        self._hash = hashlib.sha256()

    def seek(self, pos: int) -> None:
        """Where the next bytes go: where the last ended, unless the server answered another
        range than asked (``write_whole`` refuses that answer before anyone asks the hash)."""
        self.in_order = self.in_order and pos == self.at
        self.fh.seek(pos)
        self.at = pos

    def write(self, data: bytes) -> None:
        self.fh.write(data)
        self._hash.update(data)
        self.at += len(data)

    def hexdigest(self) -> str:
        if not self.in_order:
            raise RuntimeError("write_whole: the bytes were not written in the file's order")
        return self._hash.hexdigest()


class NoRanges(InputError):
    """The server sent the whole file where a range was asked for: read the wheel whole."""

    fixed_reference = "index-invalid"


class FileChanged(fetch.DigestMismatch):
    """The file's size, ``ETag`` or ``Last-Modified`` differs between two range requests: the
    bytes read so far and the next ones may be of two files, and no answer is read from both."""


_VALIDATORS = ("ETag", "Last-Modified")


class RemoteFile:
    """A hosted file's bytes by offset, and what reading them cost (``fetched``, ``requests``)."""

    def __init__(self, session: fetch.Session, url: str, tail: int | None = None) -> None:
        """``tail``: the first request's bytes (``_TAIL`` when None; a caller that knows the
        file is big asks for more, to hold its directory and metadata in that one request)."""
        self.session, self.url = session, url
        self.fetched = self.requests = self.held_bytes = 0
        self.starts: list[int] = []  # spans held for small reads, sorted by start
        self.spans: list[bytes] = []
        self._ahead, self._missed_to = _READAHEAD, -1  # the read-ahead, and the last miss's end
        self.size = -1  # set by the first answer; every later one must give the same
        self.validators: dict[str, str] = {}  # the first answer's ETag and Last-Modified
        self.changed: FileChanged | None = None  # raised once: what a caller reports, however wrapped
        first, data, _ = self._get(f"bytes=-{tail or _TAIL}")
        self._keep(first, data)

    def _get(self, span: str, sink: _Hashing | None = None) -> tuple[int, bytes, int]:
        """(first offset, bytes, file size) of one range request; with ``sink`` the bytes are
        written to it at their offset as they come, and none are returned."""
        self.requests += 1
        with self.session.ranged(self.url, span) as (response, chunks):
            if response.status != 206:
                raise NoRanges(f"{fetch.shown(self.url)}: the server ignores Range (HTTP {response.status})")
            got = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
            if got is None:
                raise InputError(
                    f"{fetch.shown(self.url)}: a 206 answer without a Content-Range it can read",
                    reference="index-invalid",
                )
            first, last, size = (int(g) for g in got.groups())
            self._same_file(size, response)
            if sink is None:
                data = b"".join(chunks)
                length = len(data)
            else:
                data, length = b"", 0
                sink.seek(first)
                for chunk in chunks:
                    sink.write(chunk)
                    length += len(chunk)
        self.fetched += length
        if length != last - first + 1:
            raise InputError(
                f"{fetch.shown(self.url)}: the range {first}-{last} came with {length:,} bytes",
                reference="index-invalid",
            )
        return first, data, size

    def _same_file(self, size: int, response: http.client.HTTPResponse) -> None:
        """The file the first answer described, by its size and by each validator both
        answers carry (a validator one of them lacks tells nothing); ``FileChanged`` if not.
        A server that gives neither validator and keeps the size is trusted, as the whole
        read's single GET trusts it."""
        found = {h: v for h in _VALIDATORS if (v := response.headers.get(h)) is not None}
        if self.size < 0:
            self.size, self.validators = size, found
            return
        if size != self.size:
            why = f"its size, {self.size:,} then {size:,} bytes"
        else:
            differ = [
                h
                for h in _VALIDATORS
                if h in found and h in self.validators and found[h] != self.validators[h]
            ]
            if not differ:
                return
            why = f"its {differ[0]}, {quoted(self.validators[differ[0]], 60)} then {quoted(found[differ[0]], 60)}"
        self.changed = FileChanged(
            f"{fetch.shown(self.url)}: the file changed between two range requests ({why}): "
            "no answer is read from two files; scan it again"
        )
        raise self.changed

    @property
    def holds_all(self) -> bool:
        """Whether the spans held are the whole file (the first request of a small one)."""
        return self.starts == [0] and len(self.spans[0]) == self.size

    def write_whole(self, dest: Path) -> str:
        """The whole file at ``dest``: the spans held, and each stretch between them fetched
        in one request (no byte fetched twice: a wheel read whole this way costs its size).
        Its sha256, hashed as the bytes are written, in the file's order (vLLM's 336 MB read
        again for it took 0.2 s of the line's CPU)."""
        current().max_download_bytes.check(f"{fetch.shown(self.url)}: the wheel's size", self.size)
        with dest.open("wb") as fh:
            sink = _Hashing(fh)
            at = 0
            for start, data in [*zip(self.starts, self.spans, strict=True), (self.size, b"")]:
                if start > at:
                    first, _, _ = self._get(f"bytes={at}-{start - 1}", sink)
                    if first != at:
                        raise InputError(
                            f"{fetch.shown(self.url)}: the server answered bytes {at}- with others",
                            reference="index-invalid",
                        )
                sink.seek(start)
                sink.write(data)
                at = max(at, start + len(data))
        return sink.hexdigest()

    def fetch(self, lo: int, hi: int) -> bytes:
        """Bytes ``[lo, hi)``: what the spans hold from them, the rest fetched and not kept
        (a member's compressed stream): no byte held is fetched again."""
        pieces, pos = [], lo
        while pos < hi:
            end = min(hi, self._held_to(pos))
            if end > pos:  # held
                pieces.append(self._held(pos, end - pos) or b"")
            else:
                after = bisect.bisect_right(self.starts, pos)
                end = min(hi, self.starts[after]) if after < len(self.starts) else hi
                pieces.append(self._range(pos, end))
            pos = end
        return b"".join(pieces)

    def _range(self, lo: int, hi: int) -> bytes:
        first, data, _ = self._get(f"bytes={lo}-{hi - 1}")
        if first != lo or len(data) != hi - lo:
            raise InputError(
                f"{fetch.shown(self.url)}: the server answered bytes {lo}-{hi - 1} with others",
                reference="index-invalid",
            )
        return data

    def _keep(self, start: int, data: bytes) -> None:
        """Hold a span, joined to the ones it touches: a read across the seam is one slice."""
        self.held_bytes += len(data)
        i = bisect.bisect_left(self.starts, start)
        if i < len(self.starts) and start + len(data) == self.starts[i]:
            data += self.spans.pop(i)
            self.starts.pop(i)
        if i > 0 and self.starts[i - 1] + len(self.spans[i - 1]) == start:
            self.spans[i - 1] += data
            return
        self.starts.insert(i, start)
        self.spans.insert(i, data)

    def _held(self, offset: int, size: int) -> bytes | None:
        i = bisect.bisect_right(self.starts, offset)
        for j in range(i - 1, max(-1, i - 8), -1):  # spans overlap little: look a few back
            start, data = self.starts[j], self.spans[j]
            if start + len(data) >= offset + size:
                return data[offset - start : offset - start + size]
        return None

    def read_at(self, offset: int, size: int) -> bytes:
        """``os.pread`` over the remote file: short at its end, served from spans held; what
        is not held is fetched, each stretch between spans once (spans never overlap, so no
        byte is fetched twice), with the read-ahead past the read."""
        size = max(0, min(size, self.size - offset))
        held = self._held(offset, size)
        if held is not None:
            return held
        pos = self._held_to(offset)
        near = abs(pos - self._missed_to) < _NEAR
        self._ahead = min(2 * self._ahead, _MAX_AHEAD) if near else _READAHEAD
        goal = min(self.size, max(offset + size, pos + self._ahead))
        self._missed_to = goal
        return self.hold(offset, goal)[:size]

    def hold(self, lo: int, hi: int) -> bytes:
        """Bytes ``[lo, hi)``, held from now on: each stretch not held yet fetched once."""
        pos = self._held_to(lo)
        while pos < hi:
            after = bisect.bisect_right(self.starts, pos)
            end = min(hi, self.starts[after]) if after < len(self.starts) else hi
            self._keep(pos, self._range(pos, end))
            pos = self._held_to(end)
        got = self._held(lo, hi - lo)
        assert got is not None  # every stretch of [lo, hi) is held now, in one span
        return got

    def _held_to(self, pos: int) -> int:
        """The first byte at or after ``pos`` that no span holds."""
        i = bisect.bisect_right(self.starts, pos) - 1
        if i >= 0 and pos < self.starts[i] + len(self.spans[i]):
            return self.starts[i] + len(self.spans[i])  # spans that touch are joined: one step
        return pos


class RangedWheel(WheelArchive):
    """A ``WheelArchive`` whose bytes are a ``RemoteFile``'s: every check of a wheel file,
    on the bytes it reads, without the bytes it does not. A member's local header is checked
    when the member is first read (``lazy_local_headers``): checking all of them up front
    reads every stretch of the file where members lie side by side (vLLM's 5,800 small
    files: 24.5 MB of a 336 MB wheel; most of a pure-Python wheel)."""

    lazy_local_headers = True

    def __init__(self, remote: RemoteFile, filename: str, scratch: Path) -> None:
        self.remote = remote  # before the archive reads its index through ``_read_at``
        placeholder = scratch / filename
        with placeholder.open("wb") as fh:
            fh.truncate(remote.size)  # sparse: only its size is asked (``os.fstat``)
        fd = open_regular(placeholder)
        super().__init__(placeholder, filename, lenient_name=True, fd=fd)

    def _read_at(self, offset: int, size: int) -> bytes:
        return self.remote.read_at(offset, size)

    def inflating(self, name: str) -> Inflating:
        return Inflating(self.remote, self.member(name), self.path.name)


class Inflating:
    """One member inflating from its compressed prefix: ``advance(stop)`` yields (offset,
    chunk) until ``stop`` inflated bytes came out (or the member ended), and a later call
    goes on from there; ``last`` keeps the chunk handed out last, whose end lies past
    ``stop``. At the member's end its size and CRC are checked."""

    def __init__(self, remote: RemoteFile, info: Member, wheel: str) -> None:
        self.remote, self.info, self.wheel = remote, info, wheel
        self.decompressor = inflate.decompressor(info, min(_OUT_CHUNK, info.file_size + 1))
        self.at, self.end = info.data_offset, info.data_offset + info.compress_size
        self.step = _FIRST_STEP
        self.produced = self.crc = 0
        self.outs: Iterator[bytes] = iter(())  # the step's output, a chunk at a time (not all of it)
        self.last: tuple[int, bytes] = (0, b"")  # the chunk handed out last: what lies just behind
        self.fed_all = self.ended = False

    def _next(self) -> bytes | None:
        """The next inflated chunk, None once the member ended (its size and CRC checked)."""
        name, size = self.info.filename, self.info.file_size
        try:
            while (out := next(self.outs, None)) is None:
                if self.fed_all:
                    if self.produced != size or self.crc != self.info.CRC:
                        raise InputError(
                            f"{self.wheel}: member {name} is corrupt (size or CRC mismatch)",
                            reference="archive-damaged",
                        )
                    self.ended = True
                    return None
                if self.at < self.end:
                    raw = self._fetch(self.at, min(self.end, self.at + self.step))
                    self.at += len(raw)
                    self.step = min(2 * self.step, _MAX_STEP)
                    self.outs = self.decompressor.push(raw)
                else:
                    self.fed_all = True
                    self.outs = iter([self.decompressor.finish()])
        except inflate.DECOMPRESS_ERRORS as exc:
            raise InputError(
                f"{self.wheel}: member {name} is corrupt ({exc})", reference="archive-damaged"
            ) from exc
        self.crc = inflate.inflate_lib.crc32(out, self.crc)
        if self.produced + len(out) > size:
            raise InputError(
                f"{self.wheel}: member {name} inflates beyond its declared size: refusing",
                reference="archive-damaged",
            )
        return out

    def _fetch(self, lo: int, hi: int) -> bytes:
        """A step of the member's compressed bytes, held while the wheel's spans stay under
        ``_HOLD_WHOLE`` (a member read again from its start, ``layout``, fetches nothing
        twice), else fetched and let go (a 300 MB CUDA library is not held in memory)."""
        if self.remote.held_bytes + (hi - lo) <= _HOLD_WHOLE:
            return self.remote.hold(lo, hi)
        return self.remote.fetch(lo, hi)

    def advance(self, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
        limit = self.info.file_size if stop is None else min(stop, self.info.file_size)
        while self.produced < limit or (stop is None and not self.ended):
            chunk = self._next()
            if chunk is None:
                return
            at = self.produced
            self.produced += len(chunk)
            if chunk:
                self.last = (at, chunk)
                yield at, chunk


def stream_of(wheel: RangedWheel, name: str) -> Callable[[int | None], Iterator[bytes]]:
    """``memberscan``'s stream of a member: each call inflates afresh from its start, up to
    ``stop`` (its fallback passes), for a reader that needs every byte. A member of at most
    ``_HOLD_WHOLE`` compressed bytes is fetched once and held, so a second pass fetches
    nothing again."""
    info = wheel.member(name)
    if wheel.remote.held_bytes + info.compress_size <= _HOLD_WHOLE:
        wheel.remote.hold(info.data_offset, info.data_offset + info.compress_size)
    return lambda stop: (chunk for _, chunk in wheel.inflating(name).advance(stop))
