"""Per-binary facts joined with what they mean for torch: the middle of the pipeline.

Pure functions only: the readers have already turned bytes into ``BinaryFacts``; here we
decide the declared target per slice and attach the torch usage, so that ``inspect``,
``show`` and the rules all see one and the same interpretation.
"""

from __future__ import annotations

from dataclasses import field
from functools import cached_property

from torchwheel.analysis import pythonabi
from torchwheel.analysis.libkind import LibraryKind, classify
from torchwheel.analysis.pythonabi import PythonFacts
from torchwheel.analysis.usage import TorchUsage, analyze
from torchwheel.binary.facts import BinaryFacts, SliceFacts
from torchwheel.binary.marker_record import MarkerRecord
from torchwheel.frozen import frozen
from torchwheel.tables.symtable import SymbolTable
from torchwheel.torchabi import accelerators
from torchwheel.torchabi.accelerators import AcceleratorNeeds


@frozen
class DeclaredMarker:
    """The target a slice declares, and whether a loader-visible export carries it.

    An export is authoritative. Without one, a raw record is still the author's intent
    (an export list hid the symbol), so it is reported with ``exported=False`` rather
    than dropped: the rules then say "export it", not "add a marker".
    """

    record: MarkerRecord
    exported: bool
    offset: int | None


@frozen
class SliceAnalysis:
    facts: SliceFacts
    declared: DeclaredMarker | None
    marker_problem: str | None
    torch: TorchUsage
    python: PythonFacts
    # the torch build and accelerator runtimes it links, and its GPU code (``accelerators``)
    accelerators: AcceleratorNeeds = field(default_factory=AcceleratorNeeds)

    @property
    def raw_versions(self) -> tuple[str, ...]:
        return tuple(
            str(hit.record.version) if hit.record.version else f"schema-{hit.record.schema}"
            for hit in self.facts.raw_markers
        )


@frozen
class BinaryAnalysis:
    facts: BinaryFacts
    slices: tuple[SliceAnalysis, ...]

    @property
    def kind(self) -> LibraryKind:
        """Extension module, torch op library or plain shared library (``libkind``)."""
        return classify((s.facts, s.python, s.torch) for s in self.slices)

    @cached_property
    def needs(self) -> AcceleratorNeeds:
        """Every slice's accelerator needs, joined: the build units, TW705 and TW708 all
        judge a library by it, so it is joined once."""
        return accelerators.combine(s.accelerators for s in self.slices)


@frozen
class MemberBinary:
    member: str  # path inside the wheel
    analysis: BinaryAnalysis


def loaded_by_import(how: str, b: MemberBinary) -> bool | None:
    """Whether Python's import system is what loads ``b``, where its own bytes or the
    package's loader (``how``: ``analysis.reach``) decide it; None where only the package's
    import statements can tell (a hook-less file without CPython symbols that no loader code
    names: ``WheelFacts.py_imports``). One decision for the rules that ask it and for
    ``collect``, which parses those statements only when some file leaves it open."""
    if how in ("module", "library"):
        return how == "module"
    if b.analysis.kind == "extension-module" or any(
        s.python.verdict != "not-python" for s in b.analysis.slices
    ):
        return True
    return None


@frozen
class UnreadableBinary:
    member: str
    error: str


def declared_marker(facts: SliceFacts) -> tuple[DeclaredMarker | None, str | None]:
    exported = facts.marker
    if exported is not None and exported.record is not None:
        return DeclaredMarker(exported.record, True, exported.offset), None
    problem = exported.problem if exported is not None else None
    if facts.raw_markers:
        hit = facts.raw_markers[0]
        return DeclaredMarker(hit.record, False, hit.offset), problem
    return None, problem


def analyze_slice(facts: SliceFacts, table: SymbolTable) -> SliceAnalysis:
    declared, problem = declared_marker(facts)
    return SliceAnalysis(
        facts,
        declared,
        problem,
        analyze(facts, table),
        pythonabi.analyze_python_abi(facts),
        accelerators.classify_needs(facts.needed, facts.imports, facts.gpu),
    )


def analyze_binary(facts: BinaryFacts, table: SymbolTable) -> BinaryAnalysis:
    return BinaryAnalysis(facts, tuple(analyze_slice(s, table) for s in facts.slices))
