"""``torchwheel tag`` / ``repair`` on every fixture wheel it accepts, verified by the
tools users publish and install with: pip, installer, twine, check-wheel-contents and
packaging's metadata validation. The input is never modified."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest
from packaging.metadata import Metadata
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from torchwheel.tables.tableset import shipped_tables
from torchwheel.wheel.archive import parse_record
from torchwheel.wheel.record import record_hash

from ..lib.helpers import fixture_wheels_module, fresh_venv, pip_install, torchwheel

WHEELS = fixture_wheels_module().WHEELS
# Unreadable markers, a RECORD that disagrees with the files, METADATA without a Version,
# what installers refuse or what contradicts itself (TW407, TW409-TW411): tag refuses those
# (the blocks_rewrite codes, rules/codes.py); and a torch pin that excludes every torch the
# binaries load on, which only --relax-pin may replace.
REFUSED = {
    "tw103",
    "tw106",
    "tw107",
    "tw203",
    "tw207",
    "tw402",
    "tw403",
    "tw407",
    "tw407_folded",
    "tw407_duplicate_name",
    "tw408",
}
# tw414: an invalid file name, exit 2 (tests/e2e/test_invalid_names.py); tw416: a WHEEL Build
# past max-version-length
REFUSED |= {"tw409", "tw409_version", "tw411", "tw411_long", "tw414", "tw416", "tw503_pin_conflict"}
# an op library its package imports as a module: its import fails on every torch (TW304), so
# WHEEL has no torch to state
REFUSED |= {"tw304_op_library_imported", "tw304_op_library_imported_elsewhere"}
TAGGABLE = sorted(n for n in WHEELS if n not in REFUSED)
BIN = Path(sys.executable).parent


def _extra_args(name: str) -> list[str]:
    return ["--build-torch", "2.13"] if name in ("tw504", "tw504_no_requirement") else []


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tagged(
    fixture_wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, Path]]:
    """scenario -> (input, output) for every taggable fixture wheel."""
    out: dict[str, tuple[Path, Path]] = {}
    root = tmp_path_factory.mktemp("tagged")
    for name in TAGGABLE:
        src = fixture_wheels[name]
        before = _digest(src)
        dest = root / name
        result = torchwheel("tag", "-w", str(dest), str(src), *_extra_args(name), cwd=root)
        assert result.returncode == 0, (name, result.stdout, result.stderr)
        assert _digest(src) == before, f"{name}: the input wheel changed"
        (written,) = dest.glob("*.whl")
        out[name] = (src, written)
    return out


@pytest.mark.parametrize("name", TAGGABLE)
def test_tagged_wheel_is_valid(name: str, tagged: dict[str, tuple[Path, Path]]) -> None:
    _, out = tagged[name]
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL"))
        assert names[-1] == f"{dist_info}/RECORD"
        assert all(n.startswith(dist_info) for n in names[names.index(f"{dist_info}/METADATA") :])
        record = parse_record(zf.read(f"{dist_info}/RECORD").decode())
        for member in names:
            if member.endswith("/RECORD"):
                continue
            assert record[member].hash == record_hash(zf.read(member)), member
            assert record[member].size == zf.getinfo(member).file_size
        assert set(record) == set(names)
        wheel = HeaderParser().parsestr(zf.read(f"{dist_info}/WHEEL").decode())
        meta_bytes = zf.read(f"{dist_info}/METADATA")
        side = json.loads(zf.read(f"{dist_info}/torchwheel.json"))
        for i in zf.infolist():
            assert not i.flag_bits & 0x08, "no data descriptors (PyPI rejects them)"
            assert not i.comment
    # WHEEL Tag lines equal the file name's tags; Torch-ABI is the side file's answer.
    _, _, _, file_tags = parse_wheel_filename(out.name)
    assert {str(t) for t in file_tags} == set(wheel.get_all("Tag") or [])
    assert wheel["Torch-ABI"] == side["torch_abi"]
    assert side["schema_version"] == 1
    # METADATA stays valid for twine/PyPI: no unknown field.
    Metadata.from_email(meta_bytes, validate=True)


def test_stable_unstable_and_repairs(tagged: dict[str, tuple[Path, Path]]) -> None:
    def meta(name: str) -> tuple[str, list[str], str]:
        _, out = tagged[name]
        with zipfile.ZipFile(out) as zf:
            d = next(n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
            wheel = HeaderParser().parsestr(zf.read(f"{d}/WHEEL").decode())
            m = HeaderParser().parsestr(zf.read(f"{d}/METADATA").decode())
        return wheel["Torch-ABI"], m.get_all("Requires-Dist") or [], out.name

    assert meta("clean") == ("2.10", ["torch>=2.10"], "demo_stable-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl")
    assert meta("tw501")[:2] == ("2.10", ["torch>=2.10"])  # added
    assert meta("tw502")[:2] == ("2.13", ["torch==2.14.0"])  # the author's pin is kept
    assert meta("tw503")[:2] == ("2.13", ["torch>=2.13"])  # >=2.9 tightened
    assert meta("tw503_capped")[:2] == ("2.13", ["torch>=2.13,<3"])  # floor raised, cap kept
    assert meta("torch_itself")[:2] == ("unstable", [])  # torch does not require torch
    assert meta("tw504")[:2] == ("unstable", ["torch==2.13.*"])
    assert meta("tw204")[:2] == ("unstable", ["torch==2.13.*"])  # kept: already a pin
    assert meta("tw201")[:2] == ("2.13", ["torch>=2.13"])  # the symbols, not the declaration
    # CPython narrowing on evidence: the abi3 floor follows the limited-API symbols,
    assert meta("tw303")[2] == "w303-1.0.0-cp312-abi3-manylinux_2_28_x86_64.whl"
    # abi3t is dropped when every module has only PyInit_ hooks,
    assert meta("tw305")[2] == "w305-1.0.0-cp315-abi3-manylinux_2_28_x86_64.whl"
    # and WHEEL follows the file name (linux_x86_64 inside, manylinux outside).
    assert meta("tw404")[2] == "w404-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"


def test_tagged_wheels_pass_check(tagged: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    for name in ("clean", "tw303", "tw404", "tw501", "tw502", "tw503", "tw504"):
        _, out = tagged[name]
        args = ["check", "--no-config", str(out)]
        if name == "tw504":
            args += ["--ignore", "TW204"]  # unstable by design; policy would allowlist it
        result = torchwheel(*args, cwd=tmp_path)
        assert result.returncode == 0, (name, result.stdout)


def _twine_passes(wheel: Path) -> bool:
    """``twine check`` (its errors, not the warnings every fixture has for lacking a long
    description), in this process: the same function its command line calls, without a
    second of start-up per file."""
    from twine.commands.check import check

    failed: bool = check([str(wheel)])
    return not failed


def _check_wheel_contents_passes(wheel: Path) -> bool:
    """check-wheel-contents' own command, with its defaults, run by click in this process."""
    from check_wheel_contents.__main__ import main
    from click.testing import CliRunner

    return CliRunner().invoke(main, [str(wheel)]).exit_code == 0


