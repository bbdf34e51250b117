#!/usr/bin/env python3
"""torchwheel's fatbin reader against NVIDIA's own ``cuobjdump``, library by library.

    python benchmarks/cuda_agreement.py [WHEEL_OR_LIBRARY ...] [--json OUT] [--download]

Reproduces ``docs/accelerators.md`` ("How it is proven"): ``python benchmarks/cuda_agreement.py
--download``.

Without arguments: every wheel in ``.cache/corpus/`` and ``.cache/corpus-cuda/`` (the
extra Windows CUDA wheels ``--download`` fetches: ``bitsandbytes`` and ``auto-gptq`` for
win_amd64, so that three projects are compared on Windows as on Linux). For
each ELF or PE member, ``cuobjdump --list-elf`` and ``--list-ptx`` (PyPI
``nvidia-cuda-cuobjdump``, the test extra; no GPU needed) list its cubin and PTX images;
torchwheel reads the same member from the wheel as ``check`` does (streamed, headers only).
The two multisets of (kind, architecture) must be equal. cuobjdump names a family cubin
``sm_100f`` as ``sm_100`` and PTX as ``sm_XY.ptx``; the comparison uses its spelling.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS_DIRS = (REPO / ".cache" / "corpus", REPO / ".cache" / "corpus-cuda")
# published CUDA wheels for Windows beside xformers's (three projects on each platform)
EXTRA = ("bitsandbytes==0.50.2", "auto-gptq==0.7.1")
_LINE = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.(sm_\w+?)\.(cubin|ptx)$")


def find_cuobjdump() -> Path:
    import nvidia  # the namespace package of nvidia-cuda-cuobjdump

    for root in nvidia.__path__:
        for sub in ("cu13", "cuda_cuobjdump"):
            tool = Path(root) / sub / "bin" / "cuobjdump"
            if tool.is_file():
                return tool
    raise SystemExit("cuobjdump not found: pip install nvidia-cuda-cuobjdump (the test extra)")


def cuobjdump_images(path: Path, tool: Path | None = None) -> tuple[Counter[tuple[str, str]], str]:
    """(``cubin``|``ptx``, ``sm_XY``) -> count, as cuobjdump lists them, and its complaints.

    cuobjdump on Linux reads ELF only (a ``.pyd`` "does not contain device code"): for a
    PE file it is given the ``.nv_fatb`` section's bytes, cut out by binutils' objcopy,
    which it reads as a plain ``.fatbin``."""
    tool = tool or find_cuobjdump()
    with tempfile.TemporaryDirectory() as tmp:
        if path.read_bytes()[:2] == b"MZ":
            section = Path(tmp) / "nv_fatb.fatbin"
            subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatb", str(path), str(section)],
                           check=True, capture_output=True)  # fmt: skip
            if not section.is_file() or section.stat().st_size == 0:
                return Counter(), ""
            path = section
        out: Counter[tuple[str, str]] = Counter()
        errors = []
        for flag in ("--list-elf", "--list-ptx"):
            proc = subprocess.run([str(tool), flag, str(path)], capture_output=True, text=True)
            for line in proc.stdout.splitlines():
                m = _LINE.match(line.strip())
                if m:
                    out[("cubin" if m.group(3) == "cubin" else "ptx", m.group(2))] += 1
            errors += [line.strip() for line in proc.stderr.splitlines() if "fatal" in line]
    return out, "; ".join(dict.fromkeys(errors))


def torchwheel_images(facts: object) -> Counter[tuple[str, str]]:
    """The same multiset from a ``BinaryFacts``, in cuobjdump's spelling."""
    out: Counter[tuple[str, str]] = Counter()
    for s in facts.slices:  # type: ignore[attr-defined]
        for image, n in s.gpu.cuda:
            variant = "a" if image.variant == "a" else ""  # cuobjdump drops "f"
            out[(image.kind, f"sm_{image.arch}{variant}")] += n
    return out


