"""The one verdict every command gives on a wheel's need (``torchabi.need``): does this
wheel load on this torch? ``select`` and ``install`` ask ``verdict`` for the target's
torch, ``index`` and ``matrix`` for every release of a minor (``minor_verdict``),
``compat`` for the torch it compared symbols with; each answer names the axis that decided
it, and an axis that could not be read makes the verdict ``unknown``, never ``loads``.

A torch newer than the tables is a state of its own (``Verdict.newer``): a stable wheel loads
there (the ABI holds forward) and the verdict says what it rests on; a need the tables cannot
judge there (imports no torch of the tables exports, or an unstable build dated by an index
that ends before it) is ``unknown`` there, and on every torch the tables know such imports
make the wheel ``no``, with the symbols named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Literal, Protocol

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.errors import clipped
from torchwheel.frozen import frozen
from torchwheel.torchabi import backend, torch_releases
from torchwheel.torchabi.backend import TorchBuild
from torchwheel.torchabi.cuda_archs import runs_on
from torchwheel.torchabi.need import OptionalPart, TorchNeed, release_matches, show_release, show_releases
from torchwheel.torchabi.torch_backends import Backends
from torchwheel.torchabi.torch_releases import Minor, Releases, minor_of, show_minor


class TorchTables(Protocol):
    """What a verdict reads of the run's tables: the release list and the backend list. The
    value is ``tables.tableset.Tables`` (above this layer), held by the caller and passed in."""

    @property
    def releases(self) -> Releases: ...

    @property
    def backends(self) -> Backends: ...


Cell = Literal["loads", "only", "some", "no", "unknown"]
# which axis decided a verdict; a verdict that loads names the version axis
Axis = Literal["version", "build", "gpu", "requirement", "tags", "python", "driver", "system library"]


@frozen
class Verdict:
    """Does a wheel load on one torch (or on the releases of one minor)?

    ``cell``: ``loads``; ``only`` (this minor only: an unstable build); ``some`` (some patch
    releases of the minor, ``loads_on``); ``no``; ``unknown`` (an axis of the wheel or the
    target could not be read: never chosen, never listed). ``reason`` says why, either way,
    and ``axis`` which axis decided."""

    cell: Cell
    reason: str
    axis: Axis = "version"
    loads_on: tuple[Version, ...] = ()
    newer: bool = False  # the torch is newer than the tables the verdict rests on
    # the optional parts that do not load where the wheel does (``need.OptionalPart``):
    # "FILES (optional): WHY", each; the import works, partly
    partly: tuple[str, ...] = ()
    # refused by the wheel's own Requires-Dist alone: every other axis loads (the import
    # works, but ``pip check`` fails and pip may move torch)
    excluded_only: bool = False

    @property
    def loads(self) -> bool:
        return self.cell in ("loads", "only", "some")


_UNDATED = (
    "unstable build for an unknown torch: no torch==X.Y.* pin, no +torchX.Y label, and no torch "
    "release in the shipped exports index (torch 2.4 and newer, per platform) exports all of its "
    "imports: built for an older torch, or a platform or build the index lacks; "
    "`torchwheel compat --against TORCH` decides for one torch"
)


# how a verdict says where an unstable build's releases came from
_RELEASES_VERB = {
    "names": "has builds for",
    "exports": "its imports are exported by",
    "label": "built for",
    "pin": "pinned to",
}


def _unsettled_verdict(need: TorchNeed, torch: Version) -> Verdict | None:
    """An unstable build whose imports the export tables could not all settle (``unresolved``,
    ``uncovered``): no where its known imports are not exported (they fail there whatever the
    others are), unknown where they meet and past the tables: never "exported by no torch"."""
    if need.kind != "unstable" or not (need.unresolved or need.uncovered):
        return None
    here = minor_of(torch)
    known = {(b[0], b[1]) for b in need.releases}
    decide = "`torchwheel compat --against TORCH` decides for one torch"
    read = (
        need.indexed_from is not None
        and need.indexed_from <= here
        and (need.tables is None or here <= need.tables)
    )
    if known and here not in known and read:  # below or past the tables' releases they say nothing
        return Verdict(
            "no",
            f"{need}: its known imports are exported by torch {show_releases(need.releases)} only, not {torch.public}",
        )
    if need.uncovered:
        return Verdict("unknown", f"{need}: not covered for this build; {decide}")
    return Verdict("unknown", f"{need}; {decide}")  # the need names the unresolved imports, short


def _tables_verdict(need: TorchNeed, torch: Version, releases: Releases) -> Verdict | None:
    """The verdict where the need's own tables decide (module docstring), else None: imports
    no torch of the tables exports, or a build dated by an index that ends before this torch."""
    if (unsettled := _unsettled_verdict(need, torch)) is not None:
        return unsettled
    if need.tables is None or not (need.newer or need.releases_from == "exports"):
        return None
    here = minor_of(torch)
    reaches = bool(need.newer) or need.tables in {(b[0], b[1]) for b in need.releases}
    if here > need.tables and reaches:
        note = releases.tables_note(here, need.tables)
        return Verdict("unknown", f"{need}: {note}", newer=True)
    if not need.newer:
        return None  # dated by imports that left torch by the tables' newest minor: the usual verdict
    if need.kind == "unstable" and here in need.named_minors:  # its other imports are there
        return Verdict(
            "unknown",
            f"{need}: torch {show_minor(here)} exports its other imports, and those "
            "come from a torch newer than the tables or from another library",
        )
    return Verdict(
        "no",
        f"{need}: torch {torch.public} does not export them",
    )


def _version_verdict(need: TorchNeed, torch: Version, releases: Releases) -> Verdict:
    if (by_tables := _tables_verdict(need, torch, releases)) is not None:
        return by_tables
    if need.kind == "none":
        return Verdict("loads", "uses no torch symbols")
    if need.kind == "any":
        return Verdict("loads", f"{need}: loads on torch {torch.public}")
    if need.kind == "stable" and need.floor is not None:
        if Version(torch.base_version) >= Version(need.floor.release):  # a 2.12 pre-release has 2.12's shims
            return Verdict("loads", f"{need} loads on torch {torch.public}")
        return Verdict("no", f"{need}: torch {torch.public} is older than its target")
    if not need.releases:
        return Verdict("unknown", _UNDATED)
    match = next((b for b in sorted(need.releases) if release_matches(b, torch)), None)
    verb = "its import works on" if need.lock else _RELEASES_VERB.get(need.releases_from, "built for")
    if need.releases_from == "wheel":
        verb = "has builds for" if len(need.releases) > 1 else "built for"
    if match is not None:
        verb = "has a build for" if verb == "has builds for" else verb
        return Verdict("only", f"{need}: {verb} torch {show_release(match)}")
    here = show_minor(minor_of(torch)) if all(len(b) == 2 for b in need.releases) else torch.public
    return Verdict("no", f"{need}: {verb} torch {show_releases(need.releases)}, the target has {here}")


def requirement_excludes(
    reqs: Iterable[Requirement], markers: Mapping[str, str] | None, torch: Version
) -> str:
    """Why the wheel's ``Requires-Dist: torch`` lines that apply keep this torch out, or ""."""
    for req in reqs:
        if req.marker is not None and (markers is None or not req.marker.evaluate(dict(markers))):
            continue
        if not torch_releases.admits(req.specifier, torch):  # as installers read it (==2.8.0+cpu)
            return f"Requires-Dist {clipped(req)} excludes torch {torch.public}"
    return ""


