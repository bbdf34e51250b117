"""Install one chosen wheel into a target interpreter's scheme with ``installer``, or
replace an installed version of the project (``--upgrade``).

All or nothing, even when the process is killed: every step is in a journal on disk
(``install.journal``) before it happens. An upgrade first moves the installed version's files
(those its RECORD lists, their ``__pycache__`` and its whole ``.dist-info``) aside, installs,
verifies, commits, and only then deletes them; on any failure before the commit (a write
error, a RECORD that does not verify, Ctrl-C, SIGTERM) the new files are removed and the old
ones moved back, so the environment holds exactly one of the two. After SIGKILL the journal
says where it stopped, and the next ``install`` (or ``install --repair-env``) finishes a
committed install or rolls back one that was not (``repair_environment``).
``installer`` writes ``INSTALLER`` (``torchwheel``) and RECORD, so pip lists the result and
``pip uninstall`` removes it. No bytecode is compiled: ``installer`` would compile with
*this* interpreter, which may not be the target's version (Python compiles on first import
anyway).
"""

from __future__ import annotations

import hashlib
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NoReturn

from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.exceptions import InstallerError
from installer.records import Hash, RecordEntry, parse_record_file
from installer.sources import WheelFile
from installer.utils import Scheme, copyfileobj_with_hashing, get_launcher_kind, make_file_executable
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel import __version__
from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.install import journal, recovery, signals
from torchwheel.selection.candidates import Candidate
from torchwheel.selection.target import TorchTarget
from torchwheel.wheel.headers import parse_headers
from torchwheel.wheel.record import digest_text


class InstallRefused(Exception):
    """The environment is not one to install into (exit 1): already installed (without
    ``--upgrade``), no scheme, an installed version that cannot be replaced safely."""


@dataclass
class _JournaledDestination(SchemeDictionaryDestination):
    """``installer``'s own destination, each file written the journal's way: recorded, its
    bytes into a temporary file beside it, their digest recorded, then the file made under its
    name (``journal.Journal.wrote``). So a rollback, now or after a kill, removes exactly what
    this install made, and only while it still holds those bytes. A file that is already
    there is refused, as ``installer`` refuses it: it is not ours to replace or remove."""

    txn: journal.Journal = field(kw_only=True)
    _real: set[Path] = field(default_factory=set, kw_only=True)  # folders seen not to be links

    def _no_link_on_the_way(self, scheme: Scheme, target: Path) -> None:
        """Never through a symbolic link below the scheme's folder: the file would land
        outside the environment, and no replay could check where it went."""
        top = Path(os.path.abspath(self.scheme_dict[scheme]))
        for folder in reversed([target.parent, *target.parent.parents]):
            if folder in self._real or not folder.is_relative_to(top) or folder == top:
                continue
            if folder.is_symlink():
                raise InstallerError(f"{target}: would be written through the symbolic link {folder}")
            if folder.is_dir():
                self._real.add(folder)

    def write_to_fs(self, scheme: Scheme, path: str, stream: BinaryIO, is_executable: bool) -> RecordEntry:
        target = self._path_with_destdir(scheme, path)
        self._no_link_on_the_way(scheme, target)
        if os.path.lexists(target):
            raise FileExistsError(f"File already exists: {target!s}")
        missing = [p for p in [target.parent, *target.parent.parents] if not p.exists()]
        temp = self.txn.will_write(target, list(reversed(missing)))
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        with os.fdopen(fd, "wb") as out:
            digest, size = copyfileobj_with_hashing(stream, out, "sha256")
        if is_executable:
            make_file_executable(temp)
        self.txn.wrote(target, temp, digest, size)
        return RecordEntry(path, Hash("sha256", digest), size)


@frozen
class Installation:
    candidate: Candidate
    dist_info: Path
    files: int
    replaced: str | None = None  # the version an upgrade replaced
    unchanged: bool = False  # --upgrade found this very version installed
    repaired: tuple[str, ...] = ()  # what a killed earlier run left, finished or rolled back first


def _aside_plan(dist_info: Path, root: Path) -> list[Path]:
    """What an upgrade moves aside: the files the installed RECORD lists (and the bytecode
    Python wrote for them), then the whole ``.dist-info`` last, so the old version stays
    listed until everything else of it is out of the way."""
    record = dist_info / "RECORD"
    if not record.is_file():
        raise InstallRefused(
            f"{dist_info.name} has no RECORD: it cannot be replaced safely; uninstall it first"
        )
    with record.open(newline="") as fh:
        rows = list(parse_record_file(fh))
    base, top = dist_info.parent, root.resolve()
    files: list[Path] = []
    for path, _, _ in rows:
        full = Path(os.path.normpath(base / path))
        if not full.resolve().is_relative_to(top):
            raise InstallRefused(
                f"{dist_info.name}/RECORD lists {path}, outside the environment: not removing it; "
                "uninstall it first"
            )
        if full.is_relative_to(dist_info) or not (full.is_file() or full.is_symlink()):
            continue
        files.append(full)
        if full.suffix == ".py":  # bytecode Python wrote on import, listed or not
            files += sorted((full.parent / "__pycache__").glob(f"{full.stem}.*.pyc"))
    return [*dict.fromkeys(files), dist_info]


