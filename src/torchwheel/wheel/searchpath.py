"""An interpreter's search path as its ``site`` module would build it, computed without
running ``site``: the environment's ``pyvenv.cfg`` and its ``.pth`` files are read here, as
data, and nothing of them is executed.

``python -I`` still imports ``site``, and ``site`` executes every ``.pth`` line that starts
with ``import`` and imports ``sitecustomize``: any of them runs as the user and can forge an
answer. So the interpreter is asked with ``-I -S`` (``selection.target``: no ``site`` at all)
for what only it knows (its standard library, its site-packages directories for a given
prefix, its install scheme), and this module does the rest of ``site``'s work:

- a virtual environment is recognised as ``site.venv()`` recognises it (``getpath`` does not
  set ``sys.prefix`` to it: ``site`` does): a ``pyvenv.cfg`` beside the interpreter or one
  folder up; its ``include-system-site-packages`` decides whether the base installation's
  site-packages follow the environment's own;
- each site-packages directory's ``.pth`` files (sorted; from Python 3.13 on, hidden ones
  skipped and a UTF-8 BOM dropped, as that ``site`` does) are read through ``safeopen``
  (regular files only, bounded), and each path line is appended as ``site.addpackage``
  appends it (relative to the directory, once, only if it exists);
- each ``import`` line is **not run** and is kept (``NotRun``), so that a reader of the
  environment can say so: whatever such a line adds at startup (an editable install's
  finder, a path inserted by code) is not on the path computed here.

The user site-packages and ``PYTHONPATH`` are left out, as ``python -I`` leaves them out: the
environment is judged as itself, not as one shell's view of it.
"""

from __future__ import annotations

import locale
import os
import stat
from collections.abc import Iterable
from dataclasses import field
from pathlib import Path

from torchwheel import limits
from torchwheel.frozen import frozen
from torchwheel.safeopen import read_regular

_PTH_LINE_SHOWN = 120  # characters of an import line kept to show
_NOT_RUN_KEPT = 64  # import lines kept to show; the rest are counted


@frozen
class VenvConfig:
    """A ``pyvenv.cfg`` as ``site.venv()`` reads it: the environment's prefix (the folder
    above the interpreter's), and whether the base installation's site-packages are seen."""

    prefix: str
    system_site: bool


@frozen
class NotRun:
    """A ``.pth`` import line left unexecuted: which file, which line, its text (clipped)."""

    pth: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.pth}:{self.line}: {self.text}"


@frozen
class SearchPath:
    """The directories, in ``sys.path`` order, and the ``.pth`` import lines not run
    (``not_run``: the first ``_NOT_RUN_KEPT``; ``more_not_run`` counts the rest)."""

    directories: tuple[str, ...]
    not_run: tuple[NotRun, ...] = ()
    more_not_run: int = 0
    unread_pth: tuple[str, ...] = field(default_factory=tuple)  # .pth files not read, with why


def venv_config(executable: str) -> VenvConfig | None:
    """The virtual environment ``executable`` belongs to, as ``site.venv()`` finds it (its
    ``pyvenv.cfg`` beside it or one folder up), else None. The file is read through
    ``safeopen``; one that cannot be read is no environment's (``site`` would fail to read it
    too and carry on as a base installation)."""
    exe_dir = os.path.dirname(os.path.abspath(executable))
    site_prefix = os.path.dirname(exe_dir)
    for candidate in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(site_prefix, "pyvenv.cfg")):
        if not os.path.isfile(candidate):
            continue
        try:
            text = read_regular(Path(candidate), limits.current().max_config_bytes.value).decode(
                "utf-8", "replace"
            )
        except OSError:
            return None
        system_site = "true"
        for line in text.splitlines():
            if "=" in line:
                key, _, value = line.partition("=")
                if key.strip().lower() == "include-system-site-packages":
                    system_site = value.strip().lower()
        return VenvConfig(site_prefix, system_site == "true")
    return None


def _makepath(*parts: str) -> tuple[str, str]:
    """``site.makepath``: the absolute path and its case-normalised key."""
    path = os.path.abspath(os.path.join(*parts))
    return path, os.path.normcase(path)


def _exists(path: str) -> bool:
    try:
        return os.path.exists(path)
    except ValueError:  # an embedded NUL: names nothing
        return False


def _hidden(st: os.stat_result) -> bool:
    return bool(
        (getattr(st, "st_flags", 0) & getattr(stat, "UF_HIDDEN", 0))
        or (getattr(st, "st_file_attributes", 0) & getattr(stat, "FILE_ATTRIBUTE_HIDDEN", 0))
    )


def _lines(data: bytes, python: tuple[int, int]) -> list[str]:
    """The lines ``site`` of that Python reads: 3.13 decodes UTF-8 with a BOM (the locale's
    encoding as a fallback) and splits like ``str.splitlines``; before, a text file in the
    locale's encoding (UTF-8 here), its universal newlines, a BOM kept."""
    if python >= (3, 13):
        try:
            return data.decode("utf-8-sig").splitlines()
        except UnicodeDecodeError:
            return data.decode(locale.getpreferredencoding(False) or "utf-8", "replace").splitlines()
    text = data.decode(locale.getpreferredencoding(False) or "utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def search_path(
    stdlib: Iterable[str], site_dirs: Iterable[str], python: tuple[int, int] = (3, 13)
) -> SearchPath:
    """``sys.path`` as ``site.main()`` of Python ``python`` leaves it for ``python -I``: the
    interpreter's own entries (``stdlib``, what ``-I -S`` printed), then each existing
    directory of ``site_dirs`` followed by the path lines of its ``.pth`` files (module
    docstring)."""
    out: list[str] = []
    known: set[str] = set()
    for entry in stdlib:
        out.append(entry)
        if _exists(entry):
            known.add(_makepath(entry)[1])
    not_run: list[NotRun] = []
    more = 0
    unread: list[str] = []
    limit = limits.current().max_metadata_bytes.value
    for site_dir in site_dirs:
        if not os.path.isdir(site_dir):
            continue
        sitedir, key = _makepath(site_dir)
        if key not in known:
            out.append(sitedir)
            known.add(key)
        try:
            names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            full = os.path.join(sitedir, name)
            if python >= (3, 13) and name.startswith("."):
                continue
            try:
                if python >= (3, 13) and _hidden(os.lstat(full)):
                    continue
                data = read_regular(Path(full), limit)
            except OSError as exc:
                unread.append(f"{full}: {exc.strerror or exc}")
                continue
            for number, line in enumerate(_lines(data, python), 1):
                if line.startswith("#") or not line.strip():
                    continue
                if line.startswith(("import ", "import\t")):
                    if len(not_run) < _NOT_RUN_KEPT:
                        text = line if len(line) <= _PTH_LINE_SHOWN else line[:_PTH_LINE_SHOWN] + "..."
                        not_run.append(NotRun(full, number, text))
                    else:
                        more += 1
                    continue
                path, key = _makepath(sitedir, line.rstrip())
                if key not in known and _exists(path):
                    out.append(path)
                    known.add(key)
    return SearchPath(tuple(out), tuple(not_run), more, tuple(unread))
