"""The peers of ``benchmarks/corpus.py``: run them on one wheel and list where they disagree.

Peers come from ``benchmarks/.venv-peers`` (``bash benchmarks/setup_peers.sh``):

* torch-abi-audit reads no wheels: the compiled members are unzipped to a scratch directory
  and its Python API (``inspect_package``) is called there, because its JSON omits the
  roll-ups. It shells out to ``nm -ujD``, so on this Linux host Mach-O and PE files are
  effectively unreadable to it (it reports them ``no-torch``): recorded, not hidden.
* abi3audit only audits abi3-tagged wheels (``--report``, JSON on stdout).
* auditwheel ``show --json`` only for Linux wheels; its subject (the manylinux policy) is
  outside torchwheel's, so only crashes and ISA problems are compared.

A *disagreement* is a library whose torch class (none / stable / unstable) or stable floor
differs between torch-abi-audit and torchwheel, or a module whose abi3 verdict differs
between abi3audit and torchwheel's TW301/TW303. Who is right is judged by hand in
``corpus.toml`` (``[[wheel.peer]]``), where the docs take the reasons from.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Any

PEERS_BIN = Path(__file__).resolve().parent / ".venv-peers" / "bin"
_BINARY_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")

# Run inside the peers' venv: print one JSON line per library and the package roll-up.
_TAA_SCRIPT = r"""
import json, sys
from pathlib import Path
from torch_abi_audit.inspect import inspect_package
root = Path(sys.argv[1]).resolve()
rep = inspect_package(root)
def lib(e, ext):
    t = e.torch
    return {"member": str(Path(e.path).resolve().relative_to(root)), "extension": ext,
            "error": e.error, "uses_torch": t.uses_torch, "stable": t.stable,
            "min": t.min_torch_version, "unknown": list(t.unknown_shim_symbols),
            "unstable": len(t.unstable_symbols), "cpython": e.cpython.__class__.__name__ and
            {"intent": e.cpython.intent, "compliant": e.cpython.compliant}}
print(json.dumps({"verdict": rep.torch_verdict, "min": rep.min_torch_display, "error": rep.error,
    "libs": [lib(e, True) for e in rep.extensions] + [lib(e, False) for e in rep.bundled_libs]}))
