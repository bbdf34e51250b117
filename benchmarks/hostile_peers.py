"""The nastiest hostile-corpus cases through torchwheel and the tools people trust.

    bash benchmarks/setup_peers.sh                  # auditwheel in benchmarks/.venv-peers
    python benchmarks/hostile_peers.py [--json benchmarks/results/hostile_peers.json]

Runs ``torchwheel check``, ``auditwheel show``, ``pip install --no-deps --target`` and
``python -m installer`` on each case of ``NASTIEST`` with the same timeout and address-space
cap, and records what each did: ``ok`` (exit 0), ``refused`` (a clean non-zero exit),
``crash`` (a traceback), ``hang`` (killed at the timeout) or ``memory`` (MemoryError or
killed by the cap), with seconds and peak RSS. ``benchmarks/reliability_doc.py`` renders the
JSON into docs/evidence/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "fixtures"))
sys.path.insert(0, str(REPO))

import build  # noqa: E402
import hostile  # noqa: E402
from tests.lib.helpers import measured_run  # noqa: E402

NASTIEST = (
    "f01_dynstr_16mb_of_nuls",
    "f02_markers_repeated_32mb",
    "f03_macho_1gb_zeros",
    "f04_dotted_tag_bomb",
    "f05_bzip2_lying_size",
    "f05_lzma_lying_size",
    "f06_overlapping_entries",
    "f07_endless_gnu_hash",
    "f08_members_under_limit",
    "f10_local_central_name_mismatch",
    "f12_dist_info_name_mismatch",
    "f15_newline_error_member",
    "f16_record_field_over_128k",
    "f16_empty_member_name",
    "record_500k_rows",
    "metadata_huge",
    "name_symlink_member",
    "central_offset_other_member",
    "fs_fifo_wheel",
    "fs_devzero_wheel",
)
TIMEOUT = 60.0
ADDRESS_SPACE = 4 << 30
PEERS_PY = REPO / "benchmarks" / ".venv-peers" / "bin" / "python"


def tools(wheel: Path, scratch: Path) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "torchwheel check": [py, "-m", "torchwheel", "check", str(wheel)],
        "auditwheel show": [str(PEERS_PY), "-m", "auditwheel", "show", str(wheel)],
        "pip install": [
            py,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--no-compile",
            "--target",
            str(scratch / "pip"),
            str(wheel),
        ],
        "installer": [
            py,
            "-m",
            "installer",
            "--no-compile-bytecode",
            "--destdir",
            str(scratch / "inst"),
            str(wheel),
        ],
    }


def classify(code: int, stderr: str, timed_out: bool) -> str:
    if timed_out:
        return "hang"
    if "MemoryError" in stderr or code in (-9, 137) or "Cannot allocate memory" in stderr:
        return "memory"
    if "Traceback" in stderr or "internal error" in stderr or code < 0:
        return "crash"
    return "ok" if code == 0 else "refused"


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""


# Temporary folders (ours, and pip's own) by the names tempfile gives them; a hostile name's
# own ``../../tmp/evil.py`` is left alone (a dot precedes it).
_TEMP_DIR = re.compile(r"(?<![\w.])/tmp/(?:tmp|pip-)[\w-]+")


def scrubbed(message: str, tmp: Path) -> str:
    """The message with this machine's paths as placeholders: the results are published in
    docs/evidence/reliability.md, where a reader's checkout and temp folders have other names."""
    message = message.replace(str(tmp), "<tmp>").replace(str(REPO), "<repo>")
    return _TEMP_DIR.sub("<tmp>", message)


def run_case(
    name: str, built: dict[str, Path], inputs: dict[str, dict[str, Path]], tmp: Path
) -> dict[str, object]:
    case = hostile.CASES[name]
    where = tmp / name
    where.mkdir()
    wheel = case.make(built, where)["wheel"] if case.klass == "fs" else inputs[name]["wheel"]
    row: dict[str, object] = {"case": name, "summary": case.summary, "finding": case.finding}
    for tool, cmd in tools(wheel, where).items():
        m = measured_run(cmd, cwd=where, timeout=TIMEOUT, address_space=ADDRESS_SPACE)
        row[tool] = {
            "outcome": classify(m.code, m.stderr + m.stdout, m.timed_out),
            "exit": m.code,
            "seconds": round(m.seconds, 1),
            "peak_mb": round(m.peak_mb),
            "message": scrubbed(_last_line(m.stderr) or _last_line(m.stdout), tmp),
        }
        for sub in ("pip", "inst"):
            shutil.rmtree(where / sub, ignore_errors=True)
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "hostile_peers.json")
    p.add_argument("cases", nargs="*", default=list(NASTIEST))
    a = p.parse_args()
    if not PEERS_PY.exists():
        sys.exit("run `bash benchmarks/setup_peers.sh` first (auditwheel lives in benchmarks/.venv-peers)")
    built = build.build_all(REPO / ".cache" / "fixtures")
    inputs = hostile.generate(built, REPO / ".cache" / "hostile")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.cases:
            row = run_case(name, built, inputs, Path(tmp))
            rows.append(row)
            cells = "  ".join(f"{t}: {row[t]['outcome']} {row[t]['seconds']}s {row[t]['peak_mb']}MB"  # type: ignore[index]
                              for t in tools(Path(), Path()))  # fmt: skip
            print(f"{name:34} {cells}", flush=True)
    a.json.parent.mkdir(parents=True, exist_ok=True)
    if a.json.exists() and a.cases != list(NASTIEST):  # a few cases again: replace their rows
        fresh = {r["case"]: r for r in rows}
        old = json.loads(a.json.read_text())
        rows = [fresh.pop(r["case"], r) for r in old] + list(fresh.values())
    a.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
