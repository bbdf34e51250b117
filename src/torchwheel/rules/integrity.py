"""TW4xx: the wheel is internally consistent: RECORD, tags, platform, metadata files, member
names; and ``integrity_errors``, the one judgement every command applies before it trusts a
wheel (what ``check`` calls broken, ``index`` does not publish and ``select`` does not choose).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from torchwheel import safejson
from torchwheel.analysis.platforms import expected, managed_mismatch
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.errors import InputError
from torchwheel.rules import pypi
from torchwheel.rules.registry import REGISTRY, Finding, Hit, Omitted, Policy, rule
from torchwheel.wheel.contents import WheelContents
from torchwheel.wheel.metadata import (
    SIDE_FILE,
    SIDE_SHAPE,
    TORCH_ABI_FIELD,
    check_torch_abi_lines,
    parse_metadata,
    wheel_problems,
)
from torchwheel.wheel.record import verify_record

_RECORD_KINDS = {
    "hash-mismatch": "TW402",
    "size-mismatch": "TW402",
    "missing-from-record": "TW403",
    "missing-file": "TW403",
    "no-hash": "TW403",
    "weak-hash": "TW403",
    "outside-environment": "TW403",  # an installed RECORD entry that leaves the environment
    "not-regular": "TW403",  # a link out of an unpacked wheel, a FIFO or device: not read
}


def _omitted(w: WheelFacts, code: str) -> Iterator[Omitted]:
    """The problems of this code that were counted, not kept (``verify_record``)."""
    more = sum(n for kind, n in w.record_problems_omitted.items() if _RECORD_KINDS.get(kind) == code)
    if more:
        yield Omitted(more)


@rule("TW401")
def record_missing(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for p in w.record_problems:
        if p.problem == "missing-record":
            yield (
                p.path,
                "the wheel has no RECORD: installers refuse it; rebuild, or run `torchwheel tag` to write one",
            )


@rule("TW402")
def record_mismatch(w: WheelFacts, policy: Policy) -> Iterator[Hit | Omitted]:
    yield from _omitted(w, "TW402")
    for p in w.record_problems:
        if _RECORD_KINDS.get(p.problem) == "TW402":
            yield (
                p.path,
                f"{p.problem} ({p.detail}): the file changed after RECORD was written; "
                + ("reinstall the distribution" if w.contents.installed else "regenerate RECORD"),
            )


@rule("TW403")
def record_incomplete(w: WheelFacts, policy: Policy) -> Iterator[Hit | Omitted]:
    yield from _omitted(w, "TW403")
    for p in w.record_problems:
        if _RECORD_KINDS.get(p.problem) == "TW403":
            fix = (
                "reinstall the distribution"
                if w.contents.installed
                else "regenerate RECORD from the archive's contents"
            )
            yield p.path, f"{p.detail}: {fix}"


@rule("TW404")
def tags_disagree(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A warning, not an error: pip, uv and installer select and install by the file name
    and never read WHEEL's Tag lines, and first-party PyTorch wheels ship this mismatch.
    It still misleads tools that do read them (``wheel tags``, auditors)."""
    c = w.contents
    if not w.is_wheel_file or c.name_problem is not None:
        return  # an invalid name has no tags to compare (TW414 says so)
    if c.filename_tags != c.wheel_tags:
        name = sorted(str(t) for t in c.filename_tags)
        inside = sorted(str(t) for t in c.wheel_tags) or ["none"]
        yield (
            f"{c.dist_info}/WHEEL",
            (
                f"file name tags {', '.join(name)} differ from WHEEL Tag lines {', '.join(inside)}: "
                "make them agree (`torchwheel tag` rewrites WHEEL from the file name)"
            ),
        )


