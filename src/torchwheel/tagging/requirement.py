"""The torch requirement ``tag`` writes into METADATA: the one the binaries need, merged into
the author's line (extras and environment markers kept), only ever narrowing it unless told
otherwise (``--relax-pin``); and a release's shared set applied line for line.

Only the ``Requires-Dist: torch`` header lines change; everything else stays byte for byte
(``wheel.metadata_edit``), and what was written is parsed back before it is trusted.
"""

from __future__ import annotations

import re

from packaging.requirements import Requirement
from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from torchwheel import limits
from torchwheel.errors import InputError, clipped, quoted
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.torchabi import torch_releases
from torchwheel.torchabi.cxxnames import names_text
from torchwheel.torchabi.need import TorchNeed, show_releases
from torchwheel.torchabi.torch_releases import Releases, show_minor
from torchwheel.version import FeatureVersion
from torchwheel.wheel.metadata_edit import rewrite_requirements, verify_requirements


class BuildTorchNeeded(InputError):
    """An unstable build whose torch only ``--build-torch`` can name: a request for a fact,
    not a fault of the wheel. A refusal that also has faults the rewrite cannot fix leaves
    it unsaid, since the rebuild decides whether it still holds (a port to the stable ABI
    needs no build torch)."""

    fixed_reference = "rewrite-refused"


def _render(req: Requirement, spec: str) -> str:
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f"; {req.marker}" if req.marker else ""
    return f"{req.name}{extras}{spec}{marker}"


def _is_correct(req: Requirement, abi: TorchNeed, releases: Releases) -> bool:
    """Is the author's requirement already what the binaries need (so ``tag`` keeps it)?"""
    spec = req.specifier
    if abi.kind == "stable" and abi.floor is not None:
        loads = [v for v in releases.admitted(spec) if v >= Version(abi.floor.release)]
        return (
            releases.older_admitted(spec, abi.floor) is None
            and bool(loads or releases.admits_future(spec))
            and len(releases.admitted_minors(spec)) > 1
        )
    if abi.per_release:  # per-minor builds: the wheel picks its library, any requirement is the author's
        return True
    return releases.pinned_minor(spec) is not None


def _known(minor: str, what: str, releases: Releases) -> None:
    """``tag`` never writes a requirement no torch release can satisfy."""
    if torch_releases.parse_minor(minor) > torch_releases.minor_of(releases.newest()):
        raise InputError(
            f"{what} torch {minor}, newer than any torch release this torchwheel knows "
            f"(newest {releases.newest()}): writing torch>={minor} would admit no torch it knows; "
            "check TORCH_TARGET_VERSION, or run `torchwheel symbols update TORCH_WHEEL_OR_ENV` with that torch (TW207)",
            reference="tables-outdated",
        )


# a torch minor in a distribution's name: nvfuser-cu130-torch210, aikernel-...-libtorch2-12-win-x64
_NAMED_MINOR = re.compile(r"torch[_.-]?(2)[_.-]?(\d{1,2})(?![0-9])", re.IGNORECASE)


def named_minor(name: str) -> str | None:
    """The torch minor a distribution's name spells (``torch210``: ``2.10``), if exactly one."""
    found = {f"{m.group(1)}.{int(m.group(2))}" for m in _NAMED_MINOR.finditer(name)}
    return found.pop() if len(found) == 1 else None


def _upper_bound(text: str) -> str:
    """``--upper-bound``: a version, bounded before packaging converts its digits."""
    limits.check_version("--upper-bound", text)
    try:
        return str(Version(text))
    except InvalidVersion as exc:
        raise InputError(
            f"--upper-bound {quoted(text, 60)}: not a version",
            reference="bad-option-value",
            field="--upper-bound",
            value=text,
        ) from exc


