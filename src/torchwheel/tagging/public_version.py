"""``unlabel``: the copy of a local-label build that PyPI takes (``1.0+cu129`` -> ``1.0``).

PyPI refuses local versions, so a project that serves per-torch or per-CUDA builds from its
own index (``tag --local-label torch2.12``, PyTorch-style ``+cu129``) puts one of them on
PyPI under the public version. The version is written everywhere the wheel states it: the
file name, METADATA ``Version`` and the ``.dist-info`` / ``.data`` directory names
(``naming.renamed_dist_info``, as ``tag --local-label`` renames them); RECORD is written
anew from the verified hashes (the renamed rows, the new METADATA's hash); every other
member, ``Requires-Dist: torch`` and the rest of METADATA included, keeps its bytes (copied
raw, as ``tag`` copies). A build tag in the input's name is kept, or set with ``build_tag``.

What is refused, before anything is written (exit 2, one line):

- a wheel without a local label: there is nothing to drop, and a command whose output is
  the upload set should not pass off its input as its work;
- a version-locked (unstable) build whose label is the only thing that names its torch
  (``+torch2.13``, no ``torch==2.13.*``): on PyPI nothing would keep pip off other torches;
- two inputs that are builds of one release for one tag set: PyPI holds one file per name,
  and a build tag cannot tell torch targets apart (installers take the highest build,
  whatever the torch), so the one build that goes to PyPI is chosen by giving only it;
- an output file that exists (unless ``overwrite``), and another build of the same release
  and tags already in the output directory (the same trap across two runs).
"""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path

from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.errors import InputError, clipped
from torchwheel.frozen import frozen
from torchwheel.tagging import naming
from torchwheel.tagging.tag_options import TagOptions
from torchwheel.torchabi.need import claimed_releases, need_from_fields, show_releases
from torchwheel.wheel.archive import WheelArchive
from torchwheel.wheel.readback import verify_written
from torchwheel.wheel.writer import source_date_epoch, write_wheel

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # lines as email.feedparser splits them
_HEADER = re.compile(r"^(From |[\041-\071\073-\176]*:|[\t ])")  # email.feedparser.headerRE

Release = tuple[str, Version, frozenset[Tag]]  # project (normalised), public version, tag set


@frozen
class PublicPlan:
    """What ``unlabel`` writes for one wheel; pure, nothing written yet."""

    source: Path
    filename: str
    dist_info: str  # the new .dist-info name
    members: dict[str, bytes]  # rewritten members, under their new names
    renames: dict[str, str]  # input member -> the name it is written under
    drop: set[str]  # input members left out (RECORD signatures)
    release: Release
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the user should know (stderr)


def public_metadata(text: str, public: str, where: str) -> str:
    """METADATA with only the value of its ``Version`` header changed to ``public``: the
    header's own spelling, spacing and line ending kept, everything else byte for byte;
    parsed back as installers parse it before it is trusted."""
    lines = _LINE.findall(text)
    at = None
    for i, line in enumerate(lines):
        if not _HEADER.match(line):
            break  # the end of the header block
        key, sep, _ = line.partition(":")
        if sep and line[0] not in " \t" and key.strip().lower() == "version":
            at = i
            break
    if at is None:
        raise InputError(f"{where}: METADATA has no Version header", reference="wheel-invalid")
    key, _, value = lines[at].partition(":")
    stripped = value.rstrip("\r\n")
    eol = value[len(stripped) :]
    lead = stripped[: len(stripped) - len(stripped.lstrip())]
    lines[at] = f"{key}:{lead}{public}{eol}"
    new = "".join(lines)
    before, _ = parse_email(text)
    after, _ = parse_email(new)
    if after.get("version") != public or {k: v for k, v in before.items() if k != "version"} != {
        k: v for k, v in after.items() if k != "version"
    }:
        raise InputError(
            f"{where}: METADATA would not read back as version {public} with every other field "
            "as it was (a folded Version header?): refusing to write it",
            reference="rewrite-refused",
        )
    return new


