"""torchwheel as a library: the answers the command line gives, without a subprocess.

A build backend, a test suite or an index scanner asks here; the commands ``inspect``,
``show``, ``check`` and ``tag`` are this module plus rendering (``torchwheel.cli``). Every
result serialises, with ``to_json()``, to the versioned document its command prints with
``--format json`` (``docs/json.md``), so a tool can switch between the two freely.

Stable (kept across releases, changed only with a deprecation): the functions
``inspect_wheel``, ``check``, ``need``, ``loads_on`` and ``tag``, their keyword arguments,
the result classes' documented attributes and ``to_json()``, and ``InputError``. Provisional:
the ``facts`` attribute (the internal per-wheel facts), the ``policy``/``table`` keywords
the command line passes, and ``scan_one``. ``docs/api.md`` is the reference.

Nothing here prints, exits or reads ``pyproject.toml``: configuration is the caller's (the
command line reads ``[tool.torchwheel]`` and passes it in). Unreadable input raises
``InputError`` with the same one-line message the command line prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchwheel.errors import Exit, InputError
from torchwheel.frozen import frozen

if TYPE_CHECKING:
    from torchwheel.analysis.wheelfacts import WheelFacts
    from torchwheel.rules.registry import Finding, Findings, Policy
    from torchwheel.tagging.apply import TagResult
    from torchwheel.tagging.options import TagOptions
    from torchwheel.torchabi.need import TorchNeed
    from torchwheel.torchabi.tablechoice import ChosenTable
    from torchwheel.torchabi.verdicts import Verdict

__all__ = [
    "CheckResult",
    "Facts",
    "InputError",
    "LoadVerdict",
    "Need",
    "RewriteRefused",
    "check",
    "inspect_wheel",
    "loads_on",
    "need",
    "scan_one",
    "tag",
]

PathLike = str | Path


class RewriteRefused(InputError):
    """``tag`` will not rewrite: the wheel's facts make new metadata untrustworthy (a RECORD
    that disagrees with its files, METADATA that does not parse, an unreadable marker).
    ``findings`` holds what ``check`` would report on those codes."""

    def __init__(self, message: str, findings: Findings, wheels: list[WheelFacts]) -> None:
        super().__init__(message)
        self.findings, self.wheels = findings, wheels


def _chosen(symbols: PathLike | ChosenTable | None) -> ChosenTable:
    """``symbols``: a tables file, the command line's chosen tables (it knows ``pyproject.toml``),
    or None: ``TORCHWHEEL_SYMBOLS``, the user tables file, the shipped ones (``tablechoice``)."""
    from torchwheel.torchabi.tablechoice import ChosenTable, activate, choose_table

    if isinstance(symbols, ChosenTable):
        return activate(symbols)
    return choose_table(Path(symbols) if symbols is not None else None, None)


def _paths(paths: PathLike | Iterable[PathLike]) -> tuple[Path, ...]:
    return (Path(paths),) if isinstance(paths, str | Path) else tuple(Path(p) for p in paths)


@frozen
class Facts:
    """What ``show`` says of one or more inputs (wheels, unpacked wheels, binaries,
    installed distributions). ``facts``: the per-input facts, one per input (provisional)."""

    facts: tuple[WheelFacts, ...]
    table: ChosenTable

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(w.contents.path for w in self.facts)

    def to_json(self) -> dict[str, Any]:
        """The ``torchwheel show --format json`` document."""
        from torchwheel.report.facts import show_json

        return show_json(list(self.facts), self.table.to_json())


def inspect_wheel(
    paths: PathLike | Iterable[PathLike],
    *,
    env: Sequence[str] = (),
    symbols: PathLike | ChosenTable | None = None,
    verify_hashes: bool = True,
) -> Facts:
    """Read every compiled file of the inputs; nothing is imported or executed.
    ``env``: also installed distributions of this interpreter, by name."""
    from torchwheel.analysis.load import load

    chosen, given = _chosen(symbols), _paths(paths)
    if not given and not env:
        raise InputError("give at least one wheel, directory or binary (or an installed distribution)")
    return Facts(tuple(load(given, tuple(env), chosen.table, verify_hashes)), chosen)


@frozen
class CheckResult:
    """``check``'s findings. ``exit_code`` is the command's: 0 without errors, 1 with."""

    facts: Facts
    found: Findings
    verified_hashes: bool

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Each finding (code, severity, wheel, member, message), in report order; at most
        ``max-listed`` of one code per input, the rest counted in ``omitted``."""
        return tuple(self.found)

    @property
    def omitted(self) -> dict[tuple[str, str], int]:
        return dict(self.found.omitted)

    @property
    def errors(self) -> int:
        return self.found.severities()["error"]

    @property
    def warnings(self) -> int:
        return self.found.severities()["warning"]

    @property
    def exit_code(self) -> Exit:
        return Exit.NO if self.errors else Exit.OK

    def to_json(self) -> dict[str, Any]:
        """The ``torchwheel check --format json`` document."""
        from torchwheel.report.findings import check_json

        document = check_json(list(self.facts.facts), self.found, self.verified_hashes)
        document["symbol_table"] = self.facts.table.to_json()
        return document


