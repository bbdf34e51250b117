"""doctor/owntorch.py and doctor/early.py on real torches: the installed torch's exports and
RECORD rows kept between runs (``tables.torchcache``) change no byte of ``doctor``'s
document, are what a second run reads (a library made unreadable behind the same stat is
not noticed; one whose mtime or size changed is), and a damaged cache is made again.

The real environments are ``.venv`` (torch 2.13.0 CPU) and ``.venv-cu130`` (torch 2.14.1
CUDA 13) of ``scripts/dev-setup``; the one whose files are changed is a venv holding .venv's
torch by hard links, except ``libc10.so`` and the RECORD, which are copies (changing a hard
link would change .venv's)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from torchwheel.doctor.checkup import doctor
from torchwheel.doctor.early import probe_beside_reading
from torchwheel.tables.tableset import shipped_tables
from torchwheel.wheel.installed import Installed, installed

from ..lib.helpers import REPO, fresh_venv, torchwheel

ENVS = (".venv", ".venv-cu130")


def _site(prefix: Path) -> Path:
    found = sorted(prefix.glob("lib/python3*/site-packages"))
    if not found or not (found[0] / "torch").is_dir():
        pytest.fail(f"{prefix}: no torch in its site-packages: run `bash scripts/dev-setup`")
    return found[0]


def _json(python: Path, data: Path) -> str:
    """``doctor --format json``'s stdout with ``data`` as the user's data folder."""
    done = torchwheel(
        "doctor", "--python", str(python), "--format", "json", env={**os.environ, "XDG_DATA_HOME": str(data)}
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.mark.parametrize("name", ENVS)
def test_the_document_is_the_same_with_and_without_the_cache(name: str, tmp_path: Path) -> None:
    """Cold (the entries made), warm (read back) and without any cache (a data folder that
    is a file): byte for byte one document, whose torch exports were read."""
    python = REPO / name / "bin" / "python"
    _site(REPO / name)
    data = tmp_path / "data"
    cold = _json(python, data)
    entries = sorted((data / "torchwheel" / "cache").iterdir())
    assert any(p.name.startswith("exports-") for p in entries) and any(
        p.name.startswith("record-torch-lib-") for p in entries
    ), entries
    written = {p: p.stat().st_mtime_ns for p in entries}
    warm = _json(python, data)
    assert {p: p.stat().st_mtime_ns for p in entries} == written  # read, not written again
    (tmp_path / "no-data").write_text("a file: no cache can be made in it")
    without = _json(python, tmp_path / "no-data")
    assert cold == warm == without
    assert json.loads(cold)["torch"]["exports_from"], cold[:400]


@pytest.fixture(scope="module")
def torch_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with .venv's torch: hard links, but libc10.so and the RECORD copies."""
    root = tmp_path_factory.mktemp("owntorch") / "env"
    python = fresh_venv(root)
    source = _site(REPO / ".venv")
    (site_dir,) = (root / "lib").glob("python3*/site-packages")
    for name in ["torch", *(p.name for p in source.glob("torch-*.dist-info"))]:
        shutil.copytree(source / name, site_dir / name, copy_function=os.link)
    for rel in ("torch/lib/libc10.so", next(p for p in site_dir.glob("torch-*.dist-info")).name + "/RECORD"):
        (site_dir / rel).unlink()
        shutil.copy2(source / rel, site_dir / rel)
    return python


def _rewrite(path: Path, data: bytes, keep_stat: bool = True) -> None:
    """``data`` written into the same file (its inode kept), its mtime put back."""
    st = path.stat()
    with path.open("r+b") as fh:
        fh.write(data)
        fh.truncate(len(data))
    if keep_stat:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _problem(doc: dict) -> str:  # type: ignore[type-arg]
    return str(doc["torch"].get("exports_problem") or "")


def test_a_second_run_reads_the_cache_and_a_change_is_seen(torch_copy: Path, tmp_path: Path) -> None:
    site = next((torch_copy.parent.parent / "lib").glob("python3*/site-packages"))
    libc10 = site / "torch" / "lib" / "libc10.so"
    original = libc10.read_bytes()
    folder = tmp_path / "cache"
    first = doctor(python=torch_copy, cache=folder).to_json()
    assert first["torch"]["exports_from"] and not _problem(first), first["torch"]

    _rewrite(libc10, b"\0" * len(original))  # no ELF any more, the same path, size, mtime, inode
    assert doctor(python=torch_copy, cache=folder).to_json() == first  # the kept answer
    unread = doctor(python=torch_copy, cache=False).to_json()
    assert "libc10.so" in _problem(unread), unread["torch"]  # what reading it says now

    st = libc10.stat()
    os.utime(libc10, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # another mtime
    assert doctor(python=torch_copy, cache=folder).to_json() == unread

    _rewrite(libc10, original)
    os.utime(libc10, ns=(st.st_atime_ns, st.st_mtime_ns))  # as at first: the kept answer holds
    assert doctor(python=torch_copy, cache=folder).to_json() == first
    _rewrite(libc10, b"\0" * (len(original) + 1))  # another size, the mtime put back
    assert doctor(python=torch_copy, cache=folder).to_json() == unread
    _rewrite(libc10, original)
    os.utime(libc10, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_torchs_record_rows_are_read_from_the_cache(torch_copy: Path, tmp_path: Path) -> None:
    """The RECORD rewritten to list no torch/lib (same size and mtime): the kept rows still
    answer; without the cache the libraries are not found."""
    site = next((torch_copy.parent.parent / "lib").glob("python3*/site-packages"))
    record = next(site.glob("torch-*.dist-info")) / "RECORD"
    original = record.read_bytes()
    folder = tmp_path / "cache"
    first = doctor(python=torch_copy, cache=folder).to_json()
    try:
        _rewrite(record, original.replace(b"torch/lib/", b"torch/lix/"))
        assert doctor(python=torch_copy, cache=folder).to_json() == first
        assert "no torch libraries" in _problem(doctor(python=torch_copy, cache=False).to_json())
    finally:
        _rewrite(record, original)


def test_a_damaged_cache_is_made_again(torch_copy: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    first = doctor(python=torch_copy, cache=folder).to_json()
    entries = sorted(folder.iterdir())
    for i, entry in enumerate(entries):  # each damaged another way
        data = entry.read_bytes()
        entry.write_bytes([data[: len(data) // 2], b"\0" * len(data), b"[" * 5000, b""][i % 4])
    assert doctor(python=torch_copy, cache=folder).to_json() == first
    assert doctor(python=torch_copy, cache=folder).to_json() == first
    assert all(p.read_bytes().startswith(b'{"key"') for p in folder.iterdir())  # made again


def test_the_environment_read_while_the_probe_runs_is_the_probes(tmp_path: Path) -> None:
    """What ``early`` read is keyed by the very ``Installed`` the probe's search path lists:
    every distribution of .venv's site-packages but torch, none other."""
    python = str(REPO / ".venv" / "bin" / "python")
    target, early = probe_beside_reading(python, shipped_tables(), whole=False)
    listed = [i for i in installed(target.search_path, target.prefixes) if isinstance(i, Installed)]
    site = str(_site(REPO / ".venv"))
    assert set(early) == {i for i in listed if str(i.site) == site and i.key != "torch"}
    assert len(early) > 100
