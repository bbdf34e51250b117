"""The small commands: ``include`` gives a flag that really compiles the header; ``symbols
update`` regenerates the table from a torch wheel; misuse is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from torchwheel.version import FeatureVersion

from ..lib.helpers import marker_hits, torchwheel


def test_include_flag_compiles_the_marker(tmp_path: Path) -> None:
    flag = torchwheel("include", cwd=tmp_path).stdout.strip()
    assert flag.startswith("-I") and Path(flag[2:], "torchwheel", "stable_abi_marker.h").is_file()
    src = tmp_path / "m.c"
    src.write_text("#include <torchwheel/stable_abi_marker.h>\nint f(void) { return 0; }\n")
    out = tmp_path / "m.so"
    subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Werror", "-pedantic", flag, "-DTORCH_FEATURE_VERSION=0x020B000000000000ULL",
         "-shared", "-fPIC", str(src), "-o", str(out)],
        check=True,
    )  # fmt: skip
    (hit,) = marker_hits(out.read_bytes())
    assert hit.record.version == FeatureVersion(2, 11)
    shown = json.loads(torchwheel("inspect", "--json", str(out), cwd=tmp_path).stdout)
    assert shown["files"][0]["slices"][0]["marker"]["version"] == "2.11.0"


def test_symbols_update_from_a_torch_wheel(torch_wheel: Path, tmp_path: Path) -> None:
    wheel = torch_wheel
    out = tmp_path / "table.json"
    result = torchwheel("symbols", "update", "--replace", str(wheel), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    table = json.loads(out.read_text())
    assert table["sources"] == ["2.13.0"]
    assert table["symbols"]["torch_from_blob"]["introduced"] == "2.11.0"
    assert table["symbols"]["aoti_torch_get_sizes"]["introduced"] is None
    assert table["symbols"]["torch_from_blob"]["source"] == "header-gate"  # headers only


def test_misuse_is_one_line_exit_2(tmp_path: Path) -> None:
    for args in (
        ("frobnicate",),
        ("check",),
        ("tag", "--in-place", "-w", "x", "a.whl"),
        ("check", "--format", "xml", "a.whl"),
    ):
        result = torchwheel(*args, cwd=tmp_path)
        assert result.returncode == 2, args
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stderr.startswith("torchwheel: error: ")


def test_symbols_update_on_what_is_not_torch_is_one_line(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 16: a wheel without torch's headers, a file that is no wheel, a directory without
    torch/include ended in "internal error: ValueError"."""
    (tmp_path / "notes.txt").write_text("not a wheel\n")
    (tmp_path / "empty").mkdir()
    for source in (str(fixture_wheels["clean"]), "notes.txt", "empty"):
        result = torchwheel("symbols", "update", source, "-o", "out.json", cwd=tmp_path)
        assert result.returncode == 2, (source, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "internal error" not in result.stderr and result.stderr.startswith("torchwheel: error: ")
    assert not (tmp_path / "out.json").exists()