def check(
    paths: PathLike | Iterable[PathLike],
    *,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    env: Sequence[str] = (),
    symbols: PathLike | ChosenTable | None = None,
    verify_hashes: bool = True,
    policy: Policy | None = None,
) -> CheckResult:
    """Run the rules (``docs/rules.md``). ``select``/``ignore``: codes or prefixes, as
    ``--select``/``--ignore``; an unknown code raises ``InputError``. ``policy``: the
    command line's (``[tool.torchwheel]`` merged in; provisional)."""
    from torchwheel import rules
    from torchwheel.rules.codes import is_selector, unknown_code
    from torchwheel.rules.registry import Policy

    for where, given in (("select", select), ("ignore", ignore)):
        if isinstance(given, str):  # "TW501" would be read as the codes T, W, 5, ...
            raise InputError(f"{where}: a sequence of codes, not one string ({given[:40]!r})")
        for code in given:
            if not is_selector(code):
                raise InputError(unknown_code(code, where))
    if policy is None:
        policy = Policy(select=frozenset(select), ignore=frozenset(ignore))
    facts = inspect_wheel(paths, env=env, symbols=symbols, verify_hashes=verify_hashes)
    return CheckResult(facts, rules.run_all(facts.facts, policy), verify_hashes)


@frozen
class Need:
    """Which torch one wheel loads on, every axis (``torchabi.need.TorchNeed``): ``kind``
    (stable, unstable, any, none), the stable ``floor``, an unstable build's ``releases``,
    the torch ``builds`` (CPU, CUDA major, ROCm, XPU), its ``gpu_code`` and its own torch
    requirement; an axis nothing could read is in ``unknown``, never taken as "any"."""

    path: str
    need: TorchNeed

    @property
    def unknown(self) -> tuple[str, ...]:
        return self.need.unknown_axes

    def __str__(self) -> str:
        return str(self.need)

    def to_json(self) -> dict[str, Any]:
        """The ``need`` object of ``show --format json``, with the document's version."""
        from torchwheel.report.facts import SCHEMA_VERSION, need_json

        return {"schema_version": SCHEMA_VERSION, "path": self.path, "need": need_json(self.need)}


def scan_one(source: object, *, symbols: PathLike | ChosenTable | None = None) -> dict[str, Any]:
    """The JSON line ``torchwheel scan`` writes for one wheel (``docs/scan.md``): ``source`` a
    path, an http(s) URL or a line's ``source`` object (``{"url": ..., "sha256": ...}``). An
    unreadable or unfetchable wheel is a line whose ``error`` says why: never raised."""
    from torchwheel.install.scanline import scan_line

    return scan_line(source, check, need, symbols)


def _candidate(path: PathLike, symbols: PathLike | ChosenTable | None) -> Any:
    from torchwheel.install.candidates import read_candidate

    return read_candidate(Path(path), str(Path(path).parent), table=_chosen(symbols).table)


def need(path: PathLike, *, symbols: PathLike | ChosenTable | None = None) -> Need:
    """The need ``select``, ``install``, ``index`` and ``matrix`` judge a wheel file by: its
    ``Torch-ABI`` fields where ``tag`` wrote them, else its binaries. A wheel ``check``
    calls broken (TW4xx from its archive and metadata) raises ``InputError``."""
    return Need(str(path), _candidate(path, symbols).torch)


@frozen
class LoadVerdict:
    """Does the wheel load on that torch? ``cell``: loads, only (this minor only), some
    (some patch releases of a minor: ``releases``), no, unknown (an axis of the wheel or
    of the target could not be read). ``axis`` names what decided; ``reason`` says why."""

    path: str
    torch: str
    backend: str | None
    gpu: int | None
    verdict: Verdict

    @property
    def loads(self) -> bool:
        return self.verdict.loads

    @property
    def cell(self) -> str:
        return self.verdict.cell

    @property
    def axis(self) -> str:
        return self.verdict.axis

    @property
    def reason(self) -> str:
        return self.verdict.reason

    @property
    def releases(self) -> tuple[str, ...]:
        return tuple(str(v) for v in self.verdict.loads_on)

    def to_json(self) -> dict[str, Any]:
        """A cell of ``matrix --format json`` (``fit``, ``reason``, ``axis``, ``releases``)
        with the target it judged."""
        from torchwheel.report.facts import SCHEMA_VERSION

        return {
            "schema_version": SCHEMA_VERSION,
            "path": self.path,
            "torch": self.torch,
            "torch_backend": self.backend,
            "gpu": f"sm_{self.gpu}" if self.gpu is not None else None,
            "fit": self.cell,
            "reason": self.reason,
            "axis": self.axis,
            "releases": list(self.releases),
            "newer_than_tables": self.verdict.newer,
        }


