"""wheel/searchpath.py and the probe that uses it (selection/target.py): an interpreter's
search path computed without running ``site``, held against what real interpreters say when
they do run it (``python -I``), and ``site``'s ``.pth`` rules one by one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchwheel.errors import InputError
from torchwheel.selection.target import probe
from torchwheel.wheel.searchpath import search_path, venv_config

_REAL = """
import json, sys, sysconfig
print(json.dumps([sys.path, sysconfig.get_paths(), [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]]))
"""


def _real(python: str) -> list[object]:
    """What the interpreter itself says, ``site`` run (``-I``: the probe's view)."""
    proc = subprocess.run([python, "-I", "-c", _REAL], capture_output=True, text=True, check=True)
    return list(json.loads(proc.stdout))


def _venv(where: Path, system_site: bool) -> str:
    base = getattr(sys, "_base_executable", sys.executable)
    args = [base, "-m", "venv", "--without-pip", str(where)] + (
        ["--system-site-packages"] if system_site else []
    )
    subprocess.run(args, check=True)
    return str(where / "bin" / "python")


@pytest.fixture(scope="module")
def interpreters(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """This interpreter's base installation, and venvs of it with and without the system's
    site-packages, each with a ``.pth`` path line (a folder that exists) and a folder that
    ``site`` would skip (one that does not)."""
    root = tmp_path_factory.mktemp("interpreters")
    out = [os.path.realpath(getattr(sys, "_base_executable", sys.executable))]
    for system_site in (False, True):
        python = _venv(root / f"venv-{system_site}", system_site)
        site = next((root / f"venv-{system_site}" / "lib").glob("python*/site-packages"))
        (root / f"extra-{system_site}").mkdir()
        (site / "a.pth").write_text(f"{root / f'extra-{system_site}'}\n{root / 'absent'}\n../relative\n")
        out.append(python)
    return out


def test_the_probe_agrees_with_the_interpreter_itself(interpreters: list[str]) -> None:
    for python in interpreters:
        target = probe(python)
        path, paths, prefixes = _real(python)
        assert list(target.search_path) == path, python
        assert target.paths == paths, python
        assert list(target.prefixes) == prefixes, python


def test_a_debian_interpreter_in_a_venv_too(tmp_path: Path) -> None:
    """Debian patches ``site`` and ``sysconfig`` (``dist-packages``, ``posix_local``): the
    probe asks the interpreter's own modules, so its answers hold there as well."""
    debian = Path("/usr/bin/python3")
    assert debian.exists(), "the machine's system Python (the Debian image's) is part of this test"
    venv = tmp_path / "venv"
    subprocess.run([str(debian), "-m", "venv", "--without-pip", str(venv)], check=True)
    for python in (str(debian), str(venv / "bin" / "python")):
        target = probe(python)
        path, paths, prefixes = _real(python)
        assert (list(target.search_path), target.paths, list(target.prefixes)) == (path, paths, prefixes)


def test_nothing_of_the_environment_runs(tmp_path: Path) -> None:
    """The issue's reproduction: a ``.pth`` import line and ``sitecustomize`` that write files,
    a ``.pth`` that forges the answer; none runs, and each import line is listed."""
    python = _venv(tmp_path / "venv", False)
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    (site / "x.pth").write_text(f"import os; open({str(tmp_path / 'PWNED')!r}, 'w')\n")
    (site / "sitecustomize.py").write_text(f"open({str(tmp_path / 'SITECUSTOMIZE')!r}, 'w')\n")
    (site / "y.pth").write_text('import sys; print(\'{"torch": "9.9"}\'); sys.exit(0)\n')
    target = probe(python)
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "SITECUSTOMIZE").exists()
    assert target.torch is None and target.python_version.count(".") == 2
    assert [n.split(": ", 1)[0] for n in target.not_run] == [f"{site / 'x.pth'}:1", f"{site / 'y.pth'}:1"]
    # and no bytecode written into the environment by the probe
    assert not list(site.rglob("*.pyc"))


def test_pth_rules_as_site_applies_them(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    for name in ("one", "two", "rel"):
        (tmp_path / name).mkdir()
    (site / "b.pth").write_bytes(
        "\ufeff# a comment\n\n   \n{one}\n{one}\n{missing}\n../rel   \nimport\tsys\nimportant\n".format(
            one=tmp_path / "one", missing=tmp_path / "missing"
        ).encode()
    )
    (site / "a.pth").write_text(f"{tmp_path / 'two'}\n")
    (site / ".hidden.pth").write_text(f"{tmp_path / 'one'}\n")
    os.mkfifo(site / "c.pth")
    found = search_path(["/nonexistent-stdlib"], [str(site), str(tmp_path / "absent-site")], (3, 13))
    assert found.directories == (
        "/nonexistent-stdlib",
        str(site),
        str(tmp_path / "two"),  # a.pth before b.pth: sorted
        str(tmp_path / "one"),  # once
        str(tmp_path / "rel"),  # relative to the site dir, trailing blanks dropped
    )
    assert [str(n) for n in found.not_run] == [f"{site / 'b.pth'}:8: import\tsys"]
    assert len(found.unread_pth) == 1 and "FIFO" in found.unread_pth[0]  # never blocks
    # before 3.13, site reads dot-files too and keeps a BOM (so the commented first line is a
    # path that does not exist)
    older = search_path([], [str(site)], (3, 12))
    assert older.directories == (
        str(site),
        str(tmp_path / "one"),
        str(tmp_path / "two"),
        str(tmp_path / "rel"),
    )


def test_venv_config_as_site_finds_it(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    exe = str(tmp_path / "bin" / "python")
    assert venv_config(exe) is None
    (tmp_path / "pyvenv.cfg").write_text("home = /x\nInclude-System-Site-Packages = TRUE\n")
    found = venv_config(exe)
    assert found is not None and found.prefix == str(tmp_path) and found.system_site
    (tmp_path / "bin" / "pyvenv.cfg").write_text("include-system-site-packages = false\n")
    found = venv_config(exe)  # beside the interpreter wins
    assert found is not None and found.prefix == str(tmp_path) and not found.system_site
    (tmp_path / "bin" / "pyvenv.cfg").unlink()
    (tmp_path / "pyvenv.cfg").unlink()
    os.mkfifo(tmp_path / "pyvenv.cfg")
    assert venv_config(exe) is None  # not read: never blocks


@pytest.mark.parametrize("python", ["", "  "])
def test_an_empty_python_is_refused(python: str) -> None:
    with pytest.raises(InputError, match="names no interpreter"):
        probe(python)


def test_an_answer_that_floods_is_cut(tmp_path: Path) -> None:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nexec head -c 100000000 /dev/zero\n")
    script.chmod(0o755)
    with pytest.raises(InputError, match="printed more than"):
        probe(str(script))
