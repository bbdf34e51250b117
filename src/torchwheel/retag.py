"""From facts and policy to the metadata a wheel should carry: a pure plan, no I/O.

What changes, and why each is safe:
- ``WHEEL``: ``Torch-ABI: 2.10`` (or ``unstable``) and ``Tag:`` lines equal to the file
  name's tags (installers select by the file name, so it is the authority).
- CPython tags are only *narrowed* on evidence: an abi3 floor raised to the newest
  limited-API symbol's version, ``abi3t`` dropped when no module can serve it. Narrowing
  can only stop an install that would fail; widening is never done here.
- ``METADATA``: the torch requirement the binaries need, merged into the existing line
  (extras and environment markers kept). No new METADATA field: twine and PyPI reject
  unknown ones, which is why the target goes to ``WHEEL`` and the side file.
- ``.dist-info/torchwheel.json``: the per-library facts, schema-versioned.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.specifiers import Specifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from torchwheel import __version__, releasetag
from torchwheel.errors import InputError
from torchwheel.metadataedit import rewrite_requirements, verify_requirements
from torchwheel.report import binary_json
from torchwheel.version import FeatureVersion
from torchwheel.wheelfacts import (
    TorchABI,
    WheelFacts,
    iter_slices,
    parse_metadata,
    provides_libtorch,
    wheel_torch_abi,
)
from torchwheel.wheelfile import SIDE_FILE

SIDE_SCHEMA = 1
TORCH_ABI_FIELD = "Torch-ABI"


@dataclass(frozen=True)
class TagOptions:
    upper_bound: str | None = None  # add ``,<X`` to a stable requirement
    keep_correct: bool = True  # keep the project's own requirement when it is already right
    build_torch: str | None = None  # X.Y for an unstable wheel's pin
    relax_pin: bool = False  # replace an author's pin (TW502) instead of keeping it
    build_tag: str | None = None  # file name build tag + WHEEL Build (releasetag.naming)
    local_label: str | None = None  # 1.0 -> 1.0+LABEL in the file name and METADATA
    release_requirements: tuple[str, ...] | None = None  # one set for a whole release


@dataclass
class Plan:
    torch_abi: TorchABI
    filename: str
    members: dict[str, bytes]  # dist-info files to (re)write
    drop: set[str]
    changes: list[str] = field(default_factory=list)
    dist_info: str | None = None  # a new .dist-info name (a local label changed the version)
    renames: dict[str, str] = field(default_factory=dict)  # input member -> name to write it under


# -- tags ------------------------------------------------------------------------------------


def _abi3_needed(w: WheelFacts) -> tuple[int, int] | None:
    floors = [
        tuple(int(x) for x in s.python.limited_floor.split("."))
        for _, _, s in iter_slices(w)
        if s.python.limited_floor and s.python.verdict in ("abi3", "abi3t")
    ]
    best = max(floors, default=None)
    return (best[0], best[1]) if best else None


def narrow_tags(w: WheelFacts, tags: frozenset[Tag]) -> tuple[frozenset[Tag], list[str]]:
    notes: list[str] = []
    needed = _abi3_needed(w)
    out = set(tags)
    if needed is not None:
        raised = set()
        for t in out:
            interp = t.interpreter
            abi3 = t.abi in ("abi3", "abi3t") and interp.startswith("cp3") and interp[3:].isdigit()
            if abi3 and (3, int(interp[3:])) < needed:
                interp = f"cp{needed[0]}{needed[1]}"
            raised.add(Tag(interp, t.abi, t.platform))
        if raised != out:
            notes.append(f"raised the abi3 floor to cp{needed[0]}{needed[1]} (limited-API symbols need it)")
            out = raised
    modules = [s for _, _, s in iter_slices(w) if s.python.hooks]
    if (
        any(t.abi == "abi3t" for t in out)
        and modules
        and all(not any(h.startswith("PyModExport") for h in s.python.hooks) for s in modules)
    ):
        kept = {t for t in out if t.abi != "abi3t"}
        if kept:
            notes.append("dropped abi3t (every module has only PyInit_ hooks)")
            out = kept
    return frozenset(out), notes


def _ordered(values: set[str], original: list[str]) -> list[str]:
    return [v for v in original if v in values] + sorted(values - set(original))


def compress_tags(tags: frozenset[Tag], original: str) -> str:
    """The dotted file-name form; refuses a set that is not a cartesian product."""
    parts = original.split("-")
    interps = _ordered({t.interpreter for t in tags}, parts[0].split("."))
    abis = _ordered({t.abi for t in tags}, parts[1].split("."))
    plats = _ordered({t.platform for t in tags}, parts[2].split("."))
    if len(interps) * len(abis) * len(plats) != len(tags):
        raise InputError(f"tags {sorted(map(str, tags))} cannot be written as one file name")
    return f"{'.'.join(interps)}-{'.'.join(abis)}-{'.'.join(plats)}"


def wheel_file_text(original: str, tags: list[Tag], torch_abi: str) -> str:
    kept = [
        line
        for line in original.splitlines()
        if line.strip() and not line.startswith(("Tag:", f"{TORCH_ABI_FIELD}:"))
    ]
    lines = kept + [f"Tag: {t}" for t in tags] + [f"{TORCH_ABI_FIELD}: {torch_abi}"]
    return "\n".join(lines) + "\n"


# -- the torch requirement ---------------------------------------------------------------------


def _render(req: Requirement, spec: str) -> str:
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f"; {req.marker}" if req.marker else ""
    return f"{req.name}{extras}{spec}{marker}"


def _minors(spec: SpecifierSet) -> list[int]:
    return [m for m in range(0, 40) if spec.contains(Version(f"2.{m}.0"), prereleases=True)]


def _is_correct(req: Requirement, abi: TorchABI) -> bool:
    if abi.kind == "stable" and abi.target is not None:
        older = [Version(f"{abi.target.major}.{m}.9") for m in range(abi.target.minor)]
        admits_older = any(req.specifier.contains(v, prereleases=True) for v in older)
        return not admits_older and len(_minors(req.specifier)) > 1
    return len(_minors(req.specifier)) == 1


def desired_spec(abi: TorchABI, reqs: tuple[Requirement, ...], opts: TagOptions) -> str | None:
    if abi.kind == "stable" and abi.target is not None:
        t: FeatureVersion = abi.target
        spec = f">={t.minor_release if t.patch == 0 else t.release}"
        return spec + (f",<{opts.upper_bound}" if opts.upper_bound else "")
    if abi.kind == "unstable":
        if opts.build_torch:
            return f"=={FeatureVersion.parse(opts.build_torch).minor_release}.*"
        for req in reqs:
            minors = _minors(req.specifier)
            if len(minors) == 1:
                return f"==2.{minors[0]}.*"
        raise InputError(
            "the wheel uses unstable libtorch symbols and its torch requirement does not name the build "
            "torch: pass --build-torch X.Y"
        )
    return None


def _probes(*specs: SpecifierSet) -> list[Version]:
    """Releases to test a specifier set with: a grid of 0.x..3.x plus every version the
    clauses name and the patch after it (so ``==2.13.15`` or ``>2.13.15`` are not missed)."""
    probes = {Version(f"{a}.{m}.{p}") for a in range(4) for m in range(40) for p in (0, 1, 9)}
    for spec in specs:
        for clause in spec:
            try:
                v = Version(clause.version.removesuffix(".*"))
            except ValueError:  # an arbitrary-equality (===) string
                continue
            release = (*v.release, 0, 0)[: max(3, len(v.release))]
            probes |= {v, Version(".".join(map(str, (*release[:-1], release[-1] + 1))))}
    return sorted(probes)


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


def narrowed(req: Requirement, desired: SpecifierSet) -> str | None:
    """The author's requirement intersected with what the binaries need: the author's own
    text when it is already inside ``desired``, else ``desired`` plus every author clause
    ``desired`` does not imply. None when nothing is left (the two exclude each other)."""
    probes = _probes(req.specifier, desired)
    admitted = [v for v in probes if req.specifier.contains(v, prereleases=True)]
    if admitted and all(desired.contains(v, prereleases=True) for v in admitted):
        return str(req.specifier)
    kept = [c for c in req.specifier if not _implied(c, desired)]
    both = SpecifierSet(",".join([*(str(d) for d in desired), *(str(c) for c in kept)]))
    if not any(both.contains(v, prereleases=True) for v in probes):
        return None
    order = [*desired, *sorted(kept, key=lambda c: str(req.specifier).find(str(c)))]
    return ",".join(dict.fromkeys(str(c) for c in order))


def merged_requirement(req: Requirement, spec: str, abi: TorchABI, opts: TagOptions) -> tuple[str, list[str]]:
    """The new specifier of one author's torch requirement, and notes. Only narrows by
    default: an author's pin may have reasons the binaries do not show, so widening it
    (TW502) is ``--relax-pin``'s, as is replacing one that excludes every usable torch."""
    new = narrowed(req, SpecifierSet(spec))
    pinned = abi.kind == "stable" and (new is None or len(_minors(SpecifierSet(new))) <= 1)
    if (pinned or new is None) and opts.relax_pin:
        return spec, [f"Requires-Dist: {req} -> {_render(req, spec)} (relax-pin)"]
    if new is None:
        raise InputError(
            f"Requires-Dist {str(req)!r} admits no torch the binaries load on (torch{spec}): "
            "fix it in the project, or pass --relax-pin to replace it"
        )
    notes = [] if new == str(req.specifier) else [f"Requires-Dist: {req} -> {_render(req, new)}"]
    if pinned:
        notes.append(
            f"kept the pin {_render(req, new)} although the stable ABI loads on torch{spec}: "
            "--relax-pin would widen it"
        )
    return new, notes


