"""TW4xx: the wheel is internally consistent: RECORD, tags, platform, metadata files, member
names.

The errors the archive alone shows are facts of the wheel layer (``wheel.defects``, which
``index``, ``select``, ``install`` and ``matrix`` apply without the rules): each is
registered here under its code and reported by ``check`` in the same words. What needs the
compiled members (TW405, TW406) and the warnings are judged here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from packaging.version import Version

from torchwheel.analysis.platforms import expected, managed_mismatch
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.errors import InputError, quoted
from torchwheel.rules import pypi
from torchwheel.rules.registry import Check, Hit, Omitted, Policy, rule
from torchwheel.wheel import defects
from torchwheel.wheel.defects import comparable_version
from torchwheel.wheel.metadata import SIDE_FILE, TORCH_ABI_FIELD, side_shape


def _archive_rule(code: str, check: Callable[[defects.Archive], Iterator[Hit]]) -> Check:
    """The rule of one archive defect: its hits, and those ``verify_record`` only counted."""

    def run(w: WheelFacts, policy: Policy) -> Iterator[Hit | Omitted]:
        more = sum(
            n for kind, n in w.record_problems_omitted.items() if defects.RECORD_KINDS.get(kind) == code
        )
        if more:
            yield Omitted(more)
        yield from check(w)

    run.__name__ = run.__qualname__ = check.__name__
    return run


for _code, _check in defects.CHECKS.items():  # TW401-403, TW407-411, TW414, each in its words
    rule(_code)(_archive_rule(_code, _check))


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
        if b.member in w.device_code:
            continue  # the accelerator's code, on evidence (TW417 says so)
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


@rule("TW417")
def device_side_code(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    """Info, never an error: the file is not the host's, and the package's own manifest and
    loader say so (``analysis.device_code``); reported so that nobody mistakes the silence of
    TW405 for a judgement of it."""
    platforms = ", ".join(sorted({t.platform for t in (w.contents.filename_tags or w.contents.wheel_tags)}))
    for b in w.binaries:
        manifest = w.device_code.get(b.member)
        if manifest is not None:
            archs = ", ".join(sorted({s.facts.arch for s in b.analysis.slices}))
            yield (
                b.member,
                f"is {archs} code for an accelerator's own cores, not for the host: {manifest} names it as a "
                "kernel and no Python file or library of the package loads it, so it is not judged against "
                f"{platforms} (TW405); the device runtime loads it",
            )


@rule("TW406")
def binary_unreadable(w: WheelFacts, policy: Policy) -> Iterator[Hit]:
    for u in w.unreadable:
        yield u.member, f"cannot be read ({u.error}): rebuild it, or drop it from the wheel"


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
        from torchwheel import safejson  # only a wheel that has the file

        doc = safejson.load(c.side_file, SIDE_FILE, side_shape(), reference="wheel-invalid")
    except InputError as exc:
        yield where, f"{exc}: `torchwheel tag` rewrites it"
        return
    declared = sorted(set(c.wheel_fields.get(TORCH_ABI_FIELD, [])))
    if len(declared) == 1 and doc["torch_abi"] != declared[0]:
        yield (
            where,
            (
                f"says torch_abi {quoted(doc['torch_abi'], 40)}, WHEEL {TORCH_ABI_FIELD} says {quoted(declared[0], 40)}: "
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
    version = comparable_version(w.metadata.version or c.filename_version or "")
    if isinstance(version, Version) and version.local:
        yield (
            "",
            (
                f"version {version} has a local label (+{version.local}): PyPI refuses local versions at "
                "upload; serve it from your own index (`torchwheel index`), or give PyPI the one build "
                "it gets without the label (`torchwheel unlabel -w DIR WHEEL` writes it)"
            ),
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
