#!/usr/bin/env python3
"""Regenerate ``src/torchwheel/data/torch_releases.json``: every final torch 2.x release on PyPI.

Which torch releases a requirement admits is answered against this list (``torchabi.torch_releases``),
so ``torch==2.9.1`` is understood as the one release it names and ``torch>=2.10`` as the
releases from 2.10.0 on. The list is read from PyPI's PEP 691 JSON simple page (the only
network access, at generation time; torchwheel itself never goes online):

    .venv/bin/python scripts/torch_releases.py
"""

from __future__ import annotations

import json
import sys
import urllib.request
from datetime import date
from pathlib import Path

from packaging.version import InvalidVersion, Version

URL = "https://pypi.org/simple/torch/"
OUT = Path(__file__).resolve().parents[1] / "src" / "torchwheel" / "data" / "torch_releases.json"


def main() -> int:
    request = urllib.request.Request(URL, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        page = json.load(response)
    releases = []
    for text in page["versions"]:
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        if v.major == 2 and not v.is_prerelease and not v.is_devrelease and not v.local:
            releases.append(v)
    doc = {
        "schema_version": 1,
        "source": URL,
        "retrieved": date.today().isoformat(),
        "releases": [str(v) for v in sorted(releases)],
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(releases)} releases, {doc['releases'][0]} .. {doc['releases'][-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
