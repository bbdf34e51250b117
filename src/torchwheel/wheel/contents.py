"""What a wheel-shaped input holds, as plain data: its name and tags, its metadata files,
its RECORD and its member list. Every source (``archive``, ``sources``) produces one; the
analysis reads nothing but this and the members' bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.tags import InvalidTag, Tag, parse_tag
from packaging.utils import InvalidWheelFilename, NormalizedName, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from torchwheel import limits
from torchwheel.errors import InputError, InvalidValue, quoted
from torchwheel.frozen import frozen
from torchwheel.wheel.metadata import parse_metadata, parse_wheel_fields
from torchwheel.wheel.record import RecordEntry, RecordProblem

_COMPILED_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
_VARIANT_LABEL = re.compile(r"^[0-9a-z_.]+$")  # wheel-variant drafts (PEP 825)


def is_compiled_name(name: str) -> bool:
    """Members the binary readers look at: extensions and bundled libraries, incl. .so.N."""
    base = name.rsplit("/", 1)[-1]
    if base.endswith(_COMPILED_SUFFIXES):
        return True
    return ".so." in base and base.rsplit(".so.", 1)[1].replace(".", "").isdigit()


@dataclass
class WheelContents:
    """What the metadata files and the archive say; binaries are added by the caller."""

    path: str
    filename_name: str
    filename_version: str
    filename_tags: frozenset[Tag]
    build_tag: str | None
    dist_info: str
    wheel_text: str
    metadata_text: str
    record: dict[str, RecordEntry] | None
    members: list[str] = field(default_factory=list)
    side_file: bytes | None = None  # .dist-info/torchwheel.json of an earlier `tag`, if any
    record_problems: list[RecordProblem] = field(default_factory=list)  # found while listing members
    installed: bool = False  # an installed distribution: RECORD follows the installed-project spec
    variant: str | None = None  # the wheel-variant label of the file name (draft standards)
    # why the file name is no wheel name (packaging's reason), for a wheel read all the same
    # (``WheelArchive(lenient_name=True)``): name and version then come from what parses
    name_problem: str | None = None

    @classmethod
    def lone_binary(cls, path: str, name: str) -> WheelContents:
        """A compiled file given alone: one member, no metadata, so only binary rules apply."""
        return cls(
            path=path,
            filename_name=name,
            filename_version="",
            filename_tags=frozenset(),
            build_tag=None,
            dist_info="",
            wheel_text="",
            metadata_text="",
            record=None,
            members=[name],
        )

    @property
    def wheel_fields(self) -> dict[str, list[str]]:
        return parse_wheel_fields(self.wheel_text)

    @property
    def valid_name(self) -> str | None:
        """The file name this wheel should carry, from METADATA's Name and Version (else the
        .dist-info's) and WHEEL's Tag lines that parse; None when those do not make one."""
        meta = parse_metadata(self.metadata_text)
        project, _, version = self.dist_info.removesuffix(".dist-info").partition("-")
        return suggested_name(meta.name or project, meta.version or version, self.wheel_fields.get("Tag", []))

    @property
    def dist_info_matches(self) -> bool:
        """Does ``.dist-info`` name the file name's project? installer refuses a wheel where
        it does not (``WheelFile.dist_info_dir``: the part before the version, canonicalized)."""
        return canonicalize_name(self.dist_info.rsplit("-", 2)[0]) == canonicalize_name(self.filename_name)

    @property
    def wheel_tags(self) -> frozenset[Tag]:
        lines = [line.strip().split("-") for line in self.wheel_fields.get("Tag", [])]
        lines = [parts for parts in lines if len(parts) == 3]
        tag_set_size("WHEEL's Tag lines", lines)
        return frozenset(
            Tag(i, a, p)
            for parts in lines
            for i in parts[0].split(".")
            for a in parts[1].split(".")
            for p in parts[2].split(".")
        )


def tag_set_size(what: str, tag_triples: list[list[str]]) -> int:
    """The size of the expanded tag set, checked against ``max-tags`` before anything is
    expanded: dotted parts multiply (``a.b-c.d-e.f`` is 8 tags), so 5 KB can ask for 10^9."""
    total = 0
    for parts in tag_triples:
        product = 1
        for part in parts:
            product *= part.count(".") + 1
        total += product
    limits.current().max_tags.check(f"{what} expand to a tag set whose size", total)
    return total


@frozen
class WheelName:
    """A wheel file name, including the wheel-variant form that packaging rejects."""

    name: NormalizedName
    version: Version
    build: tuple[int, str] | tuple[()]
    tags: frozenset[Tag]
    variant: str | None


class InvalidWheelName(InvalidValue):
    """A file name packaging refuses; ``reason`` is packaging's, without the name repeated."""

    fixed_reference = "bad-wheel-name"

    def __init__(self, filename: str, reason: str) -> None:
        super().__init__(f"{filename}: not a valid wheel file name ({reason})", value=filename)
        self.filename, self.reason = filename, reason


