"""``torchwheel.api``, the library face: each function gives the answer its command gives,
and each result serialises to the command's ``--format json`` document (the command runs in
a fresh process, the function in this one: they cannot share a bug in rendering)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

import torchwheel
from torchwheel import api

from .lib.helpers import torchwheel as run


def _document(*args: str, cwd: Path, code: int = 0) -> dict[str, object]:
    result = run(*args, "--format", "json", "--no-config", cwd=cwd)
    assert result.returncode == code, result.stderr
    parsed: dict[str, object] = json.loads(result.stdout)
    return parsed


def test_the_stable_names_are_exported() -> None:
    assert set(api.__all__) == {
        "Axis",
        "Cell",
        "CheckResult",
        "DoctorResult",
        "Exit",
        "Facts",
        "Finding",
        "InputError",
        "InvalidValue",
        "LoadVerdict",
        "MissingInput",
        "Need",
        "NeedKind",
        "RewriteRefused",
        "Severity",
        "UnknownAxis",
        "Unreadable",
        "UnreadableInput",
        "check",
        "doctor",
        "inspect_wheel",
        "loads_on",
        "need",
        "scan_one",  # provisional (docs/reference/api.md): exported, but not among the stable names
        "tag",
    }
    assert all(hasattr(api, name) for name in api.__all__)
    assert not hasattr(torchwheel, "check")  # `import torchwheel` stays light: the API is api


def test_inspect_wheel_is_show(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = fixture_wheels["cuda13"]
    assert api.inspect_wheel(wheel).to_json() == _document("show", str(wheel), cwd=tmp_path)


def test_check_is_check(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    broken, clean = fixture_wheels["tw201"], fixture_wheels["clean"]
    result = api.check([broken, clean])
    assert result.to_json() == _document("check", str(broken), str(clean), cwd=tmp_path, code=1)
    assert (result.exit_code, result.errors) == (1, 1)
    assert [(f.code, f.severity) for f in result.findings] == [("TW201", "error")]
    assert api.check(clean).exit_code == 0
    assert api.check(broken, ignore=["TW2"]).exit_code == 0
    assert [f.code for f in api.check(broken, select=["TW201"]).findings] == ["TW201"]


def test_unreadable_report_judges_the_others(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """``unreadable="report"``, as the command line runs: the inputs that cannot be read in
    ``unreadable``, in their place, the others judged; ``exit_code`` 2; the document is the
    command's (``unreadable`` beside the findings). The default raises the first, as before."""
    junk = tmp_path / "junk-1.0-py3-none-any.whl"
    junk.write_bytes(b"not a zip")
    broken = fixture_wheels["tw201"]
    result = api.check([junk, broken, tmp_path / "missing.whl"], unreadable="report")
    assert [u.path for u in result.unreadable] == [str(junk), str(tmp_path / "missing.whl")]
    assert all(isinstance(u, api.Unreadable) and u.message for u in result.unreadable)
    assert result.exit_code == 2 and [f.code for f in result.findings] == ["TW201"]
    document = _document("check", str(junk), str(broken), str(tmp_path / "missing.whl"), cwd=tmp_path, code=2)
    assert result.to_json() == {k: v for k, v in document.items() if k != "error"}
    facts = api.inspect_wheel([junk, broken], unreadable="report")
    assert facts.paths == (str(broken),) and len(facts.unreadable) == 1
    with pytest.raises(api.InputError, match="not a zip archive"):
        api.check([junk, broken])
    with pytest.raises(api.InvalidValue, match="neither 'raise' nor 'report'"):
        api.check(broken, unreadable="skip")  # type: ignore[arg-type]


def test_need_names_every_axis(fixture_wheels: dict[str, Path]) -> None:
    stable = api.need(fixture_wheels["clean"])
    assert str(stable) == "stable >= 2.10" and stable.unknown == ()
    cuda = api.need(fixture_wheels["cuda13"]).to_json()
    assert cuda["schema_version"] == 1
    assert cuda["need"]["torch_build"] == ["cuda-13"]  # type: ignore[index]


