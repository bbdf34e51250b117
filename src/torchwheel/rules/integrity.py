"""TW4xx: the wheel is internally consistent: RECORD, tags, platform, metadata files."""

from __future__ import annotations

from collections.abc import Iterator

from torchwheel.analysis.platforms import expected
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.rules.registry import Hit, Omitted, Policy, rule

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
    if not w.is_wheel_file:
        return
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
    platforms = {t.platform for t in (w.contents.filename_tags or w.contents.wheel_tags)}
    if not platforms or not w.binaries:
        return
    if platforms == {"any"}:
        yield "", "the wheel is tagged for any platform but ships compiled files: tag it for their platform"
        return
    for b in w.binaries:
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
    version = (c.wheel_fields.get("Wheel-Version") or [""])[0]
    if not version:
        yield f"{c.dist_info}/WHEEL", "WHEEL has no Wheel-Version: installers refuse it"
    elif version.split(".")[0] != "1":
        yield f"{c.dist_info}/WHEEL", f"Wheel-Version {version} is not 1.x: installers refuse it"
    if not c.wheel_tags:
        yield f"{c.dist_info}/WHEEL", "WHEEL has no Tag lines: add one per tag in the file name"


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
