"""The metadata files of a wheel as torchwheel reads them: ``WHEEL`` fields, the parts of
``METADATA`` that torchwheel judges, the names of what ``tag`` adds to them, and what in
them installers refuse or that contradicts itself.

``tag`` writes the torch ABI into ``WHEEL`` (``Torch-ABI:``) and the per-library facts into
``.dist-info/torchwheel.json``, never into ``METADATA``: twine and PyPI refuse unknown
METADATA fields. Every command that reads those back takes the names, and the one reading
of the ``Torch-ABI`` value, from here.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from torchwheel import limits
from torchwheel.errors import clipped, quoted
from torchwheel.frozen import frozen
from torchwheel.version import FeatureVersion

if TYPE_CHECKING:
    from torchwheel.safejson import Object
from torchwheel.wheel.headers import parse_headers

SIDE_FILE = "torchwheel.json"  # the facts `tag` records in .dist-info (tagging/plan.py)
TORCH_ABI_FIELD = "Torch-ABI"  # the WHEEL field `tag` writes
TORCH_ABI_BUILDS_FIELD = "Torch-ABI-Builds"  # beside it, for per-release builds: 2.4, 2.5, ...
# beside it, for one unstable build: the torch minors whose exports hold all its imports
TORCH_ABI_EXPORTS_FIELD = "Torch-ABI-Exports"
TORCH_BUILD_FIELD = "Torch-Build"  # the torch builds it loads on: any, or cpu, cuda-13, rocm-7, xpu
TORCH_GPU_FIELD = "Torch-GPU"  # its CUDA images, when it has any: sm_80, sm_90a, compute_90
# one line per part its import goes on without: "optional; Torch-ABI=2.11; Torch-Build=cuda-13;
# files=pkg/_C_cuda.so" (the fields above, for those files; ``torchabi.need.OptionalPart``)
TORCH_ABI_OPTIONAL_FIELD = "Torch-ABI-Optional"
# in such a line, the torch release from which the package's own version check loads those
# files ("conditional; ...; loaded-from=2.13; files=..."): older torches never load them
OPTIONAL_LOADED_FROM_KEY = "loaded-from"


@functools.cache
def side_shape() -> Object:
    """The side file's shape, as far as any reader relies on it (tagging/plan.py writes it;
    what each library's facts hold is docs/reference/json.md's and may grow: other keys are taken as
    they are). Built on first use: only a wheel that has the file needs the schema checker."""
    from torchwheel.safejson import ANY, Int, List, Object, Str

    return Object(
        {
            "schema_version": Int(1, 1),
            "generator": Str(),
            "torch_abi": Str(),
            "libraries": List(Object({"member": Str()}, required=("member",), other=ANY)),
        },
        required=("schema_version", "torch_abi", "libraries"),
        other=ANY,
    )


# WHEEL is read as email headers, whose names ignore case (installer and pip read it so);
# the fields torchwheel reads get one spelling, whatever the file's.
_WHEEL_NAMES = {n.lower(): n for n in ("Wheel-Version", "Generator", "Root-Is-Purelib", "Tag", "Build")}
_WHEEL_NAMES[TORCH_ABI_FIELD.lower()] = TORCH_ABI_FIELD
_WHEEL_NAMES[TORCH_ABI_BUILDS_FIELD.lower()] = TORCH_ABI_BUILDS_FIELD
_WHEEL_NAMES[TORCH_ABI_EXPORTS_FIELD.lower()] = TORCH_ABI_EXPORTS_FIELD
_WHEEL_NAMES[TORCH_BUILD_FIELD.lower()] = TORCH_BUILD_FIELD
_WHEEL_NAMES[TORCH_GPU_FIELD.lower()] = TORCH_GPU_FIELD
_WHEEL_NAMES[TORCH_ABI_OPTIONAL_FIELD.lower()] = TORCH_ABI_OPTIONAL_FIELD
_FLOOR = re.compile(r"(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?", re.ASCII)  # what `tag` writes: 2.10, 2.10.1


def parse_wheel_fields(text: str) -> dict[str, list[str]]:
    msg = parse_headers(text)
    fields: dict[str, list[str]] = {}
    for key, value in msg.items():
        fields.setdefault(_WHEEL_NAMES.get(key.lower(), key), []).append(str(value).strip())
    return fields


def wheel_problems(text: str) -> list[str]:
    """What makes ``installer`` refuse a WHEEL file, or read it otherwise than pip does.

    A folded field (``Wheel-Version:\\n 1.0``) is one pip reads stripped and installer reads
    with its line break, refusing the wheel; a second Wheel-Version says two things."""
    problems: list[str] = []
    msg = parse_headers(text)
    for key, value in msg.items():
        if "\n" in value or "\r" in value:
            problems.append(
                f"WHEEL field {quoted(key, 40)} is folded over several lines: installer refuses it"
            )
    fields = parse_wheel_fields(text)
    versions = fields.get("Wheel-Version", [])
    if not versions or not versions[0]:
        problems.append("WHEEL has no Wheel-Version: installers refuse it")
    elif len(versions) > 1:
        problems.append(f"WHEEL has {len(versions)} Wheel-Version fields: a field that may appear once")
    elif versions[0].split(".")[0] != "1":
        problems.append(f"Wheel-Version {clipped(versions[0], 40)} is not 1.x: installers refuse it")
    tags = fields.get("Tag", [])
    if not tags:
        problems.append("WHEEL has no Tag lines: add one per tag in the file name")
    bad = next((t for t in tags if len(t.split("-")) != 3 or not all(t.split("-"))), None)
    if bad is not None:
        problems.append(f"WHEEL Tag {quoted(bad, 60)} is not interpreter-abi-platform")
    return problems


def torch_abi_floor(value: str) -> FeatureVersion:
    """The stable floor a ``Torch-ABI`` value names (``2.10``, ``2.10.1``): exactly what
    ``tag`` writes; ``ValueError`` for anything else (``-1``, ``99999999999.0``, ``2.10+x``)."""
    match = _FLOOR.fullmatch(value.strip())
    if match is None:
        raise ValueError(
            f"{quoted(value.strip(), 40)} is neither a version (X.Y or X.Y.Z), 'unstable', 'any' nor 'none'"
        )
    major, minor, patch = (int(g or 0) for g in match.groups())
    return FeatureVersion(major, minor, patch)  # ValueError past 255: no torch has such a release


def check_torch_abi_lines(values: list[str]) -> None:
    """WHEEL's ``Torch-ABI`` lines say one thing ``tag`` writes (a stable floor, ``unstable``,
    ``any`` or ``none``: ``torchabi.need.declared_need`` reads it), or ``ValueError``."""
    distinct = sorted({v.strip() for v in values})
    if len(distinct) > 1:
        shown = ", ".join(quoted(v, 40) for v in distinct[:3])
        raise ValueError(f"WHEEL has {len(values)} {TORCH_ABI_FIELD} lines that disagree ({shown})")
    if distinct and distinct[0] not in ("unstable", "any", "none"):
        torch_abi_floor(distinct[0])


@frozen
class MetadataFacts:
    requires_python: SpecifierSet | None
    torch_requirements: tuple[Requirement, ...]
    problems: tuple[str, ...]
    name: str | None = None  # as METADATA spells it (the first Name field)
    version: str | None = None  # None too when it is past max-version-length (``overlong`` says so)
    # every valid Requires-Dist (the accelerator rules read ``nvidia-*-cu12`` names in them)
    requirements: tuple[Requirement, ...] = ()
    # the fields past max-version-length (TW416), left unparsed: packaging would convert their digits
    overlong: tuple[str, ...] = ()


_WORD = re.compile(r"[^\s,;()<>=!~'\"\[\]]+")


def longest_word(text: str) -> int:
    """The longest word of a requirement or version specifier (a version, a name, a marker's
    value): packaging converts the digits of each version word with ``int()``, which refuses
    4,300 of them with a ValueError (and is slow long before), so a text whose words are past
    ``max-version-length`` is not given to packaging at all."""
    return max((len(w) for w in _WORD.findall(text)), default=0)


def overlong(field: str, text: str) -> str | None:
    limit = limits.current().max_version_length
    whole = field in ("Version", "Build")
    n = len(text) if whole else longest_word(text)
    if n <= limit.value:
        return None
    what = f"{field} {quoted(text, 60)}" + (" has" if whole else " holds a word of")
    return f"{what} {n:,} characters, over {limit.name} = {limit.value:,} ({limit.env} raises it)"


# Core metadata fields that may appear once (core metadata spec; ``packaging.metadata``
# refuses a repeated one): readers then take one or the other, two projects in one file.
_SINGLE = (
    "metadata-version", "name", "version", "summary", "description-content-type", "home-page",
    "download-url", "author", "author-email", "maintainer", "maintainer-email", "license",
    "license-expression", "requires-python",
)  # fmt: skip


def parse_metadata(text: str) -> MetadataFacts:
    """Only the fields torchwheel judges; full validation belongs to ``packaging.metadata``.

    We read with the plain header parser instead of ``Metadata.from_email(validate=True)``
    because one malformed unrelated field must not hide the torch facts: problems are
    collected and reported as findings. Repeated single fields are counted on the same
    parse (``packaging.metadata.parse_email`` would parse 200,000 headers a second time).
    """
    msg = parse_headers(text)
    problems: list[str] = []
    overlong: list[str] = []
    requires_python: SpecifierSet | None = None
    if msg.get("Requires-Python") and not _past(overlong, "Requires-Python", str(msg["Requires-Python"])):
        try:
            requires_python = SpecifierSet(str(msg["Requires-Python"]))
        except InvalidSpecifier:
            problems.append(f"Requires-Python {msg['Requires-Python']!r} is not a valid specifier")
    every: list[Requirement] = []
    for raw in msg.get_all("Requires-Dist") or []:
        if _past(overlong, "Requires-Dist", str(raw)):
            continue
        try:
            every.append(Requirement(str(raw)))
        except InvalidRequirement:
            problems.append(f"Requires-Dist {raw!r} is not a valid requirement")
    torch = [req for req in every if req.name.lower() == "torch"]
    for key in ("Metadata-Version", "Name", "Version"):
        if not msg.get(key):
            problems.append(f"METADATA has no {key}")
    counts = Counter(key.lower() for key in msg)  # every field name, repeats too
    for key in _SINGLE:
        if counts[key] > 1:
            problems.append(f"METADATA has {counts[key]} {key.title()} fields: a field that may appear once")
    name = str(msg["Name"]).strip() if msg.get("Name") else None
    version = str(msg["Version"]).strip() if msg.get("Version") else None
    if version is not None and _past(overlong, "Version", version):
        version = None
    return MetadataFacts(
        requires_python, tuple(torch), tuple(problems), name, version, tuple(every), tuple(overlong)
    )


def _past(found: list[str], field: str, text: str) -> bool:
    """Whether ``text`` is past max-version-length (then said in ``found``)."""
    problem = overlong(field, text)
    if problem is not None:
        found.append(problem)
    return problem is not None
