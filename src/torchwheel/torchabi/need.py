"""What a wheel needs from torch (the one verdict on it is ``torchabi.verdicts``).

"Loads on this torch" has four axes, and a ``TorchNeed`` carries each of them:

- the torch **version**: a stable floor, the torch releases an unstable build loads on (one
  minor, or per-minor or per-patch builds the package picks from), or no torch at all;
- the torch **build** (CPU, a CUDA major, a ROCm major, XPU: ``torchabi.backend``), because
  the stable ABI frees a library from the version, not from the build;
- the **GPU code** its CUDA libraries carry (``sm_80``, ``compute_90``);
- the wheel's own ``Requires-Dist: torch``, because an installer that honours it swaps
  torch rather than load the wheel beside a torch it excludes.

An axis that could not be read is ``None`` (unknown), never a permissive default: a verdict
on an unknown axis is ``unknown``, never ``loads``. Imports that no torch of the tables
exports (``newer``, up to the tables' newest minor, ``tables``) are the version axis's own
state: such a wheel loads on no torch the tables know, and on a newer one nobody can say
yet (``verdicts``); the same holds for imports dated by an index that ends before the torch. The need is built in one place per
source (``declared_need`` from the WHEEL fields ``tag`` writes; ``analysis.wheelfacts.
torch_need_of`` from the binaries of an untagged wheel), and the two agree axis by axis
(``tests/test_need_model.py``).

``verdicts.verdict`` is the single answer to "does this wheel load on this torch?".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import field
from itertools import pairwise
from typing import Literal

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.errors import InputError, clipped
from torchwheel.frozen import frozen
from torchwheel.torchabi import backend, torch_releases
from torchwheel.torchabi.backend import BuildSet
from torchwheel.torchabi.cxxnames import names_text
from torchwheel.torchabi.torch_releases import Minor, Releases, minor_of
from torchwheel.version import FeatureVersion
from torchwheel.wheel.metadata import (
    OPTIONAL_LOADED_FROM_KEY,
    TORCH_ABI_BUILDS_FIELD,
    TORCH_ABI_EXPORTS_FIELD,
    TORCH_ABI_FIELD,
    TORCH_ABI_OPTIONAL_FIELD,
    TORCH_BUILD_FIELD,
    TORCH_GPU_FIELD,
    torch_abi_floor,
)

_LOCAL_TORCH = re.compile(r"(?:^|[._])torch(\d+)[._]?(\d+)(?:$|[._])")  # +torch2.12, +cu128.torch2_12


Release = tuple[int, ...]  # the torch release a build was made for: a minor (2, 4) or a patch (2, 2, 1)
Kind = Literal["stable", "unstable", "any", "none"]
UnknownAxis = Literal["version", "build", "gpu"]  # the axes a wheel's own facts may leave unread
# where an unstable build's torch releases were read: per-release file names, the torch
# exports its imports exist in, a +torchX.Y label, a one-minor pin, WHEEL Torch-ABI(-Builds)
ReleasesFrom = Literal["names", "exports", "label", "pin", "wheel", ""]


def show_release(release: Release) -> str:
    return ".".join(map(str, release))


def show_releases(found: Iterable[Release]) -> str:
    """``2.4``, ``2.4, 2.6``, a run of minors ``2.4-2.9``, or patches ``2.0.0, 2.0.1``."""
    found = sorted(set(found))
    minors = all(len(b) == 2 for b in found)
    if minors and len(found) > 2 and all(b == (a[0], a[1] + 1) for a, b in pairwise(found)):
        return f"{show_release(found[0])}-{show_release(found[-1])}"
    return ", ".join(show_release(b) for b in found)


def release_matches(release: Release, torch: Version) -> bool:
    """Does a build for ``release`` (a minor, or one patch release) serve this torch release?"""
    return tuple(Version(torch.base_version).release[: len(release)]) == release


@frozen
class TorchNeed:
    """Which torch a wheel loads on, axis by axis (module docstring).

    ``kind``: ``stable`` (every torch >= ``floor``), ``unstable`` (only the torch
    ``releases``; empty when nothing dates the build: unknown), ``any`` (links libtorch but
    imports no versioned symbol: any torch, but some torch), ``none`` (no torch at all).
    ``builds``: the torch builds it loads on (``backend.ANY_BUILD``: every one; None:
    unknown). ``gpu_code``: its CUDA images (empty: none; None: unknown). ``requirements``:
    its own ``Requires-Dist: torch``. ``source`` and ``declared`` explain, they do not decide.
    """

    kind: Kind
    floor: FeatureVersion | None
    releases: frozenset[Release]
    releases_from: ReleasesFrom = field(compare=False)  # how it was read, not what it says
    builds: BuildSet | None
    gpu_code: frozenset[str] | None
    requirements: tuple[Requirement, ...]
    source: str = field(default="", compare=False)
    declared: FeatureVersion | None = field(default=None, compare=False)  # the newest marker, if any
    # the libraries that set the build axis: ``xformers/_C.so: libcudart.so.12, libtorch_cuda.so``
    evidence: str = field(default="", compare=False)
    # imports that no torch up to ``tables`` exports (the first ten; the shim table's
    # unknown shims, or unstable names the exports index has in no release): "newer than
    # the tables". ``tables``: the newest minor of the tables that read the imports (the shim
    # table's; the exports index's, for a build dated by its imports), None when none did
    newer: tuple[str, ...] = ()
    tables: Minor | None = None
    # the parts the package's import goes on without (``analysis.reach``), each with its own
    # need: the axes above are those of the files its import cannot do without
    optional: tuple[OptionalPart, ...] = ()
    # files the import imports as modules that export no module hook for their name (TW304:
    # "dynamic module does not define module export function"): it fails on every torch;
    # ``tag`` refuses such a wheel, so WHEEL never states it
    unimportable: tuple[str, ...] = field(default=(), compare=False)
    # what the export tables could not settle for an unstable build dated by its imports:
    # imports no indexed release exports, though the known ones end before the tables' newest
    # minor (another library's names, or an older torch's), and the builds or platforms whose
    # exports the tables never read ("the linux-x86_64 export tables read no XPU build of torch"): unknown where
    # the known imports meet, never "exported by no torch"
    unresolved: tuple[str, ...] = ()
    uncovered: str = ""
    # what of a torch build its shims need beyond the release (``python``: libtorch_python
    # loaded; ``distributed``: a torch built with distributed), from the shim table's
    # ``needs``; explains, is not written by ``tag`` (the table of whoever reads it decides)
    build_needs: tuple[str, ...] = field(default=(), compare=False)
    # the oldest minor the export tables read, for an unstable build dated by its imports: below
    # it they say nothing, and an unsettled need is unknown there, never "no"
    indexed_from: Minor | None = field(default=None, compare=False)
    # the package's own import-time check of the torch version (``analysis.version_lock``),
    # which took ``lock_refused`` out of the releases its imports date it to: "its import
    # raises on torch 2.13, 2.15: zentorch/__init__.py:88"; "" when none narrowed them
    lock: str = field(default="", compare=False)
    lock_refused: frozenset[Minor] = field(default=frozenset(), compare=False)

    @property
    def build_needs_text(self) -> str:
        """``a torch built with distributed, with libtorch_python loaded``; "" for none."""
        words = []
        if "distributed" in self.build_needs:
            words.append("a torch built with distributed")
        if "python" in self.build_needs:
            words.append("libtorch_python loaded (the Python torch, not LibTorch alone)")
        return ", with ".join(words) if words else ""

    def __str__(self) -> str:
        if self.uncovered or self.unresolved:
            since = f" (from {show_release(self.indexed_from)})" if self.indexed_from else ""
            read = (
                f"by its known imports, torch {show_releases(self.releases)} of the releases the export tables read{since}"
                if self.releases
                else ""
            )
            if self.uncovered:
                return f"unstable, not covered for this build: {self.uncovered}" + (
                    f"; {read}" if read else ""
                )
            shown = names_text(self.unresolved)
            return (
                f"unstable, {read}; {shown}: exported by none of them (another library's, an older "
                "torch's, or a build they lack)"
            )
        if self.newer and self.tables is not None:
            shown = names_text(self.newer)
            return (
                f"{self.kind}, newer than the tables ({shown}: exported by no torch up to "
                f"{show_release(self.tables)})"
            )
        if self.kind == "stable" and self.floor is not None:
            needs = f", needs {self.build_needs_text}" if self.build_needs else ""
            return f"stable >= {self.floor.minor_release if self.floor.patch == 0 else self.floor.release}{needs}"
        if self.kind == "unstable" and len(self.releases) > 1 and self.releases_from != "exports":
            return f"unstable, per-minor builds for torch {show_releases(self.releases)}"
        if self.kind == "unstable" and self.releases:
            shown = show_releases(self.releases)
            if self.releases_from == "exports":
                if self.lock:
                    return f"unstable, torch {shown} only ({self.lock})"
                return f"unstable, torch {shown} (dated by its imports)"
            if self.releases_from == "pin":
                return f"unstable, pinned to torch {shown} (its Requires-Dist; the binaries do not date it)"
            return f"unstable, torch {shown} only"
        if self.kind == "unstable":
            return "unstable, torch unknown"
        if self.kind == "any":
            return "any torch (links libtorch, imports no versioned symbol)"
        return "no torch"

    @property
    def optional_words(self) -> str:
        """The optional parts and their needs in a line (``show``, ``doctor``); "" without."""
        return "; ".join(f"{p.files_words} ({p.when}): {p.need}" for p in self.optional)

    @property
    def label(self) -> str:
        """The ``Torch-ABI`` value: ``2.10``, ``2.10.1``, ``unstable``, ``any``, ``none``."""
        if self.kind == "stable" and self.floor is not None:
            return self.floor.minor_release if self.floor.patch == 0 else self.floor.release
        return self.kind

    @property
    def per_release(self) -> bool:
        """An unstable wheel with one library per torch release (it picks the matching one):
        no pin is right for it, any one pin breaks it everywhere else."""
        return self.kind == "unstable" and self.releases_from in ("names", "wheel")

    @property
    def named_minors(self) -> set[Minor]:
        """The minors the need itself names (a stable floor's, an unstable build's; the first
        past the tables for imports newer than them)."""
        past = {(self.tables[0], self.tables[1] + 1)} if self.newer and self.tables is not None else set()
        if self.kind == "stable" and self.floor is not None:
            return {minor_of(self.floor)} | past
        return {(b[0], b[1]) for b in self.releases} | past

    @property
    def not_covered_json(self) -> dict[str, object] | None:
        """``not_covered`` in every JSON document that shows a need: what the export tables
        could not settle (``unresolved``, ``uncovered``), or null."""
        if not self.unresolved and not self.uncovered:
            return None
        return {"builds": self.uncovered or None, "imports": list(self.unresolved)}

    @property
    def newer_json(self) -> dict[str, object] | None:
        """``newer_than_tables`` in every JSON document that shows a need: the imports no torch
        up to ``tables`` exports, or null."""
        if not self.newer or self.tables is None:
            return None
        return {"imports": list(self.newer), "tables": show_release(self.tables)}

    @property
    def unknown_axes(self) -> tuple[UnknownAxis, ...]:
        """The axes nothing could read: said wherever the need is shown."""
        axes: list[UnknownAxis] = []
        if self.kind == "unstable" and (not self.releases or self.uncovered or self.unresolved):
            axes.append("version")
        if self.builds is None:
            axes.append("build")
        if self.gpu_code is None:
            axes.append("gpu")
        return tuple(axes)


OptionalWhen = Literal["optional", "conditional", "on-use"]


@frozen
class OptionalPart:
    """Files the package's import may go on without (``analysis.reach``): loaded in a
    ``try`` that goes on (``optional``), behind a capability, torch-feature or version check
    (``conditional``: needed where the check lets the load through), or only by a function
    the import does not call (``on-use``). ``need``: what they need of torch (no requirement
    of their own: the wheel's applies to the wheel). ``verdicts.part_outcome`` says what a
    part that does not load means on one torch."""

    files: tuple[str, ...]
    when: OptionalWhen
    need: TorchNeed
    why: str = field(default="", compare=False)
    # the torch release from which the package's own version check lets the load through
    # (``Reach.torch_from``): on an older torch the files are not loaded; "" when none was read
    loaded_from: str = ""

    @property
    def files_words(self) -> str:
        shown = ", ".join(self.files[:2])
        return shown + (f" and {len(self.files) - 2} more" if len(self.files) > 2 else "")


def requirement_pinned_minor(reqs: Iterable[Requirement], releases: Releases) -> Minor | None:
    """The torch minor an unstable build names by its unconditional one-minor requirement,
    read as an installer reads it (``==2.8.0+cpu`` names 2.8.0: ``torch_releases.admits``)
    against the run's release list."""
    for req in reqs:
        if req.marker is None and (minor := releases.pinned_minor(req.specifier)) is not None:
            return minor
    return None


def pinned_builds(reqs: Iterable[Requirement]) -> BuildSet | None:
    """The torch builds the unconditional requirements admit by the local labels of their
    exact pins (``torch==2.8.0+cpu``: the CPU build, ``+cu128``: CUDA 12, ``+rocm7.1``,
    ``+xpu``); None when no pin names a build. Two requirements naming different builds
    admit none."""
    found: BuildSet | None = None
    for req in reqs:
        if req.marker is not None:
            continue
        named = {
            b
            for label in torch_releases.local_labels(req.specifier)
            if (b := backend.from_local_label(label))
        }
        if named:
            mine = frozenset(backend.TorchBuild(b.kind, b.major) for b in named)
            found = mine if found is None else frozenset(b for b in found if b in mine)
    return found


def narrowed_builds(builds: BuildSet | None, pinned: BuildSet | None) -> BuildSet | None:
    """The build axis of the binaries (``builds``) narrowed to what the requirement's pin
    admits: an installer puts the wheel only beside that build. Unknown stays unknown."""
    if builds is None or pinned is None:
        return builds
    return backend.normalized(p for p in pinned if any(b.admits(p) for b in builds))


def local_minor(version: Version) -> Minor | None:
    match = _LOCAL_TORCH.search(version.local or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def claimed_releases(
    reqs: Iterable[Requirement], version: Version, releases: Releases
) -> tuple[frozenset[Release], ReleasesFrom]:
    """The torch minor an unstable build's own words name, when its binaries do not:
    its ``+torchX.Y`` label, else its one-minor pin (a patch pin, ``==2.9.1``, names the minor:
    the requirement itself keeps the other patches out)."""
    if (minor := local_minor(version)) is not None:
        return frozenset({minor}), "label"
    if (minor := requirement_pinned_minor(reqs, releases)) is not None:
        return frozenset({minor}), "pin"
    return frozenset(), ""


def parse_releases(value: str) -> frozenset[Release]:
    """A ``Torch-ABI-Builds`` value: ``2.4, 2.5, 2.9`` (minors) or ``2.2.0, 2.2.1`` (patches)."""
    found: set[Release] = set()
    for part in value.split(","):
        numbers = part.strip().split(".")
        if not 2 <= len(numbers) <= 3 or not all(n.isdigit() and len(n) <= 3 for n in numbers):
            raise InputError(
                f"WHEEL {TORCH_ABI_BUILDS_FIELD}: {clipped(value, 80)!r} is not a list of torch releases",
                reference="wheel-invalid",
            )
        found.add(tuple(int(n) for n in numbers))
    return frozenset(found)


_RELEASE = re.compile(r"\d{1,4}\.\d{1,4}(?:\.\d{1,4})?")  # a loaded-from gate: 2.13, 2.13.1
_GPU_CODE = re.compile(r"(?:sm|compute)_\d{2,3}[af]?")


def parse_gpu_code(value: str) -> frozenset[str]:
    """A ``Torch-GPU`` value: the CUDA images a wheel carries, ``sm_80, sm_90a, compute_90``."""
    found = frozenset(part.strip() for part in value.split(",") if part.strip())
    if not found or len(found) > 256 or not all(_GPU_CODE.fullmatch(c) for c in found):
        raise InputError(
            f"WHEEL Torch-GPU: {clipped(value, 80)!r} is not a list like 'sm_80, sm_90a, compute_90'",
            reference="wheel-invalid",
        )
    return found


def need_from_fields(
    fields: Mapping[str, list[str]], reqs: tuple[Requirement, ...], version: Version, releases: Releases
) -> TorchNeed | None:
    """The need WHEEL states (``declared_need``), or None when it does not state every axis
    (untagged, or tagged before ``Torch-Build`` existed): then the binaries say it.
    ``releases``: the run's release list, which reads a pin and bounds an exports dating."""
    abi, built_for = fields.get(TORCH_ABI_FIELD), fields.get(TORCH_BUILD_FIELD)
    if not abi or not built_for:
        return None
    per_release, gpu = fields.get(TORCH_ABI_BUILDS_FIELD), fields.get(TORCH_GPU_FIELD)
    dated = fields.get(TORCH_ABI_EXPORTS_FIELD)
    need = declared_need(
        abi[-1],
        reqs,
        version,
        built_for[-1],
        per_release[-1] if per_release else None,
        gpu[-1] if gpu else None,
        dated[-1] if dated else None,
        releases=releases,
    )
    parts = tuple(
        _optional_part(line, version, releases) for line in fields.get(TORCH_ABI_OPTIONAL_FIELD, [])
    )
    return dataclasses.replace(need, optional=parts) if parts else need


_PART_KEYS = {
    TORCH_ABI_FIELD,
    TORCH_ABI_BUILDS_FIELD,
    TORCH_ABI_EXPORTS_FIELD,
    TORCH_BUILD_FIELD,
    TORCH_GPU_FIELD,
}


def _optional_part(line: str, version: Version, releases: Releases) -> OptionalPart:
    """A ``Torch-ABI-Optional`` line: ``optional; Torch-ABI=2.11; Torch-Build=cuda-13;
    files=pkg/_C.so``, with ``loaded-from=2.13`` where the package's version check loads the
    files only from that torch on (``tagging.plan.torch_abi_fields`` writes it)."""
    when, *pairs = [p.strip() for p in line.split(";")]
    values: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or (key not in _PART_KEYS and key not in ("files", OPTIONAL_LOADED_FROM_KEY)):
            break
        values[key] = value.strip()
    else:
        if (
            when in ("optional", "conditional", "on-use")
            and values.get("files")
            and {TORCH_ABI_FIELD, TORCH_BUILD_FIELD} <= set(values)
        ):
            need = declared_need(
                values[TORCH_ABI_FIELD], (), version, values[TORCH_BUILD_FIELD], values.get(TORCH_ABI_BUILDS_FIELD),
                values.get(TORCH_GPU_FIELD), values.get(TORCH_ABI_EXPORTS_FIELD),
                source=f"WHEEL {TORCH_ABI_OPTIONAL_FIELD}", releases=releases,
            )  # fmt: skip
            files = tuple(f.strip() for f in values["files"].split(", ") if f.strip())
            kind: OptionalWhen = (
                "on-use" if when == "on-use" else "optional" if when == "optional" else "conditional"
            )
            loaded_from = values.get(OPTIONAL_LOADED_FROM_KEY)
            if loaded_from is None or _RELEASE.fullmatch(loaded_from):
                return OptionalPart(files, kind, need, loaded_from=loaded_from or "")
    raise InputError(
        f"WHEEL {TORCH_ABI_OPTIONAL_FIELD}: {clipped(line, 80)!r} is not "
        "'optional|conditional|on-use; Torch-ABI=...; Torch-Build=...; files=...'",
        reference="wheel-invalid",
    )


def declared_need(
    torch_abi: str,
    reqs: tuple[Requirement, ...],
    version: Version,
    torch_build: str,
    abi_builds: str | None = None,
    torch_gpu: str | None = None,
    abi_exports: str | None = None,
    source: str = f"WHEEL {TORCH_ABI_FIELD}",
    *,
    releases: Releases,
) -> TorchNeed:
    """The need a tagged wheel's WHEEL states: ``Torch-ABI`` (``2.10``, ``2.10.1``,
    ``unstable``, ``any``, ``none``), for per-release builds ``Torch-ABI-Builds``, for one
    unstable build its imports date ``Torch-ABI-Exports``, ``Torch-Build`` (required: a
    wheel tagged before it existed is read from its binaries) and ``Torch-GPU`` (absent: no
    CUDA code)."""
    value = torch_abi.strip()
    builds = backend.parse_builds(torch_build)
    gpu = parse_gpu_code(torch_gpu) if torch_gpu else frozenset()
    if value == "unstable":
        how: ReleasesFrom = "wheel" if abi_builds else "exports"
        found = parse_releases(abi_builds or abi_exports or "") if abi_builds or abi_exports else frozenset()
        if not found:
            found, how = claimed_releases(reqs, version, releases)
        # dated by the tagger's export index: past it (and past this torchwheel's), unknown
        horizon = (
            max([minor_of(releases.newest()), *((b[0], b[1]) for b in found)]) if how == "exports" else None
        )
        return TorchNeed("unstable", None, found, how, builds, gpu, reqs, source, tables=horizon)
    if value in ("none", "any"):
        return TorchNeed(value, None, frozenset(), "", builds, gpu, reqs, source)  # type: ignore[arg-type]
    try:
        floor = torch_abi_floor(value)  # wheel.metadata: the one reading
    except (ValueError, InputError) as exc:
        raise InputError(
            f"WHEEL {TORCH_ABI_FIELD}: {clipped(value, 80)!r} is neither a version nor 'unstable'",
            reference="wheel-invalid",
        ) from exc
    return TorchNeed("stable", floor, frozenset(), "", builds, gpu, reqs, source)