def _label_is_not_the_only_pin(w: WheelFacts, version: Version, where: str) -> None:
    """An unstable build is dated, where its binaries do not date it, by its ``+torchX.Y``
    label before its pin (``torchabi.need.claimed_releases``): without the label it must
    still name the same torch, or PyPI's copy would install beside any torch."""
    if w.provides_libtorch:
        return
    reqs = w.metadata.torch_requirements
    need = need_from_fields(w.contents.wheel_fields, reqs, version, w.tables.releases) or w.torch_need
    if need.kind != "unstable" or need.releases_from != "label":
        return
    after, _ = claimed_releases(reqs, Version(version.public), w.tables.releases)
    if after != need.releases:
        torch = show_releases(need.releases)
        raise InputError(
            f"{where}: a version-locked build that only its label +{version.local} says is for torch "
            f"{torch}: without the label nothing keeps installers off other torches; pin it first "
            f"(`torchwheel tag --build-torch {torch}` writes torch=={torch}.*), then unlabel",
            reference="rewrite-refused",
        )


def _local_requirements(w: WheelFacts) -> list[str]:
    """Requirements that name a local version (``mypkg-core==1.0+cu129``): PyPI's users
    cannot get what they name from PyPI."""
    raw, _ = parse_email(w.contents.metadata_text)
    found = []
    for value in raw.get("requires_dist", []):
        try:
            req = Requirement(value)
        except InvalidRequirement:
            continue  # check's business (TW407)
        if any("+" in s.version for s in req.specifier):
            found.append(value)
    return found


def public_plan(w: WheelFacts, build_tag: str | None = None) -> PublicPlan:
    """The plan for one wheel; ``InputError`` when it cannot honestly be unlabelled."""
    c = w.contents
    source = Path(c.path)
    where = source.name
    _label_is_not_the_only_pin(w, _local_version(w, where), where)
    public = c.filename_version.split("+", 1)[0]  # the author's spelling of the public part
    raw, _ = parse_email(c.metadata_text)
    meta_public = str(raw.get("version", public)).split("+", 1)[0]
    metadata = public_metadata(c.metadata_text, meta_public, where)
    parts = where[: -len(".whl")].split("-")
    filename = "-".join([parts[0], public, *parts[2:]]) + ".whl"
    filename, metadata, wheel_text, notes = naming.naming(
        filename, metadata, c.wheel_text, TagOptions(build_tag=build_tag)
    )
    renamed, renames = naming.renamed_dist_info(c.dist_info, c.members, filename)
    dist_info = renamed or c.dist_info
    data = sorted(d for d in {n.split("/", 1)[0] for n in renames.values()} if d.endswith(".data"))
    places = ["the file name", "METADATA Version", *([renamed] if renamed else []), *(f"{d}/" for d in data)]
    changes = [f"version {c.filename_version} -> {public}: {', '.join(places[:-1])} and {places[-1]}"]
    if build_tag is None and c.build_tag is not None:
        changes.append(f"kept the build tag {c.build_tag}")
    changes += notes
    members = {f"{dist_info}/METADATA": metadata.encode()}
    if wheel_text != c.wheel_text:
        members[f"{dist_info}/WHEEL"] = wheel_text.encode()
    drop = {f"{c.dist_info}/RECORD.jws", f"{c.dist_info}/RECORD.p7s"} & set(c.members)
    if drop:
        changes.append("dropped RECORD signatures (the rewrite invalidates them)")
    torch = [str(r) for r in w.metadata.torch_requirements]
    changes += [f"kept Requires-Dist: {clipped(r)}" for r in torch]
    release = (canonicalize_name(c.filename_name), Version(public), c.filename_tags)
    return PublicPlan(
        source, filename, dist_info, members, renames, drop, release, changes, _said(w, filename)
    )


def _said(w: WheelFacts, filename: str) -> list[str]:
    """What PyPI's users would get wrong about the public copy: no torch requirement to keep
    it off a torch it cannot load on, requirements only a local index can satisfy."""
    said: list[str] = []
    if not w.metadata.torch_requirements and not w.provides_libtorch:
        said.append(
            f"{filename}: no Requires-Dist: torch: on PyPI nothing keeps it off a torch it cannot load on "
            "(`torchwheel tag` writes the one its binaries need)"
        )
    said += [
        f"{filename}: Requires-Dist: {clipped(r)} names a local version, which PyPI's users cannot get"
        for r in _local_requirements(w)
    ]
    return said


