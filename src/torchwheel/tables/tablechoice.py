"""Which tables a run judges with, and how they were chosen.

torchwheel's verdicts rest on four tables: the shim table (``symtable``), what each torch
minor exports (``exports``), the list of torch releases (``torch_releases``) and the backend
list (``torch_backends``). On the day
a torch minor ships, every shipped copy is one minor behind, and a CI job pins its torchwheel
for months; ``torchwheel symbols update`` refreshes all three from that torch into one tables
file. That file only helps if every command that judges can be pointed at it, the same way in
a shell, in CI and in a project's own configuration; and a verdict reached with a stale or a
custom table must say so, or two machines can disagree without anyone seeing why. The first
of these wins:

1. ``--symbols FILE`` on the command line;
2. the ``TORCHWHEEL_SYMBOLS`` environment variable;
3. ``symbols = "FILE"`` in ``[tool.torchwheel]`` (relative to that ``pyproject.toml``);
4. the user tables file ``symbols update`` writes by default (``user_tables_path``), when it
   knows a newer torch than the shipped tables, or as new a torch and a backend they lack (an
   upgraded torchwheel outgrows it);
5. the tables shipped in the package.

A file of schema 1 or 2 holds only a shim table: the shipped release list and export
indexes stay; one of schema 3 has no backend table: the shipped one stays.

The user tables file is torchwheel's own, found without being asked for: one that cannot be
read (damaged, cut short by a full disk, of a newer schema) must not stop every command, and
its remedy, ``symbols update``, must not build on it. So it is set aside (renamed beside
itself, ``tables.json.unreadable``, never deleted) with one warning, and the shipped tables
are used. A file named by ``--symbols``, the environment or ``pyproject.toml`` was asked for:
it stays an error. ``symbols update`` holds ``tables_lock`` from choosing its base to writing,
so two at once run one after the other and the second builds on the first. What is chosen
is one value (``tableset.Tables``) that the caller holds and passes down: nothing is switched
for the process, so two sets of tables in one process give two answers.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from packaging.version import Version

from torchwheel.errors import InputError, clipped
from torchwheel.tables.symtable import SymbolTable, shape
from torchwheel.tables.tableset import Tables, shipped_tables
from torchwheel.torchabi.torch_backends import Backends, ordered, shipped_backends
from torchwheel.torchabi.torch_releases import releases_from, shipped_releases

ENV_VAR = "TORCHWHEEL_SYMBOLS"
USER_FILE = "user tables"


def user_tables_path() -> Path:
    """Where ``symbols update`` writes by default and every command looks: the user's data
    directory (``%LOCALAPPDATA%`` on Windows, else ``$XDG_DATA_HOME`` or ``~/.local/share``),
    ``torchwheel/tables.json``; a CI job caches it like any other file."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    else:
        base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "torchwheel" / "tables.json"


def read_tables_file(path: Path, how: str) -> Tables:
    """A tables file as ``symbols update`` writes it; any defect is one ``InputError`` that
    names the file in ``path`` (the command line adds how to write one: ``cli.exits.HINTS``)."""
    try:
        return _read(path, how)
    except InputError as exc:
        if exc.path is None:
            exc.path = str(path)
        raise


def _read(path: Path, how: str) -> Tables:
    """A file of schema 1 or 2 has no release list and no export indexes, one of schema 3 no
    backend list: the shipped ones stand in (``Tables.from_file`` says which the file gave)."""
    from torchwheel import safejson  # only a file: the shipped tables are trusted

    where = f"symbol table {path}"
    document = safejson.load_file(path, where, shape(), reference="tables-file-invalid")
    table = SymbolTable.from_document(document, where)
    releases = _releases(document.get("releases", []))
    indexes = _indexes(document.get("exports", {}), where)
    backends = ordered(document.get("backends", []))
    given = frozenset(name for name, found in (("releases", releases), ("backends", backends)) if found)
    shipped = shipped_backends()
    return Tables(
        table,
        releases_from(releases) if releases else shipped_releases(),
        Backends(backends, shipped.representatives) if backends else shipped,
        str(path),
        how,
        indexes,
        from_file=given,
    )