def _reason(exc: InvalidWheelFilename, filename: str) -> str:
    """packaging's message without the file name it quotes at the end, and with the part of
    the name it means where packaging does not say (the tags)."""
    text = str(exc)
    cut = max(text.rfind(": '"), text.rfind(" in '"))
    text = text[:cut] if cut > 0 else text
    if text.startswith("Invalid wheel filename (") and text.endswith(")"):
        text = text[len("Invalid wheel filename (") : -1]
    text = text[:1].lower() + text[1:]
    parts = filename.removesuffix(".whl").split("-")
    if "tag" in text and len(parts) >= 5:
        text += f" in {quoted('-'.join(parts[-3:]), 60)}"
    return text


def parse_wheel_name(filename: str) -> WheelName:
    """``packaging.utils.parse_wheel_filename``, plus the draft variant label as a last
    dash-separated part (``name-1.0-cp39-abi3-linux_x86_64-torch212.whl``). packaging
    decides everything else; the label is only peeled off when packaging refuses the name."""
    try:
        name, version, build, tags = parse_wheel_filename(filename)
        return WheelName(name, version, build, tags, None)
    except InvalidWheelFilename as first:
        stem, _, label = filename.removesuffix(".whl").rpartition("-")
        if not filename.endswith(".whl") or not _VARIANT_LABEL.match(label) or stem.count("-") < 4:
            raise InvalidWheelName(filename, _reason(first, filename)) from first
        try:
            name, version, build, tags = parse_wheel_filename(stem + ".whl")
        except InvalidWheelFilename:
            raise InvalidWheelName(filename, _reason(first, filename)) from first
        return WheelName(name, version, build, tags, label)


def parse_filename(filename: str) -> WheelName:
    """packaging's parse (and the variant label's), after bounding the compressed tag set it
    would expand and the version and build tag it would convert (``max-version-length``)."""
    parts = filename.removesuffix(".whl").split("-")
    for what, part in zip(("the file name's version", "the file name's build tag"), parts[1:3], strict=False):
        limits.check_version(what, part)
    for tags in {tuple(parts[-3:]), tuple(parts[-4:-1])}:  # with and without a variant label
        if len(parts) >= 5 and len(tags) == 3:
            tag_set_size(f"the file name's tags {quoted('-'.join(tags), 60)}", [list(tags)])
    return parse_wheel_name(filename)


_PROJECT = re.compile(r"^[a-z0-9](?:[a-z0-9._]*[a-z0-9])?$", re.IGNORECASE)  # a name part: no '-'


def salvaged(filename: str) -> tuple[str, str]:
    """(project, version) of a file name packaging refuses, where those two parts still parse
    (``k2-1.23.4-py3.9-none-any.whl``: the tags are what is wrong), else empty strings: pip
    reads such a name with its own, looser pattern, so it is the project the user asked for.
    Both or neither: a version that does not parse says the parts are not where they belong
    (``not-a-valid-wheel-name.whl``), and its first part is then no project either."""
    parts = filename.removesuffix(".whl").split("-")
    if (
        len(parts) not in (5, 6)
        or not _PROJECT.match(parts[0])
        or len(parts[1]) > limits.current().max_version_length.value
    ):
        return "", ""
    try:
        return parts[0], str(Version(parts[1]))
    except InvalidVersion:
        return "", ""


def project_of(filename: str) -> NormalizedName | None:
    """The project a wheel's file name is for, also when packaging refuses the name but its
    project part parses (a folder holding it then has a project to report it under)."""
    try:
        return parse_filename(filename).name
    except (InputError, InvalidVersion, ValueError):
        name = salvaged(filename)[0] if filename.endswith(".whl") else ""
        return canonicalize_name(name) if name else None


def suggested_name(project: str, version: str, tag_lines: list[str]) -> str | None:
    """``{name}-{version}-{tags}.whl`` from metadata, escaped as the wheel spec says, with the
    Tag lines that parse (bdist_wheel wrote ``Tag: 9-none-any`` for ``py3.9``), or None when
    no valid name results (no valid tag, tags that no one compressed set spells)."""
    tags: set[Tag] = set()
    for line in tag_lines[:64]:
        try:
            tags |= parse_tag(line.strip())
        except (InvalidTag, ValueError):
            continue
    parts = [sorted({getattr(t, f) for t in tags}) for f in ("interpreter", "abi", "platform")]
    if not tags or len(parts[0]) * len(parts[1]) * len(parts[2]) != len(tags):
        return None
    if len(version) > limits.current().max_version_length.value:
        return None
    try:
        name = f"{canonicalize_name(project).replace('-', '_')}-{Version(version)}-{'-'.join('.'.join(p) for p in parts)}.whl"
        parse_wheel_filename(name)
    except (InvalidVersion, InvalidWheelFilename):
        return None
    return name
