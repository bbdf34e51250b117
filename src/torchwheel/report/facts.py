"""Rendering: analyses in, JSON-ready dicts or text out. Nothing here decides anything.

The JSON shapes are a contract (``docs/json.md``); ``SCHEMA_VERSION`` changes when a
field changes meaning or disappears, not when one is added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchwheel.analysis.buildunits import build_choices, own_runtime_notes
from torchwheel.analysis.member import BinaryAnalysis, DeclaredMarker, SliceAnalysis
from torchwheel.analysis.pythonabi import PythonFacts
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.binary.gpucode import GpuCode
from torchwheel.limits import listed
from torchwheel.report.textsafe import safe_lines
from torchwheel.torchabi.accelerators import AcceleratorNeeds, cubin_archs, ptx_cuda, ptx_images
from torchwheel.torchabi.backend import ANY_BUILD, BuildSet, builds_text, describe_builds
from torchwheel.torchabi.need import TorchNeed, show_release, show_releases
from torchwheel.torchabi.usage import TorchUsage

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


def _symbol_lines(t: TorchUsage, width: int) -> list[str]:
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


def _dotted(pair: tuple[int, int] | None) -> str | None:
    return None if pair is None else f"{pair[0]}.{pair[1]}"


def gpu_json(g: GpuCode) -> dict[str, Any]:
    return {
        "cubin": list(cubin_archs(g)),
        "ptx": [
            {
                "arch": i.name,
                "isa": _dotted(i.ptx_isa),
                "cuda": _dotted(ptx_cuda(i.ptx_isa) if i.ptx_isa else None),
            }
            for i in ptx_images(g)
        ],
        "images": [
            {
                "kind": i.kind,
                "arch": i.name,
                "ptx_isa": _dotted(i.ptx_isa),
                "compressed": i.compressed,
                "count": n,
            }
            for i, n in g.cuda
        ],
        "cuda_fatbins": g.containers,
        "registered": g.registered,
        "rocm_targets": list(g.rocm_targets),
        "rocm_bundles": g.rocm_bundles,
        "problems": list(g.problems),
    }


def accelerator_json(a: AcceleratorNeeds) -> dict[str, Any]:
    return {
        "label": a.label,
        # the torch libraries it links: their accelerator, "any" (libtorch alone), None (none)
        "torch_build": a.torch_accelerator or ("any" if a.links_torch else None),
        "accelerators": list(a.accelerators),
        "cuda_majors": list(a.cuda_majors),
        "rocm_majors": list(a.rocm_majors),
        "static_cudart": a.static_cudart,
        "libraries": [
            {
                "name": lib.name,
                "role": lib.role,
                "component": lib.component,
                "accelerator": lib.accelerator,
                "major": lib.major,
                "toolkit_major": lib.toolkit_major,
            }
            for lib in a.libraries
        ],
        "gpu_code": gpu_json(a.gpu),
    }


def need_text(a: AcceleratorNeeds) -> str:
    """One sentence: "needs a CUDA 13 build of torch: libcudart.so.13, libtorch_cuda.so"."""
    names = [lib.name for lib in a.libraries if lib.role != "library"] or [lib.name for lib in a.libraries]
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    label = a.label
    if a.torch_accelerator is not None:
        text = f"needs a {label} build of torch"
    elif a.links_torch:
        text = "needs torch (any build)" + (f" and {label}" if a.accelerators else "")
    elif a.accelerators:
        text = f"needs {label}"
    else:
        return ""
    if a.static_cudart and "static" not in label:
        text += "; CUDA runtime linked in (static)"
    return text + (f": {shown}" if shown else "")


def gpu_text(g: GpuCode, span: bool = False) -> str:
    """ "kernels sm_75, sm_90a; PTX compute_90 (CUDA 13.0)"; ``span``: the first and last
    architecture only, for a wheel's one-line summary."""
    parts = []
    archs = cubin_archs(g)
    if archs:
        shown = f"{archs[0]}…{archs[-1]}" if span and len(archs) > 2 else ", ".join(archs)
        parts.append(f"kernels {shown}")
    ptx = ptx_images(g)
    if ptx:
        parts.append(
            "PTX "
            + ", ".join(
                i.name
                + (
                    f" (CUDA {'.'.join(map(str, ptx_cuda(i.ptx_isa) or ()))})"
                    if i.ptx_isa and ptx_cuda(i.ptx_isa)
                    else ""
                )
                for i in ptx
            )
        )
    elif archs:
        parts.append("no PTX")
    if g.rocm_targets:
        targets = sorted({t.rsplit("--", 1)[-1] for t in g.rocm_targets})
        if span and len(targets) > 3:
            parts.append(f"ROCm {len(targets)} targets ({targets[0]}…{targets[-1]})")
        else:
            parts.append("ROCm " + ", ".join(targets))
    elif g.rocm_bundles:
        parts.append(f"ROCm {g.rocm_bundles} offload bundle(s)")
    if g.problems:
        parts.append(f"read in part: {g.problems[0]}")
    return ", ".join(parts)


