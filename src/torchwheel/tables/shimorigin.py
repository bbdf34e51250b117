"""Where a shim table entry comes from: the per-symbol origin and the torch wheels read.

Kept apart from ``symtable`` (which re-exports both) so that the table's provenance, which
``scripts/shim_exports.py`` writes and ``SymbolTable.from_json`` reads, is one small vocabulary.
"""

from __future__ import annotations

from torchwheel.frozen import frozen
from torchwheel.version import FeatureVersion

__all__ = ["EXPORT", "HEADER_GATE", "Origin", "TorchWheelOrigin"]

HEADER_GATE = "header-gate"
EXPORT = "export"


@frozen
class Origin:
    """Where a symbol's version comes from: ``export`` (the first release whose libraries
    export it, see ``scripts/shim_exports.py``) or ``header-gate``. ``platforms``: (label, first
    release read that exports it there), label ``os-arch`` for libtorch_cpu and
    ``os-arch+device`` for a device library (``linux-x86_64+cuda``): a platform can start
    exporting a shim later than another, and a device shim needs that device's build.
    ``needs``: what else of a torch build it needs (``python``, ``distributed``)."""

    source: str = HEADER_GATE
    platforms: tuple[tuple[str, str], ...] = ()
    # what of a torch build the shim needs beyond its release (schema 4): ``python``, exported
    # by libtorch_python alone (the library must be loaded: the Python torch, not LibTorch
    # alone); ``distributed``, declared for a torch built with distributed only
    needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "platforms", tuple(sorted(self.platforms)))
        object.__setattr__(self, "needs", tuple(sorted(set(self.needs))))

    def to_json(self, version: FeatureVersion | None) -> dict[str, object]:
        out: dict[str, object] = {
            "introduced": None if version is None else version.release,
            "platforms": dict(self.platforms),
            "source": self.source,
        }
        if self.needs:
            out["needs"] = list(self.needs)
        return out


@frozen
class TorchWheelOrigin:
    """One torch wheel whose exports went into the table: provenance, re-checkable by hash."""

    file: str
    sha256: str
    release: str
    platform: str
    variant: str

    def to_json(self) -> dict[str, str]:
        return {
            "file": self.file,
            "platform": self.platform,
            "release": self.release,
            "sha256": self.sha256,
            "variant": self.variant,
        }

    @classmethod
    def from_json(cls, raw: object) -> TorchWheelOrigin:
        fields = ("file", "sha256", "release", "platform", "variant")
        if not isinstance(raw, dict) or not all(isinstance(raw.get(f), str) for f in fields):
            raise ValueError(f"symbol table: a wheel entry needs string fields {', '.join(fields)}")
        return cls(*(str(raw[f]) for f in fields))
