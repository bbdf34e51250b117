"""Install one chosen wheel into a target interpreter's scheme with ``installer``.

All or nothing: every file and directory the install creates is remembered as it is
written, and removed again when anything fails (a write error, a RECORD that does not
verify after writing, an interrupt). ``installer`` writes ``INSTALLER`` (``torchwheel``)
and RECORD, so pip lists the result and ``pip uninstall`` removes it. No bytecode is
compiled: ``installer`` would compile with *this* interpreter, which may not be the
target's version (Python compiles on first import anyway).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.exceptions import InstallerError
from installer.records import RecordEntry, parse_record_file
from installer.sources import WheelFile
from installer.utils import Scheme, get_launcher_kind
from packaging.utils import canonicalize_name

from torchwheel import __version__
from torchwheel.errors import InputError
from torchwheel.install.candidates import Candidate
from torchwheel.install.target import TorchTarget
from torchwheel.wheel.record import digest_text


class InstallRefused(Exception):
    """The environment is not one to install into (exit 1): already installed, no scheme."""


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
    """An installed distribution of this project (any version) in the target's site dirs."""
    want = canonicalize_name(name)
    for lib in dict.fromkeys((scheme["purelib"], scheme["platlib"])):
        for d in Path(lib).glob("*.dist-info"):
            if canonicalize_name(d.name.removesuffix(".dist-info").split("-", 1)[0]) == want:
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


def install_wheel(candidate: Candidate, target: TorchTarget) -> Installed:
    """Install, verify, or leave nothing behind. ``InstallRefused`` for an environment that
    already holds the project; ``InputError`` for a wheel that does not verify."""
    scheme = scheme_of(target, candidate.name)
    existing = installed_dist(scheme, candidate.name)
    if existing is not None:
        raise InstallRefused(
            f"{existing.name} is already installed in {target.description}: uninstall it first"
        )
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
        raise InputError(f"{candidate.filename}: install failed, nothing left behind ({exc})") from exc
    except BaseException:
        dest.undo()
        raise
    return Installed(candidate, record.parent, len(dest.created_files))


def _find_record(scheme: dict[str, str], dist_info: str) -> Path:
    for lib in (scheme["platlib"], scheme["purelib"]):
        record = Path(lib) / dist_info / "RECORD"
        if record.is_file():
            return record
    raise InputError(f"{dist_info}/RECORD was not written")
