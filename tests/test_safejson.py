"""``safejson``: every JSON document from outside is bounded and schema-checked before use.

The CLI side (a hostile ``variant.json`` through ``index``, a hostile ``--symbols`` table
through ``check``) is the "json-document" family of the hostile corpus (tests/test_hostile.py);
here the reader itself, and each document's schema on the shapes issue 16 reported.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from torchwheel import safejson
from torchwheel.errors import InputError
from torchwheel.net.pages import PEP691_FILE, PEP691_PROJECT, PEP691_ROOT
from torchwheel.safejson import Int, List, Object, Str
from torchwheel.tables.symtable import SymbolTable, load_shipped, shape
from torchwheel.wheel import variant_json

SMALL = Object({"a": List(Int())}, required=("a",))


def _refusal(data: bytes, schema: safejson.Schema = SMALL) -> str:
    with pytest.raises(InputError) as info:
        safejson.load(data, "doc.json", schema, reference="index-invalid")
    message = str(info.value)
    assert message.startswith("doc.json: ") and "\n" not in message
    return message


@pytest.mark.parametrize("depth", [65, 50_000, 100_000])
def test_deep_nesting_is_refused_without_recursion(depth: int) -> None:
    start = time.monotonic()
    message = _refusal(b"[" * depth + b"]" * depth)
    assert f"nesting depth ({depth:,})" in message and "max-json-depth" in message
    assert time.monotonic() - start < 2


def test_depth_at_the_limit_is_read_and_strings_do_not_count() -> None:
    deep = b"[" * 64 + b"]" * 64
    assert safejson.load(deep, "doc.json", safejson.ANY, reference="index-invalid") is not None
    brackets_in_strings = json.dumps({"a": [1], "b": "[" * 1000}).encode()
    assert safejson.load(
        brackets_in_strings, "doc.json", Object({"a": List(Int()), "b": Str()}), reference="index-invalid"
    )


def test_long_numbers_are_refused() -> None:
    assert "a number of 5,000 characters" in _refusal(b'{"a": [' + b"9" * 5000 + b"]}")
    assert "a number of 5,001 characters" in _refusal(b'{"a": [1.' + b"9" * 4999 + b"]}")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"a": "x"}', "$.a: expected a list, found a string"),
        (b'{"a": [1, "2"]}', "$.a[1]: expected an integer, found a string"),
        (b'{"a": [true]}', "$.a[0]: expected an integer, found true"),
        (b'{"b": []}', 'the key "a" is missing'),
        (b'{"a": [], "z\\n": 1}', '$: unexpected key "z\\n"'),
        (b"[1]", "$: expected an object, found a list"),
        (b'{"a": [1], "a": [2]}', 'the key "a" appears twice'),
        (b'{"a": [NaN]}', "NaN is not JSON"),
        (b'{"a": [1]', "not JSON"),
        (b"\xff\xfe{}", "not UTF-8 JSON"),
    ],
)
def test_each_problem_is_one_line_naming_the_path(data: bytes, says: str) -> None:
    assert says in _refusal(data)


def test_values_are_counted_before_parsing(set_limits: Callable[..., None]) -> None:
    start = time.monotonic()
    message = _refusal(b"[" + b"{}," * 1_100_000 + b"{}]", safejson.ANY)
    assert "max-json-values" in message and time.monotonic() - start < 2
    set_limits(MAX_JSON_BYTES="1K")
    assert "max-json-bytes" in _refusal(b'{"a": [' + b"1," * 1000 + b"1]}")


def test_load_file_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "table.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        safejson.load_file(
            fifo, "symbol table", shape(), reference="index-invalid"
        )  # returns at once: never blocks


# -- the documents ---------------------------------------------------------------------------------

GOOD_VARIANT = variant_json.document(variant_json.STABLE, "2.12")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"default-priorities": "x"}, "$.default-priorities: expected an object, found a string"),
        ({"default-priorities": {"namespace": 5}}, "$.default-priorities.namespace: expected a list"),
        ({"providers": [1, 2, 3]}, "$.providers: expected an object, found a list"),
        (
            {"providers": {"torchwheel": {"requires": "x"}}},
            "$.providers.torchwheel.requires: expected a list",
        ),
        (
            {"variants": {"torch2.12": {"torchwheel": {"stable_abi": "2.12"}}}},
            "expected a list, found a string",
        ),
        ({"variants": {"Bad Label": {}}}, 'the key "Bad Label" does not match'),
        ({"variants": {}}, "exactly one variant"),
    ],
)
def test_variant_json_schema(change: dict[str, Any], says: str) -> None:
    with pytest.raises(InputError) as info:
        variant_json.read_variant_json(json.dumps({**GOOD_VARIANT, **change}).encode(), "w.whl")
    assert says in str(info.value)


def test_variant_json_round_trip_and_merge_conflicts() -> None:
    doc = variant_json.read_variant_json(variant_json.encode_variant_json(GOOD_VARIANT), "w.whl")
    assert doc == GOOD_VARIANT
    other = variant_json.document(variant_json.LOCKED, "2.13")
    merged = variant_json.merge_variant_files([doc, other])
    assert (
        safejson.load(json.dumps(merged).encode(), "merged", variant_json.SHAPE, reference="index-invalid")
        == merged
    )
    liar = json.loads(json.dumps(GOOD_VARIANT))
    liar["variants"]["torch2.12"]["torchwheel"]["stable_abi"] = ["2.11"]
    with pytest.raises(InputError, match=r'label "torch2\.12" is described two different ways'):
        variant_json.merge_variant_files([doc, liar])


def test_symbol_table_schema() -> None:
    shipped = load_shipped()
    assert SymbolTable.from_json(shipped.to_json()) == shipped
    for doc, says in (
        ({"schema_version": 2, "symbols": {"a": {"source": "export", "introduced": 5}}}, "$.symbols.a"),
        ({"schema_version": 2, "symbols": {"a": {"source": "export", "introduced": "x.y"}}}, "not a torch"),
        ({"schema_version": 2, "symbols": {}, "wheels": [{"file": "x"}]}, "$.wheels[0]"),
        ({"schema_version": True, "symbols": {}}, "$.schema_version: expected an integer, found true"),
        ({"schema_version": 1, "symbols": {"a": {"source": "export"}}}, "schema 1"),
    ):
        with pytest.raises(InputError) as info:
            SymbolTable.from_json(json.dumps(doc))
        assert says in str(info.value)


def test_pep691_pages() -> None:
    project = {
        "meta": {"api-version": "1.1", "_last-serial": 7},
        "name": "demo",
        "files": [
            {
                "filename": "demo-1.0-py3-none-any.whl",
                "url": "files/demo-1.0-py3-none-any.whl",
                "hashes": {"sha256": "0" * 64},
                "requires-python": ">=3.9",
                "core-metadata": {"sha256": "1" * 64},
                "yanked": "broken build",
                "size": 123,
            }
        ],
        "versions": ["1.0"],
    }
    assert (
        safejson.load(json.dumps(project).encode(), "page", PEP691_PROJECT, reference="index-invalid")
        == project
    )
    root = {"meta": {"api-version": "1.0"}, "projects": [{"name": "demo"}]}
    assert safejson.load(json.dumps(root).encode(), "page", PEP691_ROOT, reference="index-invalid") == root
    for change, says in (
        ({"files": {"a": 1}}, "$.files: expected a list"),
        ({"meta": {"api-version": "2.0"}}, "$.meta.api-version"),
    ):
        with pytest.raises(InputError) as info:
            safejson.load(
                json.dumps({**project, **change}).encode(), "page", PEP691_PROJECT, reference="index-invalid"
            )
        assert says in str(info.value)
    # a file entry is checked on its own (one bad entry costs that entry: tests/net/test_pages.py)
    for entry, says in (
        ({"filename": "x.whl", "url": 5, "hashes": {}}, "$.files[0].url"),
        ({"filename": "x.whl", "url": "x", "hashes": {}, "yanked": 3}, "$.files[0].yanked"),
    ):
        assert says in (PEP691_FILE.problem(entry, "$.files[0]") or "")


def test_select_reads_local_pep691_pages(fixture_wheels: dict[str, Path], tmp_path: Path) -> None:
    """A root page and a project page in the JSON form, as a static host lays them out:
    ``select -i`` follows the root to the project's ``index.json``, checks the sha256 and
    chooses; a yanked file is skipped with its reason."""
    import hashlib
    import shutil

    from .lib.helpers import torchwheel

    wheel = fixture_wheels["clean"]
    project = tmp_path / "simple" / "demo-stable"
    project.mkdir(parents=True)
    shutil.copy2(wheel, project / wheel.name)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    entry = {"filename": wheel.name, "url": wheel.name, "hashes": {"sha256": digest}, "core-metadata": True}
    page = {"meta": {"api-version": "1.1"}, "name": "demo-stable", "files": [entry], "versions": ["1.0.0"]}
    (project / "index.json").write_text(json.dumps(page))
    root = {"meta": {"api-version": "1.0"}, "projects": [{"name": "Demo_Stable"}]}
    (tmp_path / "simple" / "index.json").write_text(json.dumps(root))
    plan = ("--torch", "2.13", "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64")
    for where in (tmp_path / "simple", tmp_path / "simple" / "index.json", project / "index.json"):
        result = torchwheel("select", "--format", "json", *plan, "-i", where.as_uri(), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["projects"][0]["chosen"]["file"] == wheel.name
    page["files"] = [{**entry, "yanked": "a broken build"}]
    (project / "index.json").write_text(json.dumps(page))
    result = torchwheel("select", *plan, "-i", str(project / "index.json"), cwd=tmp_path)
    # yanked (PEP 592) is an answer, not unreadable input: passed over as pip does, nothing fits
    assert result.returncode == 1 and "yanked on" in result.stdout and "nothing fits" in result.stdout
