"""The Dask recipe of docs/scan.md, run as written there on a ``LocalCluster`` of 2 worker
processes over a PEP 503 index of fixture wheels served from 127.0.0.1: its lines are the
lines ``torchwheel scan`` writes for the same index."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..lib.helpers import REPO, torchwheel
from ..lib.index_server import serve
from .test_scan import _index, _where, folder  # noqa: F401  (the module fixture)


def recipe() -> str:
    text = (REPO / "docs" / "scan.md").read_text()
    section = text.split("## Past one machine: Dask", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, "docs/scan.md lost its Dask recipe"
    return found.group(1)


def test_the_documented_dask_recipe_gives_the_scan_s_lines(folder: Path, tmp_path: Path) -> None:  # noqa: F811
    site = _index(folder, tmp_path / "site")
    out = tmp_path / "scan.jsonl"
    with serve(site) as (url, _):
        namespace: dict[str, Any] = {"INDEX": f"{url}/simple/"}
        exec(compile(recipe(), "docs/scan.md", "exec"), namespace)
        result = torchwheel("scan", f"{url}/simple/", "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    scanned = [json.loads(line) for line in out.read_text().splitlines()]
    dasked = namespace["lines"]
    assert len(dasked) == len(scanned) == 5
    assert sorted(dasked, key=_where) == sorted(scanned, key=_where)
    assert sum(line["error"] is None for line in dasked) == 4
