"""Which torch release introduced each stable-ABI shim function.

An extension built against the LibTorch stable ABI calls C shim functions
(``aoti_torch_*``, ``torch_*``) that libtorch exports. A function added in 2.12 makes the
extension unloadable on 2.11, so the minimum torch a wheel needs is the newest
"introduced in" version among the shim functions it imports. PyTorch records that version
in its headers: newer declarations sit inside ``#if TORCH_FEATURE_VERSION >=
TORCH_VERSION_2_X_0`` blocks so that an extension compiled with ``TORCH_TARGET_VERSION``
cannot see them. ``headergates`` reads those gates out of the headers (no compiler),
``shim_headers`` the headers out of a torch wheel or installation (no unpacking of the 200+ MB
wheel); this module keeps the result as a small versioned JSON table that ships with torchwheel,
because the checker must work without torch installed. Functions behind a device
conditional are recorded like any other: whether libtorch exports them depends on the
build, not on the release, and that is a different question.

Gates turned out not to be the loader's truth (the ``*_to_ivalue`` family is declared
ungated yet first exported by 2.10), so the *shipped* table is dated by the first release
whose libraries export each shim (``scripts/shim_exports.py``, run by scripts/gen_symtable.py) and
records per symbol where its version came from and on which platforms it is exported;
header scanning stays for the cross-check, for shims no wheel read exports (XPU), and for
``torchwheel symbols update``, whose header-only tables never overrule an export date.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from torchwheel.errors import InputError
from torchwheel.frozen import frozen
from torchwheel.tables.shimorigin import EXPORT, HEADER_GATE, Origin, TorchWheelOrigin
from torchwheel.version import FeatureVersion

# deferred: headergates (1.5 ms at start-up) only reads headers (shim_headers) and merges
# tables (merge); reading a table needs neither
if TYPE_CHECKING:
    from torchwheel.safejson import Object
    from torchwheel.tables.headergates import Gate

# the package is installed as files (cli/symbols reads include/ the same way): importlib.resources
# would cost 6 ms at start-up (it imports tempfile and shutil)
_SHIPPED = Path(__file__).parent.parent / "data" / "shim_versions.json"

__all__ = [
    "BASELINE",
    "SCHEMA_VERSION",
    "Origin",
    "SymbolTable",
    "TorchWheelOrigin",
    "load_shipped",
]

#: Version of the JSON layout written by :meth:`SymbolTable.to_json`. Readers refuse
#: other values: a future layout may put something else in ``symbols``. Version 2 made
#: each symbol an object (version, where it came from, first release per exporting platform)
#: and added the wheels read; version 1 (a bare version per symbol) is still read, so
#: tables written by an older ``symbols update`` keep working. Version 3 added the optional
#: ``releases`` (the torch release list) and ``exports`` (platform -> an export index,
#: base64), which ``tablechoice`` reads: one file refreshes every table. Version 4 added the
#: optional ``backends`` (the backend table, ``torchabi.torch_backends``) and, per symbol, the
#: optional ``needs`` (what of a torch build the shim needs beyond its release: ``python``,
#: exported by libtorch_python; ``distributed``, declared for a distributed build only).
SCHEMA_VERSION = 4

#: The torch release assumed for baseline (``None``) symbols when computing a minimum.
#:
#: 2.9 is the first release whose stable-ABI headers were usable for version-targeted
#: builds (``torch/csrc/stable/version.h`` starts its gate macros at 2.10 and names 2.9 as
#: the lowest target), and it is the oldest release the shipped table reads exports from:
#: ``None`` means "exported by torch 2.9.0" for symbols dated by export, and "declared
#: without a gate" for the few only a header speaks for. Nothing older is claimed, so the
#: baseline stays 2.9.0 rather than moving to whatever older release also had a symbol.
BASELINE = FeatureVersion(2, 9, 0)


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------


def _version_key(release: str) -> FeatureVersion:
    return FeatureVersion.parse(release)


@frozen
class SymbolTable:
    """Shim function name -> release that introduced it (``None``: baseline).

    ``sources`` are the torch releases whose headers or exports went into the table. They
    bound what the table can know: a symbol newer than ``newest`` is simply absent.
    ``origins`` says per symbol whether its version is an export date or a header gate
    (absent: header gate), ``wheels`` which torch wheels the export dates were read from.
    """

    symbols: Mapping[str, FeatureVersion | None]
    sources: tuple[str, ...] = ()
    origins: Mapping[str, Origin] = field(default_factory=dict)
    wheels: tuple[TorchWheelOrigin, ...] = ()

    def __post_init__(self) -> None:
        # Sorted, read-only copies: the table is shared through load_shipped()'s cache,
        # and sorted order makes equality, JSON and reports deterministic.
        frozen = MappingProxyType(dict(sorted(self.symbols.items())))
        releases = sorted({_version_key(s).release for s in self.sources}, key=_version_key)
        # Header-gate origins without platforms are the default: dropping them keeps a
        # header-only table equal to its JSON round trip.
        default = Origin()
        origins = {n: o for n, o in sorted(self.origins.items()) if n in frozen and o != default}
        wheels = sorted(set(self.wheels), key=lambda w: (_version_key(w.release), w.platform, w.file))
        object.__setattr__(self, "symbols", frozen)
        object.__setattr__(self, "sources", tuple(releases))
        object.__setattr__(self, "origins", MappingProxyType(origins))
        object.__setattr__(self, "wheels", tuple(wheels))

    def origin(self, name: str) -> Origin:
        """Where ``introduced(name)`` comes from; KeyError for unknown names."""
        if name not in self.symbols:
            raise KeyError(name)
        return self.origins.get(name, Origin())

    def introduced(self, name: str) -> FeatureVersion | None:
        """Release that introduced ``name``; ``None`` when it is baseline.

        Raises KeyError for names the table does not know, because "unknown" must not be
        mistaken for "available everywhere": it usually means a torch newer than the table.
        """
        if name not in self.symbols:
            raise KeyError(name)
        return self.symbols[name]

    @property
    def oldest_source(self) -> FeatureVersion | None:
        return _version_key(self.sources[0]) if self.sources else None

    @property
    def newest(self) -> FeatureVersion:
        """The newest release this table speaks for: its newest source or gate.

        A wheel built against anything newer may use symbols the table has never seen.
        """
        candidates = [_version_key(s) for s in self.sources]
        candidates += [v for v in self.symbols.values() if v is not None]
        return max(candidates, default=BASELINE)

    def merge(self, other: SymbolTable) -> SymbolTable:
        """Combine two tables built from different torch releases.

        Rules, per symbol:

        * Declared in both: the lowest gate. Gates are the maintainers' own statement of
          availability and get added retroactively when a gap is noticed (torch 2.14 gates
          ten ``aoti_torch_mps_*`` functions at 2.10 that 2.13 declared ungated), so a gate
          beats an ungated declaration in another release, and a lower gate (say, after a
          backport) beats a higher one. Ungated in both: baseline.
        * Declared in one table only, and the other table scanned an older release: the
          symbol did not exist there, so it is at least as new as this table's oldest
          release, ``x.y.0`` (patch releases do not add API). Without a gate that is the
          whole answer; with a lower gate it still wins, because generated headers gate an
          op once for every device: 2.14's ``c_shim_xpu.h`` gates
          ``aoti_torch_xpu_grid_sampler_3d`` at 2.13, yet 2.13 had no XPU kernel for it.
        * Declared in one table only, and the other table scanned only newer releases: a
          removal from newer headers does not make libtorch stop exporting the function
          (that is the stable ABI's promise), so the declaring table's value stands.

        * An export date beats a gate: it is what the loader sees (``scripts/shim_exports.py``), so
          extending the shipped table with a newer torch's headers leaves it alone. Two
          export dates: the lower one, over the union of platforms.

        Only the oldest release of each table matters, which keeps merge commutative.
        Fold tables oldest first (as :func:`merge_all` does): an inferred ``x.y.0`` is
        stored like a gate, so a symbol that disappears and comes back across releases
        can depend on the order.
        """
        mine, theirs = self.oldest_source, other.oldest_source
        merged: dict[str, Gate] = {}
        origins: dict[str, Origin] = {}
        for name in self.symbols.keys() | other.symbols.keys():
            if name in self.symbols and name in other.symbols:
                a, b = self.origin(name), other.origin(name)
                platforms = _union(a.platforms, b.platforms)
                needs = (*a.needs, *b.needs)  # what either reading found the shim needs
                if (a.source == EXPORT) != (b.source == EXPORT):
                    winner = self if a.source == EXPORT else other
                    merged[name] = winner.symbols[name]
                    origins[name] = Origin(winner.origin(name).source, winner.origin(name).platforms, needs)
                    continue
                merged[name] = _lowest_gate(self.symbols[name], other.symbols[name])
                if a.source == EXPORT and None in (self.symbols[name], other.symbols[name]):
                    merged[name] = None  # exported by the baseline release: nothing is lower
                origins[name] = Origin(a.source, platforms, needs)
            elif name in self.symbols:
                merged[name] = _arrival(self.symbols[name], mine, theirs)
                origins[name] = self.origin(name)
            else:
                merged[name] = _arrival(other.symbols[name], theirs, mine)
                origins[name] = other.origin(name)
        return SymbolTable(merged, self.sources + other.sources, origins, self.wheels + other.wheels)

    def to_json(self, extra: Mapping[str, object] | None = None) -> str:
        """Deterministic JSON (sorted keys, two-space indent) so regenerating is diffable.
        ``extra``: the other tables of a tables file (``releases``, ``exports``)."""
        document = {
            "schema_version": SCHEMA_VERSION,
            "sources": list(self.sources),
            "symbols": "@SYMBOLS@",
            "wheels": [w.to_json() for w in self.wheels],
            **(extra or {}),
        }
        # One line per symbol: ~800 of them stay a small file and a one-line diff each.
        entries = ",\n".join(
            f"    {json.dumps(name)}: {json.dumps(self.origin(name).to_json(version), sort_keys=True)}"
            for name, version in self.symbols.items()
        )
        symbols = "{\n" + entries + "\n  }" if entries else "{}"
        return json.dumps(document, indent=2, sort_keys=True).replace('"@SYMBOLS@"', symbols, 1) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, where: str = "symbol table") -> SymbolTable:
        """A table as ``to_json`` writes it, read through ``safejson`` (bounded, checked
        against ``shape()``); any defect is one ``InputError`` naming ``where``."""
        data = text.encode("utf-8") if isinstance(text, str) else text
        from torchwheel import safejson

        return cls.from_document(safejson.load(data, where, shape(), reference="tables-file-invalid"), where)

    @classmethod
    def from_document(cls, document: dict[str, Any], where: str) -> SymbolTable:
        """A document that fits ``shape()``: the versions in it are parsed here."""
        schema = document["schema_version"]
        symbols: dict[str, Gate] = {}
        origins: dict[str, Origin] = {}
        # ~900 symbols share a few dozen versions and origins: each is built once (two thirds
        # of the time the shipped table took to load at start-up)
        parsed: dict[str, FeatureVersion] = {}
        made: dict[tuple[Any, ...], Origin] = {}

        def parse(text: str) -> FeatureVersion:
            version = parsed.get(text)
            if version is None:
                version = parsed[text] = FeatureVersion.parse(text)
            return version

        def origin(source: str, platforms: dict[str, str], needs: list[str]) -> Origin:
            key = (source, *platforms.items(), *needs)
            found = made.get(key)
            if found is None:
                pairs = tuple((p, parse(r).release) for p, r in platforms.items())
                found = made[key] = Origin(source, pairs, tuple(needs))
            return found

        try:
            for name, raw in document["symbols"].items():
                value = raw
                if schema >= 2:
                    if not isinstance(raw, dict):
                        raise ValueError(f"{name}: schema 2 describes each symbol with an object")
                    value = raw.get("introduced")
                    origins[name] = origin(raw["source"], raw.get("platforms", {}), raw.get("needs", []))
                elif isinstance(raw, dict):
                    raise ValueError(f"{name}: schema 1 gives each symbol a version or null")
                symbols[name] = None if value is None else parse(value)
            wheels = tuple(TorchWheelOrigin(**w) for w in document.get("wheels", []))
            return cls(symbols, tuple(document.get("sources", [])), origins, wheels)
        except ValueError as exc:
            raise InputError(f"{where}: {exc}", reference="tables-file-invalid") from exc


_WHEEL_FIELDS = ("file", "sha256", "release", "platform", "variant")


@functools.cache
def shape() -> Object:
    """The JSON layout ``to_json`` writes (schema 2) and schema 1 (a version or null per
    symbol). Built on first use: a check that reads only the shipped table (which is not
    read through ``safejson``) never imports the schema checker."""
    from torchwheel.safejson import Either, Int, List, Null, Object, Str

    symbol_v2 = Object(
        {
            "introduced": Either((Str(), Null())),
            "source": Str(choices=(EXPORT, HEADER_GATE)),
            "platforms": Object(other=Str()),
            "needs": List(Str(pattern=r"[a-z_]{1,32}")),
        },
        required=("source",),
    )
    return Object(
        {
            "schema_version": Int(1, SCHEMA_VERSION),
            "sources": List(Str()),
            "symbols": Object(other=Either((symbol_v2, Str(), Null()))),
            "wheels": List(Object(dict.fromkeys(_WHEEL_FIELDS, Str()), required=_WHEEL_FIELDS)),
            "releases": List(Str(pattern=r"\d{1,4}(\.\d{1,4}){1,3}")),
            "backends": List(Str(pattern=r"cpu|xpu|cu\d{3}|rocm\d{1,2}\.\d{1,2}")),
            "exports": Object(other=Str()),  # base64, decoded with validation by tablechoice
        },
        required=("schema_version", "symbols"),
    )


def _union(a: Iterable[tuple[str, str]], b: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Platforms of two origins; a platform in both keeps its earlier release."""
    first: dict[str, str] = {}
    for platform, release in (*a, *b):
        if platform not in first or _version_key(release) < _version_key(first[platform]):
            first[platform] = release
    return tuple(first.items())


def _lowest_gate(a: Gate, b: Gate) -> Gate:
    """Lowest gate of two declarations, where ungated means "no information"."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _arrival(gate: Gate, present_since: FeatureVersion | None, other: FeatureVersion | None) -> Gate:
    """Version of a symbol declared (with ``gate``) in one table only; see merge()."""
    from torchwheel.tables.headergates import max_gate

    if present_since is None or other is None or other >= present_since:
        return gate
    return max_gate((gate, FeatureVersion(present_since.major, present_since.minor, 0)))


def merge_all(tables: Iterable[SymbolTable]) -> SymbolTable:
    """Fold tables oldest release first, the order :meth:`SymbolTable.merge` assumes."""
    ordered = sorted(tables, key=lambda t: (t.oldest_source is None, t.oldest_source or BASELINE))
    if not ordered:
        raise ValueError("no symbol tables to merge")
    return functools.reduce(SymbolTable.merge, ordered)


@functools.cache
def load_shipped() -> SymbolTable:
    """The table generated by scripts/gen_symtable.py and shipped in the package data.

    Not read through ``safejson`` (bounds and the schema check cost 7 ms at start-up): the
    file is torchwheel's own, and tests/test_startup.py holds it to ``shape()``."""
    return SymbolTable.from_document(json.loads(_SHIPPED.read_bytes()), "shipped symbol table")
