"""``selection.candidates``: one candidate file opened once and hashed whole once (issue 25),
its page's digests checked in that pass, its defects (``wheel.defects``) its reason."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from torchwheel.errors import InputError
from torchwheel.publish import simple_index
from torchwheel.selection import discovery
from torchwheel.selection.candidates import read_candidate

from .counting import Counter
from .made import DEMO, tagged_wheel


def _page(folder: Path, wheel: Path, digest: str) -> Path:
    """A PEP 503 project page beside the wheel, its link carrying ``#sha256=``."""
    page = folder / "index.html"
    page.write_text(f'<html><body><a href="{wheel.name}#sha256={digest}">{wheel.name}</a></body></html>')
    return page


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("untagged", [False, True], ids=["tagged", "untagged"])
def test_a_page_listed_candidate_is_opened_once_and_hashed_once(
    untagged: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: three opens and two whole-file hashes (the page's digest, then the sha256),
    four opens for an untagged wheel (its binaries read through a second archive). No
    member is hashed for RECORD here (``verify_hashes`` is ``index``'s)."""
    wheel = Path(shutil.copy2(DEMO, tmp_path)) if untagged else tagged_wheel(tmp_path)
    page = _page(tmp_path, wheel, _sha256(wheel))
    counted = Counter(wheel).install(monkeypatch)
    got = discovery.gather([str(page)])
    monkeypatch.undo()
    (cand,) = got.candidates
    assert not got.skipped
    assert cand.sha256 == _sha256(wheel)
    assert (counted.opens, counted.hashed) == (1, wheel.stat().st_size)
    assert cand.torch.source == ("binaries (untagged wheel)" if untagged else "WHEEL Torch-ABI")


def test_a_folder_candidate_is_opened_once_and_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = tagged_wheel(tmp_path)
    counted = Counter(wheel).install(monkeypatch)
    (cand,) = discovery.gather([str(tmp_path)]).candidates
    monkeypatch.undo()
    assert (counted.opens, counted.hashed) == (1, wheel.stat().st_size)
    assert cand.sha256 == _sha256(wheel)


def test_a_known_sha256_is_not_hashed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A download checked against its page's sha256 as it came (``remote``)."""
    wheel = tagged_wheel(tmp_path)
    counted = Counter(wheel).install(monkeypatch)
    cand = read_candidate(wheel, "test", sha256="ab" * 32)
    monkeypatch.undo()
    assert (counted.opens, counted.hashed, cand.sha256) == (1, 0, "ab" * 32)


def test_a_digest_that_differs_is_the_reason(tmp_path: Path) -> None:
    wheel = tagged_wheel(tmp_path)
    with pytest.raises(InputError, match=r"^sha256 differs from the link on PAGE$"):
        read_candidate(wheel, "PAGE", page_hashes={"sha256": "0" * 64})
    read_candidate(wheel, "PAGE", page_hashes={"sha256": _sha256(wheel), "nohash": "x"})  # unknown: ignored


def test_a_truncated_file_reports_its_digest_not_its_zip(tmp_path: Path) -> None:
    """The page's digest is checked before the archive is parsed: a cut-off download says
    what it is, through ``select`` as through ``read_candidate``."""
    wheel = tagged_wheel(tmp_path / "full")
    digest = _sha256(wheel)
    cut = tmp_path / wheel.name
    cut.write_bytes(wheel.read_bytes()[:200])
    got = discovery.gather([str(_page(tmp_path, cut, digest))])
    (skipped,) = got.skipped
    assert skipped.reason == f"sha256 differs from the link on {tmp_path / 'index.html'}"
    assert skipped.name == "twunit"
    with pytest.raises(InputError, match="zip archive"):  # no page: the archive says it
        read_candidate(cut, "folder")


def test_a_defect_of_the_archive_is_the_reason(tmp_path: Path) -> None:
    wheel = tagged_wheel(tmp_path, record=False)
    with pytest.raises(InputError) as caught:
        read_candidate(wheel, "folder")
    assert str(caught.value) == (
        f"{wheel.name}: TW401 twunit-1.0.dist-info/RECORD: the wheel has no RECORD: installers refuse it; "
        "rebuild, or run `torchwheel tag` to write one"
    )


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"gone\.whl: No such file or directory$"):
        read_candidate(tmp_path / "gone.whl", "folder", page_hashes={"sha256": "0" * 64})


def test_reading_candidates_never_loads_the_rules(tmp_path: Path) -> None:
    """Choosing a wheel needs the archive's defects, a fact of the wheel layer: the rules
    (and ``check``'s registry) stay unloaded, untagged wheels included."""
    wheel = tagged_wheel(tmp_path)
    code = (
        "import sys; from pathlib import Path; from torchwheel.selection.candidates import read_candidate; "
        f"read_candidate(Path({str(wheel)!r}), 't'); read_candidate(Path({str(DEMO)!r}), 't'); "
        "print(sorted(m for m in sys.modules if m.startswith('torchwheel.rules')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_index_serves_the_metadata_it_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``index`` hashes every member too, through the same descriptor, and serves the
    METADATA read then (before: a second open per wheel in ``simple_index.read_entry``)."""
    wheel = tagged_wheel(tmp_path)
    counted = Counter(wheel).install(monkeypatch)
    (entry,), _ = simple_index.index_entries(discovery.gather([str(tmp_path)], verify_hashes=True))
    monkeypatch.undo()
    assert counted.opens == 1
    with zipfile.ZipFile(wheel) as zf:
        assert entry.metadata == zf.read("twunit-1.0.dist-info/METADATA")
    assert read_candidate(wheel, "select").metadata == b""  # kept for index alone