@contextlib.contextmanager
def tables_lock(path: Path) -> Iterator[None]:
    """``path`` (a tables file) to this process from reading its base to writing it: a lock
    file beside it (``tables.json.lock``, ``flock``; released when the process ends, however
    it ends). A second ``symbols update`` says it waits, then waits."""
    if sys.platform == "win32":  # pragma: no cover - no flock; the write is atomic still
        yield
        return
    import fcntl

    lock = path.with_name(path.name + ".lock")
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise InputError(
            f"{lock}: cannot be opened as the tables' lock ({exc.strerror or exc})",
            reference="file-system-error",
        ) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"torchwheel: waiting for another torchwheel writing {path}", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD.add(str(lock))
        yield
    finally:
        _HELD.discard(str(lock))
        os.close(fd)


_HELD: set[str] = set()  # the tables locks this process holds (a second flock of its own would wait)


def _set_aside(path: Path, seen: os.stat_result, problem: InputError) -> str:
    """Rename the unreadable user tables file beside itself (the first free
    ``NAME.unreadable``, ``NAME.unreadable.2``, ...) unless it changed since it was read (an
    update replaced it meanwhile) or another torchwheel holds its lock; the warning line."""
    said = f"the user tables file {path} cannot be read ({clipped(problem, 200)})"
    shipped = "the shipped tables are used (`torchwheel symbols update` writes a new one)"
    lock = path.with_name(path.name + ".lock")
    if sys.platform != "win32" and str(lock) not in _HELD:
        import fcntl

        try:
            fd = os.open(
                lock,
                os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                0o644,
            )
        except OSError:
            return f"{said}; {shipped}"
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # an update is writing it right now
                return f"{said}; {shipped}"
            return f"{said}; {_rename_aside(path, seen)}; {shipped}"
        finally:
            os.close(fd)
    return f"{said}; {_rename_aside(path, seen)}; {shipped}"


def _rename_aside(path: Path, seen: os.stat_result) -> str:
    try:
        now = os.lstat(path)
    except OSError:
        return "it is gone"
    if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != (
        seen.st_dev, seen.st_ino, seen.st_size, seen.st_mtime_ns
    ):  # fmt: skip
        return "it changed meanwhile and was left"
    for n in range(1, 1000):
        aside = path.with_name(path.name + ".unreadable" + (f".{n}" if n > 1 else ""))
        try:
            os.link(path, aside)  # never over an earlier one
        except FileExistsError:
            continue
        except OSError as exc:
            return f"it could not be set aside ({exc.strerror or exc})"
        os.unlink(path)
        return f"set aside as {aside}"
    return "it could not be set aside (1,000 earlier ones)"


def _releases(texts: list[str]) -> tuple[Version, ...]:
    """The release list: ``shape()`` lets only dotted digits through, so each is a final release."""
    return tuple(sorted({Version(t) for t in texts}))


def _indexes(encoded: dict[str, str], where: str) -> dict[str, bytes]:
    """Each platform's index file; the index itself is read and checked where a verdict first
    needs it (``tableset.Tables.exports_index``), as the shipped ones are."""
    import base64
    import binascii

    out: dict[str, bytes] = {}
    for platform, text in encoded.items():
        try:
            out[platform] = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InputError(
                f"{where}: exports {clipped(platform, 40)!r}: not base64 ({clipped(exc, 80)})",
                reference="tables-file-invalid",
            ) from exc
    return out


def choose_tables(cli: Path | None, configured: Path | None) -> Tables:
    """The tables of a run (module docstring); ``configured`` is the path from
    ``[tool.torchwheel]``, already made absolute."""
    if cli is not None:
        return read_tables_file(cli, "--symbols")
    env = os.environ.get(ENV_VAR)
    if env:
        return read_tables_file(Path(env), ENV_VAR)
    if configured is not None:
        return read_tables_file(configured, "pyproject.toml")
    shipped = shipped_tables()
    user = user_tables_path()
    if user.is_file():
        try:
            seen = os.stat(user)
        except OSError:  # gone since: nothing to read
            return shipped
        try:
            found = _read(user, USER_FILE)
        except InputError as exc:
            return replace(shipped, warning=_set_aside(user, seen, exc))
        newest = max(shipped.newest, shipped_releases().newest())
        more_backends = set(found.backends.names) - set(shipped_backends().names)
        if found.newest > newest or (found.newest == newest and more_backends):
            return found
    return shipped
