"""A killed ``install --upgrade``'s journal tampered with, then recovered
(``install --repair-env``): recovery never changes a file it did not write, inside or outside
the environment, and never loses one it set aside.

Each tampering of issue 39's fuzzers is a case (``TAMPERS``; the hostile corpus's
``journal-tamper`` class names them, ``fixtures/hostile_install.py``), and a property test
kills the upgrade at random file operations, applies random tamperings, recovers, and checks:
every file outside the package's own is byte for byte what it was (and so is a folder
outside the environment the tampering points into); an exit 2 changed nothing at all; after
the tampering is undone (the journal restored, the planted links removed) a second recovery
leaves one whole version. The short form runs a few random examples;
``TORCHWHEEL_HOSTILE_LONG=1`` runs ``LONG_EXAMPLES``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import random
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from torchwheel.cli import cli
from torchwheel.cli.exits import run
from torchwheel.install import installing, journal

from ..lib.helpers import REPO, load_script

sweeper: Any = load_script("torchwheel_kill_sweep", REPO / "benchmarks" / "kill_sweep.py")
LONG = os.environ.get("TORCHWHEEL_HOSTILE_LONG") == "1"
SHORT_EXAMPLES, LONG_EXAMPLES = 4, 150
OTHER = "other_dist"  # a second distribution in the environment: never the package's to touch


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The sweep's venv, with a second distribution in every snapshot, and a folder outside
    the environment (``outside``) that links planted inside point to."""
    with sweeper.scratch(tmp_path_factory.mktemp("tamper")) as work:
        made = sweeper.Env.create(work, installing)
        for name, snapshot in made.snapshots.items():
            (site,) = (snapshot / "lib").glob("python3*/site-packages")
            (site / OTHER).mkdir()
            (site / OTHER / "version.py").write_text("VERSION = 'other'\n")
            made.refs[name] = sweeper.tree(snapshot)
        outside = work / "outside"
        (outside / "sub").mkdir(parents=True)
        (outside / "c1").write_text("a file outside the environment\n")
        (outside / "sub" / "deep").write_text("deeper\n")
        made.outside = outside
        yield made


def _site(env: Any) -> Path:
    (site,) = (env.root / "lib").glob("python3*/site-packages")
    return Path(site)


def _package_own(rel: str) -> bool:
    """The package's own paths (both versions', their folders and bytecode) and torchwheel's
    transaction folder and temporary files: what a recovery may change."""
    parts = rel.split("/")
    return any(p.startswith(("twkill", ".torchwheel-")) for p in parts)


def _others(env: Any) -> frozenset[tuple[str, str, str]]:
    """Every file and link outside the package's own paths, with its bytes. Folders are left
    out: a killed run creates some for its files (``include/site/python3.11``), and the
    rollback removes them again when they are empty."""
    return frozenset(e for e in sweeper.tree(env.root) if e[0] != "dir" and not _package_own(e[1]))


