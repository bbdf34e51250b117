"""torchwheel as a library: the answers the command line gives, without a subprocess.

A build backend, a test suite or an index scanner asks here; the commands ``inspect``,
``show``, ``check`` and ``tag`` are this module plus rendering (``torchwheel.cli``). Every
result serialises, with ``to_json()``, to the versioned document its command prints with
``--format json`` (``docs/reference/json.md``), so a tool can switch between the two freely.

Stable (kept across releases, changed only with a deprecation): the functions
``inspect_wheel``, ``check``, ``need``, ``loads_on`` and ``tag``, their keyword arguments,
the result classes' documented attributes and ``to_json()`` (``torchwheel.results``, every one
exported here), ``InputError`` and its kinds. Provisional:
the ``facts`` attribute (the internal per-wheel facts), the ``policy``/``table`` keywords
the command line passes, ``scan_one`` and ``doctor``. ``docs/reference/api.md`` is the reference.

Nothing here prints, exits or reads ``pyproject.toml``: configuration is the caller's (the
command line reads ``[tool.torchwheel]`` and passes it in). Unreadable input raises
``InputError`` with the same one-line message the command line prints: ``MissingInput``
(also a ``FileNotFoundError``), ``UnreadableInput`` (an ``OSError``) or ``InvalidValue`` (a
``ValueError``) where one of those says it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from packaging.version import Version

from torchwheel import arguments
from torchwheel.errors import Exit, InputError, InvalidValue, MissingInput, UnreadableInput
from torchwheel.results import CheckResult, Facts, Finding, LoadVerdict, Need, Unreadable

if TYPE_CHECKING:
    from torchwheel.analysis.memberpool import EarlyRead
    from torchwheel.analysis.wheelfacts import WheelFacts
    from torchwheel.doctor.checkup import DoctorResult, doctor
    from torchwheel.results import Axis, Cell, NeedKind, Severity, UnknownAxis
    from torchwheel.rules.registry import Findings, Policy
    from torchwheel.tables.tableset import Tables
    from torchwheel.tagging.apply import TagResult
    from torchwheel.tagging.tag_options import TagOptions

__all__ = [
    "Axis",
    "Cell",
    "CheckResult",
    "DoctorResult",
    "Exit",
    "Facts",
    "Finding",
    "InputError",
    "InvalidValue",
    "LoadVerdict",
    "MissingInput",
    "Need",
    "NeedKind",
    "RewriteRefused",
    "Severity",
    "UnknownAxis",
    "Unreadable",
    "UnreadableInput",
    "check",
    "doctor",
    "inspect_wheel",
    "loads_on",
    "need",
    "scan_one",
    "tag",
]

PathLike = str | Path


def __getattr__(name: str) -> object:
    """``doctor`` and ``DoctorResult`` (``doctor.checkup``) and the ``Literal`` aliases of
    ``torchwheel.results``, loaded when asked for (PEP 562): ``import torchwheel.api`` stays light."""
    if name in ("doctor", "DoctorResult"):
        from torchwheel.doctor import checkup

        return getattr(checkup, name)
    from torchwheel import results

    if name not in results.ALIASES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(results, name)


class RewriteRefused(InputError):
    """``tag`` will not rewrite: the wheel's facts make new metadata untrustworthy (a RECORD
    that disagrees with its files, METADATA that does not parse, an unreadable marker).
    ``findings`` holds what ``check`` would report on those codes."""

    fixed_reference = "rewrite-refused"

    def __init__(self, message: str, findings: Findings, wheels: list[WheelFacts]) -> None:
        super().__init__(message)
        self.findings, self.wheels = findings, wheels


def _refused(refusals: list[tuple[str, InputError]], wheels: int) -> InputError:
    """One error for every wheel ``tag`` refuses and why, at once (a run of ten wheels that
    need ``--build-torch`` says so once, naming them): never one refusal a run. A run of one
    wheel refused once raises that refusal itself."""
    if wheels == 1 and len(refusals) == 1:
        return refusals[0][1]
    named: dict[str, list[str]] = {}
    for wheel, exc in refusals:
        named.setdefault(str(exc), []).append(Path(wheel).name)
    return InputError(
        "; and ".join(f"{', '.join(who)}: {reason}" for reason, who in named.items()),
        reference=refusals[0][1].reference
        if len({e.reference for _, e in refusals}) == 1
        else "rewrite-refused",
    )


def _chosen(symbols: PathLike | Tables | None) -> Tables:
    """``symbols``: a tables file (``symbols update``), the tables the command line chose (it
    knows ``pyproject.toml``) or any other ``tables.tableset.Tables`` value, or None:
    ``TORCHWHEEL_SYMBOLS``, the user tables file, the shipped ones (``tablechoice``). The
    value is passed down to whatever reads and judges: nothing is switched for the process,
    so two calls with two tables, in one process or its threads, each judge by their own."""
    from torchwheel.tables.tablechoice import choose_tables
    from torchwheel.tables.tableset import Tables

    if isinstance(symbols, Tables):
        return symbols
    return choose_tables(arguments.path(symbols, "symbols") if symbols is not None else None, None)


def inspect_wheel(
    paths: PathLike | Iterable[PathLike],
    *,
    env: Sequence[str] = (),
    symbols: PathLike | Tables | None = None,
    verify_hashes: bool = True,
    unreadable: Literal["raise", "report"] = "raise",
    early: EarlyRead | None = None,
) -> Facts:
    """Read every compiled file of the inputs; nothing is imported or executed.
    ``env``: also installed distributions of this interpreter, by name. ``unreadable``:
    ``"raise"`` the first input that cannot be read, or ``"report"`` each in
    ``Facts.unreadable`` and read the others (``check`` and ``show`` on the command line).
    ``early``: the command line's (provisional): the first wheel, opened and being read
    already (``analysis.memberpool.start``)."""
    from torchwheel.analysis.load import load_facts

    if unreadable not in ("raise", "report"):
        raise InvalidValue(f"unreadable: {unreadable!r:.80} is neither 'raise' nor 'report'")
    chosen, given, env = _chosen(symbols), arguments.paths(paths), arguments.names(env, "env")
    if not given and not env:
        raise InputError(
            "give at least one wheel, directory or binary (or an installed distribution)", reference="misuse"
        )
    failed: list[InputError] | None = [] if unreadable == "report" else None
    facts = tuple(load_facts(given, tuple(env), chosen, verify_hashes, failed, early))
    return Facts(
        facts,
        chosen,
        tuple(Unreadable(e.input_path, str(e), e.reference, e.limit, e.value) for e in failed or ()),
    )


def check(
    paths: PathLike | Iterable[PathLike],
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    env: Sequence[str] = (),
    symbols: PathLike | Tables | None = None,
    verify_hashes: bool = True,
    policy: Policy | None = None,
    unreadable: Literal["raise", "report"] = "raise",
    early: EarlyRead | None = None,
) -> CheckResult:
    """Run the rules (``docs/reference/rules.md``). ``select``/``ignore``: codes or prefixes, as
    ``--select``/``--ignore``; an unknown code raises ``InvalidValue``. ``policy``: the
    command line's (``[tool.torchwheel]`` merged in; provisional). ``unreadable``: as
    ``inspect_wheel``'s; reported ones make ``exit_code`` 2, the others judged."""
    from torchwheel import rules
    from torchwheel.rules.codes import is_selector, unknown_code
    from torchwheel.rules.registry import Policy

    select, ignore = arguments.names(select, "select"), arguments.names(ignore, "ignore")
    for where, given in (("select", select), ("ignore", ignore)):
        for code in given:  # "TW501" alone would be read as the codes T, W, 5, ...: refused above
            if not is_selector(code):
                raise InvalidValue(unknown_code(code, where))
    if policy is None:
        policy = Policy(select=frozenset(select), ignore=frozenset(ignore))
    facts = inspect_wheel(
        paths, env=env, symbols=symbols, verify_hashes=verify_hashes, unreadable=unreadable, early=early
    )
    return CheckResult(facts, rules.run_all(facts.facts, policy), verify_hashes)


