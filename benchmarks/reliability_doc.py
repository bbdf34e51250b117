"""Render docs/evidence/reliability.md: the limits (read from src/torchwheel/limits.py), the hostile
corpus summary (fixtures/hostile.py), the long fuzz run (benchmarks/results/fuzz.json), the
side-by-side table (benchmarks/results/hostile_peers.json), the scaling in the number of
findings (benchmarks/results/findings_scaling*.json) and issue 39's own-run families
(benchmarks/results/hostile_round4.json).

    python benchmarks/reliability_doc.py            # rewrite the generated sections
    python benchmarks/reliability_doc.py --check    # exit 1 when they drifted (the tests do this)

Only the sections between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` are
rewritten; the prose around them is edited by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "evidence" / "reliability.md"
RESULTS = REPO / "benchmarks" / "results"
sys.path.insert(0, str(REPO / "fixtures"))
sys.path.insert(0, str(REPO / "src"))


def limits_table() -> str:
    from torchwheel import limits

    rows = [
        f"Memory budget (peak RSS every command is held to in tests/test_hostile.py): "
        f"**{limits.MEMORY_BUDGET_MB} MB**.",
        "",
        "| limit | default | raise with |",
        "|---|---:|---|",
    ]
    defaults = limits.Limits()
    for f in dataclasses.fields(defaults):
        lim = getattr(defaults, f.name)
        how = f"`{lim.option}` or `{lim.env}`" if lim.option else f"`{lim.env}`"
        rows.append(
            f"| `{lim.name}` | {_size(lim.value) if 'size' in lim.name or 'bytes' in lim.name else f'{lim.value:,}'} | {how} |"
        )
    return "\n".join(rows)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,}"


def corpus_table() -> str:
    import hostile

    cases = list(hostile.CASES.values())
    runs = sum(len(c.commands(long=False)) for c in cases if not c.long)
    every = sum(len(c.commands()) for c in cases)
    rows = [
        f"**{len(cases)} cases** ({sum(c.long for c in cases)} of them long, run with "
        f"`TORCHWHEEL_HOSTILE_LONG=1`), **{runs} runs** in the default set, {every} with "
        f"`TORCHWHEEL_HOSTILE_LONG=1` (commands: {', '.join(hostile.COMMANDS)}; "
        f"{sum(bool(c.short) for c in cases)} cases at a limit run only some of them by default; every "
        f"other case a wheel command reads runs through {' and '.join(hostile.SHORT_ALWAYS)} and one more "
        "wheel command chosen by its name).",
        "",
        "| class | cases | examples |",
        "|---|---:|---|",
    ]
    for klass, count in hostile.summary().items():
        names = [c.name for c in cases if c.klass == klass][:4]
        rows.append(
            f"| {klass} | {count} | {', '.join(f'`{n}`' for n in names)}{', ...' if count > 4 else ''} |"
        )
    rows += [
        "",
        "The numbered weaknesses the hostile corpus reproduces (`finding` of a case) and their cases:",
        "",
        "| finding | cases |",
        "|---:|---|",
    ]
    by: dict[int, list[str]] = {}
    for c in cases:
        if c.finding:
            by.setdefault(c.finding, []).append(c.name)
    for n in sorted(by):
        rows.append(f"| {n} | {', '.join(f'`{x}`' for x in by[n])} |")
    return "\n".join(rows)


def fuzz_table() -> str:
    path = RESULTS / "fuzz.json"
    if not path.exists():
        return "_No long run recorded yet: run the command above with `--json benchmarks/results/fuzz.json`._"
    data = json.loads(path.read_text())
    rows = ["| reader | executions | seconds | executions/s | findings |", "|---|---:|---:|---:|---|"]
    for r in data:
        found = ", ".join(Path(f).name for f in r["findings"]) or "none"
        rows.append(
            f"| {r['target']} | {r['executions']:,} | {r['seconds']:,} | {r['per_second']:,} | {found} |"
        )
    return "\n".join(rows)


def peers_table() -> str:
    path = RESULTS / "hostile_peers.json"
    if not path.exists():
        return "_Not recorded yet: run `python benchmarks/hostile_peers.py`._"
    data = json.loads(path.read_text())
    tools = [k for k in data[0] if isinstance(data[0][k], dict)]
    rows = ["| case | " + " | ".join(tools) + " |", "|---|" + "---|" * len(tools)]
    for r in data:
        cells = [
            f"{r[t]['outcome']} (exit {r[t]['exit']}, {r[t]['seconds']} s, {r[t]['peak_mb']} MB)"
            for t in tools
        ]
        rows.append(f"| `{r['case']}` | " + " | ".join(cells) + " |")
    rows += ["", "<details><summary>What each tool said (last line)</summary>", ""]
    for r in data:
        rows.append(f"- `{r['case']}`: " + "; ".join(f"**{t}**: {_md(r[t]['message'])}" for t in tools))
    rows += ["", "</details>"]
    return "\n".join(rows)


def scaling_table() -> str:
    """benchmarks/findings_scaling.py: seconds and peak RSS per size, and the ratio of each
    size's time to the previous one's (10 is linear at ten times the findings)."""
    out: list[str] = []
    for name in ("findings_scaling.json", "findings_scaling_before.json"):
        path = RESULTS / name
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        rows, timeout = data["rows"], data["timeout"]
        sizes = sorted({r["findings"] for r in rows})
        head = " | ".join(f"{n:,}" for n in sizes)
        ratios = [f"time {b:,} / {a:,}" for a, b in itertools.pairwise(sizes)]
        out += [
            f"{data['label']}:",
            "",
            f"| findings | command | {head} | {' | '.join(ratios)} |",
            "|---|---|" + "---:|" * (len(sizes) + len(ratios)),
        ]
        groups: dict[tuple[str, str], dict[int, dict[str, object]]] = {}
        for r in rows:
            groups.setdefault((r["what"], r["command"]), {})[r["findings"]] = r
        for (what, command), by in groups.items():
            cells = []
            for n in sizes:
                r = by[n]
                cells.append(
                    f"killed at {timeout:.0f} s" if r["timed_out"] else f"{r['seconds']} s, {r['peak_mb']} MB"
                )
            times = [None if by[n]["timed_out"] else float(str(by[n]["seconds"])) for n in sizes]
            cells += [f"{b / a:.1f}" if a and b else "-" for a, b in itertools.pairwise(times)]
            fewer = sorted(
                {
                    int(str(r["actual"]))
                    for r in by.values()
                    if r.get("actual", r["findings"]) != r["findings"]
                }
            )
            label = what + (f" ({', '.join(f'{n:,}' for n in fewer)} at most: max-members)" if fewer else "")
            out.append(f"| {label} | `{command}` | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).strip() or "_Not recorded yet: run `python benchmarks/findings_scaling.py`._"


def round4_table() -> str:
    """benchmarks/hostile_own_bench.py: each case of issue 39's own-run families in a fresh
    process: what the fuzzers saw (the case's summary), then exit, time, peak RSS and what the
    folder looked like afterwards."""
    path = RESULTS / "hostile_round4.json"
    if not path.exists():
        return "_Not recorded yet: run `python benchmarks/hostile_own_bench.py --long --json ...`._"
    data = json.loads(path.read_text())
    rows = [
        f"Each case in a fresh process of its own, {data['date']}, on a {data['machine']} (wall time "
        "includes the interpreter's start, about 0.3 s):",
        "",
        "| class | case | what the fuzzers saw | exit | time | peak RSS | afterwards |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in data["cases"]:
        rows.append(
            f"| {r['klass']} | `{r['name']}` | {_md(r['summary'])} | {r['exit']} | {r['seconds']} s "
            f"| {r['peak_mb']} MB | {_md(r['after'])} |"
        )
    return "\n".join(rows)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'") or "(nothing)"


SECTIONS = {
    "limits": limits_table,
    "corpus": corpus_table,
    "fuzz": fuzz_table,
    "peers": peers_table,
    "scaling": scaling_table,
    "round4": round4_table,
}


def render(text: str) -> str:
    for name, fn in SECTIONS.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n)(?:.*?\n)?(<!-- /generated:{name} -->)", re.S)
        body = fn()

        def fill(m: re.Match[str], body: str = body) -> str:
            return m.group(1) + body + "\n" + m.group(2)

        text, n = pattern.subn(fill, text)
        if n != 1:
            raise SystemExit(f"{DOC}: no generated:{name} section")
    return text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true")
    a = p.parse_args()
    old = DOC.read_text()
    new = render(old)
    if a.check:
        if new != old:
            print(f"{DOC} is stale: run python benchmarks/reliability_doc.py")
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
