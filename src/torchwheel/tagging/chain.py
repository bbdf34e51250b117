"""Run a platform repair tool (auditwheel, delocate, delvewheel) before torchwheel.

cibuildwheel runs one ``repair-wheel-command``; chaining two tools in shell syntax needs a
scratch directory, and the idioms differ between ``sh`` and ``cmd.exe`` (and a fixed
scratch directory collects stale wheels in a reused container). ``--repair-with`` takes the
first tool's command, runs it into a fresh temporary directory, and hands torchwheel exactly
the one wheel it produced.

The scratch directory is spelled ``{repair_dir}``: cibuildwheel substitutes only the
placeholders it knows (``{wheel}``, ``{dest_dir}``, ...) and passes others through
(``format_safe`` in cibuildwheel/util/helpers.py), so ``{dest_dir}`` inside the inner command
would already be cibuildwheel's final directory by the time we see it.
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from torchwheel.errors import InputError


def _quote(path: Path) -> str:
    return subprocess.list2cmdline([str(path)]) if sys.platform == "win32" else shlex.quote(str(path))


@contextlib.contextmanager
def first_stage(command: str, wheel: Path) -> Iterator[Path]:
    """Yield the single wheel ``command`` writes; the scratch directory dies afterwards."""
    if "{repair_dir}" not in command:
        raise InputError("--repair-with needs {repair_dir} in the command: where the tool writes its wheel")
    with tempfile.TemporaryDirectory(prefix="torchwheel-repair-") as scratch:
        out = Path(scratch)
        line = command.replace("{wheel}", _quote(wheel.resolve())).replace("{repair_dir}", _quote(out))
        # the tool's messages go to stdout (cibuildwheel logs both): when it fails, torchwheel's
        # one line is all of stderr, as for every exit 2
        result = subprocess.run(
            line, shell=True, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False
        )
        if result.returncode != 0:
            raise InputError(f"the repair command failed with exit code {result.returncode}: {line}")
        wheels = sorted(out.glob("*.whl"))
        if len(wheels) != 1:
            raise InputError(f"the repair command left {len(wheels)} wheels, expected exactly one: {line}")
        yield wheels[0]