def _repair(env: Any, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``torchwheel install --repair-env`` in this process: its exit code and stderr."""
    capsys.readouterr()
    code = run(cli, ["install", "--repair-env", "--python", str(env.python)])
    return code, capsys.readouterr().err


def _killed_upgrade(env: Any, at: int) -> Path | None:
    env.reset("1.0")
    out = sweeper.run_forked(lambda: installing.install_wheel(env.wheels["2.0"], env.target, True), at=(at,))
    assert out["status"] in (0, -9), out
    homes = journal.pending([_site(env)])
    return homes[0] if homes else None


# -- the tamperings: each plants what it needs and returns how to take it away again ----------

Undo = Callable[[], None]


def _append(home: Path, *lines: str | bytes) -> None:
    with (home / "journal").open("ab") as fh:
        for line in lines:
            fh.write((line if isinstance(line, bytes) else line.encode()) + b"\n")


def _rel(env: Any, path: Path) -> str:
    return os.path.relpath(path, env.root)


def _link(env: Any) -> tuple[Path, Undo]:
    evil = _site(env) / "evil"
    if evil.is_symlink():  # two tamperings of one example share it
        return evil, lambda: None
    evil.symlink_to(env.outside)
    return evil, evil.unlink


def _identity(path: Path) -> dict[str, Any]:
    """What a wrote record says of the file at ``path`` (its very bytes and identity, as a
    writer of the journal who can look at it would forge them); of nothing there, a guess."""
    try:
        data, st = path.read_bytes(), path.lstat()
    except OSError:
        return {"sha256": "A" * 43, "size": 31, "dev": 1, "ino": 2, "mtime_ns": 3}
    sha = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
    return {"sha256": sha, "size": len(data), "dev": st.st_dev, "ino": st.st_ino, "mtime_ns": st.st_mtime_ns}


def _write_records(
    env: Any, home: Path, path: Path, dirs: list[Path], sha: str = "A" * 43, **wrote: Any
) -> None:
    write = {
        "op": "write",
        "path": _rel(env, path),
        "temp": ".torchwheel-part-1-999",
        "dirs": [_rel(env, d) for d in dirs],
    }
    record = {
        "op": "wrote",
        "path": _rel(env, path),
        "sha256": sha,
        "size": 31,
        "dev": 1,
        "ino": 2,
        "mtime_ns": 3,
    }
    _append(home, json.dumps(write), json.dumps(record | wrote))


def t_link_write(env: Any, home: Path, rng: random.Random) -> Undo:
    """A link inside the environment to a folder outside, a write record through it: the
    file outside was deleted."""
    evil, undo = _link(env)
    _write_records(env, home, evil / "c1", [])
    return undo


def t_link_dirs(env: Any, home: Path, rng: random.Random) -> Undo:
    """A folder ``dirs`` names through the link: a whole tree outside was removed."""
    evil, undo = _link(env)
    _write_records(env, home, evil / "sub" / "x.py", [evil / "sub"])
    return undo


def t_link_aside(env: Any, home: Path, rng: random.Random) -> Undo:
    """A move through the link: an ``aside`` move created ``OUTSIDE/planted``."""
    evil, undo = _link(env)
    _append(home, json.dumps({"op": "aside", "moves": [[_rel(env, evil / "planted"), "9999"]]}))
    return undo


def t_journal_link(env: Any, home: Path, rng: random.Random) -> Undo:
    """``journal`` itself a link: ``{"op":"undone"}`` was appended to the file it points to."""
    target = env.outside / "journal-elsewhere"
    if not (home / "journal").is_file():  # killed before its journal was made: nothing to link
        return lambda: None
    shutil.move(home / "journal", target)
    (home / "journal").symlink_to(target)

    def undo() -> None:
        (home / "journal").unlink()
        shutil.move(target, home / "journal")

    return undo


def t_home_link(env: Any, home: Path, rng: random.Random) -> Undo:
    """The transaction folder a link to a folder outside: its journal and aside/ were deleted."""
    target = env.outside / "txn-elsewhere"
    shutil.move(home, target)
    home.symlink_to(target)

    def undo() -> None:
        home.unlink()
        shutil.move(target, home)

    return undo


def t_aside_link(env: Any, home: Path, rng: random.Random) -> Undo:
    """``aside`` a link: a file from outside was moved into the environment."""
    aside = home / "aside"
    target = env.outside / "aside-elsewhere"
    if aside.exists():
        shutil.move(aside, target)
    else:
        target.mkdir()
    (target / "9999").write_text("planted\n")
    aside.symlink_to(target)

    def undo() -> None:
        aside.unlink()
        (target / "9999").unlink()
        if any(target.iterdir()):
            shutil.move(target, aside)
        else:
            target.rmdir()

    return undo


def t_nul(env: Any, home: Path, rng: random.Random) -> Undo:
    """A NUL in a path: ``ValueError: embedded null byte`` after 305 entries had changed."""
    _append(home, '{"op":"aside","moves":[["lib/x\\u0000y","0"]]}')
    return lambda: None


def t_nested(env: Any, home: Path, rng: random.Random) -> Undo:
    """A line nested 100,000 deep: ``RecursionError``."""
    _append(home, b"[" * 100_000 + b"]" * 100_000)
    return lambda: None


def t_long_line(env: Any, home: Path, rng: random.Random) -> Undo:
    """A line past max-journal-line-bytes (the fuzzer's was 150 MB: 602 MB of memory)."""
    _append(home, b'{"op":"commit","x":"' + b"x" * (2 << 20) + b'"}')
    return lambda: None


def t_many_records(env: Any, home: Path, rng: random.Random) -> Undo:
    """More records than max-journal-entries (the fuzzer's 700,000: 839 MB and 51 s); the
    limit is set low for the run (``_tampered``), so the case costs a few KB."""
    _append(home, *(['{"op":"undone"}'] * 1500))
    return lambda: None


def t_pre_existing(env: Any, home: Path, rng: random.Random) -> Undo:
    """A write record naming a file that was there before the killed run (another
    distribution's module, the environment's pyvenv.cfg, an activate script): it was deleted."""
    victim = rng.choice(
        [_site(env) / OTHER / "version.py", env.root / "pyvenv.cfg", env.root / "bin" / "activate"]
    )
    _write_records(env, home, victim, [])
    return lambda: None


def t_torn(env: Any, home: Path, rng: random.Random) -> Undo:
    """A last line without its newline, as a kill mid-write leaves the record it was writing:
    never durable whole, so its act never began (a cut into records already durable would
    lose records no replay can know of: that is not what a kill leaves)."""
    record = rng.choice(
        ['{"op":"commit"}', '{"op":"write","path":"lib/x.py","temp":".torchwheel-part-1-9","dirs":[]}']
    )
    with (home / "journal").open("ab") as fh:
        fh.write(record[: rng.randrange(1, len(record))].encode())
    return lambda: None


def t_extra_file(env: Any, home: Path, rng: random.Random) -> Undo:
    planted = home / "notes.txt"
    planted.write_text("not the journal's\n")
    return planted.unlink


def t_swapped(env: Any, home: Path, rng: random.Random) -> Undo:
    lines = _followed(home).splitlines(keepends=True)
    if len(lines) > 2:
        i, j = rng.sample(range(1, len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
        (home / "journal").write_bytes(b"".join(lines))
    return lambda: None


def t_other_format(env: Any, home: Path, rng: random.Random) -> Undo:
    data = _followed(home)
    if data:
        (home / "journal").write_bytes(data.replace(b'"format":3', b'"format":2', 1))
    return lambda: None


def _last_written(env: Any, home: Path) -> Path | None:
    records = [json.loads(line) for line in _journal(home).splitlines() if line.endswith(b"}")]
    paths = [env.root / r["path"] for r in records if r.get("op") == "wrote"]
    # a file the run wrote: no link on the way (another tampering's record may lead outside)
    return next((p for p in reversed(paths) if p.is_file() and os.path.realpath(p) == str(p)), None)


def t_same_bytes_elsewhere(env: Any, home: Path, rng: random.Random) -> Undo:
    """A file the run wrote replaced by another file with the same bytes, as another
    installer of the same wheel leaves it (``pip install --ignore-installed``): format 2
    deleted it."""
    victim = _last_written(env, home)
    if victim is None:
        return lambda: None
    data = victim.read_bytes()
    victim.unlink()
    victim.write_bytes(data)
    ino = victim.stat().st_ino
    records = [json.loads(line) for line in _journal(home).splitlines() if line.endswith(b"}")]
    made = sorted({env.root / d for r in records for d in r.get("dirs", [])}, key=lambda d: -len(d.parts))

    def undo() -> None:  # the user removes the copy the rollback named and left, and the install's folders
        if victim.exists() and victim.stat().st_ino == ino:
            victim.unlink()
            for folder in made:  # deepest first; a folder that still holds something stays
                with contextlib.suppress(OSError):
                    folder.rmdir()

    return undo


def _planted_distribution(env: Any, home: Path, names: tuple[str, ...]) -> Undo:
    files = _other_distribution(env)
    for name in names:
        _write_records(env, home, files[name], [], **_identity(files[name]))

    def undo() -> None:
        shutil.rmtree(_site(env) / "otherpkg")
        shutil.rmtree(_site(env) / "otherpkg-1.0.dist-info")

    return undo


def t_other_distribution_installer(env: Any, home: Path, rng: random.Random) -> Undo:
    """Write records naming another distribution's empty ``__init__.py``, ``py.typed`` and
    its ``INSTALLER`` with their very bytes and identity: all three were deleted, exit 0."""
    return _planted_distribution(env, home, ("init", "typed", "installer"))


def t_other_distribution_module(env: Any, home: Path, rng: random.Random) -> Undo:
    """Write records naming another distribution's ``__init__.py`` and ``py.typed`` (its
    RECORD lists them), with their very bytes and identity."""
    return _planted_distribution(env, home, ("init", "typed"))


TAMPERS: dict[str, Callable[[Any, Path, random.Random], Undo]] = {
    name.removeprefix("t_"): fn for name, fn in list(globals().items()) if name.startswith("t_")
}


# -- one tampered recovery and what it must leave ----------------------------------------------


def _journal(home: Path) -> bytes:
    path = home / "journal"
    return path.read_bytes() if path.is_file() and not path.is_symlink() and not home.is_symlink() else b""


def _followed(home: Path) -> bytes:
    """The journal's bytes wherever a tampering put them (through a link too), b"" if none."""
    try:
        return (home / "journal").read_bytes()
    except OSError:
        return b""


def _restore(home: Path, pristine: bytes, recovery_wrote_undone: bool) -> None:
    """The journal as the killed run left it, and an ``undone`` the recovery wrote: what a
    user finishing by hand keeps (without it, old files moved back could be taken for new)."""
    (home / "journal").write_bytes(pristine + (b'{"op":"undone"}\n' if recovery_wrote_undone else b""))


def _tampered(
    env: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    at: int,
    names: list[str],
    rng: random.Random,
) -> tuple[int, str]:
    """Kill at ``at``, apply ``names``, recover, check, undo, recover again, check."""
    home = _killed_upgrade(env, at)
    if home is None:  # killed before the journal began, or after it was removed: no journal to tamper with
        code, err = _repair(env, capsys)
        assert code == 0 and env.which() in ("1.0", "2.0"), err
        return code, err
    pristine = (home / "journal").read_bytes() if (home / "journal").exists() else b""
    monkeypatch.setenv("TORCHWHEEL_MAX_JOURNAL_ENTRIES", "1000")  # t_many_records passes it cheaply
    untouched = sweeper.tree(env.outside)
    undos = [TAMPERS[n](env, home, rng) for n in names]
    whole, others, outside = sweeper.tree(env.root), _others(env), sweeper.tree(env.outside)
    tampered = _followed(home)
    code, err = _repair(env, capsys)
    # whether this recovery wrote its undone record (an exit 2 wrote nothing; a tampering's own
    # undone records, or a journal read through a planted link, are not it)
    after = _followed(home)
    wrote_undone = code != 2 and after != tampered and after.endswith(b'{"op":"undone"}\n')
    where = f"at={at} {names}: exit {code}: {err.strip()[-400:]}"
    assert code in (0, 2, 3), where
    assert "Traceback" not in err and "internal error" not in err, where
    assert _others(env) == others, f"{where}: {sweeper.differences(_others(env), others)}"
    assert sweeper.tree(env.outside) == outside, where
    if code in (2, 3):
        assert err.count("\n") == 1, where
    if code == 2:
        assert sweeper.tree(env.root) == whole, f"{where}: exit 2 changed the environment"
    if code == 3:
        assert "To finish by hand" in err, where
    monkeypatch.delenv("TORCHWHEEL_MAX_JOURNAL_ENTRIES")
    for undo in reversed(undos):  # the tampering taken away, as a user finishing by hand would
        undo()
    if os.path.isdir(home) and not os.path.islink(home):
        _restore(home, pristine, wrote_undone)
    again, err2 = _repair(env, capsys)
    assert again == 0, f"{where}; then exit {again}: {err2.strip()[-400:]}"
    assert env.which() in ("1.0", "2.0"), f"{where}: not one whole version after the second recovery"
    assert sweeper.tree(env.outside) == untouched, where
    return code, err


@pytest.fixture(scope="module")
def points(env: Any) -> int:
    return sweeper.count_points(env, "upgrade")


@pytest.fixture(scope="module")
def mid_write(env: Any, points: int) -> int:
    """A kill point past the aside moves, right after a wrote record: the state the cases
    start from (found by looking, not by a fixed number)."""
    for at in range(points // 2, points):
        home = _killed_upgrade(env, at)
        if home is not None and (home / "aside").is_dir():
            last = json.loads((home / "journal").read_bytes().splitlines()[-1])
            if last["op"] == "wrote":
                return at
    raise AssertionError("no kill point after a wrote record")


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_each_tampering_changes_nothing_it_did_not_write(
    env: Any, mid_write: int, name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, err = _tampered(env, capsys, monkeypatch, mid_write, [name], random.Random(name))
    refused = {"link_write", "link_dirs", "link_aside", "journal_link", "home_link", "aside_link", "nul",
               "nested", "long_line", "many_records", "extra_file", "other_format"}  # fmt: skip
    if name in refused:
        assert code == 2, err  # nothing touched
    if name in ("pre_existing", "same_bytes_elsewhere"):  # the rollback ran, and named what it left
        assert code == 3 and "not the file the install wrote" in err, err
    if name == "other_distribution_installer":  # in another project's .dist-info: a forgery
        assert code == 2 and "a file of another distribution (otherpkg-1.0.dist-info)" in err, err
    if name == "other_distribution_module":
        assert code == 3 and "another distribution's: otherpkg-1.0.dist-info lists it" in err, err


def test_random_kills_and_tamperings(
    env: Any, points: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(39)
    for _ in range(LONG_EXAMPLES if LONG else SHORT_EXAMPLES):
        names = rng.sample(sorted(TAMPERS), rng.randint(1, 2))
        if {"home_link", "journal_link"} <= set(names):
            names.remove("journal_link")  # the second moves what the first already moved
        if {"other_distribution_installer", "other_distribution_module"} <= set(names):
            names.remove("other_distribution_module")  # both plant the same distribution
        _tampered(env, capsys, monkeypatch, rng.randint(1, points), names, rng)


def test_a_forged_record_in_a_committed_journal_touches_nothing(
    env: Any, points: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the commit the replay only deletes aside/: a write record naming another
    distribution's file is ignored, and the install is finished."""
    for at in range(points - 1, 0, -1):
        home = _killed_upgrade(env, at)
        if home is not None and b'"op":"commit"' in _journal(home):
            break
    else:
        raise AssertionError("no kill point after the commit")
    _write_records(env, home, _site(env) / OTHER / "version.py", [])
    others = _others(env)
    code, err = _repair(env, capsys)
    assert code == 2 and "where none can follow" in err  # a record after the commit: refused whole
    assert _others(env) == others


def test_the_pre_existing_file_is_deleted_only_with_its_own_bytes(
    env: Any, mid_write: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the hash buys, and what it cannot: a forged record with a wrong digest leaves the
    file; one that carries the file's very sha256 and size is what a writer of the journal
    could also do by deleting the file itself (documented in docs/evidence/reliability.md)."""
    home = _killed_upgrade(env, mid_write)
    assert home is not None
    victim = env.root / "pyvenv.cfg"
    before = victim.read_bytes()
    _write_records(env, home, victim, [], sha="B" * 43)
    code, err = _repair(env, capsys)
    assert code == 3 and victim.read_bytes() == before
    assert "pyvenv.cfg (not the file the install wrote" in err
    code, err = _repair(env, capsys)  # the rest was done: the next replay only removes the journal
    assert code == 0 and env.which() == "1.0", err


def test_an_install_never_writes_through_a_link(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The package's folder a link to a folder outside: the install refuses before it writes
    there (its files would land outside, where no replay could check them), and rolls back."""
    env.reset("none")
    planted = _site(env) / "twkill"
    planted.symlink_to(env.outside)
    outside, whole = sweeper.tree(env.outside), sweeper.tree(env.root)
    capsys.readouterr()
    code = run(cli, ["install", "--python", str(env.python), str(env.wheels["2.0"].path)])
    err = capsys.readouterr().err
    assert code == 2 and "would be written through the symbolic link" in err, err
    assert sweeper.tree(env.outside) == outside
    assert sweeper.tree(env.root) == whole  # rolled back: nothing of it is left
    planted.unlink()


def _other_distribution(env: Any) -> dict[str, Path]:
    """Another distribution installed beside the package, with the files whose bytes anyone
    can guess (an empty ``__init__.py`` and ``py.typed``, ``INSTALLER``) and a RECORD."""
    site = _site(env)
    files = {
        "init": site / "otherpkg" / "__init__.py",
        "typed": site / "otherpkg" / "py.typed",
        "installer": site / "otherpkg-1.0.dist-info" / "INSTALLER",
    }
    for path in files.values():
        path.parent.mkdir(exist_ok=True)
    files["init"].write_bytes(b"")
    files["typed"].write_bytes(b"")
    files["installer"].write_bytes(b"pip\n")
    (site / "otherpkg-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: otherpkg\nVersion: 1.0\n"
    )
    rows = [
        f"{p.relative_to(site)},sha256={_identity(p)['sha256']},{p.stat().st_size}" for p in files.values()
    ]
    (site / "otherpkg-1.0.dist-info" / "RECORD").write_text(
        "\n".join([*rows, "otherpkg-1.0.dist-info/RECORD,,"]) + "\n"
    )
    return files


def _forged(env: Any, project: str, victims: list[Path], exact: bool) -> Path:
    """A journal written by hand: an install of ``project`` that wrote ``victims``, each
    with its very bytes (and, ``exact``, its very device, inode and time)."""
    home = _site(env) / f"{journal.PREFIX}{project}"
    home.mkdir()
    begin = {"op": "begin", "format": journal.FORMAT, "project": project, "wheel": f"{project}-1.0-py3-none-any.whl",
             "replaces": None, "keep": []}  # fmt: skip
    _append(home, json.dumps(begin))
    for victim in victims:
        identity = _identity(victim)
        if not exact:
            identity |= {"dev": 0, "ino": 1, "mtime_ns": 0}
        _write_records(env, home, victim, [], **identity)
    return home


@pytest.mark.parametrize("exact", [False, True], ids=["guessed", "looked-up"])
def test_a_forged_journal_never_removes_another_distributions_files(
    env: Any, capsys: pytest.CaptureFixture[str], exact: bool
) -> None:
    """Issue 47: a journal naming another distribution's ``__init__.py``, ``py.typed`` and
    ``INSTALLER`` (bytes anyone can guess) deleted all three with exit 0. A file inside
    another project's ``.dist-info`` is no install's to write: the journal is refused whole
    (exit 2); the package's files, which that distribution's RECORD lists, are left and named
    (exit 3), even when the journal carries their very identity."""
    env.reset("1.0")
    files = _other_distribution(env)
    whole = sweeper.tree(env.root)
    home = _forged(env, "evil", list(files.values()), exact)
    code, err = _repair(env, capsys)
    assert (
        code == 2
        and err.count("\n") == 1
        and "a file of another distribution (otherpkg-1.0.dist-info)" in err
    ), err
    shutil.rmtree(home)
    assert sweeper.tree(env.root) == whole
    home = _forged(env, "evil", [files["init"], files["typed"]], exact)
    code, err = _repair(env, capsys)
    assert code == 3 and err.count("\n") == 1, err
    assert "another distribution's: otherpkg-1.0.dist-info lists it" in err, err
    shutil.rmtree(home)
    assert sweeper.tree(env.root) == whole


def test_a_forged_journal_of_the_owner_with_guessed_identity_removes_nothing(
    env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The journal names the distribution whose files it lists, with their bytes but not
    their identity (device, inode, time): not the files it wrote, so left (exit 3)."""
    env.reset("1.0")
    files = _other_distribution(env)
    whole = sweeper.tree(env.root)
    home = _forged(env, "otherpkg", list(files.values()), exact=False)
    code, err = _repair(env, capsys)
    assert code == 3 and "not the file the install wrote" in err, err
    shutil.rmtree(home)
    assert sweeper.tree(env.root) == whole


def test_the_tamper_rows_of_the_hostile_corpus_name_these_cases() -> None:
    """``fixtures/hostile_install.py`` lists the tamperings as the corpus's ``journal-tamper``
    class: each row names a tampering of this module or a test that exists."""
    sys.path.insert(0, str(REPO / "fixtures"))
    import hostile_install

    for name, (_, tamper) in hostile_install.TAMPERS.items():
        if "::" in tamper:
            path, test = tamper.split("::")
            assert f"def {test}(" in (REPO / path).read_text(), name
        else:
            assert tamper == "random" or tamper in TAMPERS, name
