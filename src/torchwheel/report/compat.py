"""``compat``'s answer as text and as the versioned JSON document (``docs/reference/json.md``)."""

from __future__ import annotations

from typing import Any

from torchwheel.analysis.torchcompat import InputCompat, SliceCompat
from torchwheel.limits import listed
from torchwheel.report.facts_document import SCHEMA_VERSION
from torchwheel.report.textsafe import safe_lines
from torchwheel.torchabi.cxxnames import demangle
from torchwheel.torchabi.torchlibs import TorchLibraries


def _symbol(name: str) -> str:
    text = demangle(name)
    return name if text is None else f"{text}  [{name}]"


def _listed_json(names: tuple[str, ...]) -> tuple[list[dict[str, str | None]], int]:
    """The first names within ``max-listed`` with their demangled text, and how many more:
    a file can lack a million symbols, and demangling each costs microseconds."""
    kept, more = listed(names)
    return [{"name": m, "demangled": demangle(m)} for m in kept], more


def _listed_lines(prefix: str, names: tuple[str, ...], suffix: str = "") -> list[str]:
    kept, more = listed(names)
    lines = [f"{prefix}{_symbol(m)}{suffix}" for m in kept]
    return lines + ([f"{prefix}... and {more:,} more, not listed (max-listed)"] if more else [])


def _where(s: SliceCompat, multi: bool) -> str:
    return f"{s.member} [{s.arch}]" if multi else s.member


def compat_text(torch: TorchLibraries, results: list[InputCompat], brief: bool = False) -> str:
    """``brief`` (``compat -q``): one line per input, its verdict, and nothing else."""
    if brief:
        return safe_lines([f"{r.path}: {'loads' if r.loads else 'does NOT load'}" for r in results])
    lines = [
        f"{torch.label}{f' ({torch.build})' if torch.build else ''} from {torch.origin}: {len(torch.exports)} libraries, "
        f"{torch.exported_count} exported symbols"
    ]
    for r in results:
        lines += ["", f"{r.path}: {'loads' if r.loads else 'does NOT load'}"]
        if r.verdict is not None and not r.verdict.loads:
            lines.append(f"  {r.verdict.reason}")
        counts: dict[str, int] = {}
        for s in r.slices:
            counts[s.member] = counts.get(s.member, 0) + 1
        if not r.slices:
            lines.append("  no compiled files")
        for s in r.slices:
            where = _where(s, counts[s.member] > 1)
            n = len(s.torch_imports)
            if s.other_minor is not None:
                lines.append(f"  {where}: the build for torch {s.other_minor}, not loaded on this torch")
                continue
            if s.problem is not None:
                lines.append(f"  {where}: cannot load: {s.problem}")
            elif s.missing:
                lines.append(f"  {where}: does not load: {len(s.missing)} of {n} torch symbols missing")
                lines += _listed_lines("    missing ", s.missing)
            elif s.missing_weak:
                absent = f"{len(s.missing_weak)} weak import{'s' if len(s.missing_weak) != 1 else ''} absent"
                lines.append(f"  {where}: loads ({n} torch symbols, {absent})")
            else:
                lines.append(
                    f"  {where}: loads ({n} torch symbols, all exported)"
                    if n
                    else f"  {where}: loads (no torch symbols)"
                )
            if s.problem is None:
                lines += _listed_lines("    absent  ", s.missing_weak, " (weak: used when present)")
            if s.unstable and s.problem is None:
                lines.append(
                    f"    note: {s.unstable} of them are unstable libtorch C++: that a name resolves does not "
                    "mean its layout matches the torch the file was built with"
                )
    ok = sum(r.loads for r in results)
    n = len(results)
    lines += ["", f"{ok} of {n} input{'s' if n != 1 else ''} load{'s' if n == 1 else ''} on {torch.label}"]
    return safe_lines(lines)  # input-derived text escaped (textsafe)


def compat_json(torch: TorchLibraries, results: list[InputCompat]) -> dict[str, Any]:
    def file_json(s: SliceCompat) -> dict[str, Any]:
        missing, missing_more = _listed_json(s.missing)
        weak, weak_more = _listed_json(s.missing_weak)
        return {
            "member": s.member,
            "format": s.format,
            "arch": s.arch,
            "loads": s.loads,
            "torch_symbols": len(s.torch_imports),
            "unstable_symbols": s.unstable,
            "missing": missing,
            "missing_omitted": missing_more,
            "missing_weak": weak,
            "missing_weak_omitted": weak_more,
            "problem": s.problem,
            "build_for_other_minor": s.other_minor,
        }

    return {
        "schema_version": SCHEMA_VERSION,
        "torch": {
            "origin": torch.origin,
            "version": torch.version,
            "backend": torch.build.backend if torch.build else None,
            "libraries": sorted(torch.exports),
            "platforms": [f"{f}/{a}" for f, a in sorted(torch.platforms)],
            "exported_symbols": torch.exported_count,
        },
        "inputs": [
            {
                "path": r.path,
                "loads": r.loads,
                "symbols_load": r.symbols_load,
                "verdict": None
                if r.verdict is None
                else {"loads": r.verdict.loads, "reason": r.verdict.reason},
                "files": [file_json(s) for s in r.slices],
            }
            for r in results
        ],
        "loads": all(r.loads for r in results),
    }
