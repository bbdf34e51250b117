"""Turn command-line arguments into facts: wheel files, directories of wheels, unpacked
wheels, single binaries and installed distributions all end up as ``WheelFacts``.

A wheel-shaped input goes through its source (``wheel.sources``) and ``collect``; a lone
binary is scanned as one file and judged with empty metadata, so the binary rules still
apply to it.

An input that cannot be read raises ``InputError`` naming it, or, given a list to put it in
(``unreadable``: ``check`` and ``show``, as ruff reports the bad file and goes on), is put
there and the others are read: one unreadable wheel of a wheelhouse hides no other wheel's
findings.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path

from torchwheel.analysis.collect import collect
from torchwheel.analysis.member import MemberBinary, analyze_binary
from torchwheel.analysis.memberpool import EarlyRead
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.binary import BinaryError
from torchwheel.binary.memberscan import scan_file
from torchwheel.errors import InputError, system_error
from torchwheel.safeopen import kind
from torchwheel.tables.tableset import Tables
from torchwheel.wheel.contents import WheelContents
from torchwheel.wheel.metadata import MetadataFacts
from torchwheel.wheel.sources import Source, WheelArchive, directory_source, installed_source


def expand(paths: tuple[Path, ...]) -> list[Path]:
    """Wheel files and unpacked wheels as given; a plain directory stands for its wheels.

    Only regular files and directories are inputs: a FIFO, device or socket would block or
    never end (``safeopen``). In a directory of wheels, an entry that is not a regular file
    or that is a link leading out of the directory is refused by name, never followed.
    """
    out: list[Path] = []
    for p in paths:
        for entry in _entries(p):
            if isinstance(entry, InputError):
                raise entry
            out.append(entry)
    return out


def _entries(p: Path) -> list[Path | InputError]:
    """``expand`` of one input, a directory entry it refuses in its place among the others
    (an ``InputError`` of the input itself is raised)."""
    mode = _mode(p)
    if stat.S_ISDIR(mode) and not any(p.glob("*.dist-info")):
        wheels = sorted(p.glob("*.whl"))
        if not wheels:
            raise InputError(
                f"{p}: a directory with neither wheels nor a .dist-info", reference="not-a-wheel"
            )
        out: list[Path | InputError] = []
        for w in wheels:
            try:
                out.append(_directory_entry(p, w))
            except InputError as exc:
                exc.input_path = str(w)
                out.append(exc)
        return out
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise InputError(
            f"{p}: {kind(mode)}, not a wheel, directory or binary: refused", reference="not-a-wheel"
        )
    return [p]


def _mode(p: Path) -> int:
    """The mode of what ``p`` leads to (links followed: a link given on the command line is
    the user's choice, as long as it ends at a regular file or directory)."""
    try:
        return os.stat(p).st_mode
    except FileNotFoundError as exc:
        raise system_error(p, exc, "no such file or directory") from exc
    except OSError as exc:
        raise system_error(p, exc) from exc


def _directory_entry(folder: Path, entry: Path) -> Path:
    mode = os.lstat(entry).st_mode
    if stat.S_ISLNK(mode):
        real = Path(os.path.realpath(entry))
        if not real.is_relative_to(Path(os.path.realpath(folder))):
            raise InputError(
                f"{entry}: a symbolic link out of {folder} (to {real}): refused, not followed",
                reference="not-a-wheel",
            )
        mode = _mode(entry)
    if not stat.S_ISREG(mode):
        raise InputError(f"{entry}: {kind(mode)} in {folder}, not a wheel: refused", reference="not-a-wheel")
    return entry


def _binary_facts(path: Path, tables: Tables) -> WheelFacts:
    """A lone binary: the same facts with empty metadata, so binary rules still apply."""
    try:
        _, read = scan_file(path, str(path))
    except OSError as exc:
        raise system_error(path, exc) from exc
    if isinstance(read, BinaryError):
        raise InputError(f"{path}: {read}", reference="not-a-wheel")
    contents = WheelContents.lone_binary(str(path), path.name)
    binary = MemberBinary(path.name, analyze_binary(read, tables.shims))
    return WheelFacts(contents, MetadataFacts(None, (), ()), binaries=(binary,), kind="binary", tables=tables)


def _open(path: Path, lenient_name: bool = False) -> Source:
    """``lenient_name``: a wheel whose file name packaging refuses is read (``check``, ``show``
    judge it, TW414); ``tag`` keeps the file name's tags, so for it such a name is an error."""
    if path.is_dir():
        return directory_source(path)
    return WheelArchive(path, lenient_name=lenient_name)


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """An ``InputError`` raised while reading ``path`` names it (``InputError.input_path``)."""
    try:
        yield
    except InputError as exc:
        if exc.input_path is None:
            exc.input_path = str(path)
        raise


@contextmanager
def _kept(path: Path | str, unreadable: list[InputError] | None) -> Iterator[None]:
    """Reading ``path`` (an installed distribution's name: a ``str``): its ``InputError`` (an
    ``OSError`` made one) names it, and is raised, or with ``unreadable`` given, put there for
    the report while the other inputs are read."""
    try:
        try:
            yield
        except InputError:
            raise
        except OSError as exc:  # permissions, I/O: the words the entry point would say
            raise system_error(Path(path), exc) from exc
    except InputError as exc:
        if exc.input_path is None and isinstance(path, Path):
            exc.input_path = str(path)
        if unreadable is None:
            raise
        unreadable.append(exc)


def _expanded(paths: tuple[Path, ...]) -> list[Path]:
    out: list[Path] = []
    for given in paths:
        with reading(given):
            out += expand((given,))
    return out


def load_facts(
    paths: tuple[Path, ...],
    env: tuple[str, ...],
    tables: Tables,
    verify_hashes: bool = True,
    unreadable: list[InputError] | None = None,
    early: EarlyRead | None = None,
) -> Iterator[WheelFacts]:
    """The facts of every input, in order (an unreadable one in its place among them);
    ``unreadable``: see the module's docstring. ``early``: a wheel the command line opened
    and started reading already (``memberpool.start``): it is read on, not opened again."""
    for given in paths:
        entries: list[Path | InputError] = []
        with _kept(given, unreadable):
            entries = _entries(given)
        for entry in entries:
            found: list[WheelFacts] = []
            with _kept(entry if isinstance(entry, Path) else Path(entry.input_path or given), unreadable):
                if isinstance(entry, InputError):
                    raise entry
                found.append(_read(entry, tables, verify_hashes, early))
            yield from found
    for name in env:
        found = []
        with _kept(name, unreadable):
            source = installed_source(name)
            try:
                found.append(collect(source, tables, verify_hashes))
            finally:
                source.close()
        yield from found


def _read(path: Path, tables: Tables, verify_hashes: bool, early: EarlyRead | None) -> WheelFacts:
    if path.is_file() and path.suffix != ".whl":
        return _binary_facts(path, tables)
    taken = early.take(path, verify_hashes) if early is not None else None
    source: Source
    pool = None
    if taken is not None:
        source, pool = taken
    else:
        source = _open(path, lenient_name=True)
    try:
        return collect(source, tables, verify_hashes, pool)
    finally:
        source.close()


@contextmanager
def opened(
    paths: tuple[Path, ...], tables: Tables, lock: Callable[[WheelArchive], None] | None = None
) -> Iterator[list[tuple[WheelFacts, WheelArchive | None]]]:
    """Facts with their wheel still open, for ``tag``: what it writes is copied from the
    descriptor the facts were read from, never from the path opened a second time.
    ``lock`` runs on each wheel before it is read (``--in-place``: one rewriter a file)."""
    with ExitStack() as stack:
        out: list[tuple[WheelFacts, WheelArchive | None]] = []
        for path in _expanded(paths):
            with reading(path):
                if path.is_file() and path.suffix != ".whl":
                    out.append((_binary_facts(path, tables), None))
                    continue
                source = stack.enter_context(closing(_open(path)))
                archive = source if isinstance(source, WheelArchive) else None
                if archive is not None and lock is not None:
                    lock(archive)
                out.append((collect(source, tables), archive))
        yield out