def _gpu_verdict(need: TorchNeed, gpu: int | None) -> Verdict | None:
    if gpu is None or need.gpu_code == frozenset():
        return None
    if need.gpu_code is None:
        return Verdict("unknown", "its GPU code could not be read from its binaries", "gpu")
    if runs_on(need.gpu_code, gpu):
        return None
    have = ", ".join(sorted(need.gpu_code, key=lambda c: (int(re.sub(r"\D", "", c)), c)))
    return Verdict(
        "no", f"has no GPU code that runs on sm_{gpu} (it has {have}): 'no kernel image is available'", "gpu"
    )


def _refused_anyway(need: TorchNeed, found: Verdict, excluded: str, build: TorchBuild | None) -> Verdict:
    """An unknown version, unless the wheel's own requirement excludes the torch (an installer
    swaps it) or the wheel needs another torch build: those refuse whatever the version."""
    if excluded:
        return Verdict("no", f"{excluded} (and {found.reason})", "requirement")
    fits, why = backend.builds_fit(need.builds, build)
    if fits is False:
        return Verdict("no", f"{why} ({need.evidence})" if need.evidence else why, "build")
    return found


def verdict(
    need: TorchNeed,
    markers: Mapping[str, str] | None,
    torch: Version | None,
    build: TorchBuild | None = None,
    gpu: int | None = None,
    *,
    tables: TorchTables,
) -> Verdict:
    """The one answer to "does this wheel load on this torch?" (module docstring): the
    torch version, the torch build (``build``: CPU, CUDA 13, ...; None when the target's is
    not known: then a wheel that needs a particular build is ``unknown``), the GPU (``gpu``:
    compute capability, 90 for ``sm_90``; None: not known, not judged) and the wheel's own
    requirement.

    A target build the backend table does not list (``cu140``) is judged by its kind and major
    like any other, and a verdict the build axis takes part in says it is newer than the
    tables (``Backends.backend_tables_note``): never "an unknown build". ``tables``: the run's
    (``tables.tableset.Tables``), whose release list says which torch is newer than them.

    ``markers``: the target's environment for requirements with markers; None evaluates only
    the unconditional ones."""
    if need.unimportable:
        shown = ", ".join(need.unimportable[:2]) + (
            f" and {len(need.unimportable) - 2} more" if len(need.unimportable) > 2 else ""
        )
        return Verdict(
            "no",
            f"its code imports {shown} as a module, which exports no module hook for its name: "
            "'dynamic module does not define module export function' on every torch (TW304)",
            "python",
        )
    found = _verdict(need, markers, torch, build, gpu, tables)
    if (
        torch is not None
        and build is not None
        and tables.backends.backend_newer_than_tables(build)
        and need.builds not in (None, backend.ANY_BUILD)
    ):
        return replace(
            found, reason=f"{found.reason}; {tables.backends.backend_tables_note(build)}", newer=True
        )
    return found