def test_twine_and_check_wheel_contents(tagged: dict[str, tuple[Path, Path]]) -> None:
    """Whatever the peers accept before ``tag``, they accept after it."""
    passed = {"twine": 0, "check-wheel-contents": 0}
    for name in TAGGABLE:
        src, out = tagged[name]
        for tool, passes in (
            ("twine", _twine_passes),
            ("check-wheel-contents", _check_wheel_contents_passes),
        ):
            if passes(src):
                passed[tool] += 1
                assert passes(out), (name, tool)
    # most inputs pass both: the comparison is not vacuous
    assert min(passed.values()) >= len(TAGGABLE) // 2, passed


def test_installs_with_pip_and_installer(tagged: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    vpy = fresh_venv(tmp_path / "venv")
    supported = {str(t) for t in sys_tags()}
    for_pip = []
    for name in TAGGABLE:
        _, out = tagged[name]
        _, _, _, tags = parse_wheel_filename(out.name)
        if {str(t) for t in tags} & supported:
            for_pip.append(str(out))
        target = tmp_path / "installer" / name
        scheme = {k: str(target / k) for k in ("purelib", "platlib", "headers", "scripts", "data")}
        with WheelFile.open(out) as source:
            install(source, SchemeDictionaryDestination(scheme, sys.executable, "posix"), {})
        assert any(p.suffix in (".so", ".pyd") for p in target.rglob("*"))
    # one pip run for all (each is its own project): pip names the wheel it refuses
    result = pip_install(vpy, "--no-deps", "--no-index", *for_pip)
    assert result.returncode == 0, result.stderr
    assert len(for_pip) >= 10
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(vpy), "list", "--format", "json"],
        capture_output=True,
        text=True,
    )
    names = {canonicalize_name(d["name"]) for d in json.loads(listed.stdout)}
    assert {canonicalize_name(parse_wheel_filename(Path(w).name)[0]) for w in for_pip} <= names


