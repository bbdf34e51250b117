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

import json
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.version import Version

from torchwheel import __version__
from torchwheel.errors import InputError
from torchwheel.report import binary_json
from torchwheel.version import FeatureVersion
from torchwheel.wheelfacts import TorchABI, WheelFacts, iter_slices, wheel_torch_abi
from torchwheel.wheelfile import SIDE_FILE

SIDE_SCHEMA = 1
TORCH_ABI_FIELD = "Torch-ABI"


@dataclass(frozen=True)
class TagOptions:
    upper_bound: str | None = None  # add ``,<X`` to a stable requirement
    keep_correct: bool = True  # keep the project's own requirement when it is already right
    build_torch: str | None = None  # X.Y for an unstable wheel's pin


@dataclass
class Plan:
    torch_abi: TorchABI
    filename: str
    members: dict[str, bytes]  # dist-info files to (re)write
    drop: set[str]
    changes: list[str] = field(default_factory=list)


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


def metadata_text(original: str, abi: TorchABI, opts: TagOptions) -> tuple[str, list[str]]:
    """Rewrite only the ``Requires-Dist: torch`` header lines; everything else byte for byte."""
    head, sep, body = original.partition("\n\n")
    trailing = head[len(head.rstrip("\n")) :]  # a body-less METADATA ends its headers with "\n"
    lines = head.rstrip("\n").split("\n")
    torch_at: list[int] = []
    reqs: list[Requirement] = []
    for i, line in enumerate(lines):
        if line.lower().startswith("requires-dist:"):
            try:
                req = Requirement(line.split(":", 1)[1].strip())
            except Exception:  # a malformed line is check's business (TW407), not ours
                continue
            if req.name.lower() == "torch":
                torch_at.append(i)
                reqs.append(req)
    spec = desired_spec(abi, tuple(reqs), opts)
    if spec is None:
        return original, []
    notes: list[str] = []
    if not reqs:
        insert = max(
            (i for i, line in enumerate(lines) if line.lower().startswith("requires-dist:")),
            default=len(lines) - 1,
        )
        lines.insert(insert + 1, f"Requires-Dist: torch{spec}")
        notes.append(f"added Requires-Dist: torch{spec}")
    for i, req in zip(torch_at, reqs, strict=True):
        if opts.keep_correct and _is_correct(req, abi) and not opts.upper_bound:
            continue
        new = _render(req, spec)
        if lines[i] != f"Requires-Dist: {new}":
            notes.append(f"Requires-Dist: {req} -> {new}")
            lines[i] = f"Requires-Dist: {new}"
    return "\n".join(lines) + trailing + sep + body, notes


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
    new_meta, meta_notes = metadata_text(c.metadata_text, abi, opts)
    members = {
        wheel_name: wheel_file_text(c.wheel_text, ordered, str(abi)).encode(),
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
    return Plan(abi, filename, members, drop, changes)
