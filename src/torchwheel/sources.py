"""Where wheel-shaped input comes from: a wheel file, an unpacked wheel, an installed
distribution. One interface, so the same facts and rules serve all three (the way
pypa/installer separates sources from destinations).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from torchwheel.binary import BinaryError, read_path
from torchwheel.errors import InputError
from torchwheel.memberscan import Result
from torchwheel.wheelfile import WheelArchive, WheelContents, parse_record

__all__ = ["DirectorySource", "Source", "WheelArchive", "directory_source", "installed_source"]

_CHUNK = 1 << 20


class Source(Protocol):
    contents: WheelContents

    @property
    def is_wheel_file(self) -> bool: ...

    def read(self, name: str) -> bytes: ...

    def hash_member(self, name: str) -> tuple[str, int]: ...

    def scan_binary(self, name: str, hashing: bool = True) -> Result: ...

    def member_size(self, name: str) -> int: ...

    def close(self) -> None: ...


class DirectorySource:
    """An unpacked wheel (``root`` holds ``*.dist-info``) or an installed distribution.

    For an installed distribution the members are what RECORD lists inside ``root``
    (site-packages); scripts installed elsewhere (``../../bin``) are not the wheel's
    compiled content and are skipped.
    """

    is_wheel_file = False

    def __init__(self, root: Path, dist_info: Path, installed: bool) -> None:
        self.root = root
        wheel_path, meta_path, record_path = (dist_info / n for n in ("WHEEL", "METADATA", "RECORD"))
        for p in (wheel_path, meta_path):
            if not p.is_file():
                raise InputError(f"{dist_info}: {p.name} is missing")
        record = parse_record(_read_text(record_path)) if record_path.is_file() else None
        if installed and record is not None:
            members = sorted(p for p in record if self._inside(p) and (root / p).is_file())
        else:
            members = sorted(str(p.relative_to(root).as_posix()) for p in _walk(root))
        name, _, version = dist_info.name[: -len(".dist-info")].partition("-")
        self.contents = WheelContents(
            path=str(dist_info if installed else root),
            filename_name=name,
            filename_version=version,
            filename_tags=frozenset(),
            build_tag=None,
            dist_info=dist_info.relative_to(root).as_posix(),
            wheel_text=_read_text(wheel_path),
            metadata_text=_read_text(meta_path),
            record=record,
            members=members,
        )

    def _inside(self, rel: str) -> bool:
        full = os.path.normpath(self.root / rel)
        return full.startswith(str(self.root) + os.sep)

    def read(self, name: str) -> bytes:
        try:
            return (self.root / name).read_bytes()
        except OSError as exc:
            raise InputError(f"{self.root / name}: {exc.strerror}") from exc

    def hash_member(self, name: str) -> tuple[str, int]:
        digest = hashlib.sha256()
        size = 0
        try:
            with (self.root / name).open("rb") as fh:
                while chunk := fh.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
        except OSError as exc:
            raise InputError(f"{self.root / name}: {exc.strerror}") from exc
        return "sha256=" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode(), size

    def member_size(self, name: str) -> int:
        return (self.root / name).stat().st_size

    def scan_binary(self, name: str, hashing: bool = True) -> Result:
        """Files on disk are mapped, not read: only the pages the reader touches are loaded."""
        hashed = self.hash_member(name) if hashing else (None, self.member_size(name))
        try:
            return hashed, read_path(self.root / name, label=name)
        except BinaryError as exc:
            return hashed, exc

    def close(self) -> None:
        pass


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot be read as UTF-8 text ({exc})") from exc


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in filenames:
            p = Path(dirpath) / f
            if not p.is_symlink():
                yield p


def directory_source(root: Path) -> DirectorySource:
    dist_infos = sorted(root.glob("*.dist-info"))
    if len(dist_infos) != 1:
        found = ", ".join(p.name for p in dist_infos) or "none"
        raise InputError(f"{root}: expected one .dist-info directory, found {found}")
    return DirectorySource(root, dist_infos[0], installed=False)


def installed_source(name: str) -> DirectorySource:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(name)
    except PackageNotFoundError as exc:
        raise InputError(f"no installed distribution named {name!r} in this environment") from exc
    dist_path = getattr(dist, "_path", None)
    if dist_path is None:
        raise InputError(f"{name}: installed without a .dist-info directory (egg?); cannot read it")
    dist_info = Path(dist_path)
    return DirectorySource(dist_info.parent, dist_info, installed=True)
