"""The I/O edge of ``tag`` and ``repair``: read facts, apply the plan, write, verify.

The input wheel is never opened for writing: output goes to a temp file in the
destination directory and is renamed into place only after it verified. ``--in-place``
is the same rename onto the input's own name.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.errors import InputError, quoted
from torchwheel.tagging.plan import Plan, plan
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.metadata import SIDE_FILE
from torchwheel.wheel.readback import verify_written
from torchwheel.wheel.temps import check_replaceable
from torchwheel.wheel.writer import WHEEL_FILE, copy_file_atomically, source_date_epoch, write_wheel


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


def _same_file(path: Path, fd: int) -> bool:
    try:
        a, b = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _still_the_input(source: Path, fd: int) -> None:
    """``--in-place`` replaces a path: only while it still names the file we analysed."""
    if not _same_file(source, fd):
        raise InputError(
            f"{source}: replaced or removed while tag ran: left as it is, nothing written",
            reference="input-changed",
        )


def lock_input(archive: WheelArchive) -> None:
    """``--in-place``: one rewriter per wheel. An exclusive ``flock`` on the analysed
    descriptor; a concurrent run refuses at once (it would rewrite a file that is being
    replaced), and a run that locked a file another one already replaced refuses too."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: os.replace fails on an open file anyway
        return
    try:
        fcntl.flock(archive.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        raise InputError(
            f"{archive.path}: another torchwheel is rewriting it right now: left to that one",
            reference="in-use",
        ) from exc
    _still_the_input(archive.path, archive.fd)


def _matching_dist_info(w: WheelFacts) -> None:
    """Installers refuse a wheel whose ``.dist-info`` names another project than its file
    name (installer's own rule, below); renaming either would be a guess, so no rewrite."""
    c = w.contents
    if not c.dist_info_matches:
        raise InputError(
            f"{Path(c.path).name}: its {c.dist_info!r} does not match the file name's project "
            f"{c.filename_name!r}: installers refuse such a wheel; rebuild it (tag will not rewrite it)",
            reference="wheel-invalid",
        )


def _output_path(out_dir: Path, filename: str) -> Path:
    """The output wheel's path: a plain name in the output folder, so its temporary file goes
    there too (``wheel.temps``), never a folder above or below it."""
    target = out_dir / filename
    if target.parent != out_dir or filename in (".", "..") or "\x00" in filename:
        raise InputError(
            f"{quoted(filename, 80)}: not a plain file name for {out_dir}: nothing written",
            reference="output-refused",
        )
    return target


def _planned(w: WheelFacts, opts: TagOptions, variant: bool) -> tuple[Plan, str]:
    """The plan and the plain wheel's name (installer parses that one; a variant label is a
    draft form): with ``variant``, the plan of the variant copy."""
    p = plan(w, opts)
    if not variant:
        return p, p.filename
    from torchwheel.tagging.variant_tag import variant_plan

    return variant_plan(p, p.dist_info or w.contents.dist_info, w), p.filename  # --local-label renames it


def _out_dir(source: Path, dest: Path | None, in_place: bool) -> Path:
    return source.parent if in_place or dest is None else dest


def output_path(
    w: WheelFacts, opts: TagOptions, dest: Path | None, in_place: bool, variant: bool = False
) -> Path:
    """Where ``tag`` writes this wheel: asked before the first wheel is written, so that an
    output that exists refuses the whole run, not its second half."""
    source = Path(w.contents.path)
    return _output_path(_out_dir(source, dest, in_place), _planned(w, opts, variant)[0].filename)


def refuse_existing(target: Path, overwrite: bool) -> None:
    """No silent overwrite (as ``unlabel``): a file at the output's name is replaced only when
    asked, and only when it is a wheel (``wheel.temps.check_replaceable``): never a link, a
    folder, a FIFO or a file of another kind, ``--overwrite`` or not."""
    check_replaceable(target, WHEEL_FILE)
    if not overwrite and os.path.lexists(target):
        raise InputError(f"{target}: exists; pass --overwrite to replace it", reference="output-refused")


def refuse_outputs(
    w: WheelFacts, opts: TagOptions, dest: Path | None, in_place: bool, variant: bool, overwrite: bool
) -> None:
    """The plan's refusals, and every output file of one wheel (the variant copy too) that
    exists, other than the input itself: asked of every wheel before the first is written."""
    source = Path(w.contents.path).resolve()
    outputs = [output_path(w, opts, dest, False, variant=True)] if variant else []
    for target in [*outputs, output_path(w, opts, dest, in_place)]:
        if target.resolve() != source:
            refuse_existing(target, overwrite)


def _before_replace(source: Path, fd: int, in_place: bool, other: Path | None, overwrite: bool) -> None:
    """The last look before the rename: the input is still the file analysed (``--in-place``),
    and no file appeared at the output's name meanwhile."""
    if in_place:
        _still_the_input(source, fd)
    if other is not None:
        refuse_existing(other, overwrite)


def write_tagged(
    w: WheelFacts,
    opts: TagOptions,
    dest: Path | None,
    in_place: bool,
    dry_run: bool,
    with_facts: bool = False,
    archive: WheelArchive | None = None,
    variant: bool = False,
    overwrite: bool = False,
) -> TagResult:
    """``archive``: the open input ``w`` was collected from (``analysis.load.opened``); every byte
    written comes from its descriptor. Without it the wheel is opened again here (library
    callers holding only facts), and the CRC pass of the verification still guards it.
    ``variant``: write the wheel-variant copy instead (``tagging.variant_tag``).
    ``overwrite``: replace an existing output file (other than the input); else refused."""
    source = Path(w.contents.path)
    p, plain_name = _planned(w, opts, variant)
    existing = _existing(w)
    same = unchanged(p, source, existing)
    if dry_run:
        return TagResult(source, None, not same, p.changes, diff_text(p, source, existing, with_facts))
    _matching_dist_info(w)
    if archive is None:
        with WheelArchive(source) as reopened:
            return write_tagged(w, opts, dest, in_place, dry_run, with_facts, reopened, variant, overwrite)
    target = _output_path(_out_dir(source, dest, in_place), p.filename)
    other = target.resolve() != source.resolve()  # a file of its own, not the input
    if other:
        refuse_existing(target, overwrite)
    if same:
        if other:
            copy_file_atomically(archive.fd, target)
        return TagResult(source, target, False, ["already tagged: nothing to change"])
    if target.resolve() == source.resolve() and not in_place:
        raise InputError(
            f"{source.name}: writing would replace the input; pass --in-place or -w DIR", reference="misuse"
        )
    if in_place:  # the path must still name the analysed file: said before any other refusal
        _still_the_input(source, archive.fd)
    ren = p.renames  # a local label renames the .dist-info: every input name seen as its new one
    infos = {ren.get(n, n): i for n, i in archive.infos.items()} if ren else archive.infos
    hashes = {ren.get(n, n): h for n, h in w.hashes.items()}
    raw_crcs = {ren.get(n, n): c for n, c in archive.raw_crcs.items()}  # the analysed raw bytes
    write_wheel(
        archive.fd,
        infos,
        target,
        p.dist_info or w.contents.dist_info,
        p.members,
        {ren.get(n, n) for n in p.drop},
        hashes,
        source_date_epoch(),
        verify=lambda written: verify_written(written, plain_name, p.members, hashes, infos, raw_crcs),
        before_replace=lambda: _before_replace(
            source, archive.fd, in_place, target if other else None, overwrite
        ),
    )
    if in_place and target.resolve() != source.resolve():
        _still_the_input(source, archive.fd)  # never unlink a file someone put there meanwhile
        source.unlink()  # the retagged wheel has a new name; --in-place replaces the old
    return TagResult(source, target, True, p.changes)
