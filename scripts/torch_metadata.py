#!/usr/bin/env python3
"""Read what PyPI's torch wheels of one release require, without downloading them.

Each wheel's METADATA is read over HTTP range requests with torchwheel's own reader
(``net/ranged.py``: about 2 MB of a 550 MB wheel), and the CUDA build its requirements name
on its platform is printed (``cuda-toolkit[...]==13.2.2``: cu132), the way torchwheel reads a
torch it judges from its METADATA alone. The release-day checklist (``docs/tables.md``) runs it
first; ``--out DIR`` writes the requirement lines verbatim, as ``fixtures/metadata/torch/``
holds them (the tests copy torch's lines from there).

Usage: python scripts/torch_metadata.py 2.16.0 [--python cp311] [--out fixtures/metadata/torch]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from pathlib import Path

from torchwheel.net import fetch
from torchwheel.net.ranged import RangedWheel, RemoteFile
from torchwheel.torchabi.accelerators import platform_markers, torch_build_of_requirements
from torchwheel.wheel.metadata import parse_metadata

SIMPLE = "https://pypi.org/simple/torch/"
_KEPT = ("Metadata-Version:", "Name:", "Version:", "Requires-Python:", "Requires-Dist:", "Provides-Extra:")
_SYSTEMS = {"manylinux": "linux", "win": "win32", "macosx": "darwin"}


def wheels(version: str, python: str) -> list[tuple[str, str, str]]:
    """(file name, url, sha256) of the release's wheels for one CPython, from PyPI's JSON page."""
    request = urllib.request.Request(SIMPLE, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        page = json.load(response)
    prefix = f"torch-{version}-{python}-{python}-"
    return [
        (f["filename"], f["url"], f["hashes"]["sha256"])
        for f in page["files"]
        if f["filename"].startswith(prefix)
    ]


def metadata(url: str, filename: str) -> str:
    version = filename.split("-")[1]
    with tempfile.TemporaryDirectory() as scratch:
        wheel = RangedWheel(RemoteFile(fetch.Session(), url), filename, Path(scratch))
        with wheel:
            return wheel.read_text(f"torch-{version}.dist-info/METADATA")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("version")
    parser.add_argument("--python", default="cp311")
    parser.add_argument("--out", type=Path, help="write each wheel's requirement lines here")
    args = parser.parse_args(argv)
    found = wheels(args.version, args.python)
    if not found:
        print(f"no torch {args.version} wheels for {args.python} on PyPI", file=sys.stderr)
        return 1
    for filename, url, sha256 in found:
        text = metadata(url, filename)
        system = next((s for word, s in _SYSTEMS.items() if f"-{word}" in filename), None)
        build = torch_build_of_requirements(parse_metadata(text).requirements, platform_markers(system))
        print(f"{filename} ({sha256[:12]}): {build if build is not None else 'no CUDA runtime required'}")
        lines = [line for line in text.split("\n\n", 1)[0].splitlines() if line.startswith(_KEPT)]
        for line in lines:
            if line.startswith("Requires-Dist:") and "extra ==" not in line:
                print(f"    {line}")
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{filename}.METADATA").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
