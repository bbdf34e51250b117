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
from typing import Any

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from torchwheel import __version__, limits
from torchwheel.analysis.wheelfacts import (
    WheelFacts,
    iter_slices,
    torch_need_of,
)
from torchwheel.errors import InputError
from torchwheel.report.facts_document import binary_json
from torchwheel.tagging import naming
from torchwheel.tagging.contradictions import check_build_torch, check_importable, check_local_label
from torchwheel.tagging.requirement import apply_requirements, named_minor, with_torch_requirements
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.torchabi.backend import builds_text
from torchwheel.torchabi.need import TorchNeed, show_release
from torchwheel.wheel.metadata import (
    OPTIONAL_LOADED_FROM_KEY,
    SIDE_FILE,
    TORCH_ABI_BUILDS_FIELD,
    TORCH_ABI_EXPORTS_FIELD,
    TORCH_ABI_FIELD,
    TORCH_ABI_OPTIONAL_FIELD,
    TORCH_BUILD_FIELD,
    TORCH_GPU_FIELD,
    parse_metadata,
)

SIDE_SCHEMA = 1


@dataclass
class Plan:
    need: TorchNeed  # read from the binaries: what the WHEEL fields state
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
        raise InputError(
            f"tags {sorted(map(str, tags))} cannot be written as one file name", reference="rewrite-refused"
        )
    return f"{'.'.join(interps)}-{'.'.join(abis)}-{'.'.join(plats)}"


def _gpu_order(code: str) -> tuple[int, bool, str]:
    """Oldest architecture first, its cubins before its PTX (``cuda_archs.code_names``)."""
    digits = "".join(ch for ch in code if ch.isdigit())
    return (int(digits or 0), code.startswith("compute"), code)


def torch_abi_fields(need: TorchNeed) -> list[tuple[str, str]]:
    """The WHEEL lines that state the need, every axis it has, so that reading them back
    (``torchabi.need.need_from_fields``) gives the need of the binaries again. ``Torch-ABI``
    alone stays true for every reader (``unstable`` for per-minor builds too); the releases
    an unstable wheel loads on when its binaries say them (per-release names, the torch
    exports its imports exist in), the torch builds it loads on (``any``; ``cuda-13``) and
    the GPU code of its libraries (``Torch-GPU: sm_80, sm_90a, compute_90``, when it has any)
    go beside it, in fields of their own. An axis that could not be read is not written:
    the binaries are read again."""
    fields = _axes(need)
    for part in need.optional:
        if any(";" in f or ", " in f or "\n" in f for f in part.files):
            continue  # a name the line cannot hold: that part is read from the binaries again
        axes = "; ".join(f"{name}={value}" for name, value in _axes(part.need))
        # the package's own version check (``OptionalPart.loaded_from``): older torches never
        # load these files, so a tagged wheel is judged as its binaries are
        gate = f"; {OPTIONAL_LOADED_FROM_KEY}={part.loaded_from}" if part.loaded_from else ""
        fields.append((TORCH_ABI_OPTIONAL_FIELD, f"{part.when}; {axes}{gate}; files={', '.join(part.files)}"))
    return fields


def _axes(need: TorchNeed) -> list[tuple[str, str]]:
    fields = [(TORCH_ABI_FIELD, need.label)]
    dated = {"names": TORCH_ABI_BUILDS_FIELD, "exports": TORCH_ABI_EXPORTS_FIELD}.get(need.releases_from)
    if need.kind == "unstable" and dated and need.releases and not (need.unresolved or need.uncovered):
        fields.append((dated, ", ".join(show_release(b) for b in sorted(need.releases))))
    if need.builds is not None:
        fields.append((TORCH_BUILD_FIELD, builds_text(need.builds)))
    if need.gpu_code:
        fields.append((TORCH_GPU_FIELD, ", ".join(sorted(need.gpu_code, key=_gpu_order))))
    return fields


def wheel_file_text(original: str, tags: list[Tag], fields: list[tuple[str, str]]) -> str:
    ours = (
        "Tag:",
        *(
            f"{f}:"
            for f in (
                TORCH_ABI_FIELD,
                TORCH_ABI_BUILDS_FIELD,
                TORCH_ABI_EXPORTS_FIELD,
                TORCH_BUILD_FIELD,
                TORCH_GPU_FIELD,
                TORCH_ABI_OPTIONAL_FIELD,
            )
        ),
    )
    ours_lower = tuple(o.lower() for o in ours)  # field names ignore case, as installers read them
    kept = [
        line for line in original.splitlines() if line.strip() and not line.lower().startswith(ours_lower)
    ]
    lines = kept + [f"Tag: {t}" for t in tags] + [f"{name}: {value}" for name, value in fields]
    return "\n".join(lines) + "\n"


# -- the plan --------------------------------------------------------------------------------


# the name lists of a library entry (each a list, with its count of names not listed beside it)
_NAME_LISTS = (
    ("torch", "stable_symbols"),
    ("torch", "unknown_symbols"),
    ("torch", "unstable_symbols"),
    ("torch", "weak_symbols"),
    ("python", "hooks"),
    ("python", "non_limited_symbols"),
)


def _estimate(value: Any) -> int:
    """About the bytes ``value`` takes in the side file, without writing it (a hostile wheel's
    entries may be gigabytes as text): the gate before the exact measure."""
    if isinstance(value, dict):
        return 4 + sum(_estimate(k) + _estimate(v) for k, v in value.items())
    if isinstance(value, list):
        return 4 + sum(_estimate(v) for v in value)
    return 24 + len(str(value))  # indentation, quotes, comma, newline


