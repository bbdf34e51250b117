"""wheel/record.py's RECORD reading held to installer's (``installer.records``, the reader
pip's installs are checked with) on every RECORD of the dev venvs (real, as pip wrote them),
and its refusals the same whichever way a RECORD is split (with csv, or at its commas when
it holds no quote)."""

from __future__ import annotations

from pathlib import Path

import pytest
from installer.records import parse_record_file

from torchwheel.errors import InputError
from torchwheel.wheel.record import parse_record

from ..lib.helpers import REPO


def _records() -> list[Path]:
    found = sorted(
        p
        for env in (".venv", ".venv-cu130")
        for p in (REPO / env).glob("lib/python3*/site-packages/*.dist-info/RECORD")
    )
    if len(found) < 100:
        pytest.fail(f"{len(found)} RECORDs in the dev venvs: run `bash scripts/dev-setup`")
    return found


def test_every_real_record_reads_as_installer_reads_it() -> None:
    for record in _records():
        text = record.read_text(encoding="utf-8")
        theirs = {}
        for path, digest, size in parse_record_file(line for line in text.splitlines() if line.strip()):
            theirs[path] = (path, digest or None, int(size) if size else None)
        ours = {p: (e.path, e.hash, e.size) for p, e in parse_record(text).items()}
        assert list(ours.items()) == list(theirs.items()), record


def test_a_quoted_row_and_an_unquoted_one_read_alike() -> None:
    plain = parse_record("a/b.py,sha256=x,1\na/c d.py,,\n")
    quoted = parse_record('"a/b.py",sha256=x,1\n"a/c d.py",,\n')
    assert plain == quoted
    assert parse_record('"a,b.py",,\n')["a,b.py"].size is None  # a comma only a quote can hold


@pytest.mark.parametrize(
    "text",
    [f"{'x' * 200_000},sha256=abc,1\n", f'"{"x" * 200_000}",sha256=abc,1\n'],
    ids=["unquoted", "quoted"],
)
def test_a_field_over_csvs_limit_is_refused_either_way(text: str) -> None:
    with pytest.raises(InputError, match="RECORD is not readable CSV"):
        parse_record(text)


def test_a_row_without_three_fields_is_refused() -> None:
    with pytest.raises(InputError, match="does not have 3 fields"):
        parse_record("a.py,sha256=x\n")