def desired_spec(
    abi: TorchNeed,
    reqs: tuple[Requirement, ...],
    opts: TagOptions,
    named: str | None = None,
    *,
    releases: Releases,
) -> str | None:
    """The requirement ``tag`` writes; ``named``: the torch minor the distribution's name
    spells, which the refusal of an undated unstable build suggests (never applies);
    ``releases``: the run's release list (the wheel's facts were read with it). A need
    with imports newer than the tables is refused: its floor or its dating is a guess
    (an unstable build's --build-torch is the author's word, and is taken)."""
    if abi.newer and abi.tables is not None and not (abi.kind == "unstable" and opts.build_torch):
        shown = names_text(abi.newer)
        raise InputError(
            f"the binaries import {shown}, which no torch up to {show_minor(abi.tables)} exports: newer than "
            "this torchwheel's tables, so the requirement would be a guess; run `torchwheel symbols update "
            "TORCH_WHEEL_OR_ENV` with the torch they were built for (TW203, TW207)",
            reference="tables-outdated",
        )
    if abi.kind == "stable" and abi.floor is not None:
        t: FeatureVersion = abi.floor
        _known(t.minor_release, "the binaries need", releases)
        spec = f">={t.minor_release if t.patch == 0 else t.release}"
        return spec + (f",<{_upper_bound(opts.upper_bound)}" if opts.upper_bound else "")
    if abi.per_release:
        return None  # per-minor builds: no pin (it would break every other minor)
    if abi.kind == "unstable":
        if opts.build_torch:
            build = FeatureVersion.parse(opts.build_torch).minor_release
            _known(build, "--build-torch names", releases)
            return f"=={build}.*"
        minor = next((m for r in reqs if (m := releases.pinned_minor(r.specifier)) is not None), None)
        if minor is not None:
            return f"=={show_minor(minor)}.*"
        said = []
        if named:
            said.append(f"its name says torch {named}")
        if abi.lock:
            said.append(f"its import works on torch {show_releases(abi.releases)} only ({abi.lock})")
        elif abi.releases_from == "exports" and not (abi.uncovered or abi.unresolved):
            said.append(f"its imports exist in the exports of torch {show_releases(abi.releases)}")
        guess = named or (show_releases(abi.releases) if len(abi.releases) == 1 else "X.Y")
        raise BuildTorchNeeded(
            "the wheel uses unstable libtorch symbols and its torch requirement does not name the build "
            f"torch: pass --build-torch X.Y{' (' + '; '.join(said) + ')' if said else ''}, or "
            "--build-torch installed (the torch installed here); "
            f"`torchwheel compat --against TORCH WHEEL` (a torch {guess} wheel, or `installed`) checks it first"
        )
    return None


def _probes(releases: Releases) -> tuple[Version, ...]:
    """What a requirement is tested against: every known torch release, and one that stands
    for the releases to come (``releases``)."""
    return (*releases.versions, releases.future())


def _implied(clause: Specifier, desired: SpecifierSet) -> bool:
    """Does ``desired`` alone exclude everything ``clause`` excludes? Decided per operator
    on the versions (exact), not by probing: dropping a clause that is not implied would
    widen the author's requirement."""
    if "*" in clause.version and clause.operator == "==":
        return str(clause) in {str(d) for d in desired}
    try:
        v = Version(clause.version)
    except ValueError:
        return False
    for d in desired:
        if d.operator == ">=" and clause.operator in (">=", ">") and v < Version(d.version):
            return True
        if d.operator == "==" and d.version.endswith(".*"):  # ==2.13.*: between 2.13 and 2.14
            base = Version(d.version[:-2])
            top = Version(f"{base.major}.{base.minor + 1}")
            if (clause.operator in (">=", ">") and v < base) or (clause.operator in ("<", "<=") and v >= top):
                return True
        if d.operator == "<" and clause.operator in ("<", "<=") and v >= Version(d.version):
            return True
    return False


def narrowed(req: Requirement, desired: SpecifierSet, releases: Releases) -> str | None:
    """The author's requirement intersected with what the binaries need: the author's own
    text when it is already inside ``desired``, else ``desired`` plus every author clause
    ``desired`` does not imply. None when nothing is left (the two exclude each other)."""
    probes = _probes(releases)
    admitted = [v for v in probes if req.specifier.contains(v, prereleases=True)]
    if admitted and all(desired.contains(v, prereleases=True) for v in admitted):
        return str(req.specifier)
    kept = [c for c in req.specifier if not _implied(c, desired)]
    both = SpecifierSet(",".join([*(str(d) for d in desired), *(str(c) for c in kept)]))
    if not any(both.contains(v, prereleases=True) for v in probes):
        return None
    order = [*desired, *sorted(kept, key=lambda c: str(req.specifier).find(str(c)))]
    return ",".join(dict.fromkeys(str(c) for c in order))