def _item_size(entry: dict[str, Any]) -> int:
    """The exact bytes ``entry`` takes as an item of ``libraries``: its own text, four more
    spaces on each line (two levels deeper), and the comma and newline after it."""
    text = json.dumps(entry, indent=2, sort_keys=True)
    return len(text) + 4 * (text.count("\n") + 1) + 2


def _names_counted(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry with its symbol name lists empty, each name counted in its ``*_omitted``."""
    slices = []
    for s in entry["slices"]:
        s = {**s, "torch": dict(s["torch"]), "python": dict(s["python"])}
        for part, key in _NAME_LISTS:
            s[part][f"{key}_omitted"] += len(s[part][key])
            s[part][key] = []
        s["companion_versions_omitted"] += len(s["companion_versions"])
        s["companion_versions"] = []
        slices.append(s)
    return {**entry, "slices": slices}


def _side_text(libraries: list[dict[str, Any]], omitted: int, need: TorchNeed) -> bytes:
    doc = {
        "schema_version": SIDE_SCHEMA,
        "generator": f"torchwheel {__version__}",
        "torch_abi": need.label,
        "libraries": libraries,
        "libraries_omitted": omitted,
    }
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def side_file(w: WheelFacts, need: TorchNeed) -> bytes:
    """The facts side file, within half of ``max-metadata-bytes`` whatever the wheel holds.

    Every command reads it back through that limit (and the JSON reader bounds its values
    too), so ``tag`` must never write more: 215,000 unknown shims once made it 19 MB and a
    wheel ``check`` refused. The lists are already samples (``limits.Listing``); past the
    budget their names are only counted, and past that the libraries themselves.
    """
    budget = limits.current().max_metadata_bytes.value // 2
    entries = [{"member": b.member, **binary_json(b.analysis)} for b in w.binaries]
    for shrink in (False, True):
        if shrink:
            entries = [_names_counted(e) for e in entries]
        if _estimate(entries) <= budget:
            data = _side_text(entries, 0, need)
            if len(data) <= budget:
                return data
    kept: list[dict[str, Any]] = []
    used = len(_side_text([], len(entries), need)) + 2  # "[]" opens to "[\n" ... "\n  ]"
    for entry in entries:
        used += _item_size(entry)
        if used > budget:
            break
        kept.append(entry)
    return _side_text(kept, len(entries) - len(kept), need)


def plan(w: WheelFacts, opts: TagOptions) -> Plan:
    c = w.contents
    naming.plain_wheel_only(
        w,
        c.path,
        "tag rewrites wheel files; build a wheel first",
        "tag the plain wheel; `tag --variant` writes the variant copy beside it",
    )
    need = torch_need_of(w, "tag")
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
    check_importable(need)
    check_build_torch(need, opts, w.tables.releases)
    if w.provides_libtorch:  # torch itself: it cannot require torch
        new_meta, meta_notes = c.metadata_text, ["torch itself: Requires-Dist left as it is"]
    else:
        new_meta, meta_notes = with_torch_requirements(
            c.metadata_text, need, opts, named_minor(c.filename_name), releases=w.tables.releases
        )
        if opts.release_requirements is not None:  # tag --release: the set shared by all wheels
            new_meta, meta_notes = apply_requirements(c.metadata_text, opts.release_requirements, name)
    fields = torch_abi_fields(need)
    new_wheel = wheel_file_text(c.wheel_text, ordered, fields)
    filename, new_meta, new_wheel, name_notes = naming.naming(filename, new_meta, new_wheel, opts)
    check_local_label(
        fields, parse_metadata(new_meta).torch_requirements, filename.split("-")[1], opts, w.tables
    )
    changes += name_notes
    members = {
        wheel_name: new_wheel.encode(),
        meta_name: new_meta.encode(),
        f"{c.dist_info}/{SIDE_FILE}": side_file(w, need),
    }
    if c.wheel_tags != tags:
        changes.append("WHEEL Tag lines now equal the file name's tags")
    for field_name in dict.fromkeys(n for n, _ in fields):
        values = [v for n, v in fields if n == field_name]
        if c.wheel_fields.get(field_name) != values:
            changes += [f"WHEEL {field_name}: {v}" for v in values]
    changes += meta_notes
    drop = {f"{c.dist_info}/RECORD.jws", f"{c.dist_info}/RECORD.p7s"} & set(c.members)
    if drop:
        changes.append("dropped RECORD signatures (the rewrite invalidates them)")
    new_dist_info, renames = naming.renamed_dist_info(c.dist_info, [*c.members, *members], filename)
    if renames:
        members = {renames.get(n, n): data for n, data in members.items()}
    return Plan(need, filename, members, drop, changes, new_dist_info, renames)


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
    dist_info = p.dist_info or c.dist_info
    contents = dataclasses.replace(
        c,
        filename_tags=tags,
        wheel_text=p.members[f"{dist_info}/WHEEL"].decode(),
        metadata_text=p.members[f"{dist_info}/METADATA"].decode(),
        side_file=p.members.get(f"{dist_info}/{SIDE_FILE}", c.side_file),  # the facts file it writes
    )
    return dataclasses.replace(
        w,
        contents=contents,
        metadata=parse_metadata(contents.metadata_text),
        record_problems=tuple(r for r in w.record_problems if r.problem != "missing-record"),
    )
