"""The I/O edge of ``tag`` and ``repair``: read facts, apply the plan, write, verify.

The input wheel is never opened for writing: output goes to a temp file in the
destination directory and is renamed into place only after it verified. ``--in-place``
is the same rename onto the input's own name.
"""

from __future__ import annotations

import difflib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from torchwheel.errors import InputError
from torchwheel.retag import Plan, TagOptions, plan
from torchwheel.wheelfacts import WheelFacts
from torchwheel.wheelfile import SIDE_FILE, parse_record, record_hash
from torchwheel.wheelwriter import copy_file_atomically, source_date_epoch, write_wheel


@dataclass
class TagResult:
    source: Path
    target: Path | None  # None for a dry run
    changed: bool
    changes: list[str] = field(default_factory=list)
    diff: str = ""


def _existing(w: WheelFacts) -> dict[str, bytes]:
    """The current bytes of the members a plan writes, as collected: no second opening."""
    c = w.contents
    found = {
        f"{c.dist_info}/WHEEL": c.wheel_text.encode(),
        f"{c.dist_info}/METADATA": c.metadata_text.encode(),
    }
    if c.side_file is not None:
        found[f"{c.dist_info}/{SIDE_FILE}"] = c.side_file
    return found


def unchanged(p: Plan, source: Path, existing: dict[str, bytes]) -> bool:
    """Idempotence: a tagged wheel re-tagged with the same options is left alone."""
    if p.filename != source.name or p.drop:
        return False
    return all(existing.get(name) == data for name, data in p.members.items())


def diff_text(p: Plan, source: Path, existing: dict[str, bytes], with_facts: bool = False) -> str:
    """The metadata a user reviews; the side file's facts (long JSON) only on request."""
    chunks: list[str] = []
    if p.filename != source.name:
        chunks.append(f"rename: {source.name} -> {p.filename}\n")
    for name, data in p.members.items():
        if name.endswith(f"/{SIDE_FILE}") and not with_facts:
            continue
        old = existing.get(name, b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = data.decode("utf-8").splitlines(keepends=True)
        chunks.extend(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}"))
    return "".join(chunks)


def verify_written(path: Path, p: Plan, expected_hashes: dict[str, tuple[str, int]]) -> None:
    """Re-open what we wrote: every member readable by zipfile, RECORD complete and right.

    Copied members are checked against the hashes verified on the input (their deflate
    streams and CRCs were copied byte for byte); rewritten members are hashed afresh.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            names = [i.filename for i in zf.infolist()]
            if len(set(names)) != len(names):
                raise InputError(f"{path.name}: duplicate members after writing")
            record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
            record = parse_record(zf.read(record_name).decode())
            for name in names:
                if name == record_name:
                    continue
                entry = record.get(name)
                if entry is None:
                    raise InputError(f"{path.name}: {name} missing from the written RECORD")
                if name in p.members:
                    data = zf.read(name)
                    if entry.hash != record_hash(data) or data != p.members[name]:
                        raise InputError(f"{path.name}: {name} does not match what was written")
                elif (entry.hash, entry.size) != expected_hashes[name]:
                    raise InputError(f"{path.name}: RECORD entry of {name} differs from the input's")
                with zf.open(name) as fh:  # parses the local header of every member
                    fh.read(0)
    except (zipfile.BadZipFile, StopIteration, KeyError) as exc:
        raise InputError(f"{path.name}: the written wheel does not verify ({exc})") from exc


def tag(
    w: WheelFacts,
    opts: TagOptions,
    dest: Path | None,
    in_place: bool,
    dry_run: bool,
    with_facts: bool = False,
) -> TagResult:
    source = Path(w.contents.path)
    p = plan(w, opts)
    existing = _existing(w)
    same = unchanged(p, source, existing)
    if dry_run:
        return TagResult(source, None, not same, p.changes, diff_text(p, source, existing, with_facts))
    out_dir = source.parent if in_place or dest is None else dest
    target = out_dir / p.filename
    if same:
        if target.resolve() != source.resolve():
            copy_file_atomically(source, target)
        return TagResult(source, target, False, ["already tagged: nothing to change"])
    if target.resolve() == source.resolve() and not in_place:
        raise InputError(f"{source.name}: writing would replace the input; pass --in-place or -w DIR")
    write_wheel(
        source,
        target,
        w.contents.dist_info,
        p.members,
        p.drop,
        w.hashes,
        source_date_epoch(),
        verify=lambda written: verify_written(written, p, w.hashes),
    )
    if in_place and target.resolve() != source.resolve():
        source.unlink()  # the retagged wheel has a new name; --in-place replaces the old
    return TagResult(source, target, True, p.changes)