def _verdict(
    need: TorchNeed,
    markers: Mapping[str, str] | None,
    torch: Version | None,
    build: TorchBuild | None,
    gpu: int | None,
    tables: TorchTables,
) -> Verdict:
    if torch is None:
        if need.kind == "none":
            return Verdict("loads", "uses no torch symbols")
        return Verdict("no", f"{need}: the target has no torch (torchwheel never installs torch)")
    found = _version_verdict(need, torch, tables.releases)
    excluded = requirement_excludes(need.requirements, markers, torch)
    if found.cell == "unknown":  # another axis that refuses still decides
        return _refused_anyway(need, found, excluded, build)
    if not found.loads:
        return found
    also = f"; and {excluded}" if excluded else ""  # a refusal names every axis that refuses
    fits, why = backend.builds_fit(need.builds, build)
    if fits is None:  # the requirement alone decides where the build cannot be read
        return (
            Verdict("no", f"{excluded} (and {why})", "requirement")
            if excluded
            else Verdict("unknown", why, "build")
        )
    if not fits:
        return Verdict("no", (f"{why} ({need.evidence})" if need.evidence else why) + also, "build")
    if (on_gpu := _gpu_verdict(need, gpu)) is not None:
        if on_gpu.cell == "unknown" and excluded:
            return Verdict("no", excluded, "requirement")
        return replace(on_gpu, reason=on_gpu.reason + also)
    if excluded:
        return Verdict("no", excluded, "requirement", excluded_only=True)
    found = replace(found, reason=f"{found.reason}; {why}") if why else found
    if tables.releases.release_newer_than_tables(torch) and not found.newer:
        found = replace(found, reason=f"{found.reason}; {tables.releases.tables_note(torch)}", newer=True)
    return with_parts(found, need, markers, torch, build, gpu, tables)


