"""Issue 15: one verdict for every command, exact pins, per-minor builds, targets no torch has.

Each test here failed before its fix (run against commit 81ecd9d); the agreement test runs
every fixture wheel against every known torch release through the functions behind select,
install, index, matrix and compat.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.version import Version

from torchwheel.analysis.load import load_facts
from torchwheel.analysis.torchcompat import compare, torch_imports
from torchwheel.publish import matrix, simple_index
from torchwheel.selection.choose import choose
from torchwheel.selection.discovery import gather
from torchwheel.selection.target import TorchTarget, target_from_options
from torchwheel.tables.tableset import shipped_tables
from torchwheel.torchabi.backend import ANY_BUILD, parse_backend
from torchwheel.torchabi.torchlibs import INSTALLED, read_torch
from torchwheel.torchabi.verdicts import verdict

from ..lib.helpers import torchwheel

TABLES = shipped_tables()

PLAN = ("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")


def _tagged(wheel: Path, out: Path, *extra: str) -> Path:
    result = torchwheel("tag", "-w", str(out), *extra, str(wheel))
    assert result.returncode == 0, result.stderr
    (written,) = out.glob(f"{wheel.name.split('-')[0]}-*.whl")
    return written


def _select(*args: str) -> tuple[int, dict[str, object], str]:
    result = torchwheel("select", "--format", "json", *args)
    return result.returncode, json.loads(result.stdout) if result.stdout.strip() else {}, result.stderr


def _chosen(doc: dict[str, object]) -> str | None:
    (project,) = doc["projects"]  # type: ignore[misc]
    chosen = project["chosen"]  # type: ignore[index]
    return None if chosen is None else str(chosen["file"])


def _reasons(doc: dict[str, object]) -> list[str]:
    return [c["reason"] for p in doc["projects"] for c in p["candidates"]]  # type: ignore[attr-defined,index]


# -- 1. per-minor builds ------------------------------------------------------------------------


def test_per_minor_builds_are_judged_by_the_minors_they_cover(fixture_wheels: dict[str, Path]) -> None:
    wheel = fixture_wheels["per_minor"]
    check = torchwheel("check", "--format", "json", str(wheel))
    assert check.returncode == 0, check.stdout  # no TW504: the bare requirement is right
    show = json.loads(torchwheel("show", "--format", "json", str(wheel)).stdout)
    abi = show["wheels"][0]["torch_abi"]
    assert abi["label"] == "unstable"
    assert abi["builds"] == ["2.4", "2.5", "2.6", "2.7", "2.8", "2.9"]
    assert {a["name"] for a in abi["alternatives"]} == {"wperminor/_C_cpu_*.so", "wperminor/_C_cuda_*.so"}
    text = torchwheel("show", str(wheel)).stdout
    assert "per-minor builds, loads on torch 2.4-2.9" in text


def test_tag_writes_the_minors_and_demands_no_pin(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    tagged = _tagged(fixture_wheels["per_minor"], tmp_path)
    dry = torchwheel("tag", "--dry-run", str(tagged))
    assert dry.returncode == 0, dry.stderr
    show = json.loads(torchwheel("show", "--format", "json", str(tagged)).stdout)
    assert show["wheels"][0]["torch_requirements"] == ["torch"]  # left as the author wrote it
    import zipfile

    with zipfile.ZipFile(tagged) as zf:
        wheel_file = zf.read("wperminor-1.0.0.dist-info/WHEEL").decode()
    assert "Torch-ABI: unstable\n" in wheel_file
    assert "Torch-ABI-Builds: 2.4, 2.5, 2.6, 2.7, 2.8, 2.9\n" in wheel_file
    repair = torchwheel("repair", "-w", str(tmp_path / "repaired"), str(fixture_wheels["per_minor"]))
    assert repair.returncode == 0, repair.stderr


@pytest.mark.parametrize("tag_first", [False, True])
def test_select_and_matrix_on_per_minor_builds(
    fixture_wheels: dict[str, Path], tmp_path: Path, tag_first: bool
) -> None:
    wheel = _tagged(fixture_wheels["per_minor"], tmp_path) if tag_first else fixture_wheels["per_minor"]
    code, doc, _ = _select("--torch", "2.6", *PLAN, str(wheel))
    assert (
        code == 0
    )  # neither flavour needs an accelerator: any build, so the plan's unknown build is no matter
    code, doc, _ = _select("--torch", "2.6", "--torch-backend", "cpu", *PLAN, str(wheel))
    assert code == 0 and _chosen(doc) == wheel.name
    code, doc, _ = _select("--torch", "2.12", "--torch-backend", "cpu", *PLAN, str(wheel))
    assert code == 1
    assert any("has builds for torch 2.4-2.9, the target has 2.12" in r for r in _reasons(doc))
    grid = json.loads(torchwheel("matrix", "--format", "json", str(wheel)).stdout)
    cells = grid["wheels"][0]["cells"]
    assert [m for m, c in cells.items() if c["fit"] != "no"] == ["2.4", "2.5", "2.6", "2.7", "2.8", "2.9"]
    assert {cells[m]["fit"] for m in ("2.4", "2.9")} == {"only"}


def test_compat_loads_the_build_for_its_torch_only(fixture_wheels: dict[str, Path]) -> None:
    """The installed torch is 2.13: the per-minor set has no build for it, and the builds for
    2.4-2.9 are not judged by their symbols (the package does not load them here)."""
    result = torchwheel(
        "compat", "--against", INSTALLED, "--format", "json", str(fixture_wheels["per_minor"])
    )
    doc = json.loads(result.stdout)
    (found,) = doc["inputs"]
    assert found["symbols_load"] is True
    assert found["loads"] is False and result.returncode == 1
    assert "has builds for torch 2.4-2.9, the target has 2.13" in found["verdict"]["reason"]
    assert {f["build_for_other_minor"] for f in found["files"]} == {"2.4", "2.5", "2.6", "2.7", "2.8", "2.9"}


# -- 2. exact patch pins ------------------------------------------------------------------------


def test_a_patch_pin_is_understood_by_tag_select_matrix_and_index(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    wheel = fixture_wheels["unstable_patch_pin"]
    dry = torchwheel("tag", "--dry-run", str(wheel))
    assert dry.returncode == 0, dry.stderr  # the pin names the build torch: no --build-torch
    tagged = _tagged(wheel, tmp_path / "out")
    for candidate in (wheel, tagged):
        code, doc, _ = _select("--torch", "2.9", *PLAN, str(candidate))  # a 2.9 torch: 2.9.1 fits
        assert code == 0 and _chosen(doc) == candidate.name
        code, doc, _ = _select("--torch", "2.9.0", *PLAN, str(candidate))
        assert code == 1
        assert any("torch==2.9.1 excludes torch 2.9.0" in r for r in _reasons(doc))
        grid = json.loads(torchwheel("matrix", "--format", "json", str(candidate)).stdout)
        cell = grid["wheels"][0]["cells"]["2.9"]
        assert cell["fit"] == "some" and cell["releases"] == ["2.9.1"]
    index = tmp_path / "index"
    assert torchwheel("index", str(tagged), "-o", str(index)).returncode == 0
    assert (index / "torch-2.9" / "simple" / "wpatch" / "index.html").is_file()
    assert not (index / "torch-2.10").exists()


def test_requirement_spans_name_real_releases(fixture_wheels: dict[str, Path]) -> None:
    result = torchwheel("check", "--format", "json", str(fixture_wheels["tw504"]))
    (msg,) = [f["message"] for f in json.loads(result.stdout)["findings"] if f["code"] == "TW504"]
    assert "admits torch 2.0.0 and newer" in msg and "2.39" not in msg


# -- 4. matrix shows old releases -------------------------------------------------------------


def test_matrix_has_a_column_for_an_old_build(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    tagged = _tagged(fixture_wheels["tw504"], tmp_path, "--build-torch", "2.3")
    grid = torchwheel("matrix", str(tagged))
    assert grid.returncode == 0, grid.stderr
    head = grid.stdout.splitlines()[0].split()
    assert "2.3" in head, head
    row = next(line for line in grid.stdout.splitlines() if line.startswith(tagged.name)).split()
    assert row[head.index("2.3")] == "only"


# -- 6. a declared target newer than the tables ---------------------------------------------------


def test_a_target_newer_than_the_tables_names_both_readings(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """0x0210000000000000 is 2.16: a torch released after the tables, or 2.10 spelled in
    decimal digits. The tables cannot tell, so check warns (TW207, never an error on a wheel
    that may be right) and names both; tag never writes torch>=2.16 from them."""
    wheel = fixture_wheels["tw207"]
    result = torchwheel("check", "--format", "json", str(wheel))
    (msg,) = [f["message"] for f in json.loads(result.stdout)["findings"] if f["code"] == "TW207"]
    assert result.returncode == 0
    assert "declares torch 2.16.0 (0x0210000000000000), newer than this torchwheel's tables" in msg
    assert "did you mean 0x020a000000000000" in msg and "torchwheel symbols update" in msg
    tag = torchwheel("tag", "-w", str(tmp_path), str(wheel))
    assert tag.returncode == 1 and not list(tmp_path.glob("*.whl"))  # never torch>=2.16
    assert "TW207" in tag.stdout


def test_tag_never_writes_a_requirement_no_torch_satisfies(fixture_wheels: dict[str, Path]) -> None:
    result = torchwheel("tag", "--dry-run", "--build-torch", "2.40", str(fixture_wheels["tw504"]))
    assert result.returncode == 2
    assert "newer than any torch release" in result.stderr and result.stderr.count("\n") == 1


# -- 7. messages that are true --------------------------------------------------------------------


def test_tw301_counts_what_it_does_not_list(fixture_wheels: dict[str, Path]) -> None:
    result = torchwheel("check", "--format", "json", str(fixture_wheels["tw301_many"]))
    (msg,) = [f["message"] for f in json.loads(result.stdout)["findings"] if f["code"] == "TW301"]
    assert "and 2 more" in msg


def test_repair_refusal_is_exit_1(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """An unstable build whose torch nothing names: the rewrite cannot be honest (exit 1, as
    docs/cibuildwheel.md says), not unreadable input (2)."""
    result = torchwheel("repair", "-w", str(tmp_path), str(fixture_wheels["tw504"]))
    assert result.returncode == 1, result.stderr
    assert "repair refused" in result.stderr and not list(tmp_path.glob("*.whl"))


def test_a_path_that_starts_a_workflow_command_is_defused(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "::error file=x::pwned"
    folder.mkdir()
    wheel = folder / fixture_wheels["tw101"].name
    shutil.copy(fixture_wheels["tw101"], wheel)
    result = torchwheel("check", "::error file=x::pwned", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not any(line.lstrip().startswith("::") for line in result.stdout.splitlines()), result.stdout
    assert "\\x3a:error file=x::pwned" in result.stdout


# -- 8. every command reads what tag writes -------------------------------------------------------


def test_check_and_show_read_the_variant_file(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    result = torchwheel("tag", "--variant", "-w", str(tmp_path), str(fixture_wheels["clean"]))
    assert result.returncode == 0, result.stderr
    (variant,) = [p for p in tmp_path.glob("*.whl") if p.name.count("-") == 5]
    assert variant.name.endswith("-torch2.10.whl")
    for command in ("check", "show"):
        found = torchwheel(command, str(variant))
        assert found.returncode == 0, (command, found.stderr)
    again = torchwheel("tag", "--dry-run", str(variant))
    assert again.returncode == 2 and "tag the plain wheel" in again.stderr


# -- 3. one verdict: select, install, index, matrix and compat agree ---------------------------------


def test_the_five_commands_agree_on_every_fixture_wheel_and_torch(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """For every readable fixture wheel, every known torch release and every kind of torch
    build (unknown, CPU, CUDA 12, CUDA 13, ROCm, XPU): ``select`` and ``install`` (one
    ``choose``, with a plan for that release and build) fit exactly when the one verdict says
    the wheel loads; ``matrix``'s cell and ``index``'s listing (per torch, per backend) of the
    release's minor say it loads on some release of it exactly when the verdict does for one;
    ``compat`` against the installed torch (2.13.0, a CPU build) agrees with the verdict."""
    wheels = [p for name, p in sorted(fixture_wheels.items()) if not name.startswith("bad_")]
    got = gather([str(p) for p in wheels])
    cands = [c for c in got.candidates if c.torch.source]
    assert len(cands) > 40
    by_minor = {m: TABLES.releases.releases_of(m) for m in TABLES.releases.known_minors()}
    entries = [simple_index.Entry(c, b"", None) for c in cands]
    targets: dict[tuple[tuple[str, ...], str | None], TorchTarget] = {}
    for build in (None, *map(parse_backend, ("cpu", "cu128", "cu130", "rocm7.1", "xpu"))):
        grid = matrix.build_matrix(cands, list(by_minor), None, build, tables=TABLES)
        listed = simple_index.plan_targets(entries, (), build, TABLES)
        for c in cands:
            platforms = tuple(sorted({t.platform for t in c.tags}))
            key = (platforms, build.backend if build else None)
            if key not in targets:
                targets[key] = target_from_options("2.13", "3.11", platforms, key[1])
            row = next(r for r in grid.rows if r.cand is c)
            for col, (minor, versions) in enumerate(by_minor.items()):
                for v in versions:
                    target = replace(targets[key], torch=v, torch_minor_only=False)
                    expected = verdict(c.torch, target.markers, v, build, tables=TABLES)
                    (choice,) = choose([c], target)
                    judged = choice.verdicts[0].verdict
                    if judged.axis not in ("tags", "python"):
                        assert judged == expected, (c.filename, str(v), judged.reason)
                cell = row.cells[col]
                loads = any(
                    verdict(c.torch, _wheel_markers(c), v, build, tables=TABLES).loads for v in versions
                )
                assert cell.loads == loads, (c.filename, minor, build, cell.cell)
                # the build-agnostic index (build None) lists only what loads on every build
                on_index = loads and (build is not None or c.torch.builds == ANY_BUILD)
                here = listed.get(minor, [])
                assert on_index == (any(e.cand is c for e in here) or _beaten(c, here)), (
                    c.filename,
                    minor,
                    build,
                )
    facts = list(load_facts(tuple(wheels), (), TABLES, verify_hashes=False))
    torch = read_torch(INSTALLED, torch_imports(facts, TABLES.shims))
    here = Version("2.13.0")
    for w in facts:
        if w.unreadable:
            continue  # compat refuses a wheel it cannot read (exit 2)
        result = compare(w, torch, TABLES.shims)
        (c,) = [c for c in cands if str(c.path) == w.contents.path] or [None]
        if c is None or result.verdict is None:
            continue
        assert (
            result.verdict.loads
            == verdict(c.torch, _compat_markers(), here, parse_backend("cpu"), tables=TABLES).loads
        ), c.filename
        if result.loads:
            assert result.verdict.loads, c.filename


def _wheel_markers(c: object) -> dict[str, str]:
    from torchwheel.selection.target import markers_for_tags

    return markers_for_tags(c.tags)  # type: ignore[attr-defined]


def _compat_markers() -> dict[str, str]:
    from packaging.markers import default_environment

    env = {k: str(v) for k, v in default_environment().items()}
    env.update(sys_platform="linux", platform_system="Linux", os_name="posix")
    return env


def _beaten(c: object, listed: list[simple_index.Entry]) -> bool:
    """A wheel that loads but is not listed must have lost to a better build of the same
    release and tag set (an index lists one file per release, tags and variant)."""
    key = (c.name, c.version.public, tuple(sorted(map(str, c.tags))), c.variant)  # type: ignore[attr-defined]
    return any(
        (e.cand.name, e.cand.version.public, tuple(sorted(map(str, e.cand.tags))), e.cand.variant) == key
        for e in listed
    )
