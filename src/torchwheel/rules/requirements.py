"""TW5xx: ``Requires-Dist: torch`` agrees with what the binaries can load on.

Which torch releases a requirement admits is asked of ``torchabi.torch_releases`` (the real list
of torch releases), the one place every command asks it.
"""

from __future__ import annotations

from collections.abc import Iterator

from packaging.requirements import Requirement
from packaging.version import Version

from torchwheel.analysis.wheelfacts import WheelFacts, dated_by_exports, indexed_minors
from torchwheel.errors import quoted
from torchwheel.rules.registry import Hit, Policy, rule
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.need import Release, TorchNeed, release_matches, show_release, show_releases
from torchwheel.torchabi.torch_releases import Releases


def _admits(req: Requirement, releases: Releases) -> str:
    """What a requirement admits, in the one wording of TW503 and TW504: a bare ``torch``
    admits every torch release, a range the releases it spans (``2.9.0 and newer``)."""
    if not req.specifier:
        return "admits every torch release"
    return f"admits torch {releases.spec_span(req.specifier)}"


def _pins_one_build(abi: TorchNeed) -> bool:
    """An unstable wheel that loads on one (unnamed) minor: per-minor builds do not."""
    return abi.kind == "unstable" and not abi.per_release


@rule("TW501")
def torch_requirement_missing(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    abi = w.torch_need
    if not policy.require_torch or abi.kind in ("none", "any") or w.metadata.torch_requirements:
        return
    if _pins_one_build(abi) or abi.per_release:
        # one build: TW504, an error, says so; per-release builds: TW505 judges the missing
        # requirement against the builds (a bare 'torch' would admit just as much, and an
        # optional torch part must not pull torch in)
        return
    want = f"torch>={abi.label}" if abi.kind == "stable" else "torch"
    yield (
        "",
        f"binaries link libtorch ({abi.label}) but METADATA has no Requires-Dist: torch: add {want!r} "
        "(`torchwheel tag` writes it)",
    )


@rule("TW502")
def torch_pinned_too_tight(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    abi = w.torch_need
    if abi.kind != "stable" or abi.floor is None:
        return
    releases = w.tables.releases
    for req in w.metadata.torch_requirements:
        if releases.pinned_minor(req.specifier) is not None:  # exactly one known minor
            yield (
                "",
                (
                    f"Requires-Dist {quoted(req)} pins one torch release although the stable ABI loads on "
                    f"torch>={abi.label}: require 'torch>={abi.label}' so installers do not swap the user's torch "
                    "(`torchwheel tag --relax-pin` writes it)"
                ),
            )


@rule("TW503")
def torch_requirement_too_loose(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    abi = w.torch_need
    if abi.kind != "stable" or abi.floor is None:
        return
    floor = Version(abi.floor.release)
    releases = w.tables.releases
    if torch_releases.minor_of(abi.floor) > torch_releases.minor_of(releases.newest()):
        return  # a target newer than the tables (TW207 says so): no known torch to require
    for req in w.metadata.torch_requirements:
        too_old = releases.older_admitted(req.specifier, abi.floor) is not None
        loads = [v for v in releases.admitted(req.specifier) if v >= floor] or releases.admits_future(
            req.specifier
        )
        # tag narrows a requirement that admits a torch the binaries load on; one that admits
        # none it replaces only with --relax-pin (which value was meant is not its to guess)
        writes = "`torchwheel tag` writes it" if loads else "`torchwheel tag --relax-pin` writes it"
        if too_old:
            what = f"{_admits(req, releases)}, but the binaries need torch {abi.floor} or newer"
        elif not loads:
            what = f"admits no torch release the binaries load on (they need torch {abi.floor} or newer)"
        else:
            continue
        yield "", f"Requires-Dist {quoted(req)} {what}: require 'torch>={abi.label}' ({writes})"


@rule("TW504")
def unstable_torch_unpinned(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    abi = w.torch_need
    if not _pins_one_build(abi):
        return
    releases = w.tables.releases
    fix = (
        "pin the torch minor it was built with, 'torch==X.Y.*' (`torchwheel tag --build-torch X.Y` "
        "writes it; `--build-torch installed` takes the torch installed where it runs)"
    )
    if abi.newer:  # imports no torch of the tables exports: TW207 says so
        fix += "; its imports include names newer than this torchwheel's tables (TW207)"
    elif abi.uncovered or abi.unresolved:  # the tables cannot settle which: say none
        fix += "; the export tables cannot date it (`torchwheel compat --against TORCH` can)"
    elif abi.lock:  # the package's own version check narrows what its imports allow
        fix += f"; its import works on torch {show_releases(abi.releases)} only ({abi.lock})"
    elif abi.releases_from == "exports":  # the binaries date themselves: say where
        fix += f"; its imports are exported by torch {show_releases(abi.releases)} only"
    if not w.metadata.torch_requirements and policy.require_torch:
        yield (
            "",
            f"METADATA has no Requires-Dist: torch, so installers admit every torch release, but the binaries use "
            f"unstable libtorch symbols and load only on the torch they were built with: {fix}",
        )
    for req in w.metadata.torch_requirements:
        if len(releases.admitted_minors(req.specifier)) > 1:
            yield (
                "",
                (
                    f"Requires-Dist {quoted(req)} {_admits(req, releases)}, but the binaries use unstable libtorch "
                    f"symbols: {fix}"
                ),
            )


@rule("TW505")
def builds_gap(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A warning, not an error: per-minor builds with a bare requirement are right when the
    package's Python code does without its library where it has none (a newer torch
    provides the feature itself), and broken when it does not; the binaries cannot tell.
    Judged over every file, optional parts too (``every_file_need``): where its loader
    does without them, the warning says so already."""
    abi = w.every_file_need
    if not abi.per_release:
        return
    reqs = [r for r in w.metadata.torch_requirements if r.marker is None]
    releases = w.tables.releases
    admitted = [v for v in releases.versions if all(r.specifier.contains(v, prereleases=True) for r in reqs)]
    future = all(releases.admits_future(r.specifier) for r in reqs)
    gap = [v for v in admitted if not any(release_matches(b, v) for b in abi.releases)]
    if not (gap or future):
        return
    span = _builds_span(abi.releases)
    if reqs:
        said = "; ".join(str(r) for r in reqs)
        what = f"{said!r} admits torch {releases.runs(gap, future)}"
    else:  # an optional torch part: the package must do without its builds there
        what = f"METADATA names no torch, so installers put it beside any torch, also torch {releases.runs(gap, future)}"
    yield (
        "",
        f"{what}, for which the wheel has no build (it has {show_releases(abi.releases)}): unless its Python "
        f"code works there without them, require only the releases it has builds for ({span!r})",
    )


def _builds_span(releases: frozenset[Release]) -> str:
    """The requirement that admits the releases of a per-release set and none past its ends:
    ``torch>=2.4,<2.10`` (minors), ``torch>=2.0.0,<=2.2.1`` (patches)."""
    low, high = min(releases), max(releases)
    if all(len(b) == 2 for b in releases):
        return f"torch>={show_release(low)},<{high[0]}.{high[1] + 1}"
    return f"torch>={show_release(low)},<={show_release(high)}"


@rule("TW507")
def release_build_mismatch(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A warning: the shipped exports index (one release per minor, its last patch) dates the
    build; a per-patch build may differ from the patch the index read. Every file is judged,
    optional parts too: the package picks that build on that torch either way."""
    if not w.every_file_need.per_release:
        return
    by_member = {b.member: b for b in w.binaries}
    for alternatives in w.alternatives:
        for release, member in alternatives.members:
            binary = by_member.get(member)
            claimed = release[:2]
            if binary is None or claimed not in indexed_minors(binary, w.tables):
                continue
            dated = dated_by_exports([binary], w.tables)
            if dated.releases and not dated.newer and claimed not in dated.releases:
                yield (
                    member,
                    f"named for torch {show_release(release)}, where the package picks it, but its unstable "
                    f"imports are exported by torch {show_releases(dated.releases)} only (the shipped exports index): on "
                    f"torch {show_release(release)} it fails to load; rebuild it against that torch, or rename it",
                )
