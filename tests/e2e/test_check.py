"""``torchwheel check`` on the fixture wheels: each rule fires exactly where it should.

Every wheel scenario names the exact set of codes it must produce (``fixtures/wheels.py``);
the clean wheel and the near misses must produce none. Bad archives exit 2 with one line.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from torchwheel.rules import REGISTRY

from ..lib.helpers import REPO, fixture_wheels_module, torchwheel

WHEELS = fixture_wheels_module().WHEELS
BAD = sorted(fixture_wheels_module().BAD_WHEELS)


def _policy_dir(tmp_path: Path, allowlist: tuple[str, ...], gpu_archs: tuple[str, ...] = ()) -> Path:
    """A project directory whose pyproject.toml carries the scenario's policy."""
    d = tmp_path / "project"
    d.mkdir(exist_ok=True)
    entries = ", ".join(json.dumps(a) for a in allowlist)
    archs = ", ".join(json.dumps(a) for a in gpu_archs)
    (d / "pyproject.toml").write_text(
        f"[tool.torchwheel]\nunstable-allowlist = [{entries}]\ngpu-archs = [{archs}]\n"
    )
    return d


@pytest.mark.parametrize("name", sorted(WHEELS))
def test_wheel_scenario_codes(name: str, fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    spec = WHEELS[name]
    result = torchwheel(
        "check",
        "--format",
        "json",
        str(fixture_wheels[name]),
        cwd=_policy_dir(tmp_path, spec.allowlist, spec.gpu_archs),
    )
    report = json.loads(result.stdout)
    assert "error" not in report, result.stderr
    codes = {f["code"] for f in report["findings"]}
    assert codes == set(spec.expected), report["findings"]
    has_error = any(REGISTRY[c].severity == "error" for c in codes)
    assert result.returncode == (1 if has_error else 0)


def test_every_rule_has_a_triggering_wheel() -> None:
    from .test_release import SETS  # the release rules (TW6xx) are triggered by wheel sets

    triggered = set().union(*(s.expected for s in WHEELS.values()), *(codes for _, codes in SETS.values()))
    missing = sorted(set(REGISTRY) - triggered)
    assert not missing, f"rules without a fixture wheel: {missing}"


def test_clean_wheel_text_report(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    result = torchwheel("check", str(fixture_wheels["clean"]), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 error(s), 0 warning(s), 0 info(s) - all clean" in result.stdout


def test_select_and_ignore(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = str(fixture_wheels["tw201"])
    assert torchwheel("check", wheel, "--ignore", "TW201", cwd=tmp_path).returncode == 0
    assert torchwheel("check", wheel, "--ignore", "TW2", cwd=tmp_path).returncode == 0
    assert torchwheel("check", wheel, "--select", "TW4", cwd=tmp_path).returncode == 0
    assert torchwheel("check", wheel, "--select", "TW201", cwd=tmp_path).returncode == 1


def test_config_ignore_and_no_config(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchwheel]\nignore = ["TW201"]\n')
    wheel = str(fixture_wheels["tw201"])
    assert torchwheel("check", wheel, cwd=tmp_path).returncode == 0
    assert torchwheel("check", "--no-config", wheel, cwd=tmp_path).returncode == 1


def test_bad_config_is_exit_2(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchwheel]\nignor = ["TW201"]\n')
    result = torchwheel("check", str(fixture_wheels["clean"]), cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown [tool.torchwheel] keys: ignor" in result.stderr


def test_github_annotations(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    result = torchwheel("check", "--format", "github", str(fixture_wheels["tw201"]), cwd=tmp_path)
    assert result.returncode == 1
    first = result.stdout.splitlines()[0]
    assert first.startswith("::error file=") and ",title=torchwheel (TW201)::w201/" in first
    assert "torch_from_blob" in first


@pytest.mark.parametrize("name", BAD)
def test_bad_archive_is_one_line_exit_2(name: str, fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = fixture_wheels[f"bad_{name}"]
    before = wheel.read_bytes()
    for command in ("check", "show"):
        result = torchwheel(command, str(wheel), cwd=tmp_path)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        # the report names it (the others' findings would be there too), the one line says why
        (named,) = [line for line in result.stdout.splitlines() if ": not read: " in line]
        assert named.startswith(f"{wheel}: not read: "), result.stdout
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert named.partition(": not read: ")[2] in result.stderr
        assert "Traceback" not in result.stderr
    assert wheel.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written anywhere


def test_directory_of_wheels_and_unpacked_wheel(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    import zipfile

    clean = fixture_wheels["clean"]
    result = torchwheel("check", "--format", "json", str(clean.parent), cwd=tmp_path)
    assert result.returncode == 0 and len(json.loads(result.stdout)["inputs"]) == 1
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(clean) as zf:
        zf.extractall(unpacked)
    result = torchwheel("show", "--json", str(unpacked), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["wheels"][0]["torch_abi"]["label"] == "2.10"
    assert doc["wheels"][0]["record"]["problems"] == []


def test_single_binary_goes_through_the_same_rules(built_fixtures: dict[str, Path], tmp_path: Path) -> None:
    result = torchwheel(
        "check", "--format", "json", str(built_fixtures["elf_contract_violation"]), cwd=tmp_path
    )
    assert result.returncode == 1
    assert {f["code"] for f in json.loads(result.stdout)["findings"]} == {"TW201"}


def test_installed_distribution_by_name(tmp_path: Path) -> None:
    """torch itself: an unstable-ABI distribution read from site-packages via RECORD."""
    result = torchwheel("show", "--json", "--env", "torch", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)["wheels"][0]
    assert doc["kind"] == "directory"
    members = {f["member"] for f in doc["files"]}
    assert "torch/lib/libtorch_cpu.so" in members


def test_show_json_files_match_inspect_json(
    fixture_wheels: dict[str, Path], built_fixtures: dict[str, Path], tmp_path: Path
) -> None:
    shown = json.loads(torchwheel("show", "--json", str(fixture_wheels["clean"]), cwd=tmp_path).stdout)
    inspected = json.loads(
        torchwheel("inspect", "--json", str(built_fixtures["elf_marker_2_10"]), cwd=tmp_path).stdout
    )
    a = shown["wheels"][0]["files"][0]
    b = inspected["files"][0]
    assert a["member"] == "demo_stable/elf_marker_2_10.abi3.so"
    assert a["slices"] == b["slices"] and a["format"] == b["format"] and a["size"] == b["size"]


def test_rules_are_documented() -> None:
    doc = (REPO / "docs" / "reference" / "rules.md").read_text()
    for code, rule in REGISTRY.items():
        assert f"### {code} {rule.name} ({rule.severity})" in doc, code


def test_readme_demo_wheel_is_the_clean_fixture(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """The wheel the README's first command checks is what fixtures/wheels.py assembles as
    'clean' from today's sources: same facts, and clean."""
    (demo,) = (REPO / "fixtures" / "demo").glob("*.whl")
    assert demo.name == fixture_wheels["clean"].name
    assert torchwheel("check", "--no-config", str(demo), cwd=tmp_path).returncode == 0
    ours, built = (
        json.loads(torchwheel("show", "--json", str(w), cwd=tmp_path).stdout)["wheels"][0]
        for w in (demo, fixture_wheels["clean"])
    )
    for doc in (ours, built):
        doc.pop("path")
    assert ours == built


@pytest.mark.parametrize("name", ["weak_shim", "weak_shim_macos"])
def test_weak_shims_set_no_floor_and_are_shown(
    name: str, fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """Target 2.10 with weak imports of a 2.11 and an unknown shim: the floor stays 2.10 (no
    TW201/TW503/TW203, see WHEELS), and show lists them apart, as used when present."""
    wheel = str(fixture_wheels[name])
    doc = json.loads(torchwheel("show", "--json", wheel, cwd=tmp_path).stdout)["wheels"][0]
    assert doc["torch_abi"]["label"] == "2.10"
    torch = doc["files"][0]["slices"][0]["torch"]
    assert torch["min_version"] == "2.10.0" and torch["min_is_lower_bound"] is False
    assert torch["pinning_symbols"] == ["torch_call_dispatcher", "torch_library_impl"]
    assert torch["unknown_symbols"] == [] and "torch_from_blob" not in torch["stable_symbols"]
    assert torch["weak_symbols"] == [
        {"name": "torch_from_blob", "introduced": "2.11.0"},
        {"name": "torch_future_shim_v99", "introduced": None},
    ]
    text = torchwheel("show", wheel, cwd=tmp_path).stdout
    assert (
        "    weak        torch_from_blob (2.11, used when present), "
        "torch_future_shim_v99 (unknown, used when present)\n" in text
    )


def test_one_line_per_finding_and_the_lists_with_v(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """A finding's line names three libraries and counts the rest; -v puts every finding on
    its own line (no collapsing) with the whole list under it, as the JSON's ``detail``."""
    one, many = str(fixture_wheels["tw701_one_library"]), str(fixture_wheels["tw101_many"])
    short = torchwheel("check", one, many, cwd=tmp_path)
    assert short.returncode == 1
    (tw701,) = [line for line in short.stdout.splitlines() if " TW701 " in line]
    assert "(libc10_cuda.so, libcudart.so.12, libcudart.so.13 and 1 more)" in tw701
    assert len([line for line in short.stdout.splitlines() if " TW101 " in line]) == 1  # collapsed
    assert all(not line.startswith(" ") for line in short.stdout.splitlines())
    verbose = torchwheel("check", "-v", one, many, cwd=tmp_path)
    assert verbose.returncode == 1
    lines = verbose.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if " TW701 " in line)
    assert (
        lines[at] == tw701
        and lines[at + 1] == "    libc10_cuda.so, libcudart.so.12, libcudart.so.13, libtorch_cuda.so"
    )
    assert len([line for line in lines if " TW101 " in line]) == 7  # one line each
    assert lines[-1] == short.stdout.splitlines()[-1]
    document = json.loads(torchwheel("check", "--format", "json", one, cwd=tmp_path).stdout)
    (finding,) = [f for f in document["findings"] if f["code"] == "TW701"]
    assert finding["detail"] == "libc10_cuda.so, libcudart.so.12, libcudart.so.13, libtorch_cuda.so"
    assert all(f["detail"] is None for f in document["findings"] if f["code"] != "TW701")


def _wheelhouse(fixture_wheels: dict[str, Path], tmp_path: Path) -> Path:
    """A wheelhouse of a wheel with an error, one that is no zip (first by name), a clean one,
    and a FIFO named as a wheel: two of four cannot be read."""
    import os
    import shutil

    house = tmp_path / "wheelhouse"
    house.mkdir()
    shutil.copy(fixture_wheels["tw201"], house)
    shutil.copy(fixture_wheels["clean"], house)
    shutil.copy(fixture_wheels["bad_not_a_zip"], house / "aaa-1.0-py3-none-any.whl")
    os.mkfifo(house / "zzz-1.0-py3-none-any.whl")
    return house


@pytest.mark.parametrize(
    "args",
    [(), ("-q",), ("-qq",), ("--statistics",), ("--format", "github"), ("--format", "json"),
     ("--format", "json", "--statistics"), ("--exit-zero",), ("--format", "github", "-q")],
    ids=lambda a: " ".join(a) or "text",
)  # fmt: skip
def test_an_unreadable_input_hides_no_other_inputs_findings(
    args: tuple[str, ...], fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """One unreadable wheel of a wheelhouse stopped check at exit 2, and the others' errors
    were printed nowhere (as ruff does, it now reports the bad file and goes on): every
    readable input judged and shown, every unreadable one named, exit 2, one stderr line."""
    house = _wheelhouse(fixture_wheels, tmp_path)
    result = torchwheel("check", "--no-config", *args, str(house), cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("torchwheel: error: aaa-1.0-py3-none-any.whl: not a zip archive")
    assert line.endswith("(and 1 more input that could not be read: see the report)")
    out = result.stdout
    if "-qq" in args:
        assert out == ""
        return
    if "json" in args:
        doc = json.loads(out)
        assert [u["path"] for u in doc["unreadable"]] == [
            str(house / "aaa-1.0-py3-none-any.whl"),
            str(house / "zzz-1.0-py3-none-any.whl"),
        ]
        assert doc["error"] == {
            "message": line.removeprefix("torchwheel: error: "),
            "reference": "archive-damaged",
            "path": str(house / "aaa-1.0-py3-none-any.whl"),  # the first input not read
            "exit": 2,
        }
        assert doc["summary"]["errors"] >= 1
        found = doc["statistics"] if "--statistics" in args else doc["findings"]
        assert any(f["code"] == "TW201" for f in found)
        return
    assert "TW201" in out and "aaa-1.0-py3-none-any.whl" in out and "a FIFO" in out
    if "github" in args:
        assert out.count("title=torchwheel (input error)::") == 2
        assert ("checked:" in out) is ("-q" not in args)
    else:
        assert f"{house / 'aaa-1.0-py3-none-any.whl'}: not read: not a zip archive" in out
        assert ("2 inputs checked: 1 error(s)" in out) is ("-q" not in args), out


def test_show_reads_every_other_input_too(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """``show``, as ``check``: the facts of each readable input, each unreadable one named,
    exit 2 with one line; the JSON document carries both and the ``error``."""
    house = _wheelhouse(fixture_wheels, tmp_path)
    text = torchwheel("show", "--no-config", str(house), cwd=tmp_path)
    assert text.returncode == 2 and len(text.stderr.splitlines()) == 1, text.stderr
    assert fixture_wheels["tw201"].name in text.stdout and fixture_wheels["clean"].name in text.stdout
    assert text.stdout.count(": not read: ") == 2
    doc = json.loads(torchwheel("show", "--no-config", "--format", "json", str(house), cwd=tmp_path).stdout)
    assert len(doc["wheels"]) == 2 and len(doc["unreadable"]) == 2 and doc["error"]["exit"] == 2


def test_every_input_unreadable_is_still_one_line(tmp_path: Path) -> None:
    missing = torchwheel("check", str(tmp_path / "nope.whl"), str(tmp_path / "gone.whl"), cwd=tmp_path)
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1, missing.stderr
    assert "0 inputs checked" in missing.stdout and "2 inputs could not be read" in missing.stdout


def test_a_limit_error_carries_its_limit_and_value_beside_the_message(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """A program reads which limit and how far past it from the fields, not the message."""
    wheel = fixture_wheels["tw709"]
    with zipfile.ZipFile(wheel) as zf:
        members = len(zf.infolist())
    env = {**os.environ, "TORCHWHEEL_MAX_MEMBERS": "1"}
    result = torchwheel("check", "--format", "json", str(wheel), cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    error = json.loads(result.stdout)["error"]
    assert error == {
        "message": result.stderr.strip().removeprefix("torchwheel: error: "),
        "reference": "limit-exceeded",
        "path": str(wheel),
        "value": members,
        "limit": "max-members",
        "exit": 2,
    }
