"""Counters around the real ``os.open``, ``io.open`` and ``hashlib`` constructors: how often
one file is opened and how many bytes all digests are fed while a candidate is read. The
file and the reading are real; only the counting is added."""

from __future__ import annotations

import builtins
import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


class _Digest:
    """A real hashlib object whose ``update`` calls are counted."""

    def __init__(self, inner: Any, counter: Counter) -> None:
        self._inner, self._counter = inner, counter

    def update(self, data: bytes) -> None:
        self._counter.hashed += len(data)
        self._inner.update(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class Counter:
    path: Path
    opens: int = 0
    hashed: int = 0

    def _is(self, p: object) -> bool:
        return isinstance(p, (str, os.PathLike)) and os.path.realpath(p) == os.path.realpath(self.path)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> Counter:
        real_os_open, real_io_open = os.open, io.open
        real_new, real_sha256 = hashlib.new, hashlib.sha256

        def os_open(p: Any, *args: Any, **kwargs: Any) -> int:
            self.opens += self._is(p)
            return real_os_open(p, *args, **kwargs)

        def io_open(p: Any, *args: Any, **kwargs: Any) -> Any:
            self.opens += self._is(p)
            return real_io_open(p, *args, **kwargs)

        def new(name: str, data: bytes = b"", **kwargs: Any) -> _Digest:
            digest = _Digest(real_new(name, **kwargs), self)
            digest.update(data)
            return digest

        def sha256(data: bytes = b"", **kwargs: Any) -> _Digest:
            digest = _Digest(real_sha256(**kwargs), self)
            digest.update(data)
            return digest

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(io, "open", io_open)
        monkeypatch.setattr(builtins, "open", io_open)
        monkeypatch.setattr(hashlib, "new", new)
        monkeypatch.setattr(hashlib, "sha256", sha256)
        return self
