"""How an issue-39 case (fixtures/hostile_own.py, fixtures/hostile_surfaces.py) is run and
judged, shared by tests/test_hostile_own.py and benchmarks/hostile_own_bench.py: a snapshot of
a folder (every file by its bytes), what changed outside the declared outputs, and the run
itself, in this process (``torchwheel.cli.exits.run``, or the API call) or in a process of
its own (its RLIMIT_FSIZE and standard output set, its peak RSS from ``os.wait4``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from .helpers import REPO, measured_run

# a process of its own: its rlimit and its standard output set, then torchwheel exec'd
_WRAPPER = """
import json, os, resource, signal, sys
spec = json.loads(sys.argv[1])
if spec["fsize"]:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["fsize"], spec["fsize"]))
if spec["stdout"] == "closed-pipe":
    read, write = os.pipe()
    os.close(read)
    os.dup2(write, 1)
elif spec["stdout"]:
    os.dup2(os.open(spec["stdout"], os.O_WRONLY), 1)
os.execv(sys.executable, [sys.executable, "-m", "torchwheel", *spec["argv"]])
"""


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a regular file by its bytes (a sparse one by its size and
    inode, a mode-000 one by its size), anything else by its kind (tests/test_hostile.py too)."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            st = p.lstat()
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif not p.is_file():
                out[rel] = f"special:{st.st_mode:o}"
            elif st.st_size > 64 << 20:
                out[rel] = f"big:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"  # a sparse GB: no rehash
            elif st.st_mode & 0o444 == 0:
                out[rel] = f"unreadable:{st.st_size}:{st.st_mtime_ns}"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def changed(before: dict[str, str], after: dict[str, str], allowed: tuple[str, ...]) -> list[str]:
    return [
        rel
        for rel in sorted(set(before) | set(after))
        if before.get(rel) != after.get(rel) and not any(rel == a or rel.startswith(a + "/") for a in allowed)
    ]


def in_process(spec: Any, capsys: Any, monkeypatch: Any) -> tuple[int, str, str]:
    """The run in this process (pytest's ``capsys`` and ``monkeypatch``): exit code, stdout,
    stderr; an API call's InputError counts as the command line's exit 2."""
    from torchwheel import limits
    from torchwheel.cli import cli
    from torchwheel.cli.exits import run
    from torchwheel.errors import InputError
    from torchwheel.net import fairness

    for name, value in spec.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(fairness, "_gate", None)  # a process's caps, read from its environment once
    capsys.readouterr()
    if spec.call is not None:
        try:
            with limits.applied(limits.from_environment()):  # as a process of its own reads them
                spec.call()
            code = 0
        except InputError as exc:
            print(f"torchwheel: error: {exc}", file=sys.stderr)
            code = 2
    else:
        code = run(cli, spec.argv)
    out, err = capsys.readouterr()
    return code, out, err


def in_a_process(spec: Any, root: Path, timeout: float) -> tuple[int, str, str, float, bool]:
    """The run in a process of its own: exit code, stdout, stderr, peak RSS (MB), timed out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHWHEEL_", "PYTEST"))} | spec.env
    env["PYTHONPATH"] = str(REPO / "src")
    payload = json.dumps({"fsize": spec.fsize, "stdout": spec.stdout, "argv": spec.argv})
    m = measured_run(
        [sys.executable, "-c", _WRAPPER, payload], cwd=root, env=env, timeout=timeout, address_space=4 << 30
    )
    return m.code, m.stdout, m.stderr, m.peak_mb, m.timed_out
