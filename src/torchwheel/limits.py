"""The budget torchwheel keeps on any input, and the one place that states it.

torchwheel runs in CI on wheels it did not build (cibuildwheel repair, index audits,
``install`` from a folder of downloads). Whatever those bytes claim, a run must stay within
a memory budget (300 MB resident by default) and take time linear in the bytes actually
present, not in the bytes a header claims. Every reader asks this module for its limits
instead of keeping a private constant, so the budget is reviewed in one place and raised in
one place for the rare honest giant (``--max-member-size`` or the environment variables
below); each refusal names the limit and how to raise it. A bound that a format itself sets
(a field's width, the newest zip version read, which bytes a schema byte may be) is no
budget: it stays a named constant beside the reader of that format.

Readers check every size or count read from a file against the bytes present *before* they
allocate or loop: a limit here is the second line of defence, for claims that are
consistent with the file yet too large to handle within the budget.

The limits of a run are one immutable value (``Limits``), built at the edge: the command line
takes the defaults, the environment and its options (``from_environment``,
``member_size_option``, ``network_option``) and applies the value to the command
(``applied``); a pool's threads and processes are handed it and apply it to each task
(``analysis.memberpool``, ``scan.run``). Nothing switches them for the process: two values
applied in two threads (or two API calls) each hold. A reader asks ``current()``, which is the
value applied to its context, else the defaults and the environment as the process first saw
them (what a library caller that applied none gets).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Generic, TypeVar

from torchwheel.errors import InputError, quoted
from torchwheel.frozen import frozen

T = TypeVar("T")

MEMORY_BUDGET_MB = 300  # peak RSS the hostile-input tests hold every command to

_ENV_PREFIX = "TORCHWHEEL_"


class LimitExceeded(InputError):
    """An input asks for more than the budget allows: exit 2 with the limit's name."""

    fixed_reference = "limit-exceeded"

    def __init__(self, what: str, value: int, limit: Limit) -> None:
        raise_how = f"raise it with {limit.option}" if limit.option else f"raise it with {limit.env}"
        if limit.option:
            raise_how += f" or {limit.env}"
        super().__init__(
            f"{what} ({value:,}) exceeds the limit {limit.name} = {limit.value:,}: {raise_how}",
            value=value,
            limit=limit.name,
        )


@frozen
class Limit:
    name: str
    value: int
    option: str | None = None  # the CLI option that raises it, if any
    minimum: int = 0  # a smaller value set is refused (a timeout of 0 s would make sockets non-blocking)

    @property
    def env(self) -> str:
        return _ENV_PREFIX + self.name.upper().replace("-", "_")

    def check(self, what: str, value: int) -> None:
        if value > self.value:
            raise LimitExceeded(what, value, self)


