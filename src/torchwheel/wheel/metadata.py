"""The metadata files of a wheel as torchwheel reads them: ``WHEEL`` fields, the parts of
``METADATA`` that torchwheel judges, and the names of what ``tag`` adds to them.

``tag`` writes the torch ABI into ``WHEEL`` (``Torch-ABI:``) and the per-library facts into
``.dist-info/torchwheel.json``, never into ``METADATA``: twine and PyPI refuse unknown
METADATA fields. Every command that reads those back takes the names from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.parser import HeaderParser

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

SIDE_FILE = "torchwheel.json"  # the facts `tag` records in .dist-info (tagging/plan.py)
TORCH_ABI_FIELD = "Torch-ABI"  # the WHEEL field `tag` writes
TORCH_ABI_BUILDS_FIELD = "Torch-ABI-Builds"  # beside it, for per-release builds: 2.4, 2.5, ...


def parse_wheel_fields(text: str) -> dict[str, list[str]]:
    msg = HeaderParser().parsestr(text)
    fields: dict[str, list[str]] = {}
    for key, value in msg.items():
        fields.setdefault(key, []).append(str(value).strip())
    return fields


@dataclass(frozen=True)
class MetadataFacts:
    requires_python: SpecifierSet | None
    torch_requirements: tuple[Requirement, ...]
    problems: tuple[str, ...]


def parse_metadata(text: str) -> MetadataFacts:
    """Only the fields torchwheel judges; full validation belongs to ``packaging.metadata``.

    We read with the plain header parser instead of ``Metadata.from_email(validate=True)``
    because one malformed unrelated field must not hide the torch facts: problems are
    collected and reported as findings.
    """
    msg = HeaderParser().parsestr(text)
    problems: list[str] = []
    requires_python: SpecifierSet | None = None
    if msg.get("Requires-Python"):
        try:
            requires_python = SpecifierSet(str(msg["Requires-Python"]))
        except InvalidSpecifier:
            problems.append(f"Requires-Python {msg['Requires-Python']!r} is not a valid specifier")
    torch: list[Requirement] = []
    for raw in msg.get_all("Requires-Dist") or []:
        try:
            req = Requirement(str(raw))
        except InvalidRequirement:
            problems.append(f"Requires-Dist {raw!r} is not a valid requirement")
            continue
        if req.name.lower() == "torch":
            torch.append(req)
    for key in ("Metadata-Version", "Name", "Version"):
        if not msg.get(key):
            problems.append(f"METADATA has no {key}")
    return MetadataFacts(requires_python, tuple(torch), tuple(problems))