def scan_one(source: object, *, symbols: PathLike | Tables | None = None) -> dict[str, Any]:
    """The JSON line ``torchwheel scan`` writes for one wheel (``docs/scan.md``): ``source`` a
    path, an http(s) URL or a line's ``source`` object (``{"url": ..., "sha256": ...}``). An
    unreadable or unfetchable wheel is a line whose ``error`` says why: never raised."""
    from torchwheel.scan.scanline import scan_line

    return scan_line(source, check, need, symbols)


def _candidate(path: PathLike, symbols: PathLike | Tables | None, facts: Any = None) -> Any:
    from torchwheel.selection.candidates import read_candidate

    given = arguments.path(path, "path")
    return read_candidate(given, str(given.parent), tables=_chosen(symbols), checked=facts)


def need(
    path: PathLike, *, symbols: PathLike | Tables | None = None, checked: CheckResult | None = None
) -> Need:
    """The need ``select``, ``install``, ``index`` and ``matrix`` judge a wheel file by: its
    ``Torch-ABI`` fields where ``tag`` wrote them, else its binaries. A wheel ``check``
    calls broken (TW4xx from its archive and metadata) raises ``InputError``. ``checked``:
    what ``check`` returned for this file, with the same ``symbols``: its binaries' facts
    are used instead of reading them again (``scan`` judges every wheel by both)."""
    facts = None
    if checked is not None:
        facts = next((f for f in checked.facts.facts if f.contents.path == str(path)), None)
    return Need(str(path), _candidate(path, symbols, facts).torch)