def test_need_of_a_checked_wheel_reads_no_binary_again(
    fixture_wheels: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``need(checked=...)`` (what ``scan`` asks) answers as ``need`` alone, on untagged,
    tagged, CUDA and broken wheels, and from the check's facts: reading the binaries again
    would fail here."""
    from torchwheel.selection import candidates

    wheels = {
        k: fixture_wheels[k] for k in ("clean", "cuda13", "per_minor", "tw101", "tw201", "tw503", "tw410")
    }
    wheels["tagged"] = api.tag(fixture_wheels["clean"], tmp_path)  # WHEEL's fields: no binary read
    kinds = tuple(wheels)
    alone = {}
    for kind in kinds:
        try:
            alone[kind] = api.need(wheels[kind]).to_json()
        except api.InputError as exc:
            alone[kind] = str(exc)
    checked = {kind: api.check(wheels[kind]) for kind in kinds}

    def unread(*_: object) -> None:
        raise AssertionError("the binaries were read again")

    monkeypatch.setattr(candidates, "_facts", unread)
    for kind in kinds:
        try:
            again = api.need(wheels[kind], checked=checked[kind]).to_json()
        except api.InputError as exc:
            again = str(exc)
        assert again == alone[kind], kind


@pytest.mark.parametrize(
    ("scenario", "torch", "backend", "gpu", "cell", "axis"),
    [
        ("clean", "2.9", None, None, "no", "version"),
        ("clean", "2.10.0", None, None, "loads", "version"),
        ("clean", "2.13", "cpu", None, "loads", "version"),
        ("cuda13", "2.13.0", None, None, "unknown", "build"),  # the build not given: never "any"
        ("cuda13", "2.13.0", "cpu", None, "no", "build"),
        ("cuda13", "2.13.0", "cu126", None, "no", "build"),
        ("cuda13", "2.13.0", "cu130", None, "loads", "version"),
        ("per_minor", "2.6", "cpu", None, "only", "version"),
        ("per_minor", "2.12", "cpu", None, "no", "version"),
    ],
)
def test_loads_on_is_the_one_verdict(
    fixture_wheels: dict[str, Path],
    scenario: str,
    torch: str,
    backend: str | None,
    gpu: str | None,
    cell: str,
    axis: str,
) -> None:
    found = api.loads_on(fixture_wheels[scenario], torch=torch, backend=backend, gpu=gpu)
    assert (found.cell, found.axis) == (cell, axis), found.reason
    assert found.loads == (cell in ("loads", "only", "some"))
    doc = found.to_json()
    assert doc["fit"] == cell and doc["reason"] == found.reason and doc["torch_backend"] == backend


def test_loads_on_agrees_with_matrix(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """The matrix's cells for a minor and the API's verdict for it are the same judgement."""
    wheel = fixture_wheels["per_minor"]
    grid = _document("matrix", str(wheel), cwd=tmp_path)
    (row,) = grid["wheels"]  # type: ignore[misc]
    for minor, cell in row["cells"].items():
        found = api.loads_on(wheel, torch=minor)
        assert (found.cell, found.reason) == (cell["fit"], cell["reason"]), minor


def test_tag_writes_and_returns_the_path(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    source = fixture_wheels["tw501"]
    before = source.read_bytes()
    written = api.tag(source, tmp_path / "out")
    assert written.parent == tmp_path / "out" and written.is_file()
    assert source.read_bytes() == before  # the input is never modified
    with zipfile.ZipFile(written) as zf:
        assert "Requires-Dist: torch>=2.10" in zf.read("w501-1.0.0.dist-info/METADATA").decode()
    assert api.check(written).exit_code == 0
    labelled = api.tag(source, tmp_path / "lab", local_label="torch2.10", build_tag="1")
    assert labelled.name.startswith("w501-1.0.0+torch2.10-1-")


def test_tag_speaks_python(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """api.tag's refusals name its keyword arguments, not the command line's options: the
    output that exists (``overwrite=True``), the missing build torch (``build_torch``, which
    takes ``"installed"`` as the option does), a contradicting ``build_torch``; each error
    keeps its kind, a RewriteRefused its findings."""
    out = tmp_path / "out"
    api.tag(fixture_wheels["tw501"], out)
    with pytest.raises(api.InputError) as exists:
        api.tag(fixture_wheels["tw501"], out)
    assert str(exists.value).endswith(": exists; pass overwrite=True to replace it")
    assert "--" not in str(exists.value)
    assert api.tag(fixture_wheels["tw501"], out, overwrite=True).is_file()
    with pytest.raises(api.InputError) as unpinned:  # w204 pins torch==2.13.*: a bare copy
        api.tag(_bare_requirement(fixture_wheels["tw204"], tmp_path), tmp_path / "u")
    said = str(unpinned.value)
    assert "pass build_torch='X.Y', or build_torch='installed' (the torch installed here)" in said
    assert "--build-torch" not in said
    pinned = api.tag(
        _bare_requirement(fixture_wheels["tw204"], tmp_path), tmp_path / "u", build_torch="installed"
    )
    with zipfile.ZipFile(pinned) as zf:
        assert "Requires-Dist: torch==2.13.*" in zf.read("w204-1.0.0.dist-info/METADATA").decode()
    with pytest.raises(api.InputError) as stable:
        api.tag(fixture_wheels["tw501"], tmp_path / "s", build_torch="2.13")
    assert str(stable.value).startswith("build_torch='2.13': the wheel is stable-ABI")
    with pytest.raises(api.RewriteRefused) as refused:
        api.tag(fixture_wheels["tw402"], tmp_path / "never")
    assert str(refused.value) == "refusing to rewrite: TW402 make the new metadata untrustworthy"
    assert {f.code for f in refused.value.findings} == {"TW402"}


def _bare_requirement(wheel: Path, tmp_path: Path) -> Path:
    """A copy of ``wheel`` whose METADATA requires a bare ``torch`` (RECORD made true again)."""
    from torchwheel.wheel.record import record_hash

    out = tmp_path / "bare" / wheel.name
    if out.exists():
        return out
    out.parent.mkdir()
    with zipfile.ZipFile(wheel) as zin:
        items = {i.filename: zin.read(i) for i in zin.infolist()}
    (meta,) = (k for k in items if k.endswith(".dist-info/METADATA"))
    items[meta] = b"\n".join(
        b"Requires-Dist: torch" if line.startswith(b"Requires-Dist: torch") else line
        for line in items[meta].split(b"\n")
    )
    (rec,) = (k for k in items if k.endswith(".dist-info/RECORD"))
    items[rec] = "".join(
        f"{k},,\n" if k == rec else f"{k},{record_hash(v)},{len(v)}\n" for k, v in items.items()
    ).encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for k, v in items.items():
            zout.writestr(k, v)
    return out


def test_bad_input_raises_input_error(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    junk = tmp_path / "junk-1.0-py3-none-any.whl"
    junk.write_bytes(b"not a zip")
    for call in (api.check, api.inspect_wheel, api.need):
        with pytest.raises(api.InputError):
            call(junk)
    with pytest.raises(api.InputError, match="not a version"):
        api.loads_on(fixture_wheels["clean"], torch="latest")
    with pytest.raises(api.InputError, match="unknown rule code"):
        api.check(fixture_wheels["clean"], ignore=["TW999"])
    with pytest.raises(api.RewriteRefused) as refused:
        api.tag(fixture_wheels["tw402"], tmp_path / "never")
    assert {f.code for f in refused.value.findings} == {"TW402"}
    assert not (tmp_path / "never").exists() or not list((tmp_path / "never").iterdir())
