"""Every finding code torchwheel has, in one table: what it is called, how serious it is,
what it is about, which inputs it judges, and whether ``tag``/``repair`` refuse on it.

Codes never change meaning once released (like ruff's): tools and ``--ignore`` lists depend
on them. Each code's check is one function in the module of its group (``@rule("TW101")``),
and ``docs/reference/rules.md`` has one section per code.
"""

from __future__ import annotations

from typing import Literal

from torchwheel.frozen import frozen

Severity = Literal["error", "warning", "info"]


@frozen
class Scope:
    """Which inputs a rule judges.

    ``lone_binary``: also a compiled file given alone (no wheel metadata to judge);
    ``torch_itself``: also torch's own distribution, which defines the ABI that the
    TW1xx/TW2xx rules hold consumers to and cannot require itself (TW5xx);
    ``release``: the rule sees every wheel of one release at once (TW6xx), not one input.
    """

    lone_binary: bool
    torch_itself: bool
    release: bool = False


BINARY = Scope(lone_binary=True, torch_itself=True)  # any compiled file
CONSUMER_BINARY = Scope(lone_binary=True, torch_itself=False)  # a library that uses torch's ABI
WHEEL = Scope(lone_binary=False, torch_itself=True)  # the archive and its metadata
CONSUMER_WHEEL = Scope(lone_binary=False, torch_itself=False)  # a wheel that requires torch
RELEASE = Scope(lone_binary=False, torch_itself=False, release=True)


@frozen
class FixedBy:
    """The commands whose rewrite fixes a finding (each message and ``docs/reference/rules.md`` say so;
    ``tests/e2e/test_fixed_by.py`` holds the claim to the rewrite), and when, if not always."""

    commands: tuple[str, ...]
    when: str = ""


TAG = FixedBy(("torchwheel tag", "torchwheel repair"))
TAG_BUILD_TORCH = FixedBy(("torchwheel tag --build-torch X.Y", "torchwheel repair --build-torch X.Y"))
TAG_RELAX_PIN = FixedBy(
    ("torchwheel tag --relax-pin", "torchwheel repair --relax-pin"),
    "or `relax-pin = true` in `[tool.torchwheel]`",
)
TAG_NARROW = FixedBy(
    ("torchwheel tag", "torchwheel repair"),
    "with `--relax-pin` where the requirement admits no torch the binaries load on",
)
TAG_RELEASE = FixedBy(
    ("torchwheel tag --release",), "over every wheel of the release in one call, its default then"
)
TAG_RELEASE_MARKERS = FixedBy(
    TAG_RELEASE.commands,
    f"{TAG_RELEASE.when}; a requirement that already excludes the lower floor is loosened in the project first",
)
UNLABEL = FixedBy(("torchwheel unlabel -w DIR WHEEL",), "for the one build of a release that PyPI gets")
REPAIR_LINUX = FixedBy(
    ("torchwheel repair --repair-with 'auditwheel repair -w {repair_dir} {wheel}' -w DIR WHEEL",),
    "for a `linux_*` tag of an architecture manylinux has",
)
TAG_ABI3T = FixedBy(TAG.commands, "when a tag beside `abi3t` remains: `cp315-abi3.abi3t`")


@frozen
class Code:
    code: str
    name: str
    severity: Severity
    summary: str
    scope: Scope
    # the rewrite would be dishonest: a RECORD that disagrees with the files or METADATA that
    # does not parse (which bytes are right is not ours to guess), a marker that cannot be read
    blocks_rewrite: bool = False
    fixed_by: FixedBy | None = None


