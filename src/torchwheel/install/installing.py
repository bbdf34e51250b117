"""Install one chosen wheel into a target interpreter's scheme with ``installer``, or
replace an installed version of the project (``--upgrade``).

All or nothing: every file and directory the install creates is remembered as it is
written, and removed again when anything fails (a write error, a RECORD that does not
verify after writing, an interrupt). An upgrade first moves the installed version's files
(those its RECORD lists, their ``__pycache__`` and its whole ``.dist-info``) aside into a
folder beside them, installs, and only then deletes them; on any failure the new files are
removed and the old ones moved back, so the environment holds exactly one of the two.
``installer`` writes ``INSTALLER`` (``torchwheel``) and RECORD, so pip lists the result and
``pip uninstall`` removes it. No bytecode is compiled: ``installer`` would compile with
*this* interpreter, which may not be the target's version (Python compiles on first import
anyway).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path
from typing import BinaryIO

from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.exceptions import InstallerError
from installer.records import RecordEntry, parse_record_file
from installer.sources import WheelFile
from installer.utils import Scheme, get_launcher_kind
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel import __version__
from torchwheel.errors import InputError
from torchwheel.install.candidates import Candidate
from torchwheel.install.target import TorchTarget
from torchwheel.wheel.record import digest_text


class InstallRefused(Exception):
    """The environment is not one to install into (exit 1): already installed (without
    ``--upgrade``), no scheme, an installed version that cannot be replaced safely."""


@dataclass
class _TrackingDestination(SchemeDictionaryDestination):
    """``installer``'s own destination, remembering what it creates so a failure can undo it."""

    created_files: list[Path] = field(default_factory=list)
    created_dirs: list[Path] = field(default_factory=list)

    def write_to_fs(self, scheme: Scheme, path: str, stream: BinaryIO, is_executable: bool) -> RecordEntry:
        target = self._path_with_destdir(scheme, path)
        if not target.exists():
            missing = [p for p in [target.parent, *target.parent.parents] if not p.exists()]
            self.created_dirs.extend(reversed(missing))
            self.created_files.append(target)
        return super().write_to_fs(scheme, path, stream, is_executable)

    def undo(self) -> None:
        for f in reversed(self.created_files):
            f.unlink(missing_ok=True)
        for d in reversed(self.created_dirs):
            shutil.rmtree(d / "__pycache__", ignore_errors=True)
            with contextlib.suppress(OSError):  # not empty: someone else's files too
                d.rmdir()


@dataclass(frozen=True)
class Installed:
    candidate: Candidate
    dist_info: Path
    files: int
    replaced: str | None = None  # the version an upgrade replaced
    unchanged: bool = False  # --upgrade found this very version installed


class _SetAside:
    """An installed distribution's files moved out of the way (``--upgrade``), to be deleted
    after the new install verifies or moved back when it fails."""

    def __init__(self, dist_info: Path, root: Path) -> None:
        record = dist_info / "RECORD"
        if not record.is_file():
            raise InstallRefused(
                f"{dist_info.name} has no RECORD: it cannot be replaced safely; uninstall it first"
            )
        with record.open(newline="") as fh:
            rows = list(parse_record_file(fh))
        base, top = dist_info.parent, root.resolve()
        self.files: list[Path] = []
        for path, _, _ in rows:
            full = Path(os.path.normpath(base / path))
            if not full.resolve().is_relative_to(top):
                raise InstallRefused(
                    f"{dist_info.name}/RECORD lists {path}, outside the environment: not removing it; "
                    "uninstall it first"
                )
            if full.is_relative_to(dist_info) or not (full.is_file() or full.is_symlink()):
                continue
            self.files.append(full)
            if full.suffix == ".py":  # bytecode Python wrote on import, listed or not
                self.files += sorted((full.parent / "__pycache__").glob(f"{full.stem}.*.pyc"))
        self.files = list(dict.fromkeys(self.files))
        self.base = base
        self.backup = Path(tempfile.mkdtemp(prefix=".torchwheel-upgrade-", dir=base))
        self.moved: list[tuple[Path, Path]] = []
        try:
            for i, f in enumerate([*self.files, dist_info]):
                held = self.backup / str(i)
                shutil.move(f, held)
                self.moved.append((f, held))
        except BaseException:
            self.restore()
            raise

    def restore(self) -> None:
        for original, held in reversed(self.moved):
            original.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(held, original)
        self.moved = []
        shutil.rmtree(self.backup, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.backup, ignore_errors=True)
        for original, _ in self.moved:  # folders only the old version used, now empty
            for d in original.parents:
                if d == self.base or not d.is_relative_to(self.base):
                    break
                for empty in (d / "__pycache__", d):
                    with contextlib.suppress(OSError):  # not empty: the new version's too
                        empty.rmdir()


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
            raise InputError(f"installed RECORD lists {path}, which is missing ({exc.strerror})") from exc
        if digest_text(hashlib.new(algo, data).digest(), algo) != digest or (size and int(size) != len(data)):
            raise InputError(f"installed {path} does not match its RECORD entry")


