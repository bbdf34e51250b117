"""Ready to publish (issue 42, item 10): ``python -m build`` gives an sdist and a wheel that
``twine check --strict`` passes; the wheel installs into a fresh virtual environment (its
dependencies from the configured index, as a user's ``pip install torchwheel`` gets them) and
runs the README's first command there; the release workflow publishes exactly what was built,
by trusted publishing.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from ..lib.helpers import REPO, fresh_venv, pip_install

WORKFLOW = REPO / ".github" / "workflows" / "release.yml"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The release job's build: ``python -m build`` (an isolated build: the sdist, then the
    wheel from the unpacked sdist), and ``twine check --strict`` on both."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    files = {p.suffix: p for p in out.iterdir()}
    assert sorted(p.name for p in out.iterdir()) == [
        "torchwheel-0.1.0-py3-none-any.whl",
        "torchwheel-0.1.0.tar.gz",
    ]
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, files.values())],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0 and checked.stdout.count("PASSED") == 2, checked.stdout + checked.stderr
    return {"wheel": files[".whl"], "sdist": files[".gz"]}


def test_the_wheel_ships_the_package_and_its_data(dist: dict[str, Path]) -> None:
    with zipfile.ZipFile(dist["wheel"]) as zf:
        names = set(zf.namelist())
    for needed in ("torchwheel/py.typed", "torchwheel/data/rules.toml", "torchwheel/data/torch_releases.json",
                   "torchwheel/include/torchwheel/stable_abi_marker.h", "torchwheel/data/shim_versions.json"):  # fmt: skip
        assert needed in names, needed
    assert any(n.startswith("torchwheel/data/torch_exports_") for n in names)
    with tarfile.open(dist["sdist"]) as tf:
        members = tf.getnames()
    assert "torchwheel-0.1.0/README.md" in members and "torchwheel-0.1.0/CHANGELOG.md" in members
    assert not [
        m for m in members if m.startswith("torchwheel-0.1.0/tests/")
    ]  # they need the whole repository


def _first_command() -> list[str]:
    """The README's first command, from its first ``sh`` block: what it runs with torchwheel."""
    (line,) = re.findall(r"```sh\n(.*?)\n", (REPO / "README.md").read_text())[:1]
    parts = [p.strip() for p in line.split(" && ")]
    assert parts[:2] == ["python3 -m venv .venv", ".venv/bin/pip install -q -e ."]
    runs = [p.removeprefix(".venv/bin/") for p in parts[2:]]
    assert [r.split()[:2] for r in runs] == [["torchwheel", "check"], ["torchwheel", "show"]]
    return runs


def test_the_wheel_installs_into_a_fresh_venv_and_runs_the_readmes_first_command(
    dist: dict[str, Path], tmp_path: Path
) -> None:
    python = fresh_venv(tmp_path / "venv")
    installed = pip_install(python, str(dist["wheel"]))
    assert installed.returncode == 0, installed.stderr[-3000:]
    for command in _first_command():
        words = command.split()
        result = subprocess.run(
            [str(python.parent / words[0]), *words[1:]], cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        if words[1] == "check":
            assert "1 input checked: 0 error(s), 0 warning(s), 0 info(s) - all clean" in result.stdout
    where = subprocess.run(
        [python, "-c", "import torchwheel; print(torchwheel.__file__)"], capture_output=True, text=True
    )
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv")  # the wheel's, not this checkout's


def test_the_release_checklist_runs_what_the_release_job_runs() -> None:
    """docs/releasing.md's check before the tag is the release job's own build step, the one
    this module's ``dist`` fixture runs: a checklist that passes promises a job that passes."""
    page = (REPO / "docs" / "releasing.md").read_text()
    (block,) = re.findall(
        r"<!-- tested: tests/e2e/test_distribution.py -->\n\s*```sh\n(.*?)```", page, re.DOTALL
    )
    commands = [line.strip() for line in block.splitlines() if line.strip()]
    assert commands == ["python -m build", "python -m twine check --strict dist/*"]
    job = "\n".join(
        str(s.get("run", "")) for s in yaml.safe_load(WORKFLOW.read_text())["jobs"]["build"]["steps"]
    )
    assert all(f"{c}\n" in job for c in commands)
    (tag,) = re.findall(r"git tag (v\S+) && git push origin (v\S+)", page)
    version = re.search(r'^version = "(.*)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert version is not None and tag == (f"v{version[1]}",) * 2  # the first release's tag is this version


def test_the_release_workflow_builds_and_publishes_by_trusted_publishing() -> None:
    flow = yaml.safe_load(WORKFLOW.read_text())
    assert flow[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key `on` as True
    build, publish = flow["jobs"]["build"], flow["jobs"]["publish"]
    script = "\n".join(str(s.get("run", "")) for s in build["steps"])
    assert "python -m build\n" in script and "python -m twine check --strict dist/*" in script
    assert publish["needs"] == "build" and publish["environment"]["name"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}  # OIDC: no token stored anywhere
    (upload,) = [s for s in publish["steps"] if "pypa/gh-action-pypi-publish" in str(s.get("uses", ""))]
    assert "with" not in upload  # no password, no repository-url: PyPI, by its trusted publisher
    assert "secrets." not in WORKFLOW.read_text()
    version = re.search(r'^version = "(.*)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert version is not None and "v$version" in WORKFLOW.read_text()  # a tag must match it
