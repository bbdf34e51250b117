"""Coverage-guided fuzzing of torchwheel's readers with atheris (libFuzzer for Python).

    python benchmarks/fuzz.py --target elf --runs 200000        # one reader, 200k executions
    python benchmarks/fuzz.py --target all --runs 200000 --json out.json

Reproduces ``docs/evidence/reliability.md`` ("Fuzzing", through ``reliability_doc.py``): ``python
benchmarks/fuzz.py --target all --runs 200000 --json benchmarks/results/fuzz.json``.

Targets: zip (open a wheel, read and scan every member), elf, macho, pe (``read_binary``),
marker (``scan`` + ``decode``), record, metadata, wheel (the text parsers), json (every JSON
document reader: ``variant_json.json``, a ``--symbols`` table, the ``torchwheel.json`` facts file
and a PEP 691 page, through ``safejson`` and their schemas), page (a local index page as
``select -i`` reads it: the HTML form, then the same bytes as a PEP 691 ``.json`` page). Seeds
are the fixture binaries ``fixtures/build.py`` compiles, the valid hostile-corpus wheel and
valid documents, so the mutations start from real structures. An input may only end in the documented refusals
(``BinaryError``, ``InputError`` incl. ``LimitExceeded``, ``MarkerError``); anything else,
a hang past ``--timeout`` seconds or RSS past ``--rss-mb`` is a finding: libFuzzer stops and
writes the input as ``crash-*``/``timeout-*``/``oom-*`` under ``--artifacts`` (turn each one
into a case of ``fixtures/hostile.py``).

Each target runs in its own process (libFuzzer exits when it is done); ``--target all`` runs
them one after another and prints/writes executions, seconds and findings per target.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = ("zip", "elf", "macho", "pe", "marker", "record", "metadata", "wheel", "json", "page")
SEEDS = {
    "elf": ["elf_marker_2_10", "elf_probe_i686", "elf_probe_s390x", "elf_nosections", "elf_stripped"],
    "macho": ["macho_x86_64_marker_2_10", "macho_arm64_marker_2_12", "macho_universal_differ"],
    "pe": ["pe_msvc_marker_2_11", "pe_mingw_marker_2_10", "pe_probe_x86"],
    "marker": ["elf_marker_2_10", "elf_marker_future_schema"],
}


def _seed_corpus(target: str, folder: Path) -> int:
    """Write the seeds of ``target`` into ``folder``; return the largest seed's size."""
    sys.path.insert(0, str(REPO / "fixtures"))
    import build  # fixtures/build.py: compiles (or reuses) the fixture binaries
    import hostile_cases as hc
    import hostile_zip as hz

    built = build.build_all(REPO / ".cache" / "fixtures")
    seeds: list[bytes] = []
    if target in SEEDS:
        seeds = [built[name].read_bytes() for name in SEEDS[target] if name in built]
    elif target == "zip":
        seeds = [hc.base(built), hc._stored(built)]
    elif target == "record":
        seeds = [b"a/b.py,sha256=AAAA,3\nx.dist-info/RECORD,,\n", b'"a,b.py",,\r\n']
    elif target == "metadata":
        seeds = [hz.METADATA.encode(), b"Metadata-Version: 2.1\r\nName: x\r\n\r\nbody\r\n"]
    elif target == "wheel":
        seeds = [hz.wheel_text("cp39.cp310-abi3.none-manylinux_2_28_x86_64.linux_x86_64").encode()]
    elif target in ("json", "page"):
        import hostile_docs as hd

        wheel = hc.base(built)
        seeds = [hd._project_page(wheel), b'{"meta": {"api-version": "1.0"}, "projects": [{"name": "x"}]}']
        if target == "json":
            seeds += [json.dumps(hd._variant_doc()).encode(), hd._symbols(), hd._facts()]
        else:
            seeds.append(
                b'<html><body><a href="x-1.0-py3-none-any.whl#sha256=00" data-yanked="">x</a></body></html>'
            )
    for i, data in enumerate(seeds):
        (folder / f"seed{i}").write_bytes(data)
    return max(len(s) for s in seeds)