def test_idempotent_and_deterministic(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    src = fixture_wheels["tw502"]
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000"}
    assert torchwheel("tag", "-w", str(tmp_path / "a"), str(src), cwd=tmp_path, env=env).returncode == 0
    assert torchwheel("tag", "-w", str(tmp_path / "b"), str(src), cwd=tmp_path, env=env).returncode == 0
    (a,) = (tmp_path / "a").glob("*.whl")
    (b,) = (tmp_path / "b").glob("*.whl")
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as zf:
        assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}
    again = torchwheel("tag", "-w", str(tmp_path / "c"), str(a), cwd=tmp_path, env=env)
    assert "already tagged: nothing to change" in again.stdout
    (c,) = (tmp_path / "c").glob("*.whl")
    assert c.read_bytes() == a.read_bytes()
    stamp = a.stat().st_mtime_ns
    in_place = torchwheel("tag", "--in-place", str(a), cwd=tmp_path, env=env)
    assert "unchanged" in in_place.stdout and a.stat().st_mtime_ns == stamp


def test_unchanged_members_are_copied_compressed(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    src = fixture_wheels["clean"]
    assert torchwheel("tag", "-w", str(tmp_path), str(src), cwd=tmp_path).returncode == 0
    (out,) = tmp_path.glob("*.whl")

    def raw(path: Path, member: str) -> bytes:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(member)
            data = path.read_bytes()
            start = (
                info.header_offset
                + 30
                + int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little")
            )
            start += int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little")
            return data[start : start + info.compress_size]

    member = "demo_stable/elf_marker_2_10.abi3.so"
    assert raw(out, member) == raw(src, member)


def test_dry_run_prints_a_diff_and_writes_nothing(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    src = fixture_wheels["tw501"]
    shutil.copy(src, tmp_path / src.name)
    result = torchwheel("tag", "--dry-run", src.name, cwd=tmp_path)
    assert result.returncode == 0
    assert "+Torch-ABI: 2.10" in result.stdout and "+Requires-Dist: torch>=2.10" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]


def test_refusals(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    corrupt = torchwheel("tag", "-w", str(tmp_path / "o"), str(fixture_wheels["tw402"]), cwd=tmp_path)
    assert corrupt.returncode == 1 and "TW402" in corrupt.stdout
    unknown_build = torchwheel("tag", "-w", str(tmp_path / "o"), str(fixture_wheels["tw504"]), cwd=tmp_path)
    assert unknown_build.returncode == 2 and "--build-torch" in unknown_build.stderr
    for bad in ("bad_not_a_zip", "bad_dotdot", "bad_zip_bomb"):
        result = torchwheel("tag", "-w", str(tmp_path / "o"), str(fixture_wheels[bad]), cwd=tmp_path)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())
    imported = torchwheel("tag", "-w", str(tmp_path / "o"), str(fixture_wheels["tw304_op_library_imported"]))
    assert imported.returncode == 2 and len(imported.stderr.splitlines()) == 1, imported.stderr
    assert "fails on every torch (TW304)" in imported.stderr and "torch.ops.load_library" in imported.stderr


def test_unwritable_destination_leaves_nothing(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    dest = tmp_path / "ro"
    dest.mkdir()
    dest.chmod(0o500)
    try:
        if os.access(dest, os.W_OK):  # root ignores permissions: use a file in the way instead
            dest.chmod(0o700)
            dest.rmdir()
            dest.write_text("not a directory")
        result = torchwheel("tag", "-w", str(dest), str(fixture_wheels["clean"]), cwd=tmp_path)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    finally:
        if dest.is_dir():
            dest.chmod(0o700)
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_failure_mid_write_leaves_nothing(
    failure: BaseException, fixture_wheels: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk or Ctrl-C while copying members: no partial wheel, input untouched."""
    from torchwheel.analysis import load
    from torchwheel.tagging import apply
    from torchwheel.tagging.tag_options import TagOptions
    from torchwheel.wheel import writer

    src = tmp_path / fixture_wheels["clean"].name
    shutil.copy(fixture_wheels["clean"], src)
    before = src.read_bytes()
    (facts,) = list(load.load_facts((src,), (), shipped_tables()))

    def broken(*args: object, **kwargs: object) -> None:
        raise failure

    monkeypatch.setattr(writer, "_copy_raw", broken)
    dest = tmp_path / "out"
    for in_place in (False, True):
        with pytest.raises(type(failure)):
            apply.write_tagged(facts, TagOptions(), None if in_place else dest, in_place, False)
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [src.name]


def _requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        d = next(n.split("/")[0] for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
        return HeaderParser().parsestr(zf.read(f"{d}/METADATA").decode()).get_all("Requires-Dist") or []


def test_pin_is_kept_unless_relaxed(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """tag only narrows: the author's ``torch==2.14.0`` stays (check keeps warning TW502)
    until --relax-pin or ``relax-pin = true`` asks for ``torch>=2.13``; the flag wins."""
    src = str(fixture_wheels["tw502"])
    kept = torchwheel("tag", "-w", str(tmp_path / "kept"), src, cwd=tmp_path)
    assert kept.returncode == 0, kept.stderr
    assert "kept the pin torch==2.14.0" in kept.stdout and "--relax-pin would widen it" in kept.stdout
    (out,) = (tmp_path / "kept").glob("*.whl")
    assert _requires(out) == ["torch==2.14.0"]
    warned = torchwheel("check", "--no-config", "--format", "json", str(out), cwd=tmp_path)
    assert {f["code"] for f in json.loads(warned.stdout)["findings"]} == {"TW502"}

    relaxed = torchwheel("tag", "--relax-pin", "-w", str(tmp_path / "relaxed"), src, cwd=tmp_path)
    assert relaxed.returncode == 0, relaxed.stderr
    assert "Requires-Dist: torch==2.14.0 -> torch>=2.13 (relax-pin)" in relaxed.stdout
    (out,) = (tmp_path / "relaxed").glob("*.whl")
    assert _requires(out) == ["torch>=2.13"]

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.torchwheel]\nrelax-pin = true\n")
    by_config = torchwheel("tag", "-w", str(tmp_path / "config"), src, cwd=project)
    (out,) = (tmp_path / "config").glob("*.whl")
    assert by_config.returncode == 0 and _requires(out) == ["torch>=2.13"]
    flag_wins = torchwheel("tag", "--keep-pin", "-w", str(tmp_path / "flag"), src, cwd=project)
    (out,) = (tmp_path / "flag").glob("*.whl")
    assert flag_wins.returncode == 0 and _requires(out) == ["torch==2.14.0"]
    (project / "pyproject.toml").write_text("[tool.torchwheel]\nrelax-pin = 'yes'\n")
    bad = torchwheel("tag", "-w", str(tmp_path / "bad"), src, cwd=project)
    assert bad.returncode == 2 and "relax-pin must be true or false" in bad.stderr


def test_every_refusal_of_a_run_is_said_at_once(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """Three wheels, three reasons: one whose pin excludes every torch it loads on, one whose
    output exists, and (in the second run) one whose RECORD lies. One run names them all,
    each wheel with its reason, and writes nothing: no refusal waits for the next run."""
    out = tmp_path / "out"
    out.mkdir()
    taken = Path(shutil.copy(fixture_wheels["tw501"], out))
    conflict = fixture_wheels["tw503_pin_conflict"]
    inputs = [str(conflict), str(fixture_wheels["tw501"]), str(fixture_wheels["clean"])]
    refused = torchwheel("tag", "-w", str(out), *inputs, cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    (line,) = refused.stderr.splitlines()
    assert f"{conflict.name}: " in line and "--relax-pin" in line
    assert f"{taken.name}: {taken}: exists; pass --overwrite to replace it" in line
    assert sorted(p.name for p in out.iterdir()) == [taken.name]  # nothing written
    with_lie = torchwheel("tag", "-w", str(out), *inputs, str(fixture_wheels["tw402"]), cwd=tmp_path)
    assert with_lie.returncode == 1
    (line,) = with_lie.stderr.splitlines()
    assert line.startswith("torchwheel: refusing to rewrite: TW402 make the new metadata untrustworthy; and ")
    assert "--relax-pin" in line and "pass --overwrite" in line and "TW402 error" in with_lie.stdout
    assert sorted(p.name for p in out.iterdir()) == [taken.name]


def test_pin_that_excludes_every_usable_torch(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """``torch==2.11.*`` for binaries that need 2.13: narrowing leaves nothing, so tag and
    repair refuse in one line instead of guessing (tag: exit 2, the options given cannot
    work; repair: exit 1, a refusal, as docs/cibuildwheel.md says); --relax-pin replaces it."""
    src = str(fixture_wheels["tw503_pin_conflict"])
    for command in ("tag", "repair"):
        refused = torchwheel(command, "-w", str(tmp_path / command), src, cwd=tmp_path)
        assert refused.returncode == (2 if command == "tag" else 1), (command, refused.stdout, refused.stderr)
        last = refused.stderr.strip().splitlines()[-1]
        prefix = "torchwheel: error: " if command == "tag" else "torchwheel: repair refused: "
        assert last.startswith(prefix) and "--relax-pin" in last
        assert command == "repair" or refused.stderr.count("\n") == 1
        relaxed = torchwheel(
            command, "--relax-pin", "-w", str(tmp_path / f"{command}-relaxed"), src, cwd=tmp_path
        )
        assert relaxed.returncode == 0, (command, relaxed.stdout, relaxed.stderr)
        (out,) = (tmp_path / f"{command}-relaxed").glob("*.whl")
        assert _requires(out) == ["torch>=2.13"]


def _with_requirement(src: Path, dest: Path, requirement: str) -> Path:
    """``src`` with its torch requirement replaced, RECORD made true again."""
    with zipfile.ZipFile(src) as zin:
        items = {i.filename: zin.read(i) for i in zin.infolist()}
    (meta,) = (k for k in items if k.endswith(".dist-info/METADATA"))
    lines = [x for x in items[meta].decode().splitlines() if not x.startswith("Requires-Dist: torch")]
    items[meta] = "\n".join([*lines[:3], f"Requires-Dist: {requirement}", *lines[3:]]).encode() + b"\n"
    (rec,) = (k for k in items if k.endswith(".dist-info/RECORD"))
    items[rec] = "".join(
        f"{k},,\n" if k == rec else f"{k},{record_hash(v)},{len(v)}\n" for k, v in items.items()
    ).encode()
    out = dest / src.name
    dest.mkdir()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for k, v in items.items():
            zout.writestr(k, v)
    return out


def test_a_long_requirement_is_clipped_in_messages(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """10,000 ``!=`` clauses that exclude every torch the binaries load on: the refusal
    stays one line a user reads (it once quoted all 150 KB of the requirement)."""
    clauses = ",".join(f"!=2.{10 + i // 100}.{i % 100}" for i in range(10_000))
    src = _with_requirement(fixture_wheels["tw503_pin_conflict"], tmp_path / "in", f"torch>=2.10,{clauses}")
    refused = torchwheel("tag", "-w", str(tmp_path / "out"), str(src), cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr[-500:]
    assert refused.stderr.count("\n") == 1 and len(refused.stderr) < 600, refused.stderr[:600]
    assert "admits no torch the binaries load on" in refused.stderr and "characters)" in refused.stderr
    checked = torchwheel("check", str(src), cwd=tmp_path)
    assert checked.returncode == 1 and max(map(len, checked.stdout.splitlines())) < 600
