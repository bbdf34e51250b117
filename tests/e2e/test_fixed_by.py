"""What ``tag`` and ``repair`` fix, as ``codes.CODES`` declares it (``fixed_by``), held to the
rewrite: every finding that a fixing command removes says so in its message and in
``docs/reference/rules.md``, and the rewrite removes exactly the codes declared fixed, nothing claimed
that it leaves. TW415 (``repair --repair-with 'auditwheel repair ...'``) is held to auditwheel
in ``tests/e2e/test_authors_flow.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchwheel.rules.codes import BY_CODE, CODES, REPAIR_LINUX
from torchwheel.rules.explain import fixed_by_text

from ..lib.helpers import REPO, fixture_wheels_module, torchwheel
from .test_check import _policy_dir

WHEELS = fixture_wheels_module().WHEELS
FIXED = {c.code for c in CODES if c.fixed_by is not None}
# the tag options a fixing command names, as a test runs them
OPTIONS = {"--build-torch X.Y": ["--build-torch", "2.13"], "--relax-pin": ["--relax-pin"]}
# where a code's `when` asks for an option: a pin that admits no torch the binaries load on
WHEN = {"tw503_pin_conflict": ["--relax-pin"]}


def _options(command: str) -> list[str]:
    return [arg for text, args in OPTIONS.items() if text in command for arg in args]


def _findings(wheel: Path, cwd: Path) -> list[dict[str, str]]:
    result = torchwheel("check", "--format", "json", str(wheel), cwd=cwd)
    findings: list[dict[str, str]] = json.loads(result.stdout)["findings"]
    assert result.returncode == (1 if any(f["severity"] == "error" for f in findings) else 0), result.stderr
    return findings


def _cases() -> list[tuple[str, str]]:
    """(code, fixture wheel) for every fixing code of one wheel (TW6xx: release sets below)."""
    return [
        (code, name)
        for name, spec in sorted(WHEELS.items())
        for code in sorted(spec.expected & FIXED)
        if not code.startswith("TW6")
    ]


def test_every_fixing_code_has_a_case() -> None:
    covered = {code for code, _ in _cases()}
    assert FIXED - covered == {"TW601", "TW602"}, FIXED - covered


@pytest.mark.parametrize(("code", "name"), _cases())
def test_the_message_names_the_command(
    code: str, name: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    fixed_by = BY_CODE[code].fixed_by
    assert fixed_by is not None
    needle = fixed_by.commands[0].split(" '")[0]  # torchwheel tag, ... --relax-pin, repair --repair-with
    spec = WHEELS[name]
    found = _findings(fixture_wheels[name], _policy_dir(tmp_path, spec.allowlist, spec.gpu_archs))
    messages = [f["message"] for f in found if f["code"] == code]
    assert messages and all(needle in m for m in messages), (needle, messages)
    page = (REPO / "docs" / "reference" / "rules.md").read_text()
    assert f"**Fixed by**: {fixed_by_text(fixed_by)}." in page


def _rewrites() -> list[tuple[str, str]]:
    """(command, fixture): tag on every fixture wheel it takes (the codes it removes must all be
    declared), repair on those with a code it fixes."""
    from .test_tag import TAGGABLE

    # what tag or repair fix on their own (TW415 needs auditwheel, TW413 another command)
    rewritten = {
        c
        for c in FIXED
        if any(x.startswith(("torchwheel tag", "torchwheel repair ")) for x in BY_CODE[c].fixed_by.commands)
    }  # type: ignore[union-attr]
    fixing = [n for n in TAGGABLE if WHEELS[n].expected & rewritten - {"TW415"}]
    return [("tag", n) for n in TAGGABLE] + [("repair", n) for n in fixing]


@pytest.mark.parametrize(("command", "name"), _rewrites())
def test_the_rewrite_fixes_what_is_declared_and_nothing_else_claims(
    name: str, command: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """tag (and repair) with the options the fixing command names: each declared code is
    gone from the output; no code the rewrite removes lacks its ``fixed_by``."""
    spec = WHEELS[name]
    cwd = _policy_dir(tmp_path, spec.allowlist, spec.gpu_archs)
    fixing = {
        c
        for c in spec.expected & FIXED
        if any(x.startswith(f"torchwheel {command}") for x in BY_CODE[c].fixed_by.commands)
    }  # type: ignore[union-attr]
    options = sorted({a for c in fixing for x in BY_CODE[c].fixed_by.commands for a in _options(x)})  # type: ignore[union-attr]
    out = tmp_path / "out"
    result = torchwheel(
        command, "-w", str(out), *options, *WHEN.get(name, []), str(fixture_wheels[name]), cwd=cwd
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (written,) = out.glob("*.whl")
    after = {f["code"] for f in _findings(written, cwd)}
    assert not fixing & after, (fixing & after, result.stderr)
    assert spec.expected - after <= FIXED, f"fixed but not declared: {spec.expected - after - FIXED}"
    if command == "repair":
        for code in fixing:  # repair judges the wheel the rewrite writes: its facts file too
            assert f"{code} fixed by the rewrite" in result.stderr, (code, result.stderr)


def _release_codes(*paths: Path) -> list[dict[str, str]]:
    result = torchwheel("check", "--no-config", "--format", "json", "--select", "TW6", *map(str, paths))
    findings: list[dict[str, str]] = json.loads(result.stdout)["findings"]
    return findings


def _release(name: str, built: dict[str, Path], out: Path, requires: str | None = None) -> list[Path]:
    """A release set of tests/e2e/test_release.py, its requirements replaced by ``requires``."""
    from .test_release import SETS

    wm = fixture_wheels_module()
    paths = []
    for binary, tag, req in SETS[name][0]:
        suffix = ".pyd" if binary.startswith("pe_") else ".abi3.so"
        spec = wm.WheelSpec(
            name, "relset", tag, ((f"relset/_C{suffix}", binary),), requires=(requires or req,)
        )
        paths.append(wm.write_wheel(out / spec.filename, spec, built))
    return paths


@pytest.mark.parametrize(("name", "requires"), [("tw601", None), ("mac_newer", None), ("tw602", "torch")])
def test_tag_release_fixes_the_release_codes(
    name: str, requires: str | None, built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """tw602 with a bare requirement in both wheels (targets 2.10 and 2.12): TW602, fixed."""
    paths = _release(name, built_fixtures, tmp_path / "in", requires)
    before = _release_codes(*paths)
    assert before and {f["code"] for f in before} <= {"TW601", "TW602"}
    assert all("`torchwheel tag --release`" in f["message"] for f in before)
    tagged = torchwheel("tag", "--no-config", "--release", "-w", str(tmp_path / "out"), *map(str, paths))
    assert tagged.returncode == 0, tagged.stderr
    assert _release_codes(tmp_path / "out") == []


def test_a_requirement_tag_keeps_is_to_be_loosened_first(
    built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """``torch>=2.12`` in both wheels (Linux target 2.10): tag only narrows, so TW602 stays,
    and its message says to loosen the requirement before ``tag --release``."""
    paths = _release("tw602", built_fixtures, tmp_path / "in")
    tagged = torchwheel("tag", "--no-config", "--release", "-w", str(tmp_path / "out"), *map(str, paths))
    assert tagged.returncode == 0, tagged.stderr
    after = _release_codes(tmp_path / "out")
    assert {f["code"] for f in after} == {"TW602"}
    assert all(
        "loosen 'torch>=2.12' to 'torch>=2.10' in the project, then `torchwheel tag --release`"
        in f["message"]
        for f in after
    )


def test_the_repair_command_is_the_one_the_rule_names() -> None:
    from torchwheel.rules import pypi

    assert f"`{REPAIR_LINUX.commands[0]}`" in pypi.remedy("linux_x86_64")
    assert BY_CODE["TW415"].fixed_by is REPAIR_LINUX


# -- one wording for a bare requirement (TW503, TW504) ---------------------------------------


@pytest.mark.parametrize(
    ("binary", "code"), [("elf_marker_2_13_shims_2_13", "TW503"), ("elf_unstable_cpp", "TW504")]
)
def test_a_bare_requirement_is_worded_one_way(
    binary: str, code: str, built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    """``install_requires=["torch"]``: stable or unstable, the message says it the same way."""
    wm = fixture_wheels_module()
    spec = wm.WheelSpec("bare", "wbare", wm.A, ((f"wbare/{binary}.abi3.so", binary),), requires=("torch",))
    wheel = wm.write_wheel(tmp_path / spec.filename, spec, built_fixtures)
    (message,) = [f["message"] for f in _findings(wheel, tmp_path) if f["code"] == code]
    assert message.startswith("Requires-Dist 'torch' admits every torch release, but the binaries "), message
    loose = wm.WheelSpec(
        "loose", "wloose", wm.A, ((f"wloose/{binary}.abi3.so", binary),), requires=("torch>=2.9",)
    )
    wheel = wm.write_wheel(tmp_path / loose.filename, loose, built_fixtures)
    (message,) = [f["message"] for f in _findings(wheel, tmp_path) if f["code"] == code]
    assert message.startswith("Requires-Dist 'torch>=2.9' admits torch 2.9.0 and newer, but the binaries "), (
        message
    )
