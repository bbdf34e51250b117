"""What the library face (``torchwheel.api``) returns, typed as the JSON documents are.

Each class is the answer of one function of ``api`` and serialises, with ``to_json()``, to
the document its command prints with ``--format json`` (``docs/reference/json.md``). Where a JSON
value is one of a closed set, the attribute is a ``Literal`` of that set (``Severity``,
``Cell``, ``Axis``, ``NeedKind``, ``UnknownAxis``: each the one definition the code itself
uses); where the JSON has ``null``, the attribute is ``None``.

The classes live apart from ``api`` so that ``api`` stays the list of functions; ``api``
exports every one of them (``docs/reference/api.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchwheel.errors import Exit, Reference
from torchwheel.frozen import frozen

if TYPE_CHECKING:
    from torchwheel.analysis.wheelfacts import WheelFacts
    from torchwheel.rules.codes import Severity
    from torchwheel.rules.registry import Findings
    from torchwheel.tables.tableset import Tables
    from torchwheel.torchabi.need import Kind as NeedKind
    from torchwheel.torchabi.need import TorchNeed, UnknownAxis
    from torchwheel.torchabi.verdicts import Axis, Cell, Verdict

# the closed sets, each imported where it is defined when first asked for: importing the
# library must not load the rules (``docs/evidence/performance.md``, "Start-up")
ALIASES = {
    "Severity": ("torchwheel.rules.codes", "Severity"),
    "Cell": ("torchwheel.torchabi.verdicts", "Cell"),
    "Axis": ("torchwheel.torchabi.verdicts", "Axis"),
    "NeedKind": ("torchwheel.torchabi.need", "Kind"),
    "UnknownAxis": ("torchwheel.torchabi.need", "UnknownAxis"),
}


def __getattr__(name: str) -> object:
    """PEP 562: the ``Literal`` aliases of ``ALIASES``, at run time (``typing.get_args``)."""
    if name not in ALIASES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, attribute = ALIASES[name]
    return getattr(importlib.import_module(module), attribute)


__all__ = [
    "Axis",
    "Cell",
    "CheckResult",
    "Facts",
    "Finding",
    "LoadVerdict",
    "Need",
    "NeedKind",
    "Severity",
    "UnknownAxis",
    "Unreadable",
]


@frozen
class Unreadable:
    """An input that could not be read, when the others are read all the same
    (``unreadable="report"``, as ``check`` and ``show`` run): ``path`` the input as given (None
    for an installed distribution named by ``env``), ``message`` the one line that says why,
    ``reference`` what it is (``errors.REFERENCES``), and for a limit it exceeded, the
    ``limit``'s name and the ``value`` the input asked for (``InputError.limit``, ``.value``)."""

    path: str | None
    message: str
    reference: Reference
    limit: str | None = None
    value: object = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "message": self.message}


@frozen
class Facts:
    """What ``show`` says of one or more inputs (wheels, unpacked wheels, binaries,
    installed distributions). ``facts``: the per-input facts, one per input read
    (provisional); ``unreadable``: the inputs that could not be, in order."""

    facts: tuple[WheelFacts, ...]
    table: Tables  # the tables every input was read and judged with
    unreadable: tuple[Unreadable, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(w.contents.path for w in self.facts)

    def to_json(self) -> dict[str, Any]:
        """The ``torchwheel show --format json`` document (``unreadable`` only when some are)."""
        from torchwheel.report.facts_document import show_json

        return with_unreadable(show_json(list(self.facts), self.table.to_json()), self.unreadable)


def with_unreadable(document: dict[str, Any], unreadable: tuple[Unreadable, ...]) -> dict[str, Any]:
    """``document`` with the inputs that could not be read, when there are any: a document
    of inputs that were all read is what it always was."""
    return document | {"unreadable": [u.to_json() for u in unreadable]} if unreadable else document


@frozen
class Finding:
    """One finding, as an element of ``findings`` in ``check --format json``: ``wheel`` is
    the document's ``path``, and ``member`` is None for the wheel as a whole (JSON null)."""

    code: str
    severity: Severity
    wheel: str
    member: str | None
    message: str
    detail: str | None = None  # the whole lists the message cut to a few names

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.wheel,
            "member": self.member,
            "message": self.message,
            "detail": self.detail,
        }