def _members(path: Path) -> list[tuple[str, object, Path]]:
    """(member, torchwheel facts, extracted copy) for every ELF/PE member of a wheel."""
    from torchwheel.binary import BinaryError, sniff
    from torchwheel.binary.memberscan import scan_member
    from torchwheel.wheel.archive import WheelArchive
    from torchwheel.wheel.contents import is_compiled_name

    out = []
    tmp = Path(tempfile.mkdtemp(prefix="tw-cuda-"))
    if path.suffix != ".whl":  # a lone library: read as inspect reads it
        from torchwheel.binary.memberscan import scan_file

        _, facts = scan_file(path, path.name)
        copy = tmp / path.name
        copy.write_bytes(path.read_bytes())
        return [] if isinstance(facts, BinaryError) else [(path.name, facts, copy)]
    with WheelArchive(path) as wheel:
        for member in wheel.contents.members:
            if not is_compiled_name(member):
                continue
            _, facts = scan_member(wheel, member, hashing=False)
            if isinstance(facts, BinaryError) or facts.format not in ("elf", "pe"):
                continue
            copy = tmp / member.replace("/", "__")
            with open(copy, "wb") as fh:
                for chunk in wheel.stream(member):
                    fh.write(chunk)
            if sniff(copy.read_bytes()[:4]) is None:
                continue
            out.append((member, facts, copy))
    return out


def compare(paths: list[Path]) -> dict[str, object]:
    tool = find_cuobjdump()
    rows = []
    for path in paths:
        for member, facts, copy in _members(path):
            ours = torchwheel_images(facts)
            theirs, complaint = cuobjdump_images(copy, tool)
            copy.unlink()
            if not ours and not theirs:
                continue
            rows.append(
                {
                    "wheel": path.name,
                    "member": member,
                    "images": sum(theirs.values()),
                    "agree": ours == theirs,
                    # cuobjdump 13.5 gives up ("Invalid ELF") on some cubins of CUDA 11/12-era
                    # toolkits: then what it listed before giving up must all be in ours
                    "contained": bool(complaint) and not (theirs - ours),
                    "only_torchwheel": sorted(f"{k}:{a} x{n}" for (k, a), n in (ours - theirs).items()),
                    "only_cuobjdump": sorted(f"{k}:{a} x{n}" for (k, a), n in (theirs - ours).items()),
                    "cuobjdump_error": complaint,
                }
            )
    return {
        "libraries": len(rows),
        "agree": sum(bool(r["agree"]) for r in rows),
        "cuobjdump_gave_up_contained": sum(bool(r["contained"]) and not r["agree"] for r in rows),
        "rows": rows,
    }


def download_extra() -> None:
    dest = REPO / ".cache" / "corpus-cuda"
    dest.mkdir(parents=True, exist_ok=True)
    for spec in EXTRA:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--platform", "win_amd64", "--python-version", "3.11", "-d", str(dest), spec]  # fmt: skip
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", type=Path)
    ap.add_argument("--json", type=Path, help="write the rows here")
    ap.add_argument("--download", action="store_true", help=f"fetch {', '.join(EXTRA)} (win_amd64) first")
    args = ap.parse_args(argv)
    if args.download:
        download_extra()
    paths = args.inputs or sorted(p for d in CORPUS_DIRS if d.is_dir() for p in d.glob("*.whl"))
    result = compare(paths)
    per_wheel: dict[str, list[int]] = {}
    for row in result["rows"]:  # type: ignore[attr-defined]
        counts = per_wheel.setdefault(row["wheel"], [0, 0, 0])
        counts[0] += 1
        counts[1] += bool(row["agree"])
        counts[2] += row["images"]
        if not row["agree"]:
            print(f"DIFFER {row['wheel']} {row['member']}: torchwheel only {row['only_torchwheel']}, "
                  f"cuobjdump only {row['only_cuobjdump']}"
                  + (f" (cuobjdump: {row['cuobjdump_error']})" if row["cuobjdump_error"] else ""))  # fmt: skip
    print(f"{'wheel':72s} {'libraries':>9s} {'agree':>5s} {'images':>7s}")
    for wheel, (n, agree, images) in per_wheel.items():
        print(f"{wheel:72s} {n:9d} {agree:5d} {images:7d}")
    print(f"total: {result['agree']} of {result['libraries']} libraries with GPU code agree; on "
          f"{result['cuobjdump_gave_up_contained']} more cuobjdump gave up part way and listed only images "
          "torchwheel also reads")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    explained = result["agree"] + result["cuobjdump_gave_up_contained"]  # type: ignore[operator]
    return 0 if explained == result["libraries"] else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
