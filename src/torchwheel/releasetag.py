"""``tag`` over a release: one identical torch requirement set for every wheel, and the
names (build tag, local version label) that let builds for different torch targets coexist.

Installers read one METADATA per release (uv assumes every wheel of a version has the same),
so the per-wheel requirements that ``tag`` derives are merged into one set: identical
requirements stay as they are; requirements that differ by platform become one line per
platform family with a ``sys_platform`` marker (the most common one takes ``!=`` for the
others, so a platform nobody built for keeps the common floor). A release whose wheels
disagree *within* one platform family (or a stable beside an unstable build: TW603) cannot
be expressed with markers and is refused with what to do instead.

Local version label (``--local-label torch2.12`` -> ``1.0+torch2.12``) is a new version
everywhere it is written: the file name, ``METADATA`` ``Version`` and the ``.dist-info`` /
``.data`` directory names (members copied raw under the new names, RECORD rewritten).
Keeping the old directory name is not an option: ``pip freeze`` then reports ``1.0`` while
``pip list`` reports ``1.0+torch2.12``, and ``wheel tags`` cannot find RECORD.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from torchwheel.errors import InputError
from torchwheel.metadataedit import rewrite_requirements, verify_requirements

if TYPE_CHECKING:
    from torchwheel.retag import TagOptions
    from torchwheel.wheelfacts import WheelFacts

_BUILD_TAG = re.compile(r"^\d[^-\s]*$")  # the binary distribution format: starts with a digit


def platform_family(w: WheelFacts) -> str | None:
    """``sys_platform`` of a wheel's platform tags, None for ``any`` or a mix."""
    found = set()
    for t in w.contents.filename_tags:
        p = t.platform
        if p == "any":
            return None
        found.add("darwin" if p.startswith("macosx") else "win32" if p.startswith("win") else "linux")
    return found.pop() if len(found) == 1 else None


def _with_marker(req: str, family_marker: str) -> str:
    r = Requirement(req)
    marker = f"({family_marker}) and ({r.marker})" if r.marker else family_marker
    r.marker = Marker(marker)
    return str(r)


def shared_requirements(group: list[WheelFacts], opts: TagOptions) -> tuple[str, ...]:
    """The one torch requirement set for every wheel of ``group`` (one release)."""
    from torchwheel.retag import plan
    from torchwheel.wheelfacts import parse_metadata, wheel_torch_abi

    kinds = {wheel_torch_abi(w).kind for w in group} - {"none"}
    if kinds == {"stable", "unstable"}:
        raise InputError(
            f"{group[0].contents.filename_name} {group[0].contents.filename_version}: stable and unstable "
            "builds in one release cannot share a torch requirement (TW603): tag the unstable build "
            "with --local-label torchX.Y or publish it on a per-target index"
        )
    per_family: dict[str | None, tuple[str, ...]] = {}
    for w in group:
        meta = plan(w, opts).members[f"{w.contents.dist_info}/METADATA"].decode()
        reqs = tuple(sorted(str(r) for r in parse_metadata(meta).torch_requirements))
        family = platform_family(w)
        if per_family.setdefault(family, reqs) != reqs:
            raise InputError(
                f"{w.contents.path}: its torch requirement {', '.join(reqs) or 'none'} differs from another "
                f"{family or 'platform-independent'} wheel of the same release; markers cannot tell them "
                "apart: give one a local label (--local-label) or a separate index"
            )
    sets = set(per_family.values())
    if len(sets) == 1:
        return sets.pop()
    if None in per_family:
        raise InputError(
            "a platform-independent wheel cannot share a release with wheels whose torch floors differ"
        )
    common, _ = Counter(per_family.values()).most_common(1)[0]
    out: list[str] = []
    others = sorted(f for f, reqs in per_family.items() if reqs != common and f is not None)
    for family in others:
        out += [_with_marker(r, f'sys_platform == "{family}"') for r in per_family[family]]
    rest = " and ".join(f'sys_platform != "{f}"' for f in others)
    out += [_with_marker(r, rest) for r in common]
    return tuple(out)


def apply_requirements(text: str, reqs: tuple[str, ...], where: str) -> tuple[str, list[str]]:
    """Replace every torch ``Requires-Dist`` line by ``reqs`` (in order), nothing else."""
    notes: list[str] = []

    def edit(found: list[Requirement]) -> tuple[dict[int, str | None], str | None]:
        if [str(r) for r in found] == list(reqs):
            return {}, None
        notes.append(f"Requires-Dist torch (one set for the release): {'; '.join(reqs)}")
        replaced: dict[int, str | None] = {k: (reqs[k] if k < len(reqs) else None) for k in range(len(found))}
        return replaced, None

    text, claimed = rewrite_requirements(text, "torch", edit)
    for extra in reqs[len(claimed) :]:  # more lines than the wheel had: added one by one

        def add(_found: list[Requirement], line: str = extra) -> tuple[dict[int, str | None], str | None]:
            return {}, line

        text, claimed = rewrite_requirements(text, "torch", add)
    verify_requirements(text, "torch", list(reqs), where)
    return text, notes


