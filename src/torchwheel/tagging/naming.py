"""The names that let builds of one release for different torch targets coexist: a build
tag (file name and WHEEL ``Build``) and a local version label (``--local-label torch2.12``
-> ``1.0+torch2.12``).

A local label is a new version everywhere it is written: the file name, ``METADATA``
``Version`` and the ``.dist-info`` / ``.data`` directory names (members copied raw under the
new names, RECORD rewritten). Keeping the old directory name is not an option: ``pip
freeze`` then reports ``1.0`` while ``pip list`` reports ``1.0+torch2.12``, and ``wheel
tags`` cannot find RECORD.
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from torchwheel import limits
from torchwheel.analysis.wheelfacts import WheelFacts
from torchwheel.errors import InputError, quoted
from torchwheel.tagging.tag_options import TagOptions

# the binary distribution format: a digit first; a file name's parts hold only letters, digits,
# "_" and "." (anything else is escaped to "_" by the spec), so no "/", "..", "-" or space
_BUILD_TAG = re.compile(r"\d[A-Za-z0-9_.]*")


def plain_wheel_only(w: WheelFacts, where: str, not_a_wheel: str, variant_advice: str) -> None:
    """``tag`` and ``unlabel`` rename only a plain wheel file: a lone binary or a folder has no
    name to rewrite, and a wheel-variant file's name is derived from its plain wheel's, so
    renaming it alone would part the two. Each command says what to do instead."""
    c = w.contents
    if not w.is_wheel_file:
        raise InputError(f"{c.path}: {not_a_wheel}", reference="not-a-wheel")
    if c.variant is not None:
        raise InputError(
            f"{where}: a wheel-variant file (label {c.variant!r}): {variant_advice}",
            reference="rewrite-refused",
        )


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
        raise InputError("METADATA has no Version to add a local label to", reference="wheel-invalid")
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
        limits.check_version("--local-label", opts.local_label)
        try:
            new_version = Version(f"{Version(version).public}+{opts.local_label}")
        except InvalidVersion as exc:
            raise InputError(
                f"--local-label {opts.local_label!r}: not a valid local version label",
                reference="bad-option-value",
            ) from exc
        if str(new_version) != version:
            version = str(new_version)
            metadata = _set_version(metadata, version)
            notes.append(
                f"version {version} (local label; file name and METADATA): PyPI refuses local versions, "
                "serve this wheel from your own index (docs/authors.md)"
            )
    if opts.build_tag is not None:
        limits.check_version("--build-tag", opts.build_tag)
        if not _BUILD_TAG.fullmatch(opts.build_tag):
            raise InputError(
                f"--build-tag {quoted(opts.build_tag, 60)}: a digit, then letters, digits, '_' and '.' only "
                "(the binary distribution format)",
                reference="bad-option-value",
            )
        if build != opts.build_tag:
            build = opts.build_tag
            kept = [ln for ln in wheel_text.splitlines() if ln.strip() and not ln.startswith("Build:")]
            wheel_text = "\n".join([*kept, f"Build: {build}"]) + "\n"
            notes.append(f"build tag {build} (file name and WHEEL Build)")
    filename = "-".join([name, version, *([build] if build else []), *tags]) + ".whl"
    return filename, metadata, wheel_text, notes


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
