"""`torchwheel unlabel`: the copy of a local-label build that PyPI takes (``1.0.0+torch2.12``
-> ``1.0.0``), held to the real tools: `twine check` passes, `torchwheel check` finds what
it found before minus TW413, and pip installs it from a PEP 503 index (`torchwheel index`,
served over HTTP on 127.0.0.1) into a fresh venv under the public version and the right
``.dist-info``. Every other member keeps its bytes, the input is never touched, and every
refusal is one line on stderr, exit 2, with nothing written."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ..lib.helpers import fixture_wheels_module, fresh_venv, torchwheel, zipped_wheel
from ..lib.index_server import serve
from ..lib.publish_helpers import TAGS, installed_dist_info, labelled, labelled_release, pip

PUBLIC = f"twidx-1.0.0-{TAGS}.whl"


@pytest.fixture(scope="module")
def release(built_fixtures: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``twidx`` 1.0.0 built three ways, each tagged ``--local-label torchX.Y`` (2.10, 2.12, 2.13)."""
    return labelled_release(built_fixtures, tmp_path_factory.mktemp("labelled"))


def _snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file below ``folder``: its hash and mtime (the inputs must keep both)."""
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _record(zf: zipfile.ZipFile, dist_info: str) -> dict[str, tuple[str, str]]:
    rows = csv.reader(io.StringIO(zf.read(f"{dist_info}/RECORD").decode()))
    return {row[0]: (row[1], row[2]) for row in rows if row}


def _codes(wheel: Path) -> set[str]:
    result = torchwheel("check", "--no-config", "--format", "json", str(wheel))
    findings = json.loads(result.stdout)["findings"]
    assert result.returncode == (1 if any(f["severity"] == "error" for f in findings) else 0), result.stderr
    return {f["code"] for f in findings}


def _written(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_unlabel_writes_the_public_version_and_keeps_every_other_byte(release: Path, tmp_path: Path) -> None:
    before = _snapshot(release)
    out = tmp_path / "pypi"
    result = torchwheel("unlabel", str(release / labelled("212")), "-w", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == (
        f"wrote {out / PUBLIC}\n"
        "  - version 1.0.0+torch2.12 -> 1.0.0: the file name, METADATA Version and twidx-1.0.0.dist-info\n"
        "  - kept Requires-Dist: torch>=2.12\n"
    )
    assert _snapshot(release) == before  # the input is only read
    assert _written(out) == [PUBLIC]  # and no temp file is left
    old_info, new_info = "twidx-1.0.0+torch2.12.dist-info", "twidx-1.0.0.dist-info"
    with zipfile.ZipFile(release / labelled("212")) as old, zipfile.ZipFile(out / PUBLIC) as new:
        renamed = {n: n.replace(old_info, new_info) for n in old.namelist()}
        assert sorted(new.namelist()) == sorted(renamed.values())
        for name, now in renamed.items():
            if name.endswith(("/METADATA", "/RECORD")):
                continue
            a, b = old.getinfo(name), new.getinfo(now)
            assert old.read(name) == new.read(now), name
            assert (a.CRC, a.compress_size, a.compress_type) == (b.CRC, b.compress_size, b.compress_type), (
                name
            )
        metadata = old.read(f"{old_info}/METADATA")
        assert new.read(f"{new_info}/METADATA") == metadata.replace(
            b"\nVersion: 1.0.0+torch2.12\n", b"\nVersion: 1.0.0\n"
        )
        assert b"Requires-Dist: torch>=2.12\n" in metadata  # the build's requirement, kept
        rows, was = _record(new, new_info), _record(old, old_info)
        meta = new.read(f"{new_info}/METADATA")
        digest = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(meta).digest()).rstrip(b"=").decode()
        assert rows.pop(f"{new_info}/METADATA") == (digest, str(len(meta)))
        was.pop(f"{old_info}/METADATA")
        assert rows == {renamed[n]: row for n, row in was.items()}  # the other rows, renamed


def test_twine_check_passes_and_check_loses_only_tw413(release: Path, tmp_path: Path) -> None:
    """Each build can be the one that goes to PyPI: unlabelled, each passes twine check, and
    `torchwheel check` reports what it reported of the input except TW413 (a local version)."""
    for build in ("210", "212", "213"):
        out = tmp_path / build
        result = torchwheel("unlabel", str(release / labelled(build)), "-w", str(out))
        assert result.returncode == 0, result.stderr
        (wheel,) = out.glob("*.whl")
        assert wheel.name == PUBLIC
        twine = subprocess.run(  # not --strict: the fixtures have no long description
            [sys.executable, "-m", "twine", "check", str(wheel)], capture_output=True, text=True
        )
        assert twine.returncode == 0 and "PASSED" in twine.stdout, twine.stdout + twine.stderr
        was = _codes(release / labelled(build))
        assert "TW413" in was
        assert _codes(wheel) == was - {"TW413"}


def test_pip_installs_it_from_a_local_index_under_the_public_version(release: Path, tmp_path: Path) -> None:
    pypi = tmp_path / "pypi"
    assert torchwheel("unlabel", str(release / labelled("213")), "-w", str(pypi)).returncode == 0
    site = tmp_path / "site"
    made = torchwheel("index", str(pypi), "-o", str(site))
    assert made.returncode == 0, made.stderr
    python = fresh_venv(tmp_path / "venv")
    with serve(site) as (url, served):
        got = pip(python, "--no-deps", "--index-url", f"{url}/simple", "twidx")
    assert got.returncode == 0, got.stderr
    assert f"/files/{PUBLIC}" in served.requests  # from the index, not a local path
    dist_info = installed_dist_info(python, "twidx")
    assert dist_info.name == "twidx-1.0.0.dist-info"
    asked = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('twidx'))"],
        capture_output=True,
        text=True,
    )
    assert asked.stdout.strip() == "1.0.0", asked.stderr
    assert "twidx-1.0.0.dist-info/METADATA," in (dist_info / "RECORD").read_text()
    assert "Requires-Dist: torch==2.13.*" in (dist_info / "METADATA").read_text()


def _fixture(
    built: dict[str, Path], folder: Path, dist: str, binary: str, version: str, **spec: object
) -> Path:
    wm = fixture_wheels_module()
    made = wm.WheelSpec(
        dist, dist, spec.pop("tag", TAGS), ((f"{dist}/_C.abi3.so", binary),), version=version, **spec
    )
    path: Path = wm.write_wheel(folder / made.filename, made, built)
    return path


def _refusal_case(case: str, release: Path, built: dict[str, Path], tmp: Path) -> tuple[list[str], Path]:
    """The command line of a refusal, and the output directory it must leave as it was."""
    out = tmp / "out"
    one = str(release / labelled("212"))
    if case == "no-label":
        plain = _fixture(built, tmp / "in", "twplain", "elf_marker_2_10", "1.0.0", requires=("torch>=2.10",))
        return [str(plain), "-w", str(out)], out
    if case == "one-release":
        return [one, str(release / labelled("210")), "-w", str(out)], out
    if case == "exists":
        out.mkdir()
        (out / PUBLIC).write_bytes(b"someone else's file")
        return [one, "-w", str(out)], out
    if case == "sibling":
        out.mkdir()
        (out / f"twidx-1.0.0-1-{TAGS}.whl").write_bytes(b"an earlier run's build")
        return [one, "-w", str(out)], out
    if case == "label-only-pin":
        locked = _fixture(built, tmp / "in", "twlocked", "elf_unstable_cpp", "1.0.0+torch2.13", requires=())
        return [str(locked), "-w", str(out)], out
    if case == "given-twice":
        return [one, one, "-w", str(out)], out
    if case == "bad-build-tag":
        return [one, "--build-tag", "x1", "-w", str(out)], out
    if case == "not-a-wheel":
        return [str(built["elf_marker_2_10"]), "-w", str(out)], out
    if case == "unreadable":
        junk = tmp / "in" / "twjunk-1.0.0+cu129-py3-none-any.whl"
        junk.parent.mkdir()
        junk.write_bytes(b"not a zip")
        return [str(junk), "-w", str(out)], out
    assert case == "missing"
    return [str(tmp / "nothere-1.0.0+cu129-py3-none-any.whl"), "-w", str(out)], out


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("no-label", "version 1.0.0 has no local label: nothing to unlabel (PyPI takes the wheel as it is)"),
        (
            "one-release",
            f"are two builds of twidx 1.0.0 for {TAGS}: PyPI holds one (a build tag would not tell their "
            "torch targets apart",
        ),
        ("exists", f"{PUBLIC}: exists; pass --overwrite to replace it"),
        ("sibling", f"twidx-1.0.0-1-{TAGS}.whl: another build of twidx 1.0.0 for {TAGS} is there already"),
        (
            "label-only-pin",
            "a version-locked build that only its label +torch2.13 says is for torch 2.13: without the label "
            "nothing keeps installers off other torches; pin it first (`torchwheel tag --build-torch 2.13`",
        ),
        ("given-twice", "given twice"),
        ("bad-build-tag", "--build-tag 'x1': a digit, then letters, digits, '_' and '.' only"),
        ("not-a-wheel", "elf_marker_2_10.so: unlabel rewrites wheel files"),
        ("unreadable", "not a zip archive"),
        ("missing", "no such file or directory"),
    ],
)
def test_a_refusal_is_one_line_and_writes_nothing(
    case: str, message: str, release: Path, built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    args, out = _refusal_case(case, release, built_fixtures, tmp_path)
    inputs, there = _snapshot(release), _snapshot(out) if out.exists() else {}
    result = torchwheel("unlabel", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("torchwheel: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert (_snapshot(out) if out.exists() else {}) == there  # nothing written, nothing replaced
    assert _snapshot(release) == inputs


def test_a_broken_wheel_is_refused_with_checks_findings(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """As `tag`: a RECORD that disagrees with the files is not rewritten into one that agrees
    (exit 1, the findings on stdout, one line on stderr)."""
    broken = _fixture(
        built_fixtures, tmp_path / "in", "twbroken", "elf_marker_2_10", "1.0.0+torch2.12", record="corrupt"
    )
    result = torchwheel("unlabel", str(broken), "-w", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "TW402 error" in result.stdout
    assert result.stderr == "torchwheel: unlabel refused: TW402 (above): a broken wheel is not rewritten\n"
    assert not (tmp_path / "out").exists()


def test_overwrite_replaces_only_its_own_name_and_dry_run_writes_nothing(
    release: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pypi"
    src = str(release / labelled("212"))
    dry = torchwheel("unlabel", "--dry-run", src, "-w", str(out))
    assert dry.returncode == 0 and dry.stdout.startswith(f"would write {out / PUBLIC}\n"), dry.stderr
    assert not out.exists()
    first = torchwheel("unlabel", src, "-w", str(out))
    assert first.returncode == 0, first.stderr
    made = (out / PUBLIC).read_bytes()
    (out / PUBLIC).write_bytes(b"stale")  # no wheel: not replaced, even when asked to overwrite
    refused = torchwheel("unlabel", "--overwrite", src, "-w", str(out))
    assert refused.returncode == 2 and "not a wheel: not replaced" in refused.stderr, refused.stderr
    assert (out / PUBLIC).read_bytes() == b"stale"
    shutil.copy(src, out / PUBLIC)  # a stale wheel (the labelled build's bytes): replaced
    again = torchwheel("unlabel", "--overwrite", src, "-w", str(out))
    assert again.returncode == 0, again.stderr
    assert (out / PUBLIC).read_bytes() == made  # deterministic: the same input, the same bytes
    assert _written(out) == [PUBLIC]


def test_build_tags_crlf_metadata_data_dirs_and_signatures(tmp_path: Path) -> None:
    """A wheel no fixture writer made: METADATA with CRLF line endings and a body that says
    ``Version:`` too, a ``.data`` directory, a build tag in its name, a RECORD signature and
    a requirement on another local version. The build tag is kept (or replaced with
    ``--build-tag``), the ``.data`` directory renamed with the ``.dist-info``, the signature
    dropped (the new RECORD would not match it), only the header's Version changed."""
    info = "mypkg-1.0+cu129.dist-info"
    metadata = (
        b"Metadata-Version: 2.1\r\nName: mypkg\r\nVersion: 1.0+cu129\r\nRequires-Dist: torch==2.8.0\r\n"
        b"Requires-Dist: mypkg-core==1.0+cu129\r\n\r\nVersion: 1.0+cu129 is our CUDA 12.9 build.\r\n"
    )
    members = {
        "mypkg/__init__.py": b"VERSION = '1.0+cu129'\n",
        "mypkg-1.0+cu129.data/scripts/mypkg-tool": b"#!python\nprint('hi')\n",
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nBuild: 7\nTag: py3-none-any\n",
        f"{info}/RECORD.jws": b"{}",
    }
    wheel = zipped_wheel(tmp_path / "in" / "mypkg-1.0+cu129-7-py3-none-any.whl", members, f"{info}/RECORD")
    before = _snapshot(wheel.parent)
    result = torchwheel("unlabel", str(wheel), "-w", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    target = tmp_path / "out" / "mypkg-1.0-7-py3-none-any.whl"
    assert result.stdout.splitlines() == [
        f"wrote {target}",
        "  - version 1.0+cu129 -> 1.0: the file name, METADATA Version, mypkg-1.0.dist-info and mypkg-1.0.data/",
        "  - kept the build tag 7",
        "  - dropped RECORD signatures (the rewrite invalidates them)",
        "  - kept Requires-Dist: torch==2.8.0",
    ]
    assert result.stderr == (
        "torchwheel: note: mypkg-1.0-7-py3-none-any.whl: Requires-Dist: mypkg-core==1.0+cu129 names a local "
        "version, which PyPI's users cannot get\n"
    )
    with zipfile.ZipFile(target) as zf:
        assert sorted(zf.namelist()) == [
            "mypkg-1.0.data/scripts/mypkg-tool",
            "mypkg-1.0.dist-info/METADATA",
            "mypkg-1.0.dist-info/RECORD",
            "mypkg-1.0.dist-info/WHEEL",
            "mypkg/__init__.py",
        ]
        assert zf.read("mypkg-1.0.dist-info/METADATA") == metadata.replace(
            b"\r\nVersion: 1.0+cu129\r\n", b"\r\nVersion: 1.0\r\n", 1
        )
        assert zf.read("mypkg-1.0.dist-info/WHEEL") == members[f"{info}/WHEEL"]
        assert (
            zf.read("mypkg-1.0.data/scripts/mypkg-tool") == members["mypkg-1.0+cu129.data/scripts/mypkg-tool"]
        )
    assert _codes(target) & {"TW402", "TW403", "TW407", "TW409", "TW413"} == set()
    retagged = torchwheel("unlabel", "--build-tag", "8", str(wheel), "-w", str(tmp_path / "out8"))
    assert retagged.returncode == 0, retagged.stderr
    assert "  - build tag 8 (file name and WHEEL Build)" in retagged.stdout
    with zipfile.ZipFile(tmp_path / "out8" / "mypkg-1.0-8-py3-none-any.whl") as zf:
        assert "Build: 8" in zf.read("mypkg-1.0.dist-info/WHEEL").decode().splitlines()
    assert _snapshot(wheel.parent) == before


def test_a_platform_pypi_refuses_is_said(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    """unlabel drops the label; a plain ``linux_x86_64`` tag is auditwheel's to fix, and is said."""
    plain = _fixture(
        built_fixtures,
        tmp_path / "in",
        "twlinux",
        "elf_marker_2_10",
        "1.0.0+cu129",
        tag="cp39-abi3-linux_x86_64",
    )
    result = torchwheel("unlabel", str(plain), "-w", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert (
        "torchwheel: note: twlinux-1.0.0-cp39-abi3-linux_x86_64.whl: PyPI still refuses it: " in result.stderr
    )
    assert "platform tag linux_x86_64" in result.stderr


def test_the_output_is_never_put_over_a_file_that_appeared_meanwhile(
    release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last look before the rename: a file of the output's name that appears while the
    copy is written (another run, another tool) is left as it is, and no temp file stays."""
    from torchwheel.analysis.load import opened
    from torchwheel.errors import InputError
    from torchwheel.tables.tableset import shipped_tables
    from torchwheel.tagging import public_version

    out = tmp_path / "pypi"
    real = public_version.verify_written

    def and_meanwhile(*args: object) -> None:
        real(*args)  # type: ignore[arg-type]
        (out / PUBLIC).write_bytes(b"appeared meanwhile")

    with opened((release / labelled("212"),), shipped_tables()) as loaded:
        ((w, archive),) = loaded
        assert archive is not None
        p = public_version.public_plan(w)
        monkeypatch.setattr(public_version, "verify_written", and_meanwhile)
        with pytest.raises(InputError, match="exists; pass --overwrite"):
            public_version.write_public(w, archive, p, out)
    assert _written(out) == [PUBLIC] and (out / PUBLIC).read_bytes() == b"appeared meanwhile"


def test_help_says_it_in_one_line() -> None:
    result = torchwheel("unlabel", "--help")
    assert result.returncode == 0
    first = result.stdout.split("\n\n")[1]
    assert first == "  Copy local-label wheels (1.0+cu129) as their public version (1.0), for PyPI."
    listed = torchwheel("--help").stdout
    assert "  unlabel  Copy local-label wheels as their public version, for PyPI.\n" in listed