def loads_on(
    path: PathLike,
    *,
    torch: str | Version,
    backend: str | None = None,
    gpu: str | int | None = None,
    symbols: PathLike | Tables | None = None,
) -> LoadVerdict:
    """The one verdict (``torchabi.verdicts.verdict``) for one wheel file on one torch: ``torch`` ``2.13.0``
    (that release) or ``2.13`` (every release of the minor: ``some`` when only some patch releases fit),
    a string or a ``packaging.version.Version``;
    ``backend`` its build (``cpu``, ``cu130``, ``rocm7.1``, ``xpu``; None: not known, so a wheel that
    needs one build is ``unknown``); ``gpu`` the GPU (``sm_90``, ``9.0`` or 90; None: not judged).
    Requirement markers are evaluated for the wheel's own platform and lowest CPython."""
    from torchwheel.selection.target import markers_for_tags
    from torchwheel.torchabi.backend import parse_backend
    from torchwheel.torchabi.cuda_archs import parse_gpu
    from torchwheel.torchabi.torch_named import named_torch
    from torchwheel.torchabi.torch_releases import minor_of
    from torchwheel.torchabi.verdicts import minor_verdict, verdict

    torch = arguments.text(torch, "torch", version=True) or ""
    version = named_torch(torch, "torch")
    backend = arguments.text(backend, "backend", version=True)
    build = parse_backend(backend) if backend is not None else None
    given = arguments.gpu(gpu)
    capability = given if isinstance(given, int) or given is None else parse_gpu(given)
    c = _candidate(path, symbols)
    markers = markers_for_tags(c.tags)
    if len(version.release) == 2:
        found = minor_verdict(c.torch, markers, minor_of(version), build, capability, tables=c.tables)
    else:
        found = verdict(c.torch, markers, version, build, capability, tables=c.tables)
    return LoadVerdict(str(path), str(torch), build.backend if build else None, capability, found)


def tag_wheels(
    paths: Sequence[PathLike],
    out_dir: PathLike | None,
    options: TagOptions,
    *,
    in_place: bool = False,
    dry_run: bool = False,
    verbose: bool = False,
    variant: bool = False,
    release: bool | None = None,
    symbols: PathLike | Tables | None = None,
    each: Callable[[TagResult], None] | None = None,
    overwrite: bool = False,
) -> list[TagResult]:
    """Every wheel ``tag`` writes, in order (with ``variant``: the variant copy before each
    plain one); ``each`` hears of each as it is written, so a later failure loses no word of
    what was written before it. Every refusal (a contradiction, a pin, an output that exists
    without ``overwrite``) comes before the first wheel is written; ``RewriteRefused`` when the
    facts make any rewrite dishonest. Provisional: the command line's entry; ``tag`` is stable."""
    from torchwheel import rules
    from torchwheel.analysis.load import opened
    from torchwheel.tagging import apply
    from torchwheel.tagging.release_requirements import release_sets

    dest = arguments.path(out_dir, "out_dir") if out_dir is not None else None
    lock = apply.lock_input if in_place and not dry_run else None
    results: list[TagResult] = []
    with opened(arguments.paths(paths), _chosen(symbols), lock) as loaded:
        wheels = [w for w, _ in loaded]
        blocking = rules.run_all(wheels, rules.rewrite_blockers())
        shared = release_sets(wheels, options, release)
        refusals: list[tuple[str, InputError]] = []  # every wheel's, before the first write
        for w in wheels:  # plans (and their refusals), outputs that exist
            opts = dataclasses.replace(options, release_requirements=shared.get(id(w)))
            try:
                apply.refuse_outputs(w, opts, dest, in_place, variant, overwrite or dry_run)
            except InputError as exc:
                refusals.append((w.contents.path, exc))
        if blocking:
            codes = ", ".join(sorted({f.code for f in blocking}))
            more = f"; and {_refused(refusals, len(wheels))}" if refusals else ""
            raise RewriteRefused(
                f"refusing to rewrite: {codes} make the new metadata untrustworthy{more}", blocking, wheels
            )
        if refusals:
            raise _refused(refusals, len(wheels))
        for w, fd in loaded:
            opts = dataclasses.replace(options, release_requirements=shared.get(id(w)))
            # the variant copy first, while the input is still where it was (--in-place replaces it)
            for copy in (True, False) if variant else (False,):
                results.append(
                    apply.write_tagged(
                        w, opts, dest, in_place and not copy, dry_run, verbose, fd, copy, overwrite
                    )
                )
                if each is not None:
                    each(results[-1])
    return results


