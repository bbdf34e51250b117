"""`torchwheel index`: a PEP 503 index plus per-torch sub-indexes that plain pip and uv use.

One release (``twidx`` 1.0.0) built three ways from the fixture binaries (stable 2.10,
stable 2.12, unstable 2.13), each tagged by `torchwheel tag --local-label torchX.Y`; stub
torch distributions stand for the other torch releases (choosing needs only the version).
"""

from __future__ import annotations

import hashlib
import html.parser
import zipfile
from pathlib import Path
from urllib.parse import unquote

import pytest

from ..lib.helpers import torchwheel
from ..lib.publish_helpers import (
    installed_dist_info,
    labelled,
    labelled_release,
    pip,
    untagged_builds,
    uv,
    venv_with_torch,
)


@pytest.fixture(scope="module")
def release(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return labelled_release(built_fixtures, tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="module")
def index(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("idx") / "index"
    result = torchwheel("index", str(release), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def _anchors(page: Path) -> list[dict[str, str | None]]:
    parser = _Anchors()
    parser.feed(page.read_text())
    return parser.anchors


def _files(page: Path) -> list[str]:
    return sorted(unquote(str(a["href"]).split("#")[0].rsplit("/", 1)[1]) for a in _anchors(page))


_wheel = labelled


def test_per_torch_pages_list_the_best_loading_build(index: Path) -> None:
    expected = {"2.9": None, "2.10": "210", "2.11": "210", "2.12": "212", "2.13": "212", "2.15": "212"}
    for torch, build in expected.items():
        page = index / f"torch-{torch}" / "simple" / "twidx" / "index.html"
        if build is None:  # nothing loads on this torch: no per-torch index at all
            assert not (index / f"torch-{torch}").exists(), torch
        else:
            assert _files(page) == [_wheel(build)], torch
    assert _files(index / "simple" / "twidx" / "index.html") == sorted(
        _wheel(b) for b in ("210", "212", "213")
    )


def test_links_carry_pep_503_658_714_attributes(index: Path) -> None:
    page = index / "torch-2.12" / "simple" / "twidx" / "index.html"
    (a,) = _anchors(page)
    href = str(a["href"])
    target = (page.parent / unquote(href.split("#")[0])).resolve()
    assert href.split("#")[1] == "sha256=" + hashlib.sha256(target.read_bytes()).hexdigest()
    assert a["data-requires-python"] == ">=3.9"  # the parser unescaped it
    assert 'data-requires-python="&gt;=3.9"' in page.read_text()
    meta = Path(f"{target}.metadata").read_bytes()
    assert (
        a["data-core-metadata"]
        == a["data-dist-info-metadata"]
        == "sha256=" + hashlib.sha256(meta).hexdigest()
    )
    with zipfile.ZipFile(target) as zf:
        (member,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        assert meta == zf.read(member)
    assert b"Requires-Dist: torch>=2.12" in meta
    root = (index / "simple" / "index.html").read_text()
    assert '<a href="twidx/">twidx</a>' in root and "pypi:repository-version" in root


@pytest.mark.parametrize(("torch", "build"), [("2.11", "210"), ("2.13", "212")])
def test_pip_installs_the_right_build_from_the_torch_index(
    index: Path, tmp_path: Path, torch: str, build: str
) -> None:
    python = venv_with_torch(tmp_path / "venv", torch, tmp_path / "stub")
    url = (index / f"torch-{torch}" / "simple").as_uri()
    result = pip(python, "--index-url", url, "twidx")
    assert result.returncode == 0, result.stderr
    wheel_file = (installed_dist_info(python, "twidx") / "WHEEL").read_text()
    assert f"Torch-ABI: {build[0]}.{build[1:]}" in wheel_file
    assert (
        f"Version: 1.0.0+torch{build[0]}.{build[1:]}"
        in (installed_dist_info(python, "twidx") / "METADATA").read_text()
    )


def test_pip_finds_nothing_below_every_target(index: Path, tmp_path: Path) -> None:
    python = venv_with_torch(tmp_path / "venv", "2.9", tmp_path / "stub")
    result = pip(python, "--index-url", (index / "torch-2.9" / "simple").as_uri(), "twidx")
    assert result.returncode == 1  # pip's error exit
    assert "No matching distribution" in result.stderr


def test_uv_installs_the_right_build_from_the_torch_index(index: Path, tmp_path: Path) -> None:
    python = venv_with_torch(tmp_path / "venv", "2.12", tmp_path / "stub")
    url = (index / "torch-2.12" / "simple").as_uri()
    result = uv("pip", "install", "--python", str(python), "--index-url", url, "twidx", cache=tmp_path / "uv")
    assert result.returncode == 0, result.stderr
    assert "Torch-ABI: 2.12" in (installed_dist_info(python, "twidx") / "WHEEL").read_text()


def test_rewrites_its_own_index_atomically_and_refuses_foreign_dirs(release: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    assert torchwheel("index", str(release), "-o", str(out)).returncode == 0
    one = release / _wheel("210")
    again = torchwheel("index", str(one), "-o", str(out))
    assert again.returncode == 0, again.stderr
    assert _files(out / "simple" / "twidx" / "index.html") == [_wheel("210")]
    assert [p.name for p in tmp_path.iterdir()] == ["idx"]  # no temp or old tree left
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    refused = torchwheel("index", str(release), "-o", str(foreign))
    assert refused.returncode == 2
    assert "not an index torchwheel wrote" in refused.stderr and "Traceback" not in refused.stderr
    assert [p.name for p in foreign.iterdir()] == ["keep.txt"]


def test_untagged_wheels_are_read_once_and_reported(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    raw = untagged_builds(built_fixtures, tmp_path / "raw")
    result = torchwheel("index", str(raw["212"]), "-o", str(tmp_path / "idx"))
    assert result.returncode == 0, result.stderr
    assert "untagged" in result.stderr and "torchwheel tag" in result.stderr
    assert _files(tmp_path / "idx" / "torch-2.12" / "simple" / "twidx" / "index.html") == [raw["212"].name]


def test_a_corrupt_wheel_stops_the_index(release: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / _wheel("210")).write_bytes((release / _wheel("210")).read_bytes())
    (folder / "twidx-1.0.0-9-cp39-abi3-manylinux_2_28_x86_64.whl").write_bytes(b"PK\x03\x04 not a zip")
    result = torchwheel("index", str(folder), "-o", str(tmp_path / "idx"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "twidx-1.0.0-9" in result.stderr
    assert not (tmp_path / "idx").exists()


def test_two_different_files_of_one_name_are_refused(release: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with zipfile.ZipFile(release / _wheel("210")) as zin, zipfile.ZipFile(other / _wheel("210"), "w") as zout:
        for info in zin.infolist():  # the same members stored, not deflated: other bytes
            data = zin.read(info)
            info.compress_type = zipfile.ZIP_STORED
            zout.writestr(info, data)
    result = torchwheel("index", str(release), str(other), "-o", str(tmp_path / "idx"))
    assert result.returncode == 2
    assert "two different files of this name" in result.stderr


def test_index_reads_no_binaries_of_tagged_wheels(release: Path, tmp_path: Path) -> None:
    """A tagged wheel whose compiled member is garbage still indexes from its WHEEL line: its
    bytes are hashed against RECORD (RECORD agrees here), never read as a binary."""
    from torchwheel.wheel.record import record_hash

    src = release / _wheel("212")
    broken = tmp_path / "in" / src.name
    broken.parent.mkdir()
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(broken, "w") as zout:
        members = {i.filename: zin.read(i) for i in zin.infolist()}
        garbage = {n: b"\0" * len(d) for n, d in members.items() if n.endswith(".so")}
        for info in zin.infolist():
            data = garbage.get(info.filename, members[info.filename])
            if info.filename.endswith("/RECORD"):
                rows = data.decode().splitlines()
                for n, g in garbage.items():
                    rows = [f"{n},{record_hash(g)},{len(g)}" if r.startswith(f"{n},") else r for r in rows]
                data = ("\n".join(rows) + "\n").encode()
            zout.writestr(info, data)
    result = torchwheel("index", str(broken.parent), "-o", str(tmp_path / "idx"))
    assert result.returncode == 0, result.stderr
    assert _files(tmp_path / "idx" / "torch-2.12" / "simple" / "twidx" / "index.html") == [src.name]


def test_unstable_build_is_listed_on_its_minor_only(release: Path, tmp_path: Path) -> None:
    """Alone, the version-locked build serves torch 2.13 only; beside a stable build that also
    loads there, the stable one is listed (the rule `select` ranks by)."""
    alone = torchwheel("index", str(release / _wheel("213")), "-o", str(tmp_path / "a"))
    assert alone.returncode == 0, alone.stderr
    for torch in ("2.12", "2.13", "2.14"):
        page = tmp_path / "a" / f"torch-{torch}" / "simple" / "twidx" / "index.html"
        assert page.exists() == (torch == "2.13"), torch
    both = torchwheel(
        "index", str(release / _wheel("213")), str(release / _wheel("210")), "-o", str(tmp_path / "b")
    )
    assert both.returncode == 0, both.stderr
    assert _files(tmp_path / "b" / "torch-2.13" / "simple" / "twidx" / "index.html") == [_wheel("210")]


def test_real_extensions_per_torch_index(tmp_path: Path) -> None:
    """The real_ext release (torch's BuildExtension: stable 2.10, stable 2.12 as +torch2.12,
    unstable as +torch2.13) served per torch; pip on a 2.12 torch gets the 2.12 build."""
    from ..lib.release_set import build_release, candidate_folders

    labels = candidate_folders(build_release(), tmp_path / "cand")["s210"].parent
    out = tmp_path / "idx"
    result = torchwheel("index", str(labels), "-o", str(out))
    assert result.returncode == 0, result.stderr
    stable, locked = "cp39-abi3-linux_x86_64.whl", "cp311-cp311-linux_x86_64.whl"
    expected = {
        "2.9": [],
        "2.11": [f"twdemo_stable-0.1.0-{stable}"],
        "2.12": [f"twdemo_stable-0.1.0+torch2.12-{stable}"],
        # another tag set is another choice: pip (and select) rank cp311 above abi3 on 3.11
        "2.13": [f"twdemo_stable-0.1.0+torch2.12-{stable}", f"twdemo_stable-0.1.0+torch2.13-{locked}"],
        "2.14": [f"twdemo_stable-0.1.0+torch2.12-{stable}"],
    }
    for torch, files in expected.items():
        page = out / f"torch-{torch}" / "simple" / "twdemo-stable" / "index.html"
        assert (_files(page) if page.exists() else []) == files, torch
    python = venv_with_torch(tmp_path / "venv", "2.12", tmp_path / "stub")
    installed = pip(python, "--index-url", (out / "torch-2.12" / "simple").as_uri(), "twdemo_stable")
    assert installed.returncode == 0, installed.stderr
    meta = (installed_dist_info(python, "twdemo_stable") / "METADATA").read_text()
    assert "Version: 0.1.0+torch2.12" in meta


def test_constraints_keep_pip_and_uv_to_each_per_torch_index(index: Path) -> None:
    """torch-X.Y/constraints.txt pins each project to what that index lists; a torch minor
    whose index exists but lacks a project would pin it to no version (``<0``)."""
    for torch, build in {"2.10": "210", "2.12": "212", "2.15": "212"}.items():
        lines = (index / f"torch-{torch}" / "constraints.txt").read_text().splitlines()
        assert lines[0].startswith("#")
        assert lines[1:] == [f"twidx==1.0.0+torch{build[0]}.{build[1:]}"], torch


def test_constraints_of_several_labels_and_of_a_missing_project(
    release: Path, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    from ..lib.release_set import build_release, candidate_folders

    labels = candidate_folders(build_release(), tmp_path / "cand")["s210"].parent
    out = tmp_path / "idx"
    result = torchwheel("index", str(labels), str(release / _wheel("213")), "-o", str(out))
    assert result.returncode == 0, result.stderr
    text = (out / "torch-2.13" / "constraints.txt").read_text()
    assert "twdemo-stable==0.1.0\n" in text  # +torch2.12 (abi3) and +torch2.13 (cp311): the release
    assert "twidx==1.0.0+torch2.13\n" in text
    assert (
        "twidx<0  # no build of twidx loads on torch 2.11"
        in (out / "torch-2.11" / "constraints.txt").read_text()
    )


def test_counts_are_words_and_an_asked_torch_with_nothing_is_exit_1(release: Path, tmp_path: Path) -> None:
    one = torchwheel("index", str(release / _wheel("213")), "-o", str(tmp_path / "one"))
    assert one.returncode == 0, one.stderr
    assert (
        one.stdout
        == f"wrote {tmp_path / 'one'}: 1 wheel, simple/, 1 per-torch index, 1 per-torch-build index (cpu) and index.html\n"
    )
    assert one.stderr == ""
    each = torchwheel("index", "-v", str(release / _wheel("213")), "-o", str(tmp_path / "one"))
    assert each.stdout.splitlines()[1:] == [
        "  torch-2.13/simple: 1 wheel",
        "  torch-2.13-cpu/simple: 1 wheel",
    ]
    asked = torchwheel("index", str(release), "--torch", "2.9", "-o", str(tmp_path / "asked"))
    assert asked.returncode == 1
    assert "twidx: no wheel loads on torch 2.9" in asked.stderr
    assert (tmp_path / "asked" / "torch-2.9" / "simple" / "index.html").is_file()  # written all the same


def test_the_headline_counts_every_sub_index_it_lists(release: Path, tmp_path: Path) -> None:
    """The three builds load on CPU builds of torch too, so beside each of the six per-torch
    indexes (2.10-2.15) there is its CPU one: the headline says both counts, the lines list
    exactly those, and each is a directory of the index (once: 6 said, 12 listed)."""
    out = tmp_path / "idx"
    result = torchwheel("index", "--verbose", str(release), "-o", str(out))
    assert result.returncode == 0, result.stderr
    head, *listed = result.stdout.splitlines()
    assert (
        head
        == f"wrote {out}: 3 wheels, simple/, 6 per-torch indexes, 6 per-torch-build indexes (cpu) and index.html"
    )
    minors = [f"2.{m}" for m in range(10, 16)]
    assert listed == [f"  torch-{t}/simple: 1 wheel" for t in minors] + [
        f"  torch-{t}-cpu/simple: 1 wheel" for t in minors
    ]
    written = sorted(d.name for d in out.iterdir() if d.name.startswith("torch-"))
    assert written == sorted(line.split("/", 1)[0].strip() for line in listed)


def test_one_line_by_default_and_untagged_wheels_counted_in_one_note(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """30 untagged builds (build tags 1..30 of the 2.12 build, as a CI folder holds them): one
    line out, one note per kind for all 30 (issue 50: 3,000 wheels made 3,000 notes): untagged,
    and broken (`torch>=2.10` admits torches before the 2.12 it needs: TW503, an error
    of `check`'s that `tag` fixes); -v names each; -q says the broken ones alone."""
    raw = untagged_builds(built_fixtures, tmp_path / "raw")["212"]
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(1, 31):
        (folder / raw.name.replace("-cp39-", f"-{n}-cp39-")).write_bytes(raw.read_bytes())
    result = torchwheel("index", str(folder), "-o", str(tmp_path / "idx"))
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"wrote {tmp_path / 'idx'}: 30 wheels (30 `check` calls broken), simple/")
    untagged, broken, outranked = result.stderr.splitlines()
    assert untagged.startswith(
        "note: 30 untagged wheels: their torch need was read from their binaries; run `torchwheel tag`"
    )
    assert broken.startswith("note: 30 wheels `torchwheel check` calls broken (TW503): index.html marks them")
    # build 30 outranks the other 29 on every torch: one line, their one reason said
    assert outranked.startswith("note: 29 wheels in no per-torch index (outranked on every torch) (")
    assert all(n.endswith("-v names each)") for n in (untagged, broken, outranked))
    each = torchwheel("index", "-v", str(folder), "-o", str(tmp_path / "idx"))
    notes = [n for n in each.stderr.splitlines() if "untagged" in n]
    assert len(notes) == 30 and all("untagged, its torch need (stable >= 2.12)" in n for n in notes)
    assert sorted(n.split(": ")[1] for n in notes) == sorted(p.name for p in folder.iterdir())
    left = [n for n in each.stderr.splitlines() if "in no per-torch index" in n]
    assert len(left) == 29 and not any("-30-cp39-" in n for n in left)
    assert len(each.stderr.splitlines()) == 89 and len(each.stdout.splitlines()) > 1
    # -q: the warning alone (the broken wheels the per-torch indexes still list), the index written
    quiet = torchwheel("index", "-q", str(folder), "-o", str(tmp_path / "quiet"))
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", broken + "\n")
    assert (tmp_path / "quiet" / "index.html").is_file()


def test_a_wheel_check_calls_broken_is_noted_and_its_policy_is_the_projects(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """``w201`` (TW201, an error of `check`'s): counted in the headline, one note; the front
    page marks it (tests/e2e/test_index_page.py) while the per-torch indexes list it by torch
    as before. ``[tool.torchwheel] ignore`` in the folder it runs in makes it sound, as it
    does for `check`; ``--no-config`` reads no such table."""
    folder = tmp_path / "in"
    folder.mkdir()
    for key in ("tw201", "clean"):
        (folder / fixture_wheels[key].name).write_bytes(fixture_wheels[key].read_bytes())
    broken = fixture_wheels["tw201"].name
    result = torchwheel("index", str(folder), "-o", str(tmp_path / "idx"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {tmp_path / 'idx'}: 2 wheels (1 `check` calls broken), simple/")
    (note,) = [n for n in result.stderr.splitlines() if "broken" in n]
    assert note.startswith(f"note: {broken}: `torchwheel check` calls it broken (TW201): index.html marks it")
    assert 'class="broken"' in (tmp_path / "idx" / "index.html").read_text()
    assert broken in _files(tmp_path / "idx" / "torch-2.13" / "simple" / "w201" / "index.html")
    (tmp_path / "pyproject.toml").write_text('[tool.torchwheel]\nignore = ["TW201"]\n')
    ignored = torchwheel("index", str(folder), "-o", str(tmp_path / "idx"), cwd=tmp_path)
    assert ignored.returncode == 0 and "broken" not in ignored.stdout + ignored.stderr
    assert 'class="broken"' not in (tmp_path / "idx" / "index.html").read_text()
    unconfigured = torchwheel("index", "--no-config", str(folder), "-o", str(tmp_path / "idx"), cwd=tmp_path)
    assert "(1 `check` calls broken)" in unconfigured.stdout