@frozen
class Limits:
    """Defaults sized for the largest real wheels (torch's CUDA wheels: ~1 GB libraries,
    ~15,000 members) with room to spare, and far below what would exhaust the budget."""

    max_member_size: Limit = Limit("max-member-size", 8 << 30, "--max-member-size")
    max_members: Limit = Limit("max-members", 100_000)  # torch: ~15,000; >65,535 needs zip64
    max_name_length: Limit = Limit("max-name-length", 4096)
    max_inflate_ratio: Limit = Limit("max-inflate-ratio", 2000)  # deflate tops out near 1032:1
    max_record_rows: Limit = Limit("max-record-rows", 400_000)
    max_record_bytes: Limit = Limit("max-record-bytes", 64 << 20)  # 400,000 rows of 160 bytes
    max_metadata_bytes: Limit = Limit("max-metadata-bytes", 16 << 20)
    max_tags: Limit = Limit("max-tags", 4096)  # expanded size of a compressed tag set
    max_marker_hits: Limit = Limit("max-marker-hits", 64)  # raw marker records kept per binary
    # A symbol costs 250-300 bytes at the peak of the costliest command (compat: its name, its
    # import, its table entry, the comparison's sets): 750,000 fit the budget, ten times
    # libtorch_cpu.so's 75,000 (a million took 330 MB)
    max_symbols: Limit = Limit("max-symbols", 750_000)
    max_needed: Limit = Limit("max-needed", 4096)  # DT_NEEDED / LC_LOAD_DYLIB / DLLs per binary
    max_load_commands: Limit = Limit("max-load-commands", 65_536)
    # fatbin images walked per binary (vllm's flash-attention library: ~9,000); past it the
    # GPU code is reported as read in part
    max_gpu_images: Limit = Limit("max-gpu-images", 1_000_000)
    # what a GPU scan keeps of one binary besides its tally: runs of adjacent fatbins or
    # bundles with their offsets (a run per object file's fatbin: hundreds in a CUDA
    # library), and the problems of a partial reading (the first few say why); the targets
    # of one offload bundle's table (a ROCm build lists a few), and the bytes of a compressed
    # bundle decompressed to read that table (it sits at the start of the stream)
    max_gpu_runs: Limit = Limit("max-gpu-runs", 4096)
    max_gpu_problems: Limit = Limit("max-gpu-problems", 16)
    max_offload_targets: Limit = Limit("max-offload-targets", 256)
    max_offload_table_bytes: Limit = Limit("max-offload-table-bytes", 64 << 10)
    # the longest name a Mach-O export trie may spell, edge label by edge label (real names:
    # a few KB; a hostile trie can chain labels without end)
    max_symbol_name_bytes: Limit = Limit("max-symbol-name-bytes", 32 << 10)
    # bytes of headers, symbol/string tables and export data kept from one streamed binary
    # (torch 2.13's libtorch_cpu.dylib needs 11 MB, torch_cpu.dll 6 MB, libtorch_cpu.so ~60 MB)
    max_binary_tables: Limit = Limit("max-binary-tables", 160 << 20)
    # a JSON document from outside (variant.json, a --symbols table, an index page; safejson):
    # its bytes, its values (strings + containers + commas: ~70 bytes each once parsed) and depth
    max_json_bytes: Limit = Limit("max-json-bytes", 16 << 20)  # the shipped shim table: 130 KB
    max_json_values: Limit = Limit("max-json-values", 1_000_000)
    max_json_depth: Limit = Limit("max-json-depth", 64)  # the deepest document read nests 5 levels
    # a hosted index (select/install/matrix/index -i https://...): one index page (HTML or JSON;
    # PyPI's largest project pages are a few MB), a downloaded file (written to disk as it
    # streams, never held in memory: torch's CUDA wheels are ~1 GB), the projects a root page
    # may list when no --name says which to read (a registry's root lists 600,000), and time:
    # seconds without a byte, and seconds for all the network work of one command (connects,
    # headers, bodies, redirects: a server that drips a byte every 0.5 s holds it no longer)
    max_page_bytes: Limit = Limit("max-page-bytes", 16 << 20)
    max_download_bytes: Limit = Limit("max-download-bytes", 8 << 30)
    max_index_projects: Limit = Limit("max-index-projects", 1000)
    http_timeout: Limit = Limit("http-timeout", 60, "--http-timeout", minimum=1)
    max_http_seconds: Limit = Limit("max-http-seconds", 3600, "--max-http-seconds", minimum=1)
    # requests one command may make (pages, .metadata files, downloads, each redirect hop).
    # `select` reads a page per project, then a .metadata file and a download per wheel it
    # still has to judge; `matrix` and `index` download every wheel of the projects named
    # (a project's builds on one index are tens of wheels). 2,000 covers forty such
    # projects; a page of 3,000 links that all answer 404 ends at 2,000 round trips (2.3 s on
    # 127.0.0.1) instead of going through all of them. A bigger mirror raises it.
    max_http_requests: Limit = Limit("max-http-requests", 2000)
    # items, not bytes: a page costs what its links cost once parsed and judged (about 2 KB
    # each: 99,999 links served to `select` peak at 234 MB), not its bytes (16 MB of
    # "<a href=a>" is 1.6 million links). The files one project gathers over all its pages,
    # the same. A Requires-Python becomes one packaging object per clause (a million clauses
    # in a 6 MB page took 530 MB and 12 s), so its length and its clauses are counted before
    # packaging sees it; real ones are short (">=3.8, !=3.9.0, <4": 3 clauses, 18 characters).
    max_page_links: Limit = Limit("max-page-links", 100_000)
    max_project_files: Limit = Limit("max-project-files", 100_000)
    max_requires_python_length: Limit = Limit("max-requires-python-length", 1024)
    max_requires_python_clauses: Limit = Limit("max-requires-python-clauses", 64)
    # What is only shown (findings per input and code, RECORD problems per kind, each list of
    # symbol names) keeps this many entries and this much text; the rest is counted, never
    # dropped silently. Real wheels stay well inside (torch_python.dll: 6,047 unstable C++
    # names, 0.9 MB); a 4.6 MB wheel can import a million names, each up to 16 MB long.
    max_listed: Limit = Limit("max-listed", 10_000)
    max_listed_bytes: Limit = Limit("max-listed-bytes", 4 << 20)
    # A version or a build tag, measured before packaging converts its digits (int() refuses
    # 4,300 digits with a ValueError, and is quadratic below that): real ones are short
    # ("2.5.1+cu124.post1": 17 characters; PyPI's longest are under 100).
    max_version_length: Limit = Limit("max-version-length", 256)
    # One line of a scan file (``scan -o``, ``scan --report``): what ``scan`` writes stays under
    # it (a longer line keeps its source and need and says why its documents were left out),
    # and a longer line read back is no scan line, skipped in 64 KiB steps, never held.
    max_scan_line_bytes: Limit = Limit("max-scan-line-bytes", 8 << 20)
    # An install journal (``install/journal.py``): a line (a record; the moves of an upgrade are
    # written in records of at most 256 KiB) and the entries of all records (each move and each
    # write: a wheel has at most max-members files, an upgrade moves as many again). A journal
    # past either is refused whole before anything is touched.
    max_journal_line_bytes: Limit = Limit("max-journal-line-bytes", 1 << 20)
    max_journal_entries: Limit = Limit("max-journal-entries", 500_000)
    # the paths or names one library call takes (``torchwheel.arguments``; a command line holds
    # fewer, ARG_MAX bounds it): an endless generator is refused after this many
    max_inputs: Limit = Limit("max-inputs", 100_000)
    # the shim headers ``symbols update`` reads of one torch (a wheel, a folder), all together:
    # torch 2.13's are 200 KB in 12 files; every declaration costs a scan and a table entry
    # (12 MB of them took 34 s and 304 MB)
    max_shim_header_bytes: Limit = Limit("max-shim-header-bytes", 2 << 20)
    # the entries of one export index (``tables.exports``), checked before its body is inflated:
    # each costs ~24 bytes inflated and parsed (an index claiming 16 M entries took 418 MB);
    # the shipped Linux index has 101,483, and one more torch at max-symbols adds 750,000
    max_export_entries: Limit = Limit("max-export-entries", 2_000_000)
    # A configuration file read whole (``pyproject.toml`` for ``[tool.torchwheel]``)
    max_config_bytes: Limit = Limit("max-config-bytes", 4 << 20)


