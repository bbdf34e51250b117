"""The facts documents (``show``, ``inspect``, a need): analyses in, JSON-ready dicts or text
out. Nothing here decides anything.

The JSON shapes are a contract (``docs/reference/json.md``); ``SCHEMA_VERSION`` changes when a
field changes meaning or disappears, not when one is added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchwheel.analysis.member import BinaryAnalysis, DeclaredMarker, SliceAnalysis
from torchwheel.analysis.pythonabi import PythonFacts
from torchwheel.analysis.reach import Reach
from torchwheel.analysis.usage import TorchUsage
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.limits import listed
from torchwheel.report.accelerator_facts import accelerator_json, gpu_text, need_text
from torchwheel.report.textsafe import safe_lines
from torchwheel.torchabi.backend import BuildSet, builds_text
from torchwheel.torchabi.need import TorchNeed, show_release

SCHEMA_VERSION = 1
_SAMPLE = 8  # unstable symbols shown per slice in text; JSON carries what analysis listed
_NAMED = 32  # names on one text line (the most a published wheel has: 11 pinning shims)


def _names(names: Sequence[str], omitted: int = 0) -> str:
    """Names for one line of text: the first ``_NAMED``, then how many more."""
    shown = list(names[:_NAMED])
    more = len(names) - len(shown) + omitted
    return ", ".join(shown + ([f"... {more:,} more"] if more else []))


def marker_json(declared: DeclaredMarker | None) -> dict[str, Any] | None:
    if declared is None:
        return None
    version = declared.record.version
    return {
        "version": version.release if version else None,
        "abi_tag": version.abi_tag if version else None,
        "schema": declared.record.schema,
        "exported": declared.exported,
        "offset": declared.offset,
    }


def torch_json(torch: TorchUsage) -> dict[str, Any]:
    return {
        "usage": torch.usage,
        "min_version": torch.min_version.release if torch.min_version else None,
        "min_is_lower_bound": torch.min_is_lower_bound,
        "stable_symbols": list(torch.stable_symbols),
        "stable_symbols_omitted": torch.stable_omitted,
        "pinning_symbols": list(torch.pinning_symbols),
        "unknown_symbols": list(torch.unknown_symbols),
        "unknown_symbols_omitted": torch.unknown_omitted,
        # the unknown shims need a torch newer than the tables, which end at this release
        "newer_than_tables": torch.table_newest.release if torch.table_newest else None,
        "unstable_symbols": list(torch.unstable_symbols),
        "unstable_symbols_omitted": torch.unstable_omitted,
        "weak_symbols": [{"name": n, "introduced": v.release if v else None} for n, v in torch.weak_symbols],
        "weak_symbols_omitted": torch.weak_omitted,
    }


def _weak_text(torch: TorchUsage) -> str:
    """Weak shims do not raise the floor: the library calls them only when torch has them."""
    return _names(
        [f"{n} ({v.minor_release if v else 'unknown'}, used when present)" for n, v in torch.weak_symbols],
        torch.weak_omitted,
    )


def symbol_lines(t: TorchUsage, width: int) -> list[str]:
    """The torch symbols a reader needs named: what sets the floor, what the table does not
    know, what is imported weakly (``width``: the label column of the block they join)."""
    rows = [
        ("pinned by", _names(t.pinning_symbols)),
        ("unknown", _names(t.unknown_symbols, t.unknown_omitted)),
        ("weak", _weak_text(t)),
    ]
    return [f"    {label.ljust(width)}{text}" for label, text in rows if text]


def python_json(p: PythonFacts) -> dict[str, Any]:
    hooks, more_hooks = listed(p.hooks)  # every hook is judged (TW304); a million are not printed
    return {
        "hooks": hooks,
        "hooks_omitted": more_hooks,
        "verdict": p.verdict,
        "limited_symbols": p.limited_symbols,
        "limited_api_floor": p.limited_floor,
        "floor_symbols": list(p.floor_symbols),
        "non_limited_symbols": list(p.non_limited_symbols),
        "non_limited_symbols_omitted": p.non_limited_omitted,
        "python_dll": p.python_dll,
    }


def slice_json(s: SliceAnalysis) -> dict[str, Any]:
    f = s.facts
    companions, more_companions = listed(str(v) for v in f.companions)
    return {
        "arch": f.arch,
        "clr": None
        if f.clr is None
        else {"flags": f.clr.flags, "il_only": f.clr.il_only, "runs_in": f.runs_in},
        "marker": marker_json(s.declared),
        "marker_problem": s.marker_problem,
        "raw_markers": list(s.raw_versions),
        "raw_markers_omitted": s.facts.raw_markers_omitted,
        "companion_versions": companions,
        "companion_versions_omitted": more_companions,
        "torch": torch_json(s.torch),
        "python": python_json(s.python),
        "needed": list(f.needed),
        "accelerator": accelerator_json(s.accelerators),
    }


def binary_json(b: BinaryAnalysis) -> dict[str, Any]:
    return {
        "path": b.facts.path,
        "format": b.facts.format,
        "size": b.facts.size,
        "kind": b.kind,
        "slices": [slice_json(s) for s in b.slices],
    }


def inspect_json(binaries: list[BinaryAnalysis], table: dict[str, Any] | None = None) -> dict[str, Any]:
    """``table``: which shim table judged the symbols (``tableset.Tables.to_json``)."""
    return _document("files", [binary_json(b) for b in binaries], table)


def _document(key: str, items: list[dict[str, Any]], table: dict[str, Any] | None) -> dict[str, Any]:
    """The one envelope of inspect's and show's JSON: schema version, items, shim table."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, key: items}
    if table is not None:
        doc["symbol_table"] = table
    return doc