def _one_input(target: str):  # type: ignore[no-untyped-def]
    """The function libFuzzer calls with each input (imports instrumented for coverage)."""
    import atheris

    with atheris.instrument_imports(include=["torchwheel"]):
        from torchwheel import safejson
        from torchwheel.binary import marker_record, read_binary
        from torchwheel.binary.facts import BinaryError
        from torchwheel.binary.memberscan import scan_member
        from torchwheel.errors import InputError
        from torchwheel.net import pages
        from torchwheel.tables.symtable import SymbolTable
        from torchwheel.wheel import variant_json
        from torchwheel.wheel.archive import WheelArchive
        from torchwheel.wheel.contents import is_compiled_name
        from torchwheel.wheel.metadata import parse_metadata, parse_wheel_fields, side_shape
        from torchwheel.wheel.record import parse_record

    refusals = (BinaryError, InputError, marker_record.MarkerError)
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    wheel_path = shm / f"fuzz{os.getpid()}" / "hostile-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
    wheel_path.parent.mkdir(exist_ok=True)
    html_page, json_page = wheel_path.with_name("index.html"), wheel_path.with_name("index.json")

    def run(data: bytes) -> None:
        if target in ("elf", "macho", "pe"):
            read_binary(data, "fuzz")
        elif target == "marker":
            marker_record.collect_hits(data, marker_record.Hits())
            marker_record.decode(data)
        elif target == "record":
            parse_record(data.decode("utf-8", "replace"))
        elif target == "metadata":
            parse_metadata(data.decode("utf-8", "replace"))
        elif target == "wheel":
            parse_wheel_fields(data.decode("utf-8", "replace"))
        elif target == "json":  # each reader on its own: one refusing must not hide the others
            for read in (
                lambda: variant_json.read_variant_json(data, "fuzz"),
                lambda: SymbolTable.from_json(data),
                lambda: safejson.load(data, "fuzz", side_shape(), reference="wheel-invalid"),
                lambda: safejson.load(
                    data,
                    "fuzz",
                    safejson.Either((pages.PEP691_PROJECT, pages.PEP691_ROOT)),
                    reference="index-invalid",
                ),
            ):
                with contextlib.suppress(*refusals):
                    read()
        elif target == "page":
            for page in (html_page, json_page):
                with contextlib.suppress(*refusals):
                    pages.parse(data, page.as_uri(), page.suffix == ".json", "fuzz")
        else:
            wheel_path.write_bytes(data)
            with WheelArchive(wheel_path) as archive:
                for name in archive.contents.members:
                    if is_compiled_name(name):
                        scan_member(archive, name)
                    else:
                        archive.hash_member(name)

    def one(data: bytes) -> None:
        with contextlib.suppress(*refusals):
            run(data)

    return one


def fuzz_in_process(target: str, runs: int, timeout: int, rss_mb: int, artifacts: Path) -> None:
    import atheris

    corpus = Path(tempfile.mkdtemp(prefix=f"fuzz-{target}-"))
    max_len = _seed_corpus(target, corpus)
    artifacts.mkdir(parents=True, exist_ok=True)
    args = [
        sys.argv[0],
        f"-runs={runs}",
        f"-timeout={timeout}",
        f"-rss_limit_mb={rss_mb}",
        f"-max_len={max(max_len * 2, 4096)}",
        f"-artifact_prefix={artifacts}/{target}-",
        "-print_final_stats=1",
        str(corpus),
    ]
    atheris.Setup(args, _one_input(target))
    atheris.Fuzz()


_DONE = re.compile(r"Done (\d+) runs in (\d+) second")
_ARTIFACT = re.compile(r"Test unit written to (\S+)")


def run_target(target: str, runs: int, timeout: int, rss_mb: int, artifacts: Path) -> dict[str, object]:
    """One target in its own process; parse libFuzzer's summary."""
    start = time.monotonic()
    cmd = [sys.executable, __file__, "--child", "--target", target, "--runs", str(runs)]
    cmd += ["--timeout", str(timeout), "--rss-mb", str(rss_mb), "--artifacts", str(artifacts)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    done = _DONE.search(proc.stderr)
    executions = int(done.group(1)) if done else 0
    return {
        "target": target,
        "executions": executions,
        "seconds": round(seconds, 1),
        "per_second": round(executions / seconds) if seconds else 0,
        "exit": proc.returncode,
        "findings": _ARTIFACT.findall(proc.stderr),
        "tail": proc.stderr.strip().splitlines()[-3:] if proc.returncode else [],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", default="all", choices=(*TARGETS, "all"))
    p.add_argument("--runs", type=int, default=200_000)
    p.add_argument("--timeout", type=int, default=10, help="seconds per input")
    p.add_argument("--rss-mb", type=int, default=2048)
    p.add_argument("--artifacts", type=Path, default=REPO / ".cache" / "fuzz-findings")
    p.add_argument("--json", type=Path)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        fuzz_in_process(a.target, a.runs, a.timeout, a.rss_mb, a.artifacts)
        return 0
    results = []
    for target in TARGETS if a.target == "all" else (a.target,):
        r = run_target(target, a.runs, a.timeout, a.rss_mb, a.artifacts)
        results.append(r)
        found: list[str] = r["findings"]  # type: ignore[assignment]
        print(f"{target:9} {r['executions']:>9,} runs {r['seconds']:>8}s {r['per_second']:>7,}/s exit {r['exit']} "
              f"findings {len(found)}", flush=True)  # fmt: skip
        for f in found:
            print(f"  {f}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if any(r["findings"] or r["exit"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