class Listing(Generic[T]):
    """A list that is only shown, kept within ``max-listed`` entries and ``max-listed-bytes``
    (the characters of ``text(entry)``); the entries past either are counted in ``more``.

    A prefix, not a selection: entries added in order stay "the first N, and so many more",
    and an entry that is counted is not held.
    """

    def __init__(self, text: Callable[[T], str] = str) -> None:
        lim = current()
        self._text = text
        self._keep, self._budget = lim.max_listed.value, lim.max_listed_bytes.value
        self.kept: list[T] = []
        self.more = 0

    def add(self, item: T) -> None:
        if not self.more and len(self.kept) < self._keep:
            self._budget -= len(self._text(item))
            if self._budget >= 0:
                self.kept.append(item)
                return
        self.more += 1


def listed(items: Iterable[T], text: Callable[[T], str] = str) -> tuple[list[T], int]:
    """``items`` through a ``Listing``: (the entries kept, how many more followed them)."""
    listing = Listing(text)
    for item in items:
        listing.add(item)
    return listing.kept, listing.more


def _from_env(limits: Limits) -> Limits:
    changes: dict[str, Limit] = {}
    for field_name in limits.__dataclass_fields__:
        limit: Limit = getattr(limits, field_name)
        raw = os.environ.get(limit.env)
        if raw is None:
            continue
        try:
            value = _parse_size(raw)
        except ValueError as exc:
            raise InputError(
                f"{limit.env}={quoted(raw, 40)}: {exc}",
                reference="bad-option-value",
                field=limit.env,
                value=raw,
            ) from exc
        if value < limit.minimum:
            raise InputError(
                f"{limit.env}={quoted(raw, 40)}: expected at least {limit.minimum}",
                reference="bad-option-value",
            )
        changes[field_name] = replace(limit, value=value)
    return replace(limits, **changes)