def tag(
    path: PathLike,
    out_dir: PathLike,
    *,
    build_tag: str | None = None,
    local_label: str | None = None,
    build_torch: str | None = None,
    upper_bound: str | None = None,
    relax_pin: bool = False,
    symbols: PathLike | Tables | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the tagged copy of one wheel into ``out_dir`` and return its path (the input is
    never modified): ``Torch-ABI`` and correct ``Tag`` lines in WHEEL, the torch requirement,
    the facts side file, RECORD. Options as ``torchwheel tag``'s (``build_torch``: ``"X.Y"``
    or ``"installed"``); a file already at the output's name is ``InputError`` unless
    ``overwrite``. Every refusal is said at once, its fixes in these keywords' words."""
    from torchwheel.tagging.tag_options import TagOptions, build_torch_of

    arguments.path(out_dir, "out_dir")
    given = {"build_tag": build_tag, "local_label": local_label, "build_torch": build_torch}
    given |= {"upper_bound": upper_bound}
    chosen = {name: arguments.text(value, name, version=True) for name, value in given.items()}
    if chosen["build_torch"] is not None:
        chosen["build_torch"] = build_torch_of(chosen["build_torch"], "build_torch")
    options = TagOptions(
        upper_bound=chosen["upper_bound"],
        build_torch=chosen["build_torch"],
        relax_pin=relax_pin,
        build_tag=chosen["build_tag"],
        local_label=chosen["local_label"],
    )
    try:
        (result,) = tag_wheels([path], out_dir, options, release=False, symbols=symbols, overwrite=overwrite)
    except InputError as exc:
        raise in_python_words(exc) from exc.__cause__
    assert result.target is not None  # not a dry run
    return result.target


# the command line's options as ``api.tag`` spells its keywords: its errors speak Python
_KEYWORDS = (
    (re.compile(r"--build-torch (X\.Y|installed|\d+\.\d+(?:\.\d+)?)"), lambda m: f"build_torch={m[1]!r}"),
    (re.compile(r"--build-torch\b"), lambda m: "build_torch"),
    (re.compile(r"--overwrite\b"), lambda m: "overwrite=True"),
    (re.compile(r"--relax-pin\b"), lambda m: "relax_pin=True"),
    (re.compile(r"--local-label (\S+)"), lambda m: f"local_label={m[1]!r}"),
    (re.compile(r"--upper-bound (\S+)"), lambda m: f"upper_bound={m[1]!r}"),
    (re.compile(r"pass --in-place or -w DIR"), lambda m: "give another out_dir"),
)


def in_python_words(exc: InputError) -> InputError:
    """``exc`` with the command line's option names in its message said as ``tag``'s keyword
    arguments (``pass --overwrite`` -> ``pass overwrite=True``): the one place the API words
    what the tagging code says for both. The kind and attributes of the error are kept."""
    text = str(exc)
    for pattern, keyword in _KEYWORDS:
        text = pattern.sub(keyword, text)
    if text == str(exc):
        return exc
    said = type(exc).__new__(type(exc))  # no __init__: RewriteRefused's takes its findings
    said.__dict__.update(exc.__dict__)
    said.args = (text, *exc.args[1:])
    if isinstance(exc, OSError) and isinstance(said, OSError):
        said.errno, said.strerror, said.filename = exc.errno, exc.strerror, exc.filename
    return said