def _marker_text(s: SliceAnalysis) -> str:
    d = s.declared
    if d is None:
        return "none" + (f" ({s.marker_problem})" if s.marker_problem else "")
    if d.record.version is None:
        return f"unknown schema {d.record.schema} (this torchwheel cannot read it)"
    how = "exported" if d.exported else "NOT exported (bytes only)"
    return f"{d.record.version} schema {d.record.schema}, {how}"


def slice_text(s: SliceAnalysis) -> list[str]:
    f, t = s.facts, s.torch
    lines = [
        f"  [{f.arch_label}]",
        f"    marker       {_marker_text(s)}",
        f"    raw records  {', '.join(s.raw_versions) or 'none'}"
        + (f" and {s.facts.raw_markers_omitted:,} more records" if s.facts.raw_markers_omitted else ""),
    ]
    if f.companions:
        shown = [str(v) for v in f.companions[:_NAMED]]
        lines.append(f"    companions   {_names(shown, len(f.companions) - len(shown))}")
    floor = "-" if t.min_version is None else str(t.min_version)
    if t.min_is_lower_bound:
        upto = f" up to {t.table_newest.minor_release}" if t.table_newest else ""
        floor = f">= {floor} (a lower bound: it imports shims no torch{upto} exports, newer than the tables)"
    lines += [
        f"    torch usage  {t.usage}; stable shims {t.stable_count}; needs torch {floor}",
    ]
    lines += symbol_lines(t, 13)
    if t.unstable_count:
        more = t.unstable_count - min(_SAMPLE, len(t.unstable_symbols))
        sample = list(t.unstable_symbols[:_SAMPLE]) + ([f"... {more} more"] if more > 0 else [])
        lines.append(f"    unstable     {t.unstable_count} symbols:")
        lines += [f"                 {name}" for name in sample]
    p = s.python
    lines.append(f"    python       {p.verdict}; hooks {_names(p.hooks) or 'none'}")
    if p.limited_floor:
        lines.append(f"    limited API  >= {p.limited_floor} ({', '.join(p.floor_symbols[:3])})")
    if p.non_limited_symbols:
        lines.append(f"    non-limited  {', '.join(p.non_limited_symbols[:_SAMPLE])}")  # a sample, as always
    if p.python_dll:
        lines.append(f"    python DLL   {p.python_dll}")
    need, gpu = need_text(s.accelerators), gpu_text(s.accelerators.gpu)
    if need:
        lines.append(f"    accelerator  {need}")
    if gpu:
        lines.append(f"    GPU code     {gpu}")
    return lines