def scheme_of(target: TorchTarget, name: str) -> dict[str, str]:
    """The install scheme, from the target's ``sysconfig`` paths; ``headers`` the way pip
    lays them out (``{include}/site/pythonX.Y/{name}`` in a virtual environment)."""
    paths = target.paths
    if not paths or target.python is None:
        raise InstallRefused("a plan has no environment to install into: give --python PATH")
    short = ".".join(target.python_version.split(".")[:2])
    prefix = Path(paths["data"])
    return {
        "purelib": paths["purelib"],
        "platlib": paths["platlib"],
        "scripts": paths["scripts"],
        "data": paths["data"],
        "headers": str(prefix / "include" / "site" / f"python{short}" / name),
    }


def installed_dist(scheme: dict[str, str], name: str) -> Path | None:
    """An installed distribution of this project (any version) in the target's site dirs; a
    ``.dist-info`` without METADATA holds no installed version (a leftover, not an install)."""
    want = canonicalize_name(name)
    for lib in dict.fromkeys((scheme["purelib"], scheme["platlib"])):
        for d in sorted(Path(lib).glob("*.dist-info")):
            project = canonicalize_name(d.name.removesuffix(".dist-info").split("-", 1)[0])
            if project == want and (d / "METADATA").is_file():
                return d
    return None


def _verify_installed(record: Path) -> None:
    """Every RECORD entry with a hash is present with that hash (after writing)."""
    base = record.parent.parent
    with record.open(newline="") as fh:
        rows = list(parse_record_file(fh))
    for path, digest, size in rows:
        if not digest:
            continue
        algo = digest.partition("=")[0]
        file = Path(os.path.normpath(base / path))
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise InputError(
                f"installed RECORD lists {path}, which is missing ({exc.strerror})",
                reference="install-failed",
            ) from exc
        if digest_text(hashlib.new(algo, data).digest(), algo) != digest or (size and int(size) != len(data)):
            raise InputError(f"installed {path} does not match its RECORD entry", reference="install-failed")


def _installed_version(dist_info: Path) -> tuple[Version | None, str]:
    """An installed distribution's version (METADATA) and build tag (WHEEL ``Build``)."""
    try:
        meta = parse_headers((dist_info / "METADATA").read_text("utf-8", "replace"))
        wheel = parse_headers((dist_info / "WHEEL").read_text("utf-8", "replace"))
        return Version(str(meta["Version"])), str(wheel.get("Build") or "")
    except (OSError, InvalidVersion, TypeError):
        return None, ""


def _sites(scheme: dict[str, str]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys((Path(scheme["purelib"]), Path(scheme["platlib"]))))


def _allowed(scheme: dict[str, str]) -> tuple[Path, ...]:
    """Where a journal's paths may lie: the environment (``data`` is its root) and the
    scheme's folders, wherever a layout puts them."""
    return tuple(Path(scheme[k]) for k in ("data", "purelib", "platlib", "scripts"))


def _keep(scheme: dict[str, str]) -> set[Path]:
    """Folders a finished upgrade never removes, even when the old version leaves them empty:
    the scheme's own and those above them (``include/site/pythonX.Y`` above ``headers``)."""
    root = Path(scheme["data"])
    dirs = [Path(scheme[k]) for k in ("purelib", "platlib", "scripts", "data")] + [
        Path(scheme["headers"]).parent
    ]
    return {a for d in dirs for a in (d, *d.parents) if a.is_relative_to(root)}


def _repair(scheme: dict[str, str]) -> list[str]:
    root, allowed = Path(scheme["data"]), _allowed(scheme)
    return [
        f"{home.parent}: {recovery.replay(home, root, allowed)}" for home in journal.pending(_sites(scheme))
    ]


def repair_environment(target: TorchTarget) -> list[str]:
    """Finish or roll back what killed installs left in the target's environment (their
    journals), one line each; ``[]`` when there was nothing to do."""
    scheme = scheme_of(target, "")
    if not journal.pending(_sites(scheme)):  # the usual case: no lock to take
        return []
    with journal.locked(Path(scheme["purelib"])), signals.SignalGuard() as guard:
        guard.hold()  # a replay runs to its end; a signal meanwhile is delivered after it
        lines = _repair(scheme)
        if guard.caught:
            guard.resend(guard.caught[0])
    return lines