def _local_version(w: WheelFacts, where: str) -> Version:
    """The wheel's version, refused unless it is a well-formed wheel file whose version has a
    local label to take off."""
    c = w.contents
    naming.plain_wheel_only(
        w,
        where,
        "unlabel rewrites wheel files",
        "PyPI takes no variant files (draft standards); unlabel the plain wheel",
    )
    if not c.dist_info_matches:
        raise InputError(
            f"{where}: its {c.dist_info!r} does not match the file name's project {c.filename_name!r}: "
            "installers refuse such a wheel; rebuild it",
            reference="wheel-invalid",
        )
    try:
        version = Version(c.filename_version)
    except InvalidVersion as exc:
        raise InputError(
            f"{where}: version {clipped(c.filename_version, 80)!r} is not a version",
            reference="wheel-invalid",
        ) from exc
    if version.local is None:
        raise InputError(
            f"{where}: version {c.filename_version} has no local label: nothing to unlabel "
            "(PyPI takes the wheel as it is)",
            reference="rewrite-refused",
        )
    return version


def _release_text(release: Release) -> str:
    name, version, tags = release
    shown = ", ".join(sorted(str(t) for t in tags)[:3]) + (", ..." if len(tags) > 3 else "")
    return f"{name} {version} for {shown}"


def refuse_one_release(plans: list[PublicPlan]) -> None:
    """Two inputs that would be two PyPI files of one release and tag set: refused."""
    seen: dict[Release, PublicPlan] = {}
    for p in plans:
        other = seen.setdefault(p.release, p)
        if other is p:
            continue
        if other.source.resolve() == p.source.resolve():
            raise InputError(f"{p.source}: given twice", reference="misuse")
        raise InputError(
            f"{other.source.name} and {p.source.name} are two builds of {_release_text(p.release)}: "
            "PyPI holds one (a build tag would not tell their torch targets apart: installers take the "
            "highest build whatever the torch); unlabel the one build PyPI gets, serve the others "
            "from your own index (`torchwheel index`)",
            reference="rewrite-refused",
        )


def refuse_taken(p: PublicPlan, dest: Path, overwrite: bool) -> None:
    """The output's name is free (or ``overwrite``), and ``dest`` holds no other build of
    the same release and tags (a run before this one wrote it, say)."""
    target = dest / p.filename
    if not overwrite and (target.exists() or target.is_symlink()):
        raise InputError(f"{target}: exists; pass --overwrite to replace it", reference="output-refused")
    try:
        present = sorted(f.name for f in dest.iterdir() if f.name.endswith(".whl") and f.name != p.filename)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in present:
        try:
            project, version, _, tags = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue
        if (project, version, tags) == p.release:
            raise InputError(
                f"{dest / name}: another build of {_release_text(p.release)} is there already: on PyPI "
                "installers would take the highest build tag whatever the torch; remove it if this "
                "build replaces it",
                reference="output-refused",
            )


def write_public(
    w: WheelFacts, archive: WheelArchive, p: PublicPlan, dest: Path, overwrite: bool = False
) -> Path:
    """Write the planned copy into ``dest``, atomically, from the descriptor ``w`` was read
    from; verified (RECORD, the copied bytes, installer's reading, torchwheel's) before it
    is renamed into place. The input is only read."""
    refuse_taken(p, dest, overwrite)
    target = dest / p.filename
    ren = p.renames
    infos = {ren.get(n, n): i for n, i in archive.infos.items()}
    hashes = {ren.get(n, n): h for n, h in w.hashes.items()}
    raw_crcs = {ren.get(n, n): c for n, c in archive.raw_crcs.items()}
    write_wheel(
        archive.fd,
        infos,
        target,
        p.dist_info,
        p.members,
        {ren.get(n, n) for n in p.drop},
        hashes,
        source_date_epoch(),
        verify=lambda written: verify_written(written, p.filename, p.members, hashes, infos, raw_crcs),
        before_replace=lambda: refuse_taken(p, dest, overwrite),  # nothing appeared meanwhile
    )
    return target