def _installed_version(dist_info: Path) -> tuple[Version | None, str]:
    """An installed distribution's version (METADATA) and build tag (WHEEL ``Build``)."""
    try:
        meta = HeaderParser().parsestr((dist_info / "METADATA").read_text("utf-8", "replace"))
        wheel = HeaderParser().parsestr((dist_info / "WHEEL").read_text("utf-8", "replace"))
        return Version(str(meta["Version"])), str(wheel.get("Build") or "")
    except (OSError, InvalidVersion, TypeError):
        return None, ""


def install_wheel(candidate: Candidate, target: TorchTarget, upgrade: bool = False) -> Installed:
    """Install, verify, or leave the environment as it was. ``InstallRefused`` for an
    environment that already holds the project (without ``upgrade``); ``InputError`` for a
    wheel that does not verify or a write that fails (after the rollback)."""
    scheme = scheme_of(target, candidate.name)
    existing = installed_dist(scheme, candidate.name)
    aside: _SetAside | None = None
    if existing is not None:
        if not upgrade:
            raise InstallRefused(
                f"{existing.name} is already installed in {target.description}: --upgrade replaces it"
            )
        version, build = _installed_version(existing)
        if version == candidate.version and build == "".join(map(str, candidate.build)):
            return Installed(candidate, existing, 0, unchanged=True)
        aside = _SetAside(existing, Path(scheme["data"]))
    assert target.python is not None
    dest = _TrackingDestination(scheme, interpreter=target.python, script_kind=get_launcher_kind())
    try:
        with WheelFile.open(candidate.path) as source:
            source.validate_record(validate_contents=True)
            dist_info = source.dist_info_dir
            install(
                source,
                dest,
                additional_metadata={"INSTALLER": f"torchwheel {__version__}\n".encode(), "REQUESTED": b""},
            )
        record = _find_record(scheme, dist_info)
        _verify_installed(record)
    except (InstallerError, ValueError, OSError, InputError) as exc:
        dest.undo()
        kept = ""
        if aside is not None:
            aside.restore()
            kept = f"; {existing.name if existing else 'the installed version'} is back in place"
        raise InputError(f"{candidate.filename}: install failed, nothing left behind{kept} ({exc})") from exc
    except BaseException:
        dest.undo()
        if aside is not None:
            aside.restore()
        raise
    if aside is not None:
        aside.discard()
    replaced = existing.name.removesuffix(".dist-info").rpartition("-")[2] if existing else None
    return Installed(candidate, record.parent, len(dest.created_files), replaced)


def _find_record(scheme: dict[str, str], dist_info: str) -> Path:
    for lib in (scheme["platlib"], scheme["purelib"]):
        record = Path(lib) / dist_info / "RECORD"
        if record.is_file():
            return record
    raise InputError(f"{dist_info}/RECORD was not written")
