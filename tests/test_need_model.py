"""One need model: a wheel's need read from its binaries (untagged) and the need read back
from what ``tag`` wrote into WHEEL are the same, axis by axis, and so is every verdict.

The installer side reads a tagged wheel's WHEEL fields only and an untagged wheel's
binaries; if the two ever disagreed, the answer to "does it load here" would depend on
whether the author ran ``tag``. Every fixture wheel and every corpus wheel of the CI subset
(and the rest of the corpus where it is cached) is tagged for real (``tagging.apply.write_tagged``
writes the file) and read back by ``selection.candidates.read_candidate`` as ``select`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from torchwheel.analysis.load import load_facts
from torchwheel.analysis.wheelfacts import torch_need_of
from torchwheel.errors import InputError
from torchwheel.selection.candidates import read_candidate
from torchwheel.tables.tableset import shipped_tables
from torchwheel.tagging.apply import write_tagged
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.backend import ANY_BUILD, parse_backend
from torchwheel.torchabi.need import TorchNeed
from torchwheel.torchabi.verdicts import minor_verdict, verdict

from .lib.helpers import REPO, load_script

corpus = load_script("torchwheel_corpus", REPO / "benchmarks" / "corpus.py")
BACKENDS = [parse_backend(b) for b in ("cpu", "cu126", "cu130", "rocm7.1", "xpu")]


def _axes(need: TorchNeed) -> dict[str, object]:
    return {
        "kind": need.kind,
        "floor": need.floor,
        "releases": need.releases,
        "builds": need.builds,
        "gpu_code": need.gpu_code,
    }


def _round_trip(wheel: Path, out: Path) -> tuple[TorchNeed, TorchNeed] | str:
    """(the binaries' need with the requirement tag writes, the need read back), or the
    refusal tag gave."""
    (facts,) = list(load_facts((wheel,), (), shipped_tables(), verify_hashes=True))
    try:
        result = write_tagged(facts, TagOptions(), out, in_place=False, dry_run=False)
    except InputError as exc:
        return str(exc)
    written = result.target if result.target is not None else wheel
    try:
        back = read_candidate(written, "test")
    except InputError as exc:  # a broken wheel: selection refuses it tagged or not
        with pytest.raises(InputError):
            read_candidate(wheel, "test")
        return f"unreadable: {exc}"
    (tagged_facts,) = list(load_facts((written,), (), shipped_tables(), verify_hashes=False))
    return torch_need_of(tagged_facts), back.torch


# what tag refuses to write (the wheel would lie), each a documented refusal
REFUSALS = (
    "unreadable: ",
    "pass --build-torch",
    "newer than any torch release",
    "newer than this torchwheel's tables",
    "does not match",
    "cannot be written",
    "admits no torch the binaries load on",
    "not a valid wheel file name",  # TW414: tag keeps the name's tags and will not guess them
    "fails on every torch (TW304)",  # a module imported without its hook: no torch to state
)


def _same_need(wheel: Path, out: Path) -> bool:
    """True when compared; False when tag refused (with one of its documented reasons)."""
    found = _round_trip(wheel, out)
    if isinstance(found, str):
        assert any(r in found for r in REFUSALS), found
        return False
    binaries, declared = found
    # read from WHEEL; where an axis could not be read, tag leaves it out and the binaries are
    # read again (an unknown axis is never written as a value)
    assert declared.source.startswith("WHEEL") == (binaries.builds is not None), (wheel.name, declared.source)
    assert _axes(binaries) == _axes(declared), wheel.name
    for minor in torch_releases.shipped_releases().known_minors():
        for build in [None, *BACKENDS]:
            a = minor_verdict(binaries, None, minor, build, tables=shipped_tables())
            b = minor_verdict(declared, None, minor, build, tables=shipped_tables())
            assert (a.cell, a.axis, a.loads_on) == (b.cell, b.axis, b.loads_on), (wheel.name, minor, build)
    return True


def test_tagged_and_untagged_fixture_wheels_have_one_need(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    wheels = {n: p for n, p in fixture_wheels.items() if not n.startswith("bad")}  # unreadable on purpose
    compared = 0
    for name, wheel in sorted(wheels.items()):
        out = tmp_path / name
        out.mkdir()
        compared += _same_need(wheel, out)
    assert compared > 40, compared


def _corpus_wheels() -> list[object]:
    entries = corpus.load_corpus()
    return [e for e in entries if e.ci or corpus.ensure(e, download=False) is not None]


@pytest.mark.parametrize("entry", _corpus_wheels(), ids=lambda e: e.filename)  # type: ignore[attr-defined]
def test_tagged_and_untagged_corpus_wheels_have_one_need(entry: object, tmp_path: Path) -> None:
    try:
        path = corpus.ensure(entry, download=True)
    except corpus.CorpusError as exc:
        pytest.fail(str(exc))
    assert path is not None
    _same_need(path, tmp_path)


def test_no_axis_is_any_by_default(fixture_wheels: dict[str, Path]) -> None:
    """A CUDA wheel's need names its build; a CPU target never gets a yes from it."""
    (facts,) = list(load_facts((fixture_wheels["cuda13"],), (), shipped_tables(), verify_hashes=False))
    need = torch_need_of(facts)
    assert need.builds is not None and need.builds != ANY_BUILD
    cpu = verdict(need, None, Version("2.13.0"), parse_backend("cpu"), tables=shipped_tables())
    assert (cpu.cell, cpu.axis) == ("no", "build")
    assert "libcudart.so.13" in cpu.reason
    unknown = verdict(need, None, Version("2.13.0"), None, tables=shipped_tables())
    assert unknown.cell == "unknown" and "--torch-backend" in unknown.reason
