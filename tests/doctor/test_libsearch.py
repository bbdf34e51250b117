"""``doctor.libsearch``: libraries found as ld.so finds them, held to the real loader: each
layout of ``fixtures/machine`` opened with ``ctypes.CDLL`` in a fresh process (with the
case's ``LD_LIBRARY_PATH``) and resolved by ``Resolver.load`` in the same interpreter's
process; they must agree on whether it loads and on the library or version it lacks. And the
process ``import torch`` leaves, read from a real CUDA torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchwheel.doctor.libsearch import (
    Resolver,
    library_path,
    preloaded_cuda,
    read_process,
    rpath_folders,
    system_dirs,
)

from ..lib.helpers import REPO, machine_fixtures

_OPEN = r"""
import ctypes, json, sys
out = {}
for path in sys.argv[1:]:
    try:
        ctypes.CDLL(path)
        out[path] = "loads"
    except OSError as exc:
        out[path] = str(exc)
print(json.dumps(out))
"""


def _environ(folder: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    if folder is not None:
        env["LD_LIBRARY_PATH"] = str(folder)
    return env


def _loader(lib: Path, folder: Path | None) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _OPEN, str(lib)],
        capture_output=True,
        text=True,
        env=_environ(folder),
        check=True,
    )
    said: str = json.loads(proc.stdout)[str(lib)]
    return said


CASES = sorted(machine_fixtures().cases)


@pytest.mark.parametrize("case", CASES)
def test_resolved_as_the_loader_resolves(case: str) -> None:
    lib, folder = machine_fixtures().cases[case]
    truth = _loader(lib, folder)
    outcome = Resolver(read_process(sys.executable, _environ(folder), None, [])).load(str(lib))
    assert outcome.loads == (truth == "loads"), (truth, outcome)
    if outcome.missing:
        assert truth.startswith(f"{outcome.missing[0].name}: cannot open shared object file"), (
            truth,
            outcome,
        )
    if outcome.gaps:
        gap = outcome.gaps[0]
        assert f"version `{gap.version}' not found (required by {gap.needed_by})" in truth, (truth, outcome)
        assert truth.startswith(gap.library), (truth, gap)


def test_every_kind_of_answer_occurs() -> None:
    """The cases are not all alike: loads, a missing library and a missing version all occur."""
    said = {case: _loader(*machine_fixtures().cases[case]) for case in CASES}
    assert sum(v == "loads" for v in said.values()) >= 4
    assert sum("cannot open shared object file" in v for v in said.values()) >= 3
    assert sum("version `" in v for v in said.values()) == 2, said


def test_expanding_paths() -> None:
    assert rpath_folders("$ORIGIN/../lib:${ORIGIN}/x::/opt/y:$LIB/z", "/a/b") == (
        "/a/b/../lib",
        "/a/b/x",
        "/opt/y",
    )
    assert library_path("/p::/q;/r", "/cwd") == ("/p", "/cwd", "/q", "/r")
    assert library_path("", "/cwd") == ()
    dirs, how = system_dirs("/lib64/ld-linux-x86-64.so.2", 62)
    assert "/lib/x86_64-linux-gnu" in dirs and "--help" in how
    fallback, how = system_dirs("/nonexistent/ld.so", 62)
    assert "/usr/lib64" in fallback and "usual" in how


def _cuda_site() -> Path:
    found = sorted((REPO / ".venv-cu130").glob("lib/python3*/site-packages"))
    if not found or not (found[0] / "torch").is_dir():
        pytest.fail(".venv-cu130 holds no torch: run `bash scripts/dev-setup`")
    return found[0]


def test_the_process_a_cuda_torch_leaves() -> None:
    """torch 2.14.1+cu130: its _C and libtorch_global_deps bring the CUDA runtime and cuDNN
    through their RPATHs; its __init__'s preload list (read, not run) adds the nvidia-* wheels'
    libraries, NVRTC among them; the interpreter's own libraries are there too."""
    site = _cuda_site()
    python = str(REPO / ".venv-cu130" / "bin" / "python")
    process = read_process(python, _environ(None), site / "torch", [str(site)])
    assert not process.problem and not process.torch_missing
    assert os.path.normpath(process.loaded["libcudart.so.13"]).startswith(str(site / "nvidia"))
    assert "libc.so.6" in process.loaded and process.holder[process.loaded["libc.so.6"]] == "the interpreter"
    preloaded = preloaded_cuda(site / "torch", [str(site)])
    assert any(p.endswith("libnvrtc.so.13") for p in preloaded), preloaded
    assert {process.holder[p] for p in preloaded} <= {"torch", "torch's CUDA preload"}


def test_a_hostile_search_path_is_bounded(tmp_path: Path) -> None:
    """A RUNPATH of 100,000 folders and LD_LIBRARY_PATH of as many: the search looks at a
    bounded number of folders and files, and says the answer is not known past the budget."""
    from torchwheel.doctor import libsearch

    assert (
        len(rpath_folders(":".join(f"/nowhere/{i}" for i in range(100_000)), "/o")) == libsearch._MAX_FOLDERS
    )
    assert len(library_path(":".join(f"/n/{i}" for i in range(100_000)), "/")) == libsearch._MAX_FOLDERS
    lib, _ = machine_fixtures().cases["missing"]
    resolver = Resolver(read_process(sys.executable, _environ(None), None, []))
    assert resolver.load(str(lib)).missing  # within the budget: the missing library is named
    monkey = libsearch._MAX_LOOKS
    try:
        libsearch._MAX_LOOKS = 3
        outcome = resolver.load(str(lib))
    finally:
        libsearch._MAX_LOOKS = monkey
    assert outcome.unread and "looks" in outcome.unread[0][1] and not outcome.missing
