"""Is the project venv complete? ``scripts/dev-setup`` asks before it runs pip: exit 0 when
every requirement of ``pyproject.toml`` (``[project] dependencies`` and the ``test`` extra,
markers evaluated here) is installed at a version it allows and ``torchwheel`` is this
checkout's editable install; else exit 1, naming the first thing missing (``--after-pip``:
said as the error it then is).

Read from the installed distributions' metadata (``importlib.metadata``, ``packaging``, both
in the venv as torchwheel's own dependencies): nothing is imported, so the answer takes a
fraction of a second where ``pip install -e '.[test]'`` takes half a minute to say the same.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import tomllib
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a venv just made: nothing installed yet
    print("dev-setup: packaging is not installed: running pip", file=sys.stderr)
    sys.exit(1)

ROOT = Path(__file__).resolve().parents[1]


def missing(pyproject: Path = ROOT / "pyproject.toml") -> str | None:
    """The first requirement the venv does not meet, or None when it meets them all."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    for text in wanted:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": "test"}):
            continue
        have = installed.get(canonicalize_name(req.name))
        if have is None:
            return f"{req.name} is not installed"
        if not req.specifier.contains(have, prereleases=True):
            return f"{req.name} {have} does not meet {req}"
    try:
        dist = importlib.metadata.distribution("torchwheel")
    except importlib.metadata.PackageNotFoundError:
        return "torchwheel is not installed"
    if dist.version != project["version"]:
        return f"torchwheel {dist.version} is installed, this checkout is {project['version']}"
    direct = json.loads(dist.read_text("direct_url.json") or "{}")  # PEP 610: where pip installed it from
    if not direct.get("dir_info", {}).get("editable"):
        return "torchwheel is not an editable install"
    if direct.get("url") != ROOT.as_uri():
        return f"torchwheel is installed from {direct.get('url')}, not this checkout"
    return None


def main(argv: list[str]) -> int:
    problem = missing()
    if problem is None:
        return 0
    if "--after-pip" in argv:
        print(f"dev-setup: error: {problem}, after pip install -e '.[test]'", file=sys.stderr)
    else:
        print(f"dev-setup: {problem}: running pip", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
