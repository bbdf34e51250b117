"""A package's ``.py`` files as ``reach`` reads them: each read once in order, what each
calls indexed as it goes, and the text itself read again when asked, never held.

``reach`` follows loading helpers level by level: each level looks for ``name(`` of the
helpers it found in every file, so it held every ``.py`` file of the folders that hold
compiled files for the whole reading (vLLM: 2,349 files, 33 MB) and searched all of them
again per level (43 helper names on vLLM, about 0.3 s of ``memmem``). A text holds the bytes
``name(`` where, and only where, the longest run of name bytes (ASCII letters, digits,
``_``, and every byte of a multi-byte UTF-8 character) that ends right before one of its
``(`` ends with ``name``, as every byte of an identifier is such a byte. So each text's
runs are taken once (about 100,000 on vLLM, 23,000 distinct: a few MB), and a name's
holders are the texts of the runs that end with it (``_load_lib`` in ``self._load_lib(``
and in ``my_load_lib(``). The few files a level reads, and those ``import`` runs, are read
again from the wheel (inflating them again costs less than holding them all).
"""

from __future__ import annotations

import bisect
import operator
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping

# every byte of an identifier's UTF-8 spelling; a "(" stays, any other byte is a space
_NAME_BYTES = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_" + bytes(range(128, 256))
)
_RUNS = bytes(b if b in _NAME_BYTES or b == ord("(") else ord(" ") for b in range(256))
_LAST_RUN = operator.methodcaller("rsplit", b" ", 1)
_TAIL = operator.itemgetter(-1)
BATCH = 1 << 20  # the texts read before they are searched together (``holders``) and let go


def called(text: bytes) -> set[bytes]:
    """The runs of name bytes that stand right before a ``(`` in ``text`` (module
    docstring): one translation and split, not a pattern (a pattern took 0.6 s on vLLM)."""
    pieces = text.translate(_RUNS).split(b"(")
    pieces.pop()  # what follows the last "(": nothing stands before a "(" there
    runs = set(map(_TAIL, map(_LAST_RUN, pieces)))
    runs.discard(b"")
    return runs


class Texts(Mapping[str, bytes]):
    """The ``.py`` members read, in their order, by member: ``texts[m]`` reads ``m`` again.
    ``take`` reads them the first time; ``callers`` answers which spell ``name(``."""

    def __init__(self, read: Callable[[str], bytes]) -> None:
        self._read = read
        self.members: list[str] = []
        self._index: dict[str, int] = {}
        # a run -> the text (index) or texts it stands in; once all are read, the runs
        # spelled backwards and sorted (those ending with a name are a slice), and their texts
        self._calls: dict[bytes, int | array[int]] = {}
        self._ends: list[bytes] = []
        self._texts: list[int | array[int]] = []

    def take(self, sources: Iterable[tuple[str, bytes]]) -> Iterator[list[bytes]]:
        """Each of ``sources`` in batches of about ``BATCH`` bytes, in order (a batch's
        first text is ``len(self) - len(batch)``), indexed before it is given; the batch
        is all that is held of them."""
        batch: list[bytes] = []
        size = 0
        for member, data in sources:
            index = len(self.members)
            self._index[member] = index
            calls = self._calls
            for run in called(data):  # most stand in one text: an int, not an array
                found = calls.get(run)
                if found is None:
                    calls[run] = index
                elif isinstance(found, int):
                    calls[run] = array("I", (found, index))
                else:
                    found.append(index)
            self.members.append(member)
            batch.append(data)
            size += len(data)
            if size >= BATCH:
                yield batch
                batch, size = [], 0
        if batch:
            yield batch
        ends = sorted((run[::-1], found) for run, found in self._calls.items())
        self._calls = {}
        self._ends = [end for end, _ in ends]
        self._texts = [found for _, found in ends]

    def callers(self, names: Iterable[str], most: int | None = None) -> dict[str, list[str]]:
        """Each name -> the members whose text holds ``name(``, in their order: what
        ``binary.bytesearch.holders`` says of the texts (the first ``most`` of them), from
        the index. ``names`` are identifiers (a helper's, a class's)."""
        out: dict[str, list[str]] = {}
        for name in names:
            if not name.isidentifier():
                raise ValueError(f"{name!r} is no identifier: its calls are not indexed")
            end = name.encode()[::-1]
            at = bisect.bisect_left(self._ends, end)
            found: set[int] = set()
            while at < len(self._ends) and self._ends[at].startswith(end):
                held = self._texts[at]
                found.update((held,) if isinstance(held, int) else held)
                at += 1
            out[name] = [self.members[i] for i in sorted(found)[:most]]
        return out

    def __getitem__(self, member: str) -> bytes:
        if member not in self._index:
            raise KeyError(member)
        return self._read(member)

    def __iter__(self) -> Iterator[str]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, member: object) -> bool:
        return member in self._index