def _parse_size(text: str) -> int:
    """``123``, ``64K``, ``512M``, ``2G`` (binary units): what a user types for a size."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    s = text.strip().upper().removesuffix("B").removesuffix("I")
    factor = units.get(s[-1:], 1)
    number = s[:-1] if s[-1:] in units else s
    # ASCII digits only ("²".isdigit() holds, int() refuses it), and few enough that int() is
    # cheap: 2^64 has 20 digits, no budget needs more
    if not (number.isascii() and number.isdigit() and len(number) <= 20):
        raise ValueError("expected a whole number of at most 20 digits, optionally with K, M, G or T")
    return int(number) * factor


# the value applied to this context (``applied``); a new thread starts without one
_in_force: ContextVar[Limits | None] = ContextVar("torchwheel_limits", default=None)


def from_environment() -> Limits:
    """The defaults, then the ``TORCHWHEEL_MAX_*`` environment variables as they are now."""
    return _from_env(Limits())


@functools.cache
def _first_environment() -> Limits:
    return from_environment()


def current() -> Limits:
    """The limits in force: the value applied to this context (the command line's: defaults,
    environment, options), else the defaults and the environment as the process first saw them."""
    found = _in_force.get()
    return found if found is not None else _first_environment()


@contextmanager
def applied(limits: Limits) -> Iterator[Limits]:
    """``limits`` in force for this block, in this thread or task only (a pool's threads and
    processes are given the value and apply it to each task)."""
    token = _in_force.set(limits)
    try:
        yield limits
    finally:
        _in_force.reset(token)


def check_version(what: str, text: str) -> str:
    """``text``, a version or build tag from outside, once its length is within
    ``max-version-length``: packaging converts every run of digits with ``int()``, which
    refuses 4,300 of them with a ValueError no caller expects."""
    current().max_version_length.check(f"{what}'s length in characters", len(text))
    return text


def describe() -> str:
    """The budget in one line, for the out-of-memory message."""
    return (
        f"the memory budget is {MEMORY_BUDGET_MB} MB; limits are raised with --max-member-size "
        f"or {_ENV_PREFIX}MAX_* environment variables (docs/evidence/reliability.md)"
    )


def member_size_option(base: Limits, text: str) -> Limits:
    """``base`` with ``--max-member-size`` (which wins over the environment)."""
    try:
        value = _parse_size(text)
    except ValueError as exc:
        raise InputError(
            f"--max-member-size {text!r}: {exc}",
            reference="bad-option-value",
            field="--max-member-size",
            value=text,
        ) from exc
    return replace(base, max_member_size=replace(base.max_member_size, value=value))


def network_option(base: Limits, field_name: str, option: str, seconds: int) -> Limits:
    """``base`` with ``--http-timeout`` / ``--max-http-seconds`` (which win over the
    environment): the budgets a CI job most often tightens, so a broken mirror fails the job
    in seconds, not hours."""
    if seconds <= 0:
        raise InputError(
            f"{option} {seconds}: expected a positive number of seconds", reference="bad-option-value"
        )
    limit: Limit = getattr(base, field_name)
    return replace(base, **{field_name: replace(limit, value=seconds)})