def merged_requirement(
    req: Requirement, spec: str, abi: TorchNeed, opts: TagOptions, releases: Releases
) -> tuple[str, list[str]]:
    """The new specifier of one author's torch requirement, and notes. Only narrows by
    default: an author's pin may have reasons the binaries do not show, so widening it
    (TW502) is ``--relax-pin``'s, as is replacing one that excludes every usable torch."""
    new = narrowed(req, SpecifierSet(spec), releases)
    pinned = abi.kind == "stable" and (new is None or len(releases.admitted_minors(SpecifierSet(new))) <= 1)
    if (pinned or new is None) and opts.relax_pin:
        return spec, [f"Requires-Dist: {clipped(req)} -> {clipped(_render(req, spec))} (relax-pin)"]
    if new is None:
        raise InputError(
            f"Requires-Dist {quoted(req)} admits no torch the binaries load on (torch{spec}): "
            "fix it in the project, or pass --relax-pin to replace it",
            reference="rewrite-refused",
        )
    notes = (
        []
        if new == str(req.specifier)
        else [f"Requires-Dist: {clipped(req)} -> {clipped(_render(req, new))}"]
    )
    if pinned:
        notes.append(
            f"kept the pin {_render(req, new)} although the stable ABI loads on torch{spec}: "
            "--relax-pin would widen it"
        )
    return new, notes


def with_torch_requirements(
    original: str, abi: TorchNeed, opts: TagOptions, named: str | None = None, *, releases: Releases
) -> tuple[str, list[str]]:
    """Rewrite only the ``Requires-Dist: torch`` header lines; everything else byte for byte
    (CRLF or LF, a body or a ``Description`` header: ``metadataedit``)."""
    notes: list[str] = []

    def edit(reqs: list[Requirement]) -> tuple[dict[int, str], str | None]:
        spec = desired_spec(abi, tuple(reqs), opts, named, releases=releases)
        if spec is None:
            return {}, None
        if not reqs:
            notes.append(f"added Requires-Dist: torch{spec}")
            return {}, f"torch{spec}"
        replaced: dict[int, str] = {}
        for k, req in enumerate(reqs):
            if opts.keep_correct and _is_correct(req, abi, releases) and not opts.upper_bound:
                continue
            new_spec, req_notes = merged_requirement(req, spec, abi, opts, releases)
            notes.extend(req_notes)
            if new_spec != str(req.specifier):
                replaced[k] = _render(req, new_spec)
        return replaced, None

    text, claimed = rewrite_requirements(original, "torch", edit)
    if text == original:
        return original, notes
    verify_requirements(text, "torch", claimed, "tag")
    return text, notes


def apply_requirements(text: str, reqs: tuple[str, ...], where: str) -> tuple[str, list[str]]:
    """Replace every torch ``Requires-Dist`` line by ``reqs`` (in order), nothing else."""
    notes: list[str] = []

    def edit(found: list[Requirement]) -> tuple[dict[int, str | None], str | None]:
        if [str(r) for r in found] == list(reqs):
            return {}, None
        notes.append(f"Requires-Dist torch (one set for the release): {'; '.join(reqs)}")
        replaced: dict[int, str | None] = {k: (reqs[k] if k < len(reqs) else None) for k in range(len(found))}
        return replaced, None

    text, claimed = rewrite_requirements(text, "torch", edit)
    for extra in reqs[len(claimed) :]:  # more lines than the wheel had: added one by one

        def add(_found: list[Requirement], line: str = extra) -> tuple[dict[int, str | None], str | None]:
            return {}, line

        text, claimed = rewrite_requirements(text, "torch", add)
    verify_requirements(text, "torch", list(reqs), where)
    return text, notes