@frozen
class CheckResult:
    """``check``'s findings. ``exit_code`` is the command's: 0 without errors, 1 with, 2 with
    an input that could not be read."""

    facts: Facts
    found: Findings
    verified_hashes: bool

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Each finding (code, severity, wheel, member, message), in report order; at most
        ``max-listed`` of one code per input, the rest counted in ``omitted``."""
        return tuple(
            Finding(f.code, f.severity, f.wheel, f.member or None, f.message, f.detail or None)
            for f in self.found
        )

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
    def infos(self) -> int:
        return self.found.severities()["info"]

    @property
    def unreadable(self) -> tuple[Unreadable, ...]:
        """The inputs that could not be read (with ``unreadable="report"``), in order."""
        return self.facts.unreadable

    @property
    def exit_code(self) -> Exit:
        """2 when an input could not be read (its findings are those of the others), else 1
        with an error, else 0."""
        if self.unreadable:
            return Exit.INPUT
        return Exit.NO if self.errors else Exit.OK

    def to_json(self) -> dict[str, Any]:
        """The ``torchwheel check --format json`` document."""
        from torchwheel.report.findings import check_json

        document = check_json(list(self.facts.facts), self.found, self.verified_hashes)
        document["symbol_table"] = self.facts.table.to_json()
        return with_unreadable(document, self.unreadable)


@frozen
class Need:
    """Which torch one wheel loads on, every axis (``torchabi.need.TorchNeed``): ``kind``
    (stable, unstable, any, none), the stable ``floor``, an unstable build's ``releases``,
    the torch ``builds`` (CPU, CUDA major, ROCm, XPU), its ``gpu_code`` and its own torch
    requirement; an axis nothing could read is in ``unknown``, never taken as "any"."""

    path: str
    need: TorchNeed

    @property
    def kind(self) -> NeedKind:
        return self.need.kind

    @property
    def unknown(self) -> tuple[UnknownAxis, ...]:
        return self.need.unknown_axes

    def __str__(self) -> str:
        return str(self.need)

    def to_json(self) -> dict[str, Any]:
        """The ``need`` object of ``show --format json``, with the document's version."""
        from torchwheel.report.facts_document import SCHEMA_VERSION, need_json

        return {"schema_version": SCHEMA_VERSION, "path": self.path, "need": need_json(self.need)}


@frozen
class LoadVerdict:
    """Does the wheel load on that torch? ``cell``: loads, only (this minor only), some
    (some patch releases of a minor: ``releases``), no, unknown (an axis of the wheel or
    of the target could not be read). ``axis`` names what decided; ``reason`` says why.
    ``backend`` and ``gpu`` are None where the JSON's ``torch_backend`` and ``gpu`` are null."""

    path: str
    torch: str
    backend: str | None
    gpu: int | None
    verdict: Verdict

    @property
    def loads(self) -> bool:
        return self.verdict.loads

    @property
    def cell(self) -> Cell:
        return self.verdict.cell

    @property
    def axis(self) -> Axis:
        return self.verdict.axis

    @property
    def reason(self) -> str:
        return self.verdict.reason

    @property
    def releases(self) -> tuple[str, ...]:
        return tuple(str(v) for v in self.verdict.loads_on)

    @property
    def partly(self) -> tuple[str, ...]:
        """The optional parts that do not load where the wheel does (the import works)."""
        return self.verdict.partly

    def to_json(self) -> dict[str, Any]:
        """A cell of ``matrix --format json`` (``fit``, ``reason``, ``axis``, ``releases``)
        with the target it judged."""
        from torchwheel.report.facts_document import SCHEMA_VERSION

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
            "partly": list(self.partly),
        }