@rule("TW405")
def platform_mismatch(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A .NET IL-only assembly carries no native code: an AnyCPU one fits every platform (its
    PE machine field says x86 for code any process JIT-compiles), a 32BITREQUIRED or
    single-machine one fits the platforms whose processes can load it, whatever the OS."""
    platforms = {t.platform for t in (w.contents.filename_tags or w.contents.wheel_tags)}
    if not platforms or not w.binaries:
        return
    if platforms == {"any"}:
        if any(s.facts.runs_in != "any" for b in w.binaries for s in b.analysis.slices):
            yield (
                "",
                "the wheel is tagged for any platform but ships compiled files: tag it for their platform",
            )
        return
    for b in w.binaries:
        managed = [s.facts for s in b.analysis.slices if s.facts.managed]
        if managed:
            for platform in sorted(platforms):
                promise = expected(platform)
                why = next(
                    (m for f in managed if promise and (m := managed_mismatch(f.runs_in, promise))), None
                )
                if why is not None:
                    yield (
                        b.member,
                        f"is a .NET assembly that {why} as {platform} promises: rebuild it AnyCPU or retag",
                    )
            continue
        have = {s.facts.arch for s in b.analysis.slices}
        for platform in sorted(platforms):
            promise = expected(platform)
            if promise is None:
                continue
            fmt, archs = promise.format, promise.archs
            if b.analysis.facts.format != fmt:
                yield (
                    b.member,
                    f"is {b.analysis.facts.format.upper()} but the wheel is tagged {platform}: retag or rebuild",
                )
            elif not archs <= have:
                yield (
                    b.member,
                    (
                        f"has {', '.join(sorted(have))} but the wheel is tagged {platform} "
                        f"({', '.join(sorted(archs))}): retag or rebuild"
                    ),
                )


@rule("TW406")
def binary_unreadable(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for u in w.unreadable:
        yield u.member, f"cannot be read ({u.error}): rebuild it, or drop it from the wheel"


@rule("TW407")
def metadata_invalid(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    c = w.contents
    for problem in w.metadata.problems:
        yield f"{c.dist_info}/METADATA", f"{problem}: fix the build backend's output"
    for problem in wheel_problems(c.wheel_text):
        yield f"{c.dist_info}/WHEEL", problem


@rule("TW408")
def dist_info_mismatch(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    c = w.contents
    if w.is_wheel_file and c.dist_info and not c.dist_info_matches:
        yield (
            c.dist_info,
            (
                f"names another project than the file name ({c.filename_name!r}): pip and installer refuse "
                "the wheel; rebuild it so that both name the same project"
            ),
        )


@rule("TW409")
def metadata_mismatch(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """pip compares the METADATA it reads with the file it asked for and refuses a wheel whose
    Name or Version differ ("inconsistent name/version"); a rewrite would have to pick one."""
    c, meta = w.contents, w.metadata
    where = f"{c.dist_info}/METADATA"
    if meta.name and c.filename_name and canonicalize_name(meta.name) != canonicalize_name(c.filename_name):
        yield (
            where,
            (
                f"Name {meta.name[:60]!r} is not the project of the file name ({c.filename_name!r}): "
                "pip refuses the wheel; rebuild it so that both name one project"
            ),
        )
    if meta.version and c.filename_version and _version(meta.version) != _version(c.filename_version):
        yield (
            where,
            (
                f"Version {meta.version[:60]!r} is not the file name's version ({c.filename_version!r}): "
                "pip refuses the wheel; rebuild it so that both carry one version"
            ),
        )


def _version(text: str) -> Version | str:
    try:
        return Version(text)
    except InvalidVersion:
        return text  # TW407 says so; compared as written


@rule("TW410")
def torch_abi_invalid(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    c = w.contents
    try:
        check_torch_abi_lines(c.wheel_fields.get(TORCH_ABI_FIELD, []))
    except ValueError as exc:
        yield (
            f"{c.dist_info}/WHEEL",
            (
                f"{TORCH_ABI_FIELD}: {exc}: index, select and matrix refuse the wheel; `torchwheel tag` "
                f"replaces every {TORCH_ABI_FIELD} line with the one the binaries support"
            ),
        )


_NAME_MAX = 255  # bytes in one path component on ext4, XFS, APFS (NTFS: 255 UTF-16 units)


@rule("TW411")
def member_name_uninstallable(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """Names the archive holds but no installer can write as named: ``.`` (installer finds a
    directory there and refuses), empty or ``.`` components (written under another path
    than RECORD lists, or over another member), and components no file system takes."""
    if not w.is_wheel_file:
        return  # a directory's names came from a file system already
    for member in w.contents.members:
        parts = member.split("/")
        if "" in parts or "." in parts:
            yield (
                member,
                (
                    "has an empty or '.' path component: installers write it elsewhere than RECORD "
                    "lists, or over another member; rename it"
                ),
            )
            continue
        longest = max(len(p.encode()) for p in parts)
        if longest > _NAME_MAX:
            yield (
                member,
                (
                    f"has a path component of {longest:,} bytes; file systems take {_NAME_MAX}, so "
                    "installing fails (File name too long); shorten it"
                ),
            )


@rule("TW412")
def facts_file_invalid(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """The side file ``tag`` writes is informational (installers never read it), so a warning;
    but a file torchwheel cannot read back, or one that contradicts WHEEL, misleads whoever
    reads it. ``tag`` rewrites it."""
    c = w.contents
    if c.side_file is None:
        return
    where = f"{c.dist_info}/{SIDE_FILE}"
    try:
        doc = safejson.load(c.side_file, SIDE_FILE, SIDE_SHAPE)
    except InputError as exc:
        yield where, f"{exc}: `torchwheel tag` rewrites it"
        return
    declared = sorted(set(c.wheel_fields.get(TORCH_ABI_FIELD, [])))
    if len(declared) == 1 and doc["torch_abi"] != declared[0]:
        yield (
            where,
            (
                f"says torch_abi {doc['torch_abi'][:40]!r}, WHEEL {TORCH_ABI_FIELD} says {declared[0][:40]!r}: "
                "`torchwheel tag` rewrites both"
            ),
        )


@rule("TW413")
def local_version(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A warning, not an error: the wheel is valid and installs from any index but a public
    registry's (PyPI refuses local versions at upload, and twine check does not say so), and
    the per-target route puts local labels on purpose into a project's own index."""
    c = w.contents
    if c.installed:
        return  # already installed: no upload in sight
    version = _version(w.metadata.version or c.filename_version or "")
    if isinstance(version, Version) and version.local:
        yield (
            "",
            (
                f"version {version} has a local label (+{version.local}): PyPI refuses local versions at "
                "upload; serve it from your own index (`torchwheel index`), or give PyPI the one build "
                "it gets without the label (`torchwheel unlabel -w DIR WHEEL` writes it)"
            ),
        )


@rule("TW414")
def filename_invalid(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """pip reads such a name with its own looser pattern and downloads it, so the wheel reaches
    users; packaging, PyPI's upload check and torchwheel's selection refuse it. The rest of the
    wheel is judged all the same (its tags from WHEEL), so one finding does not hide the others."""
    c = w.contents
    if not w.is_wheel_file or c.name_problem is None:
        return
    fix = c.valid_name
    rename = (
        f"rename it to {fix} (METADATA's Name and Version, WHEEL's valid Tag lines), with any tag fix "
        "other findings ask for"
        if fix
        else "rename it to name-version-python-abi-platform.whl as the wheel spec says"
    )
    yield (
        "",
        f"the file name is not a valid wheel name ({c.name_problem[:80]}): PyPI and packaging-based tools refuse it; {rename}",
    )


@rule("TW415")
def platform_refused_by_pypi(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """A warning, not an error: the wheel installs and loads where its tag says, and an own
    index takes it; only the upload to PyPI fails, at the end of a release job, and twine
    check does not say so. Judged on the file name's tags, which PyPI reads."""
    c = w.contents
    if not w.is_wheel_file or c.name_problem is not None:
        return  # an invalid name has no tags, and PyPI refuses it anyway (TW414)
    for platform in sorted({t.platform for t in c.filename_tags}):
        if pypi.refused(platform):
            plain = " (what a plain `pip wheel` writes)" if platform.startswith("linux_") else ""
            yield (
                "",
                f"platform tag {platform}{plain} is refused by PyPI at upload: {pypi.remedy(platform)}",
            )


def integrity_errors(
    contents: WheelContents,
    member_size: Callable[[str], int],
    hashes: dict[str, tuple[str | None, int]] | None = None,
) -> list[Finding]:
    """The TW4xx errors of a wheel judged from its central directory and metadata files, by
    the very rules ``check`` runs: installers refuse such a wheel or it contradicts itself,
    so ``index`` does not publish it and ``select``/``install``/``matrix`` do not choose it.

    Without ``hashes`` RECORD is compared by name and size only (no member inflated); the
    compiled members' facts (TW405, TW406) need ``check``. ``hashes``: member -> (RECORD
    hash, size) of every member, for a caller that read them all (``index``)."""
    sizes = hashes or {m: (None, member_size(m)) for m in contents.members}
    facts = WheelFacts(contents, parse_metadata(contents.metadata_text), kind="wheel")
    record = verify_record(
        contents.record,
        contents.dist_info,
        contents.members,
        contents.record_problems,
        sizes,
        contents.installed,
    )
    facts.record_problems, facts.record_problems_omitted = record.kept, dict(record.omitted)
    facts.hashes_verified = hashes is not None
    policy = Policy()
    return [
        f
        for code, r in sorted(REGISTRY.items())
        if code.startswith("TW4") and r.severity == "error"
        for f in r.run(facts, policy, contents.path)[0]
    ]
