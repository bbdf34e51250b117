"""Issue 39's families (fixtures/hostile_own.py, fixtures/hostile_surfaces.py): each case set
up in a folder of its own, one command line (or one call of the API) run in it, and the
invariant of docs/evidence/reliability.md held: torchwheel changes only files it created in this run
or that the command names as its output, and replaces or appends to an output only when it
is of the kind torchwheel writes there; every other file, in the folder and in a folder
outside it (``outside``, where the cases point their links), stays byte for byte.

Besides: the exit code the case expects, one line on stderr for exit 2, no traceback and no
"internal error", and for the cases where memory is the point (``measure``: a 100 MB line,
``/dev/full``, a 200 MB header) a process of its own whose peak RSS is held to the budget.
The other cases run in this process (``torchwheel.cli.exits.run``): their memory is not what
is measured, and the suite stays fast. ``TORCHWHEEL_HOSTILE_LONG=1`` adds the long cases
(400 MB lines, a 1 GB header).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from torchwheel.limits import MEMORY_BUDGET_MB

from .lib.helpers import REPO
from .lib.own_runner import changed, in_a_process, in_process, snapshot

sys.path.insert(0, str(REPO / "fixtures"))
import hostile_inputs
import hostile_own
import hostile_round5
import hostile_surfaces

LONG = os.environ.get("TORCHWHEEL_HOSTILE_LONG") == "1"
TIMEOUT = 60.0
CASES = [
    c
    for c in [
        *hostile_own.cases(),
        *hostile_surfaces.cases(),
        *hostile_round5.cases(),
        *hostile_inputs.cases(),
    ]
    if LONG or not c.long
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_own_case(
    case: hostile_own.Own, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = tmp_path / "run", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("a file no command names\n")
    for name in [n for n in os.environ if n.startswith("TORCHWHEEL_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(root)
    spec = case.setup(root, outside)
    before, before_outside = snapshot(root), snapshot(outside)
    where = f"{case.summary} [{case.klass}]"
    if case.measure or spec.fsize or spec.stdout:
        code, out, err, peak, timed_out = in_a_process(spec, root, TIMEOUT)
        assert not timed_out, f"{where}: killed after {TIMEOUT:.0f} s"
        assert peak <= MEMORY_BUDGET_MB, f"{where}: peak RSS {peak:.0f} MB"
    else:
        code, out, err = in_process(spec, capsys, monkeypatch)
    lines = err.strip().splitlines()
    assert code in case.codes, f"{where}: exit {code}, expected {sorted(case.codes)}: {err[-300:]}"
    assert "Traceback" not in err + out and "internal error" not in err, f"{where}: {err[-400:]}"
    if code in (2, 3):
        assert len(lines) == 1, f"{where}: exit {code} with {len(lines)} lines on stderr: {err[-300:]}"
        assert case.message in err, f"{where}: the message lacks {case.message!r}: {err[-300:]}"
    if case.says:  # what the report must hold, whatever the exit (check-inputs: the others' findings)
        assert case.says in out, f"{where}: stdout lacks {case.says!r}"
    others = changed(before, snapshot(root), spec.outputs)
    assert others == [], f"{where}: changed what the run does not own: {others[:5]}"
    assert snapshot(outside) == before_outside, f"{where}: changed a file outside the folder"
    if spec.verify is not None:
        assert spec.verify(root) == "", where


def test_every_case_of_issue_39_is_in_the_corpus() -> None:
    """The cases the issue lists, by name: each runs here, in the short form."""
    names = {c.name for c in CASES}
    assert {
        "scan_o_notes", "scan_o_wheel", "scan_o_dev_full", "scan_report_line_100mb", "scan_o_line_100mb",
        "scan_o_fifo", "scan_report_fifo", "scan_o_path_a_number", "scan_report_size_a_string",
        "scan_report_version_true", "scan_report_bytes_inf", "scan_report_bytes_nan", "scan_o_link_outside",
        "scan_o_proc_version", "tag_build_tag_5000_digits", "tag_build_tag_traversal", "stdout_dev_full",
        "stdout_closed_pipe", "tag_full_disk", "scan_o_full_disk",
    } <= names  # fmt: skip
