"""torchwheel on published wheels (``benchmarks/corpus.toml``) against the committed verdicts.

The ``ci = true`` subset is downloaded on demand with ``pip download`` and verified by
sha256; a failed download or a wrong hash FAILS the test (a skip would hide that nothing
was checked). The other wheels are compared when ``benchmarks/corpus.py --download`` has put
them in ``.cache/corpus/`` (and not collected otherwise).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from .lib.helpers import REPO, load_script

corpus = load_script("torchwheel_corpus", REPO / "benchmarks" / "corpus.py")
ENTRIES = corpus.load_corpus()
MB = 1_000_000


def test_the_list_covers_what_it_must() -> None:
    """At least 15 wheels of 10 projects, every OS, stable and unstable, one over 300 MB; the
    CI subset small (under ~175 MB: 150 until issue 22 added the ROCm flavour pairs and the
    runtime-picked builds, 20 MB) yet covering Linux, macOS, Windows, stable and unstable."""
    assert len(ENTRIES) >= 15
    assert len({e.project for e in ENTRIES}) >= 10
    assert {e.os for e in ENTRIES} == {"linux", "macos", "windows"}
    assert {"stable", "unstable"} <= {e.abi for e in ENTRIES}
    assert any(e.size > 300 * MB for e in ENTRIES)
    ci = [e for e in ENTRIES if e.ci]
    assert sum(e.size for e in ci) < 175 * MB
    assert {e.os for e in ci} == {"linux", "macos", "windows"}
    assert {"stable", "unstable"} <= {e.abi for e in ci}
    assert len({e.filename for e in ENTRIES}) == len(ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.filename)
def test_pins_are_consistent(entry: object) -> None:
    """The pinned name and version are the file's, and the sha256 is a full hex digest (a
    name that does not parse, k2's ``py3.9``, is split at its dashes as pip splits it)."""
    try:
        name, version, _, _ = parse_wheel_filename(entry.filename)  # type: ignore[attr-defined]
    except InvalidWheelFilename:
        raw_name, raw_version = entry.filename.split("-")[:2]  # type: ignore[attr-defined]
        name, version = canonicalize_name(raw_name), Version(raw_version)
    assert canonicalize_name(entry.project) == name  # type: ignore[attr-defined]
    assert str(version) == entry.version  # type: ignore[attr-defined]
    assert len(entry.sha256) == 64 and int(entry.sha256, 16) >= 0  # type: ignore[attr-defined]


def _check(entry: object, path: Path) -> None:
    actual = corpus.verdict(corpus.run_torchwheel(path))
    assert corpus.differences(entry, actual) == []
    shown = subprocess.run(
        [*corpus.torchwheel_cmd(), "show", "--no-config", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert contradictions(shown.stdout) == []


_BUILD_LINE = re.compile(r"^  torch build +loads on .*\((?P<tokens>[^)]*)\)$", re.M)
_NEEDS_LINE = re.compile(r"^  accelerator +needs an? (?P<kind>CUDA|ROCm|XPU)\b[^:;]* build of torch", re.M)


def contradictions(text: str) -> list[str]:
    """Lines of ``show`` that cannot both be true (issue 22: "loads on a CPU build" above
    "needs a ROCm 7 build"): the accelerator a line says every build needs must be the one
    kind the torch-build line names; with no torch-build line (any build), no line may say
    that one build is needed."""
    build, needs = _BUILD_LINE.search(text), _NEEDS_LINE.search(text)
    if needs is None:
        return []
    if build is None:
        return [] if "  torch build      any: " in text else [f"any build, yet: {needs.group(0).strip()}"]
    kinds = {t.split("-")[0] for t in build.group("tokens").split(", ")}
    return (
        []
        if kinds == {needs.group("kind").lower()}
        else [f"{build.group(0).strip()} / {needs.group(0).strip()}"]
    )


def test_the_contradiction_check_can_fail() -> None:
    text = (
        "  torch build      loads on a CPU build of torch (cpu)\n"
        "  accelerator      needs a ROCm 7 build of torch: libamdhip64.so.7\n"
    )
    assert contradictions(text) != []
    assert contradictions(text.replace("(cpu)", "(rocm-7)")) == []


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.ci], ids=lambda e: e.filename)
def test_ci_wheel(entry: object) -> None:
    try:
        path = corpus.ensure(entry, download=True)
    except corpus.CorpusError as exc:
        pytest.fail(str(exc))
    assert path is not None
    _check(entry, path)


# The rest of the list is the documented long run (`python benchmarks/corpus.py --download`):
# those wheels are compared here only when that run has cached them, and are not collected
# otherwise, so a machine without them reports no skip that could be mistaken for a check.
_CACHED = [e for e in ENTRIES if not e.ci and corpus.ensure(e, download=False) is not None]


if _CACHED:  # an empty parametrize would report a skip

    @pytest.mark.parametrize("entry", _CACHED, ids=lambda e: e.filename)
    def test_cached_wheel(entry: object) -> None:
        path = corpus.ensure(entry, download=False)
        assert path is not None
        _check(entry, path)


def test_a_wrong_pin_fails_loudly() -> None:
    """A wheel whose bytes differ from the pinned sha256 is an error, never a silent skip."""
    smallest = min((e for e in ENTRIES if e.ci), key=lambda e: e.size)
    wrong = dataclasses.replace(smallest, sha256="0" * 64)
    with pytest.raises(corpus.CorpusError, match="differs from the pinned"):
        corpus.ensure(wrong, download=True)
