#!/usr/bin/env python3
"""Are torchwheel's tables behind the torch releases on the configured index? Says what is
missing and which generator fills it; exit 1 when something is, 0 when they are current.

    .venv/bin/python scripts/tables_stale.py                      # pip's configured index
    .venv/bin/python scripts/tables_stale.py --tables FILE        # a tables file instead
    .venv/bin/python scripts/tables_stale.py --versions 2.15.0,2.16.0

The tables (``docs/tables.md``): the release list (``data/torch_releases.json``), the shim
table's source releases (``data/shim_versions.json``), and each platform's export index
(``data/torch_exports_<platform>.bin``, the newest patch of each minor from 2.4). The index's
versions come from ``pip index versions torch`` (the ordinary client, so its configuration:
index URL, extra indexes, credentials), final 2.x releases only. A release step of the
checklist in ``docs/tables.md``; a CI job can run it on a schedule.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from packaging.version import InvalidVersion, Version

from torchwheel.tables.exports import ExportIndex
from torchwheel.tables.symtable import BASELINE, SymbolTable

PLATFORMS = ("linux-x86_64", "macos-arm64", "windows-x86_64")
OLDEST_EXPORTS = (2, 4)  # scripts/gen_torch_exports.py's first minor
_AVAILABLE = re.compile(r"^Available versions:\s*(.+)$", re.MULTILINE)


def parse_pip_index(text: str) -> list[Version]:
    """The versions of ``pip index versions torch``'s "Available versions:" line."""
    match = _AVAILABLE.search(text)
    if match is None:
        raise SystemExit(f"pip index versions: no 'Available versions' line in {text.strip()[:200]!r}")
    found = []
    for part in match.group(1).split(","):
        try:
            found.append(Version(part.strip()))
        except InvalidVersion:
            continue
    return found


def index_versions() -> list[Version]:
    """torch's versions on the index pip is configured with."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "torch"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"pip index versions torch failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
        )
    return parse_pip_index(proc.stdout)


def finals(versions: Iterable[Version]) -> list[Version]:
    """Final public 2.x releases (a local ``+cpu`` build is its public release)."""
    out = {
        Version(v.public) for v in versions if v.major == 2 and not v.is_prerelease and not v.is_devrelease
    }
    return sorted(out)


def _minor(v: Version) -> tuple[int, int]:
    return (v.major, v.minor)


def missing(
    available: Sequence[Version],
    releases: Sequence[Version],
    table: SymbolTable,
    indexes: dict[str, ExportIndex | None],
) -> list[str]:
    """One line per table that lacks a release the index has, naming what regenerates it."""
    out = []
    lacking = [v for v in available if v not in set(releases)]
    if lacking:
        out.append(
            f"release list: lacks {', '.join(map(str, lacking))} (it ends at {releases[-1]}): "
            "scripts/torch_releases.py"
        )
    sourced = {_minor(Version(s)) for s in table.sources}
    minors = sorted({_minor(v) for v in available if _minor(v) >= (BASELINE.major, BASELINE.minor)})
    unread = [m for m in minors if m not in sourced]
    if unread:
        shown = ", ".join(f"{a}.{b}" for a, b in unread)
        out.append(f"shim table: no source release of {shown}: scripts/gen_symtable.py --torch X.Y.0 ...")
    newest_patch: dict[tuple[int, int], Version] = {}
    for v in available:
        if _minor(v) >= OLDEST_EXPORTS:
            newest_patch[_minor(v)] = max(v, newest_patch.get(_minor(v), v))
    for platform, index in indexes.items():
        have = {_minor(r): r for r in index.releases} if index is not None else {}
        behind = [v for m, v in sorted(newest_patch.items()) if m not in have or have[m] < v]
        if behind:
            out.append(
                f"exports {platform}: lacks {', '.join(map(str, behind))}: "
                f"scripts/gen_torch_exports.py --platform {platform}"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tables", type=Path, help="a tables file (`torchwheel symbols update -o`)")
    parser.add_argument("--versions", help="these torch versions instead of the index's (comma-separated)")
    args = parser.parse_args(argv)
    from torchwheel.tables.tablechoice import read_tables_file
    from torchwheel.tables.tableset import shipped_tables

    chosen = read_tables_file(args.tables, "--tables") if args.tables else shipped_tables()
    indexes = {p: chosen.exports_index(p) for p in PLATFORMS}
    if args.versions:
        available = finals(Version(v) for v in args.versions.split(","))
    else:
        available = finals(index_versions())
    lines = missing(available, chosen.releases.versions, chosen.shims, indexes)
    where = args.tables or "the shipped tables"
    if not lines:
        print(f"{where}: current (the index's newest torch is {available[-1] if available else 'none'})")
        return 0
    print(f"{where} are behind the index (newest torch {available[-1]}):")
    print("\n".join(f"  {line}" for line in lines))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