"""


def _is_binary(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(_BINARY_SUFFIXES) or ".so." in base


def torch_abi_audit(wheel: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if _is_binary(info.filename) and not info.is_dir():
                zf.extract(info, tmp)
        run = subprocess.run(
            [str(PEERS_BIN / "python"), "-c", _TAA_SCRIPT, tmp],
            capture_output=True,
            text=True,
            check=False,
            timeout=3600,
        )
    if run.returncode != 0:
        return {"error": (run.stderr.strip().splitlines() or ["?"])[-1]}
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def taa_class(lib: dict[str, Any]) -> str:
    """torch-abi-audit's verdict on one library, in torchwheel's floor vocabulary."""
    if lib["error"]:
        return "error"
    if not lib["uses_torch"]:
        return "none"
    if not lib["stable"]:
        return "unstable"
    if lib["min"] is None:
        return "stable"
    return f">={lib['min']}" if lib["unknown"] else str(lib["min"])


def abi3audit(wheel: Path) -> dict[str, Any] | None:
    if "-abi3-" not in wheel.name:
        return None
    run = subprocess.run(
        [str(PEERS_BIN / "abi3audit"), "--report", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    try:
        spec = next(iter(json.loads(run.stdout)["specs"].values()))  # keyed by the path as given
    except (json.JSONDecodeError, KeyError, StopIteration):
        return {"error": (run.stderr.strip().splitlines() or ["no report"])[-1], "exit": run.returncode}
    objects = {o["name"]: o["result"] for o in spec.get("wheel", [])}
    return {"exit": run.returncode, "objects": objects}


def auditwheel(wheel: Path) -> dict[str, Any] | None:
    if "linux" not in wheel.name:
        return None
    run = subprocess.run(
        [str(PEERS_BIN / "auditwheel"), "show", "--json", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError:
        return {"error": (run.stderr.strip().splitlines() or ["?"])[-1], "exit": run.returncode}
    return {
        "exit": run.returncode,
        "sym_tag": doc.get("sym_tag"),
        "overall_tag": doc.get("overall_tag"),
        "unsupported_isa": doc.get("unsupported_isa"),
    }


def _tw_abi3_bad(show: dict[str, Any], check_codes: dict[str, set[str]]) -> dict[str, bool]:
    """Per module base name: does torchwheel find it abi3-non-compliant (TW301/TW303)?"""
    out = {}
    for f in show["wheels"][0]["files"]:
        base = f["member"].rsplit("/", 1)[-1]
        out[base] = bool(check_codes.get(f["member"], set()) & {"TW301", "TW303"})
    return out


def disagreements(
    tw: dict[str, Any], show: dict[str, Any], codes: dict[str, set[str]], peers: dict[str, Any]
) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    taa = peers.get("torch-abi-audit") or {}
    if taa.get("error"):
        out.append(
            {"peer": "torch-abi-audit", "member": "*", "tw": "-", "peer_says": f"error: {taa['error']}"}
        )
    for lib in taa.get("libs", []):
        mine = tw["floors"].get(lib["member"], "none")
        theirs = taa_class(lib)
        if mine != theirs:
            out.append({"peer": "torch-abi-audit", "member": lib["member"], "tw": mine, "peer_says": theirs})
    a3 = peers.get("abi3audit")
    if a3 and a3.get("objects"):
        bad_tw = _tw_abi3_bad(show, codes)
        for name, res in a3["objects"].items():
            theirs_bad = bool(res.get("non_abi3_symbols") or not res.get("is_abi3_baseline_compatible", True))
            if name in bad_tw and bad_tw[name] != theirs_bad:
                out.append(
                    {
                        "peer": "abi3audit",
                        "member": name,
                        "tw": "violation" if bad_tw[name] else "ok",
                        "peer_says": f"violation (computed {res.get('computed')})" if theirs_bad else "ok",
                    }
                )
    elif a3 and a3.get("error"):
        out.append({"peer": "abi3audit", "member": "*", "tw": "-", "peer_says": f"error: {a3['error']}"})
    aw = peers.get("auditwheel")
    if aw and aw.get("error"):
        out.append({"peer": "auditwheel", "member": "*", "tw": "-", "peer_says": f"error: {aw['error']}"})
    elif (
        aw
        and aw.get("sym_tag")
        and _glibc(aw["sym_tag"]) > min(map(_glibc, show["wheels"][0]["filename_tags"]))
    ):
        # Outside torchwheel's subject (it reads no glibc symbol versions), listed all the same.
        out.append(
            {
                "peer": "auditwheel",
                "member": "*",
                "tw": "no finding",
                "peer_says": f"symbols need {aw['sym_tag']}",
            }
        )
    return out


def _glibc(tag: str) -> tuple[int, int]:
    """(2, 28) from a manylinux tag or full wheel tag; legacy aliases by their glibc."""
    plat = tag.rsplit("-", 1)[-1]
    legacy = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
    for name, ver in legacy.items():
        if plat.startswith(name + "_"):
            return ver
    parts = plat.split("_")
    if parts[0] == "manylinux" and len(parts) > 2 and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1]), int(parts[2])
    return (0, 0)


def run_peers(wheel: Path, tw: dict[str, Any], show: dict[str, Any], check: dict[str, Any]) -> dict[str, Any]:
    peers: dict[str, Any] = {"torch-abi-audit": torch_abi_audit(wheel)}
    peers["abi3audit"] = abi3audit(wheel)
    peers["auditwheel"] = auditwheel(wheel)
    codes: dict[str, set[str]] = {}
    for f in check["findings"]:
        codes.setdefault(f["member"] or "", set()).add(f["code"])
    peers["disagreements"] = disagreements(tw, show, codes, peers)
    return peers