def metadata_text(original: str, abi: TorchABI, opts: TagOptions) -> tuple[str, list[str]]:
    """Rewrite only the ``Requires-Dist: torch`` header lines; everything else byte for byte
    (CRLF or LF, a body or a ``Description`` header: ``metadataedit``)."""
    notes: list[str] = []

    def edit(reqs: list[Requirement]) -> tuple[dict[int, str], str | None]:
        spec = desired_spec(abi, tuple(reqs), opts)
        if spec is None:
            return {}, None
        if not reqs:
            notes.append(f"added Requires-Dist: torch{spec}")
            return {}, f"torch{spec}"
        replaced: dict[int, str] = {}
        for k, req in enumerate(reqs):
            if opts.keep_correct and _is_correct(req, abi) and not opts.upper_bound:
                continue
            new_spec, req_notes = merged_requirement(req, spec, abi, opts)
            notes.extend(req_notes)
            if new_spec != str(req.specifier):
                replaced[k] = _render(req, new_spec)
        return replaced, None

    text, claimed = rewrite_requirements(original, "torch", edit)
    if text == original:
        return original, notes
    verify_requirements(text, "torch", claimed, "tag")
    return text, notes


# -- the plan --------------------------------------------------------------------------------


def side_file(w: WheelFacts, abi: TorchABI) -> bytes:
    doc = {
        "schema_version": SIDE_SCHEMA,
        "generator": f"torchwheel {__version__}",
        "torch_abi": str(abi),
        "libraries": [{"member": b.member, **binary_json(b.analysis)} for b in w.binaries],
    }
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def plan(w: WheelFacts, opts: TagOptions) -> Plan:
    c = w.contents
    if not w.is_wheel_file:
        raise InputError(f"{c.path}: tag rewrites wheel files; build a wheel first")
    abi = wheel_torch_abi(w)
    name = c.path.replace("\\", "/").rsplit("/", 1)[-1]
    stem_parts = name[: -len(".whl")].split("-")
    original_tags = "-".join(stem_parts[-3:])
    tags, changes = narrow_tags(w, c.filename_tags)
    compressed = compress_tags(tags, original_tags)
    filename = "-".join([*stem_parts[:-3], compressed]) + ".whl"
    ordered = [
        Tag(i, a, p)
        for i in compressed.split("-")[0].split(".")
        for a in compressed.split("-")[1].split(".")
        for p in compressed.split("-")[2].split(".")
    ]
    wheel_name = f"{c.dist_info}/WHEEL"
    meta_name = f"{c.dist_info}/METADATA"
    if provides_libtorch(w):  # torch itself: it cannot require torch
        new_meta, meta_notes = c.metadata_text, ["torch itself: Requires-Dist left as it is"]
    else:
        new_meta, meta_notes = metadata_text(c.metadata_text, abi, opts)
        if opts.release_requirements is not None:  # tag --release: the set shared by all wheels
            new_meta, meta_notes = releasetag.apply_requirements(c.metadata_text, opts.release_requirements, name)
    new_wheel = wheel_file_text(c.wheel_text, ordered, str(abi))
    filename, new_meta, new_wheel, name_notes = releasetag.naming(filename, new_meta, new_wheel, opts)
    changes += name_notes
    members = {
        wheel_name: new_wheel.encode(),
        meta_name: new_meta.encode(),
        f"{c.dist_info}/{SIDE_FILE}": side_file(w, abi),
    }
    if c.wheel_tags != tags:
        changes.append("WHEEL Tag lines now equal the file name's tags")
    if c.wheel_fields.get(TORCH_ABI_FIELD) != [str(abi)]:
        changes.append(f"WHEEL {TORCH_ABI_FIELD}: {abi}")
    changes += meta_notes
    drop = {f"{c.dist_info}/RECORD.jws", f"{c.dist_info}/RECORD.p7s"} & set(c.members)
    if drop:
        changes.append("dropped RECORD signatures (the rewrite invalidates them)")
    new_dist_info, renames = releasetag.renamed_dist_info(c.dist_info, [*c.members, *members], filename)
    if renames:
        members = {renames.get(n, n): data for n, data in members.items()}
    return Plan(abi, filename, members, drop, changes, new_dist_info, renames)


def planned_facts(w: WheelFacts, p: Plan) -> WheelFacts:
    """The wheel as the rewrite will leave it: the same binaries under the new metadata.

    ``repair`` judges this rather than its input, so it refuses only what a rewrite cannot
    make honest: WHEEL Tag lines that disagree with the file name, a missing or too loose
    torch requirement or a too low abi3 floor are exactly what the rewrite fixes, while a
    RECORD that disagrees with the files or a broken binary stays as it was.
    """
    c = w.contents
    try:
        tags = parse_wheel_filename(p.filename)[3]
    except InvalidWheelFilename:
        tags = c.filename_tags
    contents = dataclasses.replace(
        c,
        filename_tags=tags,
        wheel_text=p.members[f"{p.dist_info or c.dist_info}/WHEEL"].decode(),
        metadata_text=p.members[f"{p.dist_info or c.dist_info}/METADATA"].decode(),
    )
    return dataclasses.replace(
        w,
        contents=contents,
        metadata=parse_metadata(contents.metadata_text),
        record_problems=[r for r in w.record_problems if r.problem != "missing-record"],
    )
