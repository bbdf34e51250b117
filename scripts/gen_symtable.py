"""Regenerate src/torchwheel/data/shim_versions.json from torch wheels.

The shipped table must be reproducible by anyone from public wheels, so this script
fetches them with the same pip that runs it (``pip download --no-deps``; a configured
find-links directory or index is honoured) instead of trusting whatever torch happens to
be installed. Output is deterministic, so a regeneration with unchanged wheels is a no-op
in git.

Usage: python scripts/gen_symtable.py [--torch 2.13.0 --torch 2.14.1] [--wheel-dir DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from torchwheel.symtable_cli import regenerate

#: Releases the shipped table is built from: the oldest one sets what "ungated" means,
#: the newest one bounds what the table knows.
DEFAULT_RELEASES = ("2.13.0", "2.14.1")
DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "src/torchwheel/data/shim_versions.json"


def download_wheel(release: str, directory: Path) -> Path:
    """Fetch one torch wheel for this interpreter's platform and return its path."""
    before = set(directory.glob("torch-*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"torch=={release}",
            "--no-deps",
            "--only-binary=:all:",
            "--dest",
            str(directory),
        ],
        check=True,
    )
    return find_wheel(release, directory, exclude=before)


def find_wheel(release: str, directory: Path, exclude: set[Path] | None = None) -> Path:
    """The torch wheel of ``release`` in ``directory`` (local tags like +cpu allowed)."""
    candidates = sorted(
        path for path in directory.glob("torch-*.whl") if path.name.split("-")[1].split("+")[0] == release
    )
    fresh = [path for path in candidates if path not in (exclude or set())]
    chosen = fresh or candidates
    if not chosen:
        raise SystemExit(f"no torch {release} wheel in {directory}")
    return chosen[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--torch",
        action="append",
        dest="releases",
        metavar="VERSION",
        help=f"torch release to scan (repeatable; default: {', '.join(DEFAULT_RELEASES)})",
    )
    parser.add_argument(
        "--wheel-dir",
        type=Path,
        help="use torch wheels already in this directory instead of downloading",
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    releases: list[str] = args.releases or list(DEFAULT_RELEASES)

    with tempfile.TemporaryDirectory(prefix="torchwheel-gen-") as temp:
        if args.wheel_dir is not None:
            wheels = [find_wheel(release, args.wheel_dir) for release in releases]
        else:
            wheels = [download_wheel(release, Path(temp)) for release in releases]
        table = regenerate(wheels, args.output, extend=False)

    counts = Counter("baseline" if v is None else str(v) for v in table.symbols.values())
    releases_text = ", ".join(table.sources)
    print(f"wrote {args.output}: {len(table.symbols)} symbols from torch {releases_text}")
    for version, count in sorted(counts.items()):
        print(f"  {version:>9}: {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