def _set_version(metadata: str, version: str) -> str:
    """The ``Version:`` header line only (the header block ends at the first empty line)."""
    head, sep, body = metadata.partition("\n\n")
    lines = head.split("\n")
    for i, line in enumerate(lines):
        if line.lower().startswith("version:"):
            eol = "\r" if line.endswith("\r") else ""
            lines[i] = f"Version: {version}{eol}"
            break
    else:
        raise InputError("METADATA has no Version to add a local label to")
    return "\n".join(lines) + sep + body


def naming(
    filename: str, metadata: str, wheel_text: str, opts: TagOptions
) -> tuple[str, str, str, list[str]]:
    """File name, METADATA and WHEEL with ``opts.build_tag`` / ``opts.local_label`` applied."""
    if opts.build_tag is None and opts.local_label is None:
        return filename, metadata, wheel_text, []
    parts = filename[: -len(".whl")].split("-")
    name, version, tags = parts[0], parts[1], parts[-3:]
    build = parts[2] if len(parts) == 6 else None
    notes: list[str] = []
    if opts.local_label is not None:
        try:
            new_version = Version(f"{Version(version).public}+{opts.local_label}")
        except InvalidVersion as exc:
            raise InputError(f"--local-label {opts.local_label!r}: not a valid local version label") from exc
        if str(new_version) != version:
            version = str(new_version)
            metadata = _set_version(metadata, version)
            notes.append(f"version {version} (local label; file name and METADATA)")
    if opts.build_tag is not None:
        if not _BUILD_TAG.match(opts.build_tag):
            raise InputError(f"--build-tag {opts.build_tag!r}: must start with a digit and contain no '-'")
        if build != opts.build_tag:
            build = opts.build_tag
            kept = [ln for ln in wheel_text.splitlines() if ln.strip() and not ln.startswith("Build:")]
            wheel_text = "\n".join([*kept, f"Build: {build}"]) + "\n"
            notes.append(f"build tag {build} (file name and WHEEL Build)")
    filename = "-".join([name, version, *([build] if build else []), *tags]) + ".whl"
    return filename, metadata, wheel_text, notes


def release_sets(wheels: list[WheelFacts], opts: TagOptions, mode: bool | None) -> dict[int, tuple[str, ...]]:
    """``id(wheel)`` -> the requirement set of its release. ``mode``: True (``--release``: the
    wheels must be one release), None (automatic: every release given with 2+ wheels),
    False (``--no-release``: each wheel on its own)."""
    from torchwheel.rules.release import release_key, releases

    if mode is False:
        return {}
    if mode is True:
        keys = {release_key(w) for w in wheels}
        if len(keys) != 1 or None in keys:
            shown = ", ".join(sorted(f"{k[0]} {k[1]}" if k else "not a wheel file" for k in keys))
            raise InputError(f"--release: the wheels given are not one release ({shown})")
        groups = [tuple(wheels)]
    else:
        groups = releases(wheels)
    out: dict[int, tuple[str, ...]] = {}
    for group in groups:
        reqs = shared_requirements(list(group), opts)
        out.update({id(w): reqs for w in group})
    return out


def renamed_dist_info(dist_info: str, members: list[str], filename: str) -> tuple[str | None, dict[str, str]]:
    """The ``.dist-info`` (and ``.data``) directory for the file name's version, and the
    member renames that takes; (None, {}) when the name already matches.

    A local label changes the version, and the directory name carries it
    (``{name}-{version}.dist-info``): ``pip freeze`` reads the version from the directory
    name, ``pip list`` from METADATA, and ``wheel tags`` looks for RECORD under it, so the
    three must agree. The members are copied raw under their new names.
    """
    project, _, old_version = dist_info.removesuffix(".dist-info").rpartition("-")
    version = filename[: -len(".whl")].split("-")[1]
    if version == old_version:
        return None, {}
    new = f"{project}-{version}.dist-info"
    old_data, new_data = f"{project}-{old_version}.data/", f"{project}-{version}.data/"
    renames: dict[str, str] = {}
    for m in members:
        if m.startswith(dist_info + "/"):
            renames[m] = new + m[len(dist_info) :]
        elif m.startswith(old_data):
            renames[m] = new_data + m[len(old_data) :]
    return new, renames
