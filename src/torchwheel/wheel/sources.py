"""Where wheel-shaped input comes from: a wheel file, an unpacked wheel, an installed
distribution. One interface, so the same facts and rules serve all three (the way
pypa/installer separates sources from destinations).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from torchwheel import limits
from torchwheel.errors import InputError, system_error
from torchwheel.safeopen import kind, open_regular, read_chunks, read_regular
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.contents import WheelContents
from torchwheel.wheel.record import RecordEntry, RecordProblem, hash_chunks, parse_record

__all__ = ["DirectorySource", "RecordOf", "Source", "WheelArchive", "directory_source", "installed_source"]

# a RECORD's path and its reader (read and parse, with every check) -> its rows
RecordOf = Callable[[Path, Callable[[], dict[str, RecordEntry]]], dict[str, RecordEntry]]


class Source(Protocol):
    contents: WheelContents

    @property
    def is_wheel_file(self) -> bool: ...

    def read(self, name: str) -> bytes: ...

    def hash_member(self, name: str) -> tuple[str, int]: ...

    def stream(self, name: str, stop: int | None = None) -> Iterator[bytes]:
        """The member's bytes in chunks, up to ``stop`` when given (the streaming scan's
        fallback passes stop early)."""
        ...

    def member_size(self, name: str) -> int: ...

    def close(self) -> None: ...


class DirectorySource:
    """An unpacked wheel (``root`` holds ``*.dist-info``) or an installed distribution.

    For an installed distribution the members are the files RECORD lists, as RECORD spells
    them: relative to ``root`` (site-packages) or absolute, so scripts in ``../../../bin``
    are members too. ``boundary`` is the environment's prefix: an entry that resolves
    outside it (``..`` too far, an absolute path elsewhere, a symlink out) is never
    opened, only reported.

    ``only``: an installed distribution's RECORD entries to list, the others are not looked
    at (``contents.members`` and ``record_problems`` then speak of those alone): ``doctor``
    asks first about the compiled files, which are ~1% of 50,000 entries, and each entry
    listed costs a ``stat``. ``record_of``: how the RECORD's rows are had, given its path and
    its reader (``doctor`` keeps torch's, ``tables.torchcache``); the reader by default.
    """

    is_wheel_file = False

    def __init__(
        self,
        root: Path,
        dist_info: Path,
        installed: bool,
        boundary: Path | None = None,
        only: Callable[[str], bool] | None = None,
        record_of: RecordOf | None = None,
    ) -> None:
        self.root = root
        wheel_path, meta_path, record_path = (dist_info / n for n in ("WHEEL", "METADATA", "RECORD"))
        for p in (wheel_path, meta_path):
            if not p.is_file():
                raise InputError(
                    f"{dist_info}: {p.name} is missing", reference="wheel-invalid", path=dist_info
                )

        def read_record() -> dict[str, RecordEntry]:
            # an unpacked wheel's metadata files are its own: a link (perhaps out of it) is refused
            return parse_record(_read_text(record_path, installed))

        record = None
        if record_path.is_file():
            record = record_of(record_path, read_record) if record_of is not None else read_record()
        outside: list[RecordProblem] = []
        self._follow = installed  # RECORD entries were resolved inside the boundary already
        if installed and record is not None:
            limit = str((boundary or root).resolve())
            members = []
            listed = [e for e in record if only is None or only(e)]
            named = [e for e in listed if "\x00" not in e]
            for entry in (e for e in listed if "\x00" in e):  # the OS calls would raise ValueError
                detail = "a path with a NUL byte, which names no file: not read"
                outside.append(RecordProblem(entry, "not-regular", detail))
            for entry, full, mode in _resolve_entries(root, named):  # strings: pathlib is slow here
                if not full.startswith(limit.rstrip(os.sep) + os.sep):
                    detail = f"resolves to {full}, outside the environment {limit}: not read"
                    outside.append(RecordProblem(entry, "outside-environment", detail))
                elif stat.S_ISREG(mode):
                    members.append(entry)
                elif mode:  # there, and no regular file: a FIFO, a device, a folder is never read
                    detail = f"{kind(mode)}, not a regular file: not read"
                    outside.append(RecordProblem(entry, "not-regular", detail))
            members.sort()
        else:
            found = sorted((p.relative_to(root).as_posix(), problem) for p, problem in _walk(root))
            members = [name for name, problem in found if problem is None]
            outside = [RecordProblem(name, "not-regular", problem) for name, problem in found if problem]
        name, _, version = dist_info.name[: -len(".dist-info")].partition("-")
        self.contents = WheelContents(
            path=str(dist_info if installed else root),
            filename_name=name,
            filename_version=version,
            filename_tags=frozenset(),
            build_tag=None,
            dist_info=dist_info.relative_to(root).as_posix(),
            wheel_text=_read_text(wheel_path, installed),
            metadata_text=_read_text(meta_path, installed),
            record=record,
            members=members,
            record_problems=outside,
            installed=installed,
        )

    def _open(self, name: str) -> BinaryIO:
        """Members are regular files when listed; a swap since then is refused (``safeopen``)."""
        return open(open_regular(self.root / name, follow_symlinks=self._follow), "rb")

    def read(self, name: str) -> bytes:
        try:
            with self._open(name) as fh:
                return fh.read()
        except OSError as exc:
            raise InputError(
                f"{self.root / name}: {exc.strerror}", reference="file-system-error", path=self.root / name
            ) from exc

    def hash_member(self, name: str) -> tuple[str, int]:
        return hash_chunks(self.stream(name))

    def member_size(self, name: str) -> int:
        return (self.root / name).stat().st_size

    def identity(self, name: str) -> tuple[int, int] | None:
        """The file a member names, ``(st_dev, st_ino)`` (links followed as a read follows
        them), so that a file with many names is read once; None when it cannot be told."""
        try:
            st = (self.root / name).stat() if self._follow else (self.root / name).lstat()
        except (OSError, ValueError):
            return None
        return (st.st_dev, st.st_ino) if st.st_ino else None

    def stream(self, name: str, stop: int | None = None) -> Iterator[bytes]:
        try:
            fd = open_regular(self.root / name, follow_symlinks=self._follow)
        except OSError as exc:
            raise InputError(
                f"{self.root / name}: {exc.strerror or exc}",
                reference="file-system-error",
                path=self.root / name,
            ) from exc
        try:
            size = os.fstat(fd).st_size
            yield from read_chunks(fd, size if stop is None else min(stop, size))
        except OSError as exc:
            raise InputError(
                f"{self.root / name}: {exc.strerror or exc}",
                reference="file-system-error",
                path=self.root / name,
            ) from exc
        finally:
            os.close(fd)

    def close(self) -> None:
        pass


def _read_text(path: Path, follow_symlinks: bool) -> str:
    try:
        data = read_regular(path, limits.current().max_metadata_bytes.value, follow_symlinks)
    except OSError as exc:
        raise system_error(path, exc) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: cannot be read as UTF-8 text ({exc})", reference="file-system-error", path=path
        ) from exc


def _resolve_entries(root: Path, entries: Iterable[str]) -> Iterator[tuple[str, str, int]]:
    """Each RECORD entry, the real path it names (symlinks followed: what a read would open)
    and its mode (0: nothing there). Directories are resolved once each (torch's 15,000
    entries share ~1,500) and each file costs one lstat."""
    real_dirs: dict[str, str] = {}
    for entry in entries:
        head, base = os.path.split(os.path.join(root, entry))  # an absolute entry replaces root
        real_dir = real_dirs.get(head)
        if real_dir is None:
            real_dir = real_dirs[head] = os.path.realpath(head)
        full = os.path.join(real_dir, base)
        try:
            mode = os.lstat(full).st_mode
        except OSError:
            mode = 0
        if base in ("", ".", "..") or stat.S_ISLNK(mode):
            full = os.path.realpath(full)
            try:
                mode = os.stat(full).st_mode
            except OSError:
                mode = 0
        yield entry, full, mode


def _walk(root: Path) -> Iterator[tuple[Path, str | None]]:
    """Every file of an unpacked wheel, and why one is not read: wheels carry only regular
    files, so a link is never followed (one leading out of ``root`` is named as such) and a
    FIFO, device or socket is never opened. Links inside ``root`` are skipped silently, as
    build trees have them (``libfoo.so -> libfoo.so.1``)."""
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):  # does not descend into linked directories
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / f
            try:
                mode = os.lstat(p).st_mode
            except OSError as exc:
                yield p, f"cannot be read ({exc.strerror}): not read"
                continue
            if stat.S_ISREG(mode):
                yield p, None
            elif stat.S_ISLNK(mode):
                real = os.path.realpath(p)
                if not (real + os.sep).startswith(real_root.rstrip(os.sep) + os.sep):
                    yield p, f"a symbolic link out of the wheel directory (to {real}): not followed"
            else:
                yield p, f"{kind(mode)}, not a regular file: not opened"


def directory_source(root: Path) -> DirectorySource:
    dist_infos = sorted(root.glob("*.dist-info"))
    if len(dist_infos) != 1:
        found = ", ".join(p.name for p in dist_infos) or "none"
        raise InputError(
            f"{root}: expected one .dist-info directory, found {found}", reference="wheel-invalid", path=root
        )
    return DirectorySource(root, dist_infos[0], installed=False)


def installed_source(name: str) -> DirectorySource:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(name)
    except PackageNotFoundError as exc:
        raise InputError(
            f"no installed distribution named {name!r} in this environment", reference="not-found"
        ) from exc
    dist_path = getattr(dist, "_path", None)
    if dist_path is None:
        raise InputError(
            f"{name}: installed without a .dist-info directory (egg?); cannot read it",
            reference="wheel-invalid",
        )
    dist_info = Path(dist_path)
    if not (dist_info / "RECORD").is_file():
        # allowed for installed projects (a system package manager owns the files), but then
        # nothing says which files of site-packages are this distribution's
        raise InputError(
            f"{dist_info}: no RECORD, so its files are unknown (installed by a system package manager?)",
            reference="wheel-invalid",
            path=dist_info,
        )
    site_dir = dist_info.parent
    return DirectorySource(site_dir, dist_info, installed=True, boundary=environment_prefix(site_dir))


def environment_prefix(site_dir: Path) -> Path:
    """The installation prefix ``site_dir`` belongs to: the innermost of this interpreter's
    prefixes (venv, base, user base) that holds it; ``site_dir`` itself for anything else
    (a ``--target`` directory, a PYTHONPATH entry), so only what lies inside it is read."""
    import site
    import sys

    resolved = site_dir.resolve()
    candidates = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, site.getuserbase()}
    holding = [Path(c).resolve() for c in candidates if c and resolved.is_relative_to(Path(c).resolve())]
    return max(holding, key=lambda p: len(p.parts), default=resolved)