_E: Severity = "error"
_W: Severity = "warning"
_I: Severity = "info"
CODES: tuple[Code, ...] = (
    # TW1xx: the stable-ABI marker (rules/marker.py)
    Code("TW101", "marker-missing", _W, "a library uses the stable shim but declares no target", CONSUMER_BINARY),
    Code("TW102", "marker-hidden", _W, "the marker bytes are present but the symbol is not exported", CONSUMER_BINARY),
    Code("TW103", "marker-unknown-schema", _E, "a marker record has a schema this torchwheel cannot read", CONSUMER_BINARY, True),
    Code("TW104", "marker-disagree", _E, "one binary carries records of different targets", CONSUMER_BINARY),
    Code("TW105", "targets-differ", _W, "libraries of one wheel declare different targets", CONSUMER_BINARY),
    Code("TW106", "marker-unreadable", _E, "the exported marker symbol does not hold a record", CONSUMER_BINARY, True),
    Code("TW107", "target-not-a-release", _E, "the declared target is older than the first torch with the stable ABI", CONSUMER_BINARY, True),
    # TW2xx: the torch contract (rules/torch.py)
    Code("TW201", "target-too-old", _E, "the declared target is older than the imported shims need", CONSUMER_BINARY),
    Code("TW202", "unstable-in-stable", _E, "a library that declares the stable ABI imports unstable symbols", CONSUMER_BINARY),
    Code("TW203", "unknown-shim", _W, "imported shims no torch of the tables exports: newer than this torchwheel's tables", CONSUMER_BINARY, True),
    Code("TW204", "unstable-library", _W, "a library uses unstable libtorch symbols and is not allowlisted", CONSUMER_BINARY),
    Code("TW205", "stale-allowlist", _E, "an unstable-allowlist entry matches no unstable library", CONSUMER_BINARY),
    Code("TW206", "target-above-need", _I, "the declared target is newer than the imports need: the wheel loads on fewer torches than it could", CONSUMER_BINARY),
    Code("TW207", "newer-than-tables", _W, "a declared target, a torch requirement or unstable imports name a torch newer than this torchwheel's tables", CONSUMER_BINARY, True),
    # TW3xx: the CPython ABI (rules/cpython.py)
    Code("TW301", "abi3-not-limited", _E, "an abi3-tagged wheel contains a module outside the limited API", BINARY),
    Code("TW302", "suffix-tag-mismatch", _E, "a module's file-name suffix does not match the wheel tags", BINARY),
    Code("TW303", "limited-api-above-floor", _E, "a module uses limited-API symbols newer than the abi3 tag admits", BINARY, fixed_by=TAG),
    Code("TW304", "module-hook-missing", _E, "an extension module exports no init hook for its name", BINARY),
    Code("TW305", "abi3t-needs-modexport", _E, "an abi3t-tagged wheel has a module with only PyInit_", BINARY, fixed_by=TAG_ABI3T),
    Code("TW306", "pure-tag-with-binaries", _E, "a wheel tagged py3-none ships compiled extension modules", BINARY),
    # TW4xx: wheel integrity (rules/integrity.py)
    Code("TW401", "record-missing", _E, "the wheel has no RECORD", WHEEL, fixed_by=TAG),
    Code("TW402", "record-mismatch", _E, "a member's hash or size differs from RECORD", WHEEL, True),
    Code("TW403", "record-incomplete", _E, "RECORD and the archive list different files", WHEEL, True),
    Code("TW404", "tags-disagree", _W, "the file name's tags differ from the WHEEL Tag lines", WHEEL, fixed_by=TAG),
    Code("TW405", "platform-mismatch", _E, "a binary's format or architecture does not match the platform tag", WHEEL),
    Code("TW406", "binary-unreadable", _E, "a compiled member cannot be read as ELF, Mach-O or PE", WHEEL),
    Code("TW407", "metadata-invalid", _E, "METADATA or WHEEL is malformed", WHEEL, True),
    Code("TW408", "dist-info-mismatch", _E, "the .dist-info directory names another project than the file", WHEEL),
    Code("TW409", "metadata-mismatch", _E, "METADATA's Name or Version differs from the file name's", WHEEL, True),
    Code("TW410", "torch-abi-invalid", _E, "WHEEL Torch-ABI is not a value tag writes, or its lines disagree", WHEEL, fixed_by=TAG),
    Code("TW411", "member-name-uninstallable", _E, "a member's path cannot be installed as named", WHEEL, True),
    Code("TW412", "facts-file-invalid", _W, "the torchwheel.json facts file cannot be read or disagrees with WHEEL", WHEEL, fixed_by=TAG),
    Code("TW413", "local-version", _W, "a local version label (1.0+torch2.12): public registries refuse the upload", WHEEL, fixed_by=UNLABEL),
    Code("TW414", "filename-invalid", _E, "the file name is not a valid wheel name, though its archive and metadata are", WHEEL, True),
    Code("TW415", "platform-refused-by-pypi", _W, "a platform tag PyPI refuses at upload (linux_x86_64 from a plain pip wheel)", WHEEL, fixed_by=REPAIR_LINUX),
    Code("TW416", "version-too-long", _E, "a version, build tag or requirement holds a word past max-version-length", WHEEL, True),
    Code("TW417", "device-side-code", _I, "a library for an accelerator's own cores (a kernel manifest names it, no host loader reads it): not judged by the platform tag", WHEEL),
    # TW5xx: the torch requirement (rules/requirements.py)
    Code("TW501", "torch-requirement-missing", _W, "the wheel uses torch but does not require it", CONSUMER_WHEEL, fixed_by=TAG),
    Code("TW502", "torch-pinned-too-tight", _W, "a stable-ABI wheel pins torch tighter than its ABI needs", CONSUMER_WHEEL, fixed_by=TAG_RELAX_PIN),
    Code("TW503", "torch-requirement-too-loose", _E, "the torch requirement admits a torch the binaries cannot load on", CONSUMER_WHEEL, fixed_by=TAG_NARROW),
    Code("TW504", "unstable-torch-unpinned", _E, "an unstable-ABI wheel does not pin the torch minor it was built with", CONSUMER_WHEEL, fixed_by=TAG_BUILD_TORCH),
    Code("TW505", "builds-gap", _W, "the requirement admits torch releases no per-minor build of the wheel is for", CONSUMER_WHEEL),
    Code("TW507", "release-build-mismatch", _W, "a per-release build's imports are not exported by the torch release its name claims", CONSUMER_BINARY),
    # TW6xx: one release (rules/release_agreement.py)
    Code("TW601", "release-requirements-differ", _E, "wheels of one release declare different torch requirements", RELEASE, fixed_by=TAG_RELEASE),
    Code("TW602", "release-targets-differ", _W, "the stable-ABI targets of one release differ between platforms without markers to say so", RELEASE, fixed_by=TAG_RELEASE_MARKERS),
    Code("TW603", "release-stable-and-unstable", _E, "a stable-ABI wheel and a version-locked (unstable) wheel share one release", RELEASE),
    # TW7xx: the accelerator (rules/accelerator.py)
    Code("TW701", "accelerators-mixed", _E, "libraries of one wheel need different accelerators or CUDA majors and are not alternatives", CONSUMER_BINARY),
    Code("TW702", "accelerator-claim-mismatch", _E, "the name, local label or a requirement claims another accelerator than the binaries need", CONSUMER_WHEEL),
    Code("TW703", "bundles-torch", _E, "the wheel ships a copy of torch's own libraries", CONSUMER_WHEEL),
    Code("TW704", "bundles-accelerator-runtime", _W, "the wheel ships a copy of an accelerator runtime that torch's build brings", CONSUMER_WHEEL),
    Code("TW705", "gpu-code-without-ptx", _I, "a library has kernels for fixed GPU architectures and no PTX for newer ones", CONSUMER_BINARY),
    Code("TW706", "gpu-arch-missing", _W, "a library has no code for a GPU architecture the project declares in gpu-archs", CONSUMER_BINARY),
    Code("TW707", "bundles-gpu-driver", _E, "the wheel ships a copy of the GPU driver's library, which must come from the machine", CONSUMER_WHEEL),
    Code("TW708", "own-accelerator-runtime", _W, "a library that links no torch brings its own accelerator runtime: two runtimes in one process where torch's major differs", CONSUMER_BINARY),
    Code("TW709", "accelerator-name-without-code", _I, "the distribution is named for an accelerator, but no binary needs one or carries GPU code", CONSUMER_WHEEL),
    Code("TW710", "gpu-code-any-build", _I, "a library carries GPU code but binds nothing of a torch build (no torch, its CUDA runtime linked in): it loads beside any build", CONSUMER_BINARY),
)  # fmt: skip

