"""Hostile ELF files, built byte by byte with ``struct``: headers that claim more than the
file holds, tables that are huge but honest, chains that never end.

A hand-made ELF (not a compiled fixture) because no toolchain writes these on purpose; the
layout is the one ``ld`` writes for a shared library (one PT_LOAD over the whole file,
PT_DYNAMIC, .dynsym/.dynstr/.dynamic and a section table at the end), so that both routes of
``binary.elf`` (section headers, PT_DYNAMIC) read it. Used by ``test_elf_limits.py`` and by
the before/after measurements quoted in ``docs/evidence/reliability.md``.
"""

from __future__ import annotations

import io
import struct
import zipfile

from torchwheel.binary import marker_record
from torchwheel.version import FeatureVersion

SYM = struct.Struct("<IBBHQQ")
_DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB, _DT_STRSZ, _DT_SYMENT = 1, 4, 5, 6, 10, 11
_DT_GNU_HASH = 0x6FFFFEF5
_GLOBAL_FUNC, _GLOBAL_NOTYPE = 0x12, 0x10


def symbols(names: list[tuple[bytes, bool]]) -> tuple[bytes, bytes]:
    """(.dynsym, .dynstr) for ``(name, defined)`` pairs, after the null symbol."""
    strtab = bytearray(b"\0")
    rows = [SYM.pack(0, 0, 0, 0, 0, 0)]
    for name, defined in names:
        rows.append(SYM.pack(len(strtab), _GLOBAL_FUNC if defined else _GLOBAL_NOTYPE, 0, 1 if defined else 0,
                             0x1000 if defined else 0, 0))  # fmt: skip
        strtab += name + b"\0"
    return b"".join(rows), bytes(strtab)


def elf(
    dynsym: bytes,
    dynstr: bytes,
    *,
    blob: bytes = b"",
    gnu_hash: bytes | None = None,
    sections: bool = True,
    needed: int | None = None,
    gap: int = 0,
) -> bytes:
    """A 64-bit little-endian shared library holding these tables, then ``blob``.

    ``gnu_hash``: use DT_GNU_HASH (these bytes) instead of DT_HASH to size .dynsym on the
    PT_DYNAMIC route; ``sections=False`` leaves that route as the only one; ``gap`` zero
    bytes before each of .dynsym, .dynstr and the hash table spread them over the file."""
    ndyn = 7
    dyn_at = 64 + 2 * 56
    sym_at = dyn_at + ndyn * 16 + gap
    str_at = sym_at + len(dynsym) + gap
    hash_at = str_at + len(dynstr) + gap
    hash_bytes = gnu_hash if gnu_hash is not None else struct.pack("<II", 1, len(dynsym) // SYM.size)
    blob_at = hash_at + len(hash_bytes)
    sh_at = blob_at + len(blob)
    nsh = 4 if sections else 0
    total = sh_at + nsh * 64
    dyn = [
        (_DT_STRTAB, str_at),
        (_DT_SYMTAB, sym_at),
        (_DT_STRSZ, len(dynstr)),
        (_DT_SYMENT, SYM.size),
        (_DT_GNU_HASH if gnu_hash is not None else _DT_HASH, hash_at),
        (_DT_NEEDED, 1 if needed is None else needed),
        (0, 0),
    ]
    ehdr = b"\x7fELF\x02\x01\x01" + bytes(9)
    ehdr += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, sh_at if sections else 0, 0, 64, 56, 2, 64, nsh, 0)
    phdrs = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, total, total, 0x1000)
    phdrs += struct.pack("<IIQQQQQQ", 2, 6, dyn_at, dyn_at, dyn_at, ndyn * 16, ndyn * 16, 8)
    body = b"".join(struct.pack("<qQ", t, v) for t, v in dyn)
    shdrs = b""
    if sections:
        shdrs = bytes(64)
        shdrs += struct.pack("<IIQQQQIIQQ", 1, 11, 2, sym_at, sym_at, len(dynsym), 2, 1, 8, SYM.size)
        shdrs += struct.pack("<IIQQQQIIQQ", 9, 3, 2, str_at, str_at, len(dynstr), 0, 0, 1, 0)
        shdrs += struct.pack("<IIQQQQIIQQ", 17, 6, 3, dyn_at, dyn_at, ndyn * 16, 2, 0, 8, 16)
    pad = bytes(gap)
    out = ehdr + phdrs + body + pad + dynsym + pad + dynstr + pad + hash_bytes + blob + shdrs
    assert len(out) == total
    return out


def record(minor: int) -> bytes:
    return marker_record.encode(FeatureVersion(2, minor))


def wheel(member: bytes, name: str = "hostile/_C.so") -> bytes:
    """A wheel carrying one compiled member (deflated: hostile bytes compress well)."""
    buf = io.BytesIO()
    d = "hostile-1.0.dist-info"
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, member)
        zf.writestr(
            f"{d}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"
        )
        zf.writestr(f"{d}/METADATA", "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n")
    return buf.getvalue()
