"""``doctor``'s probe of the interpreter, run beside the reading of the environment it most
likely names, so the two overlap (issue 49: the probe was a tenth of a second in which
nothing else happened); likewise the machine's reading (two small subprocesses) beside the
environment's.

The probe says which folders hold the environment's distributions; before it answers, the
venv's own ``pyvenv.cfg`` already says its prefix, and site-packages is below it. Those
distributions are read meanwhile, each exactly as ``read_environment`` would read it
(``environment.read_distribution``), and kept by what they were read as (an ``Installed``:
its folder, ``.dist-info`` and boundary). ``read_environment`` then takes a kept reading
only for a distribution the probe's search path lists as the same ``Installed``, so a wrong
guess costs its time and changes no answer: a distribution it did not read, or read under
another boundary, is read then. A guess's failure is not reported (the real reading says
what is wrong, if that distribution is on the search path at all).
"""

from __future__ import annotations

import contextvars
import glob
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from torchwheel.doctor.environment import Read, read_distribution
from torchwheel.selection import target as targets
from torchwheel.selection.target import TorchTarget
from torchwheel.tables.tableset import Tables
from torchwheel.tables.torchcache import CleanFiles
from torchwheel.wheel.installed import Installed, installed
from torchwheel.wheel.searchpath import venv_config

T = TypeVar("T")


def started(fn: Callable[..., T], *args: object) -> Callable[[], T]:
    """``fn(*args)`` begun in a thread of its own, in this context (the run's limits hold
    there too); the callable returned waits for its answer, or raises its exception."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="torchwheel-doctor")
    future = pool.submit(contextvars.copy_context().run, fn, *args)
    pool.shutdown(wait=False)  # the one task still runs; the thread ends with it
    return future.result


def probe_beside_reading(
    python: str | None, tables: Tables, whole: bool, clean: CleanFiles | None = None
) -> tuple[TorchTarget, dict[Installed, Read]]:
    """``targets.probe(python)`` (its ``InputError`` too), and the distributions read while it
    ran (module docstring); ``whole`` and ``clean`` as ``read_environment`` will be given them."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="torchwheel-probe")
    probing = pool.submit(contextvars.copy_context().run, targets.probe, python)
    pool.shutdown(wait=False)
    early: dict[Installed, Read] = {}
    try:
        prefix, sites = _likely_sites(python or sys.executable)
        for item in installed(sites, (prefix,)):
            if probing.done() and probing.exception() is not None:
                break  # no environment to read: the probe's error is the answer
            if isinstance(item, Installed) and item.key != "torch":  # torch: ``doctor.owntorch``
                early[item] = read_distribution(item, tables, whole, clean)
    except Exception:  # a guess's failure: said by the real reading, if it is the environment's
        pass
    return probing.result(), early


def _likely_sites(python: str) -> tuple[str, list[str]]:
    """The prefix of the venv ``python`` belongs to and its site-packages folders, as
    ``site`` makes them on POSIX (``lib/pythonX.Y/site-packages``); none when it is not a
    venv's, or the name cannot be used (the probe says why)."""
    venv = venv_config(python) if "\x00" not in python and os.sep in python else None
    if venv is None:
        return "", []
    pattern = os.path.join(glob.escape(venv.prefix), "lib", "python3.*", "site-packages")
    return venv.prefix, sorted(glob.glob(pattern))