def binary_text(b: BinaryAnalysis) -> str:
    head = f"{b.facts.path}: {b.facts.format.upper() if b.facts.format != 'macho' else 'Mach-O'}"
    head += f", {len(b.slices)} slice{'s' if len(b.slices) != 1 else ''}, {b.facts.size} bytes"
    lines = [head, f"  kind         {b.kind}"]
    for s in b.slices:
        lines += slice_text(s)
    return safe_lines(lines)  # input-derived text escaped (textsafe)


def builds_json(builds: BuildSet | None) -> list[str]:
    """``["any"]``, ``["cpu", "cuda-13"]``, ``[]`` (no build loads it), ``["unknown"]``."""
    text = builds_text(builds)
    return [] if text == "none" else text.split(", ")


def need_json(need: TorchNeed) -> dict[str, Any]:
    """Every axis of the need (``torchabi.need``), "unknown" where it could not be read."""
    return {
        "kind": need.kind,
        "floor": need.floor.release if need.floor else None,
        "releases": [show_release(b) for b in sorted(need.releases)],
        "releases_from": need.releases_from or None,
        "torch_build": builds_json(need.builds),
        "gpu_code": sorted(need.gpu_code) if need.gpu_code is not None else "unknown",
        "requirements": [str(r) for r in need.requirements],
        "unknown": list(need.unknown_axes),
        "newer_than_tables": need.newer_json,
        "not_covered": need.not_covered_json,
        "build_needs": list(need.build_needs),
        "summary": str(need),
        "source": need.source,
        "optional": [
            {"files": list(p.files), "when": p.when, "why": p.why, "need": need_json(p.need)}
            for p in need.optional
        ],
    }


def reach_json(r: Reach) -> dict[str, Any]:
    """How the package's own Python reaches a file (``analysis.reach``)."""
    return {"how": r.how, "when": r.when, "where": r.where or None, "why": r.why or None}


def _dated_json(w: WheelFacts, member: str) -> dict[str, object] | None:
    """An unstable library dated alone by every import it has, or null (``date_each_library``)."""
    dated = w.library_datings.get(member)
    return dated.to_json() if dated is not None else None


def wheel_json(w: WheelFacts) -> dict[str, Any]:
    need = w.torch_need
    alternatives = w.alternatives if need.per_release else ()
    c = w.contents
    return {
        "path": c.path,
        "kind": w.kind,
        "name": c.filename_name,
        "version": c.filename_version,
        "filename_tags": sorted(str(t) for t in c.filename_tags),
        "filename_problem": c.name_problem,
        "wheel_tags": sorted(str(t) for t in c.wheel_tags),
        "requires_python": str(w.metadata.requires_python) if w.metadata.requires_python else None,
        "torch_requirements": [str(r) for r in w.metadata.torch_requirements],
        "record": {
            "verified": w.kind != "binary",
            "hashes_verified": w.kind != "binary" and w.hashes_verified,
            "problems": [
                {"path": p.path, "problem": p.problem, "detail": p.detail} for p in w.record_problems
            ],
            "problems_omitted": sum(w.record_problems_omitted.values()),
        },
        "torch_abi": {
            "kind": need.kind,
            "target": need.floor.release if need.floor else None,
            "declared": need.declared.release if need.declared else None,
            "label": need.label,
            "builds": [show_release(b) for b in sorted(need.releases)] if need.per_release else [],
            "alternatives": [
                {"name": a.key, "builds": {show_release(b): member for b, member in a.members}}
                for a in alternatives
            ],
        },
        "need": need_json(need),
        "accelerator": accelerator_json(w.accelerator_needs),
        "torch_build": builds_json(need.builds),
        "files": [
            {
                "member": b.member,
                **binary_json(b.analysis),
                "reach": reach_json(w.reach.of(b.member)),
                "dated": _dated_json(w, b.member),
            }
            for b in w.binaries
        ],
        "unreadable": [{"member": u.member, "error": u.error} for u in w.unreadable],
        "device_code": [{"member": m, "manifest": manifest} for m, manifest in sorted(w.device_code.items())],
    }


def show_json(wheels: list[WheelFacts], table: dict[str, Any] | None = None) -> dict[str, Any]:
    return _document("wheels", [wheel_json(w) for w in wheels], table)