def slice_json(s: SliceAnalysis) -> dict[str, Any]:
    f = s.facts
    companions, more_companions = listed(str(v) for v in f.companions)
    return {
        "arch": f.arch,
        "clr": None if f.clr is None else {"flags": f.clr.flags, "il_only": f.clr.il_only, "runs_in": f.runs_in},
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
    """``table``: which shim table judged the symbols (``tablechoice.ChosenTable.to_json``)."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "files": [binary_json(b) for b in binaries]}
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
        floor = f">= {floor} (lower bound: unknown shims)"
    lines += [
        f"    torch usage  {t.usage}; stable shims {t.stable_count}; needs torch {floor}",
    ]
    lines += _symbol_lines(t, 13)
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


def _requirement_text(w: WheelFacts) -> str:
    return "; ".join(str(r) for r in w.metadata.torch_requirements) or "none"


def _record_text(w: WheelFacts) -> str:
    if w.kind == "binary":
        return "n/a"
    if not w.record_problems:
        return "ok (every hash verified)" if w.hashes_verified else "ok (sizes only: hashes skipped)"
    return f"{len(w.record_problems) + sum(w.record_problems_omitted.values())} problem(s)"


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
        "summary": str(need),
        "source": need.source,
    }


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
        "files": [{"member": b.member, **binary_json(b.analysis)} for b in w.binaries],
        "unreadable": [{"member": u.member, "error": u.error} for u in w.unreadable],
    }


def show_json(wheels: list[WheelFacts], table: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "wheels": [wheel_json(w) for w in wheels]}
    if table is not None:
        doc["symbol_table"] = table
    return doc


def _accelerator_cell(a: AcceleratorNeeds) -> str:
    """The accelerator label; a library that links libtorch and needs no accelerator still
    needs some torch, whatever its imports say: "any torch", not "-"."""
    return a.label if a.accelerators or not a.links_torch else "any torch"


def _row(member: str, b: BinaryAnalysis) -> list[list[str]]:
    rows = []
    for s in b.slices:
        d = s.declared
        mark = (
            "-"
            if d is None
            else (str(d.record.version or f"schema {d.record.schema}") + ("" if d.exported else " (hidden)"))
        )
        need = (
            "-"
            if s.torch.min_version is None
            else str(s.torch.min_version) + ("+" if s.torch.min_is_lower_bound else "")
        )
        rows.append(
            [
                member,
                f"{b.facts.format}/{s.facts.arch_label}",
                b.kind,
                mark,
                s.torch.usage,
                need,
                s.python.verdict,
                _accelerator_cell(s.accelerators),
            ]
        )
    return rows


def wheel_text(w: WheelFacts) -> str:
    c = w.contents
    need = w.torch_need
    lines = [c.path]
    if w.kind != "binary":
        tags = sorted(str(t) for t in (c.filename_tags or c.wheel_tags))
        lines += [
            f"  tags             {', '.join(tags) or 'none'}"
            + (f" (WHEEL's: the file name is no wheel name, {c.name_problem}: TW414)" if c.name_problem else ""),
            f"  requires-python  {w.metadata.requires_python or 'any'}",
            f"  torch requires   {_requirement_text(w)}",
            f"  RECORD           {_record_text(w)}",
        ]
    lines.append(
        f"  torch ABI        {need.label}"
        + (f" (declared {need.declared})" if need.declared and need.kind != "none" else "")
        + (f": per-minor builds, loads on torch {show_releases(need.releases)}" if need.per_release else "")
    )
    lines += [
        f"  per-minor        {a.key}: "
        + ", ".join(f"{show_release(b)}={member.rsplit('/', 1)[-1]}" for b, member in a.members)
        for a in (w.alternatives if need.per_release else ())
    ]
    if need.kind == "unstable" and not need.per_release:
        lines.append(f"  torch version    {need}")
    own = own_runtime_notes(w.binaries, w.brought_runtimes)
    if need.builds != ANY_BUILD:
        lines.append(
            f"  torch build      loads on {describe_builds(need.builds)} ({builds_text(need.builds)})"
        )
    elif own:
        lines.append(f"  torch build      any: {own[0]}" + (f" (and {len(own) - 1} more)" if len(own) > 1 else ""))
    choices = build_choices(w.build_units)
    lines += [f"  flavours         {choice}" for choice in choices]
    acc = w.accelerator_needs
    wanted = need_text(acc)
    if need.builds and (choices or max(len(acc.accelerators), len(acc.cuda_majors), len(acc.rocm_majors)) > 1):
        # alternatives the package picks from, not one library needing all at once: the
        # line must not contradict "torch build" above it
        wanted = wanted.replace("needs ", "has builds that need ", 1).replace(" + ", " or ")
    summary = "; ".join(t for t in (wanted, gpu_text(acc.gpu, span=True)) if t)
    if summary:
        lines.append(f"  accelerator      {summary}")
    table = [["file", "format", "kind", "marker", "torch", "needs", "python", "accelerator"]]
    for b in w.binaries:
        table += _row(b.member, b.analysis)
    for u in w.unreadable:
        table.append([u.member, "?", "?", "?", "?", "?", f"unreadable: {u.error}", "?"])
    if len(table) > 1:
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        lines.append("")
        lines += [
            "  " + "  ".join(cell.ljust(wd) for cell, wd in zip(r, widths, strict=True)).rstrip()
            for r in table
        ]
    else:
        lines.append("  (no compiled files)")
    detailed = False
    for b in w.binaries:
        for s in b.analysis.slices:
            t = s.torch
            if t.pinning_symbols or t.unknown_count or t.unstable_count or t.weak_symbols or t.weak_omitted:
                if not detailed:
                    lines += ["", "  torch symbols that set the minimum:"]
                    detailed = True
                lines.append(f"  {b.member} [{s.facts.arch}]")
                lines += _symbol_lines(t, 12)
                if t.unstable_count:
                    example = f", e.g. {t.unstable_symbols[0]}" if t.unstable_symbols else ""
                    lines.append(f"    unstable    {t.unstable_count}{example}")
    return safe_lines(lines)  # input-derived text escaped (textsafe)