def with_parts(
    found: Verdict,
    need: TorchNeed,
    markers: Mapping[str, str] | None,
    torch: Version,
    build: TorchBuild | None,
    gpu: int | None,
    tables: TorchTables,
) -> Verdict:
    """A verdict that loads, with what its optional parts do there (``part_outcome``): each
    judged by the one verdict on its own need."""
    return combine_parts(
        found, [(p, verdict(p.need, markers, torch, build, gpu, tables=tables)) for p in need.optional], torch
    )


PartOutcome = Literal["loads", "partly", "fails"]


def part_outcome(part: OptionalPart, on: Verdict, torch: Version) -> PartOutcome:
    """What an optional part's verdict ``on`` means for the wheel on ``torch``. A part in a
    ``try`` that goes on, or loaded on use: the import works, partly. A conditional part
    (behind a check of a capability, of what torch provides, of its version) is needed where
    the check lets the load through: where its build is not this torch's (a CUDA part on a
    CPU torch), the capability is absent and it is not loaded (partly); where this torch is
    newer than every release it has a build for, torch provides what it adds (the package's
    builds stop where torch took the feature over: torch-c-dlpack-ext), and nothing is
    missing; anywhere else it is loaded and fails, and so does the import. A part the
    package's version check loads only from a torch release on (``loaded_from``) is not
    loaded on an older torch: nothing of it is missing there."""
    if on.loads or (part.loaded_from and torch < Version(part.loaded_from)):
        return "loads"
    if part.when != "conditional" or on.axis in ("build", "gpu") or on.cell == "unknown":
        return "partly"
    releases = part.need.releases
    if releases and all(minor_of(torch) > (b[0], b[1]) for b in releases):
        return "loads"
    return "fails"


def combine_parts(found: Verdict, judged: Iterable[tuple[OptionalPart, Verdict]], torch: Version) -> Verdict:
    """The wheel's verdict (``found`` loads) with its parts' outcomes: ``partly`` for those
    that do not load, ``no`` where a conditional one fails (the import fails with it)."""
    partly = []
    for part, on in judged:
        outcome = part_outcome(part, on, torch)
        why = on.reason if on.cell != "unknown" else f"cannot be told: {on.reason}"
        if outcome == "fails":
            return Verdict("no", part_words(part, why), on.axis)
        if outcome == "partly":
            partly.append(part_words(part, why))
    if not partly:
        return found
    return replace(found, reason=f"{found.reason}; partly: {'; '.join(partly)}", partly=tuple(partly))


def part_words(part: OptionalPart, why: str) -> str:
    """``its optional torchao/_C_mxfp8.so ...: needs a CUDA 13 build of torch, ...``."""
    return (
        f"its {part.when} {part.files_words} ({part.why}): {why}"
        if part.why
        else f"its {part.when} {part.files_words}: {why}"
    )


def minor_verdict(
    need: TorchNeed,
    markers: Mapping[str, str] | None,
    minor: Minor,
    build: TorchBuild | None = None,
    gpu: int | None = None,
    *,
    tables: TorchTables,
) -> Verdict:
    """The verdict over every known release of one torch minor (a ``matrix`` cell, an
    ``index`` listing, a ``select --torch X.Y`` plan): ``some`` when it loads on some patch
    releases only (``torch==2.9.1`` on 2.9), with them in ``loads_on``."""
    candidates = tables.releases.releases_of(minor)
    each = [(v, verdict(need, markers, v, build, gpu, tables=tables)) for v in candidates]
    good = tuple(v for v, found in each if found.loads)
    if not good:
        unknown = next((found for _, found in each if found.cell == "unknown"), None)
        return unknown or each[-1][1]
    if len(good) < len(candidates):
        bad = next(found for _, found in each if not found.loads)
        return Verdict(
            "some", f"loads on torch {torch_releases.span(good)} only ({bad.reason})", bad.axis, good
        )
    first = next(found for _, found in each if found.loads)
    return replace(first, loads_on=good)