BY_CODE = {c.code: c for c in CODES}
BY_NAME = {c.name: c for c in CODES}
_GROUPS = sorted({c.code[:3] for c in CODES})  # TW1 ... TW7


def is_selector(text: str) -> bool:
    """A code or a prefix of one (``TW3``, ``TW``): what ``--select``/``--ignore`` take."""
    return bool(text) and any(c.code.startswith(text) for c in CODES)


def did_you_mean(text: str) -> list[str]:
    """The codes (or group prefixes) ``text`` was likely meant as: its upper case, the code of
    a rule named so, or the closest spellings (``difflib``)."""
    upper = text.strip().upper()
    if upper != text and is_selector(upper):
        return [upper]
    if text.lower() in BY_NAME:
        return [BY_NAME[text.lower()].code]
    import difflib  # only a code that is not one

    close = difflib.get_close_matches(upper, [*BY_CODE, *_GROUPS], n=3, cutoff=0.6)
    named = difflib.get_close_matches(text.lower(), list(BY_NAME), n=1, cutoff=0.75)
    return close + [BY_NAME[n].code for n in named if BY_NAME[n].code not in close]


def unknown_code(text: str, where: str = "") -> str:
    """The one line for a code no rule has: ``unknown rule code TW999 in --ignore (did you
    mean TW709, TW409? `torchwheel rule --all` lists every code)``."""
    shown = repr(text[:40]) if not text or not text.isprintable() or " " in text else text[:40]
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > 1 and all(is_selector(p) for p in parts):
        hint = f"one code each: {', '.join(parts)}; "
    else:
        guesses = did_you_mean(text)
        hint = f"did you mean {', '.join(guesses)}? " if guesses else ""
    return f"unknown rule code {shown}{f' in {where}' if where else ''} ({hint}`torchwheel rule --all` lists every code)"
