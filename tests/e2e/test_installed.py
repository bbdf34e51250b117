"""Installed distributions (``--env``): RECORD read by the installed-project spec, entries
outside site-packages (pip's ``../../../bin`` scripts, and absurd ones), and torch itself.

The fixture wheels are installed by pip into fresh venvs; torchwheel then runs on that
venv's interpreter, which sees this checkout through a ``.pth`` line (site.addsitedir of
the test environment, appended after the venv's own site-packages).
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from pathlib import Path

from ..lib.helpers import fresh_venv, pip_install, torchwheel


def _venv(path: Path, wheel: Path) -> tuple[Path, Path]:
    """A fresh venv with ``wheel`` installed by pip; returns (python, site-packages)."""
    python = fresh_venv(path)
    (site,) = (path / "lib").glob("python3*/site-packages")
    ours = sysconfig.get_paths()["purelib"]
    (site / "zz_torchwheel_tests.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    result = pip_install(python, "--no-deps", "--no-index", str(wheel))
    assert result.returncode == 0, result.stderr
    return python, site


def _check(python: Path, dist: str, cwd: Path) -> tuple[int, list[dict[str, str]], str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run(
        [str(python), "-m", "torchwheel", "check", "--no-config", "--format", "json", "--env", dist],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    findings = json.loads(result.stdout)["findings"] if result.stdout.strip() else []
    return result.returncode, findings, result.stderr


def _record(site: Path, dist: str) -> Path:
    (record,) = site.glob(f"{dist}-*.dist-info/RECORD")
    return record


def test_pip_installed_distribution_is_clean(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """pip's RECORD: a console script at ../../../bin, .pyc and RECORD without hashes."""
    python, site = _venv(tmp_path / "venv", fixture_wheels["console_script"])
    rows = _record(site, "wscript").read_text().splitlines()
    assert any(r.startswith("../../../bin/wscript,sha256=") for r in rows)
    assert any(r.endswith(".pyc,,") for r in rows), "pip compiled no .pyc: the test would prove nothing"
    code, findings, stderr = _check(python, "wscript", tmp_path)
    assert (code, findings) == (0, []), (findings, stderr)


def test_installed_record_is_still_verified(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """The script outside site-packages is hashed; entries leaving the environment (``..``
    too far, an absolute path, a symlink out) are findings and never read; a deleted
    ``.pyc`` cache is no loss."""
    python, site = _venv(tmp_path / "venv", fixture_wheels["console_script"])
    script = tmp_path / "venv" / "bin" / "wscript"
    script.write_text(script.read_text() + "# changed after install\n")
    for pyc in (site / "wscript").glob("__pycache__/*.pyc"):
        pyc.unlink()
    (site / "wscript" / "escape.py").symlink_to("/etc/hostname")
    record = _record(site, "wscript")
    record.write_text(
        record.read_text()
        + "../../../../../../../../../../../../etc/hostname,sha256=AAAA,1\n"
        + "/etc/passwd,,\n"
        + "wscript/escape.py,sha256=AAAA,1\n"
    )
    code, findings, stderr = _check(python, "wscript", tmp_path)
    assert code == 1, stderr
    by_member = {f["member"]: (f["code"], f["message"]) for f in findings}
    assert by_member.pop("../../../bin/wscript")[0] == "TW402"
    for entry in ("../../../../../../../../../../../../etc/hostname", "/etc/passwd", "wscript/escape.py"):
        rule, message = by_member.pop(entry)
        assert rule == "TW403" and "outside the environment" in message and "not read" in message, message
        assert message.endswith("reinstall the distribution")
    assert by_member == {}


def test_torch_fixture_installed_is_not_asked_to_require_torch(
    fixture_wheels: dict[str, Path], tmp_path: Path
) -> None:
    """A pip-installed distribution named torch that ships libtorch: no finding at all (its
    unstable C++ is the ABI itself, not a use of it)."""
    python, _ = _venv(tmp_path / "venv", fixture_wheels["torch_itself"])
    code, findings, stderr = _check(python, "torch", tmp_path)
    assert code == 0, stderr
    assert findings == [], findings


def test_installed_torch_has_no_integrity_or_requirement_findings(tmp_path: Path) -> None:
    """The real torch of this environment, as pip installed it (thousands of hash-less .pyc
    entries, scripts in ../../../bin): nothing wrong with its RECORD, nothing to require."""
    result = torchwheel("check", "--no-config", "--format", "json", "--env", "torch", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["findings"] == []


def test_tag_leaves_torch_requirements_alone(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """Unstable, no torch requirement, no --build-torch: for an extension tag refuses; for
    torch itself (by name or by torch/lib/libtorch_cpu) there is nothing to add."""
    for name in ("torch_itself", "torch_renamed"):
        result = torchwheel("tag", "-w", str(tmp_path / name), str(fixture_wheels[name]), cwd=tmp_path)
        assert result.returncode == 0, (name, result.stderr)
        assert "torch itself: Requires-Dist left as it is" in result.stdout