def loads_on(
    path: PathLike,
    *,
    torch: str,
    backend: str | None = None,
    gpu: str | int | None = None,
    symbols: PathLike | ChosenTable | None = None,
) -> LoadVerdict:
    """The one verdict (``torchabi.verdicts.verdict``) for one wheel file on one torch: ``torch`` ``2.13.0``
    (that release) or ``2.13`` (every release of the minor: ``some`` when only some patch releases fit);
    ``backend`` its build (``cpu``, ``cu130``, ``rocm7.1``, ``xpu``; None: not known, so a wheel that
    needs one build is ``unknown``); ``gpu`` the GPU (``sm_90``, ``9.0`` or 90; None: not judged).
    Requirement markers are evaluated for the wheel's own platform and lowest CPython."""
    from packaging.version import InvalidVersion, Version

    from torchwheel.install.target import markers_for_tags
    from torchwheel.torchabi.backend import parse_backend
    from torchwheel.torchabi.cuda_archs import parse_gpu
    from torchwheel.torchabi.torch_releases import minor_of
    from torchwheel.torchabi.verdicts import minor_verdict, verdict

    try:
        version = Version(torch)
    except InvalidVersion as exc:
        raise InputError(f"torch {torch[:40]!r}: not a version") from exc
    build = parse_backend(backend) if backend is not None else None
    capability = gpu if isinstance(gpu, int) or gpu is None else parse_gpu(gpu)
    c = _candidate(path, symbols)
    markers = markers_for_tags(c.tags)
    if len(version.release) == 2:
        found = minor_verdict(c.torch, markers, minor_of(version), build, capability)
    else:
        found = verdict(c.torch, markers, version, build, capability)
    return LoadVerdict(str(path), torch, build.backend if build else None, capability, found)


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
    symbols: PathLike | ChosenTable | None = None,
    each: Callable[[TagResult], None] | None = None,
) -> list[TagResult]:
    """Every wheel ``tag`` writes, in order (with ``variant``: the variant copy before each
    plain one); ``each`` hears of each as it is written, so a later failure loses no word of
    what was written before it. Every refusal (a contradiction, a pin) comes before the first
    wheel is written; ``RewriteRefused`` when the facts make any rewrite dishonest.
    Provisional: the command line's entry; ``tag`` is the stable one."""
    from torchwheel import rules
    from torchwheel.analysis.load import opened
    from torchwheel.tagging import apply
    from torchwheel.tagging.plan import plan
    from torchwheel.tagging.release_requirements import release_sets

    dest = Path(out_dir) if out_dir is not None else None
    lock = apply.lock_input if in_place and not dry_run else None
    results: list[TagResult] = []
    with opened(tuple(Path(p) for p in paths), _chosen(symbols).table, lock) as loaded:
        wheels = [w for w, _ in loaded]
        blocking = rules.run_all(wheels, rules.rewrite_blockers())
        if blocking:
            raise RewriteRefused(
                "refusing to rewrite: the facts above make the new metadata untrustworthy", blocking, wheels
            )
        shared = release_sets(wheels, options, release)
        for w in wheels:
            plan(w, dataclasses.replace(options, release_requirements=shared.get(id(w))))
        for w, fd in loaded:
            opts = dataclasses.replace(options, release_requirements=shared.get(id(w)))
            if variant:  # first, while the input is still where it was (--in-place replaces it)
                written = apply.tag(
                    w, opts, dest, False, dry_run, with_facts=verbose, archive=fd, variant=True
                )
                results.append(written)
                if each is not None:
                    each(written)
            results.append(apply.tag(w, opts, dest, in_place, dry_run, with_facts=verbose, archive=fd))
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
    symbols: PathLike | ChosenTable | None = None,
) -> Path:
    """Write the tagged copy of one wheel into ``out_dir`` and return its path (the input is
    never modified): ``Torch-ABI`` and correct ``Tag`` lines in WHEEL, the torch requirement,
    the facts side file, RECORD. Options as ``torchwheel tag``'s."""
    from torchwheel.tagging.options import TagOptions
    from torchwheel.version import FeatureVersion

    if build_torch is not None:
        try:
            FeatureVersion.parse(build_torch)
        except ValueError as exc:
            raise InputError(f"build_torch {build_torch!r}: expected X.Y") from exc
    options = TagOptions(
        upper_bound=upper_bound,
        build_torch=build_torch,
        relax_pin=relax_pin,
        build_tag=build_tag,
        local_label=local_label,
    )
    (result,) = tag_wheels([path], out_dir, options, release=False, symbols=symbols)
    assert result.target is not None  # not a dry run
    return result.target