def install_wheel(candidate: Candidate, target: TorchTarget, upgrade: bool = False) -> Installation:
    """Install, verify, or leave the environment as it was. The same version and build
    already installed is ``unchanged`` (with or without ``upgrade``); ``InstallRefused`` for
    an environment that holds another version of the project (without ``upgrade``); ``InputError`` for a
    wheel that does not verify, a write that fails or an interrupt (after the rollback).
    Whatever a killed earlier run left is repaired first (``Installed.repaired``)."""
    scheme = scheme_of(target, candidate.name)
    root = Path(scheme["data"])
    with journal.locked(Path(scheme["purelib"])), signals.SignalGuard() as guard:
        guard.hold()
        repaired = tuple(_repair(scheme))
        existing = installed_dist(scheme, candidate.name)
        if existing is not None and _unchanged(candidate, target, existing, upgrade):
            return Installation(candidate, existing, 0, unchanged=True, repaired=repaired)
        plan = _aside_plan(existing, root) if existing is not None else []
        site = existing.parent if existing is not None else Path(scheme["purelib"])
        txn = journal.Journal(site / f"{journal.PREFIX}{candidate.name}", root)
        assert target.python is not None
        dest = _JournaledDestination(
            scheme, interpreter=target.python, script_kind=get_launcher_kind(), txn=txn
        )
        try:
            with WheelFile.open(candidate.path) as source:
                source.validate_record(validate_contents=True)  # before the environment is touched
                dist_info = source.dist_info_dir
                guard.release()
                txn.begin(
                    candidate.name, candidate.filename, existing.name if existing else None, _keep(scheme)
                )
                txn.set_aside(plan)
                install(
                    source,
                    dest,
                    additional_metadata={
                        "INSTALLER": f"torchwheel {__version__}\n".encode(),
                        "REQUESTED": b"",
                    },
                )
            record = _find_record(scheme, dist_info)
            _verify_installed(record)
            txn.commit()
        except BaseException as exc:
            guard.hold()
            if not _settle(txn, scheme):  # rolled back
                _failed(candidate, existing, exc, guard)
        else:
            guard.hold()
            _settle(txn, scheme)
        if guard.caught:  # after the point of no return: the install stands, the signal is obeyed
            _obey_late(candidate, guard)
    replaced = existing.name.removesuffix(".dist-info").rpartition("-")[2] if existing else None
    return Installation(candidate, record.parent, len(txn.created), replaced, repaired=repaired)


def _unchanged(candidate: Candidate, target: TorchTarget, existing: Path, upgrade: bool) -> bool:
    """True when the choice is what is there (done, as pip and uv say "already satisfied");
    ``InstallRefused`` for another version without ``upgrade``."""
    version, build = _installed_version(existing)
    if version == candidate.version and build == "".join(map(str, candidate.build)):
        return True
    if not upgrade:
        raise InstallRefused(
            f"{existing.name} is already installed in {target.description}: --upgrade replaces it"
        )
    return False


def _obey_late(candidate: Candidate, guard: signals.SignalGuard) -> NoReturn:
    """A signal held after the commit: the install stands; SIGTERM/SIGHUP end the process the
    way they ask, SIGINT ends the command with its one-line error."""
    signum = guard.caught[0]
    if signum != signal.SIGINT:
        guard.resend(signum)
    raise InputError(
        f"{candidate.filename}: interrupted ({signal.Signals(signum).name}) after the install "
        f"was complete: {candidate.name} {candidate.version} is installed",
        reference="interrupted",
    )


def _settle(txn: journal.Journal, scheme: dict[str, str]) -> bool:
    """Replay this run's own journal, as a later run would: True when it was committed (and
    is now finished), False when it was rolled back (or never began)."""
    txn.close()
    if not txn.home.exists():
        return False
    return recovery.replay(txn.home, Path(scheme["data"]), _allowed(scheme)).startswith("finished")


def _failed(
    candidate: Candidate, existing: Path | None, exc: BaseException, guard: signals.SignalGuard
) -> NoReturn:
    """After the rollback: the one-line error, or the interrupt passed on."""
    kept = f"; {existing.name} is back in place" if existing is not None else ""
    if isinstance(exc, signals.Interrupted):
        if exc.signum != signal.SIGINT:  # SIGTERM/SIGHUP: end the way the signal asks
            guard.resend(exc.signum)
        name = signal.Signals(exc.signum).name
        raise InputError(
            f"{candidate.filename}: install interrupted ({name}), nothing left behind{kept}",
            reference="install-failed",
        ) from None
    if isinstance(exc, (InstallerError, ValueError, OSError, InputError)):
        raise InputError(
            f"{candidate.filename}: install failed, nothing left behind{kept} ({exc})",
            reference="install-failed",
        ) from exc
    raise exc


def _find_record(scheme: dict[str, str], dist_info: str) -> Path:
    for lib in (scheme["platlib"], scheme["purelib"]):
        record = Path(lib) / dist_info / "RECORD"
        if record.is_file():
            return record
    raise InputError(f"{dist_info}/RECORD was not written", reference="install-failed")
